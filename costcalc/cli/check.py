"""`costcalc check`: a CI gate for model config files."""

from __future__ import annotations

import hashlib
import os
import stat
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from costcalc.cli.common import FORMAT, count_option, size_option, user_errors

if TYPE_CHECKING:
    from costcalc.check import FileReport
    from costcalc.errors import Problem


class CheckFormat(StrEnum):
    """How `costcalc check` reports."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    github = "github"


def check(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Config files, directories (searched for *.yaml, *.yml, *.json) or globs.",
            show_default=False,
        ),
    ],
    max_params: Annotated[
        int | None, count_option("--max-params", help="Most parameters allowed, e.g. 30M or 1.5B.")
    ] = None,
    max_weight_bytes: Annotated[
        int | None,
        size_option(
            "--max-weight-bytes", help="Most weight bytes allowed, e.g. 1GiB (2^30) or 500MB."
        ),
    ] = None,
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            help="The dtype or quantized format --max-weight-bytes is measured in (bf16, "
            "nf4, gptq-int4:g128, gguf:Q4_K_M, ...; int4 is raw, no scales). Default: as each "
            "checkpoint stores its weights (its quantization_config), else bf16.",
        ),
    ] = None,
    length: Annotated[
        int | None,
        count_option("--length", "-T", help="A sequence length every model must accept."),
    ] = None,
    fmt: Annotated[CheckFormat, FORMAT] = CheckFormat.table,
    models_only: Annotated[
        bool,
        typer.Option(
            "--models-only",
            help="Skip, with a note, YAML/JSON files that are no model config (package.json, "
            "workflows, tokenizer_config.json) instead of failing them.",
        ),
    ] = False,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            help="Read the model from this key of a larger file, e.g. model or model.init_args "
            "(a Hydra or Lightning config).",
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Fail on warnings too (a key that looks misspelled, such as num_key_value_head).",
        ),
    ] = False,
) -> None:
    """Check model configs: readable, valid, buildable, within budget. Exit 0 when every file
    passes, 1 when any has findings, 2 on wrong usage.

    Formats: costcalc's own YAML/JSON (its `budget:` section is checked too), nanoGPT-style
    configs and Hugging Face config.json.
    """
    from costcalc.check import Limits, Reading, check_paths
    from costcalc.compute import check_count
    from costcalc.config import Budget
    from costcalc.weight_format import check_weight_dtype

    with user_errors():
        budget = Budget(
            max_params=max_params,
            max_weight_bytes=max_weight_bytes,
            dtype=None if dtype is None else check_weight_dtype(dtype),
        )
        if length is not None:
            check_count("length", length)
        reading = Reading(models_only, key_path(key))
    reports = check_paths(paths, Limits(budget, length, strict), reading)
    if fmt is CheckFormat.json:
        from costcalc.render import to_json

        typer.echo(to_json([report.to_dict() for report in reports]))
    elif fmt is CheckFormat.jsonl:
        from costcalc.render import to_jsonl

        typer.echo(to_jsonl([report.to_dict() for report in reports]))
    elif fmt is CheckFormat.github:
        typer.echo(github_annotations(reports))
        if os.environ.get("GITHUB_STEP_SUMMARY"):
            with user_errors():
                write_job_summary(os.environ["GITHUB_STEP_SUMMARY"], reports)
    else:
        print_report(reports)
    if not all(report.ok for report in reports):
        raise typer.Exit(1)


def key_path(key: str | None) -> tuple[str, ...]:
    """``--key model.net`` as a path of keys; an empty part is a usage error."""
    from costcalc.errors import UsageError

    if key is None:
        return ()
    parts = tuple(key.split("."))
    if not all(parts):
        raise UsageError(f"--key '{key}' is not a path of keys (like model or model.init_args)")
    return parts


def summary(reports: list[FileReport]) -> str:
    """'3 files, 1 failed' (', 2 skipped' when any file is no model config, ', 1 warning' when
    any file has one)."""
    failed = sum(not report.ok for report in reports)
    skipped = sum(report.skipped is not None for report in reports)
    warnings = sum(len(report.warnings) for report in reports)
    text = f"{_counted(len(reports), 'file')}, {failed:,} failed"
    text += f", {skipped:,} skipped" if skipped else ""
    return text + (f", {_counted(warnings, 'warning')}" if warnings else "")


def _counted(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def print_report(reports: list[FileReport]) -> None:
    """A Rich report: one line per file, its findings under it, then the summary."""
    from rich.console import Console
    from rich.text import Text

    from costcalc.errors import shown

    out = Text()
    for report in reports:
        if report.skipped is not None:
            out.append("skip  ", style="dim")
            out.append(shown(report.path), style="bold")
            out.append(f"  {report.skipped}\n", style="dim")
            continue
        out.append("ok    " if report.ok else "FAIL  ", style="green" if report.ok else "bold red")
        out.append(shown(report.path), style="bold")
        if report.model is not None:
            model = report.model
            out.append(f"  {shown(model.name)} ({model.format})")
            if report.parameters is not None:
                out.append(f", {report.parameters:,} parameters")
        out.append("\n")
        for finding in [*report.findings, *report.warnings]:
            where = f"line {finding.line}" if finding.line is not None else ""
            out.append(f"      {where:<10}", style="dim")
            if finding in report.warnings:
                out.append("warning: ", style="bold yellow")
            out.append(f"{shown(finding.field)}: " if finding.field else "", style="yellow")
            out.append(shown(finding.message) + "\n")
    failed = not all(report.ok for report in reports)
    out.append(summary(reports), style="bold red" if failed else "bold green")
    Console(highlight=False, soft_wrap=True).print(out)


MAX_ANNOTATIONS = 10
"""GitHub shows at most 10 error annotations of a step; the rest are lost."""


def github_annotations(reports: list[FileReport]) -> str:
    """GitHub Actions workflow commands: an ``::error`` per finding and a ``::warning`` per
    warning (file, line and column where known), at most MAX_ANNOTATIONS of each kind, the last
    counting those left as plain log lines; a line per skipped file; then the summary. Plain
    lines are never read as commands: when one could be (a file named ``::warning::x.yaml``),
    they are printed between ``::stop-commands::`` and its end, as GitHub's documentation asks
    for untrusted text."""
    from costcalc.errors import shown

    commands: list[str] = []
    lines: list[str] = []
    for kind, noun, of in (("error", "finding", _findings), ("warning", "warning", _warnings)):
        items = [(report, item) for report in reports for item in of(report)]
        shown_count = len(items) if len(items) <= MAX_ANNOTATIONS else MAX_ANNOTATIONS - 1
        commands += [_annotation(report.path, item, kind) for report, item in items[:shown_count]]
        rest = items[shown_count:]
        if rest:
            files = len({report.path for report, _ in rest})
            commands.append(
                f"::{kind} title=costcalc check::{_counted(len(rest), 'more ' + noun)} in "
                f"{_counted(files, 'file')}, listed in the log below"
            )
        prefix = "" if kind == "error" else "warning: "
        lines += [prefix + _log_line(report.path, item) for report, item in rest]
    lines += [
        f"skipped {shown(report.path)}: {report.skipped}"
        for report in reports
        if report.skipped is not None
    ]
    lines.append(summary(reports))
    if any(_read_as_command(line) for line in lines):
        token = hashlib.sha256("\n".join(lines).encode()).hexdigest()
        lines = [f"::stop-commands::{token}", *lines, f"::{token}::"]
    return "\n".join([*commands, *lines])


def _findings(report: FileReport) -> list[Problem]:
    return report.findings


def _warnings(report: FileReport) -> list[Problem]:
    return report.warnings


def _read_as_command(line: str) -> bool:
    """Whether a runner could take a log line for a workflow command: ``::name::`` at its start
    (after blanks), or the old ``##[name]`` form anywhere in it."""
    return line.lstrip().startswith("::") or "##[" in line


def _annotation(path: str, finding: Problem, kind: str = "error") -> str:
    from costcalc.errors import shown

    props = f"file={_escape_property(shown(path))}"
    if finding.line is not None:
        props += f",line={finding.line}"
        if finding.column is not None:
            props += f",col={finding.column}"
    message = f"{finding.field}: {finding.message}" if finding.field else finding.message
    return f"::{kind} {props},title=costcalc check::{_escape_data(shown(message))}"


def _log_line(path: str, finding: Problem) -> str:
    """A finding as compilers print one: ``path:line:column: field: message``."""
    from costcalc.errors import shown

    where = "".join(f":{n}" for n in (finding.line, finding.column) if n is not None)
    message = f"{finding.field}: {finding.message}" if finding.field else finding.message
    return shown(f"{path}{where}: {message}")


def write_job_summary(path: str, reports: list[FileReport]) -> None:
    """Append a markdown table of the run to ``path`` (GitHub's ``$GITHUB_STEP_SUMMARY``),
    within MAX_SUMMARY_BYTES. The file is opened without blocking and must be a regular file
    (a FIFO with no reader, a device or a directory is refused, never waited on); any OS error
    is a FileReadError naming it."""
    from costcalc.errors import FileReadError
    from costcalc.files import os_reason

    text = job_summary(reports).encode("utf-8")
    try:
        fd = os.open(
            path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o644
        )
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise FileReadError(path, "cannot write the job summary: not a regular file")
            while text:
                text = text[os.write(fd, text) :]
        finally:
            os.close(fd)
    except FileReadError:
        raise
    except OSError as exc:
        raise FileReadError(path, f"cannot write the job summary: {os_reason(exc)}") from None
    except ValueError:  # a NUL in the path
        raise FileReadError(path, "cannot write the job summary: not a valid path") from None


_SUMMARY_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC

MAX_SUMMARY_BYTES = 1024 * 1024 - 64 * 1024
"""GitHub keeps at most 1 MiB of a step's summary: costcalc's stays under it, with room for
the summary of another tool in the same step."""


def job_summary(reports: list[FileReport], limit: int = MAX_SUMMARY_BYTES) -> str:
    """The run as markdown: the summary, then a row per finding (file, line, field, message)
    and the parameters of every file that passed; rows that would take it past ``limit`` bytes
    are left out and counted in a last line."""
    head = ["## costcalc check", "", f"**{summary(reports)}**", ""]
    findings = [
        f"| {_cell(report.path)} | {f.line or ''} | {_cell(f.field)} | {kind}{_cell(f.message)} |"
        for report in reports
        for kind, f in [
            *(("", f) for f in report.findings),
            *(("warning: ", w) for w in report.warnings),
        ]
    ]
    passed = [
        f"| {_cell(r.path)} | {_cell(r.model.name)} ({r.model.format}) | {r.parameters:,} |"
        for r in reports
        if r.ok and r.skipped is None and r.model is not None
    ]
    tables = [
        (["| file | line | field | finding |", "|---|---|---|---|"], findings, "finding"),
        (["| passed | model | parameters |", "|---|---|---:|"], passed, "passed file"),
    ]
    room = limit - len("\n".join(head).encode()) - 200  # the line counting what is left out
    rows: list[str] = head
    left: list[str] = []
    for header, body, noun in tables:
        cost = sum(len(row.encode()) + 1 for row in header) + 1  # and the blank line after
        kept: list[str] = []
        for row in body:
            size = len(row.encode()) + 1
            if cost + size > room:
                break
            kept.append(row)
            cost += size
        if kept:
            rows += [*header, *kept, ""]
            room -= cost
        if len(kept) < len(body):
            left.append(_counted(len(body) - len(kept), noun))
    if left:
        rows.append(f"{' and '.join(left)} left out: the summary is kept under 1 MiB (see the log)")
    return "\n".join(rows) + "\n"


def _cell(text: str) -> str:
    """``text`` safe in a markdown table cell: printable, no pipe or line break."""
    from costcalc.errors import shown

    return shown(text).replace("\\", "\\\\").replace("|", "\\|") if text else ""


def _escape_data(text: str) -> str:
    """Escaping GitHub's workflow commands need in a message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """Escaping GitHub's workflow commands need in a property value."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
