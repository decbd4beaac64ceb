"""`costcalc check`: a CI gate for model config files."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from costcalc.cli.common import user_errors

if TYPE_CHECKING:
    from costcalc.check import FileReport


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
        str | None, typer.Option("--max-params", help="Most parameters allowed, e.g. 30M or 1.5B.")
    ] = None,
    max_weight_bytes: Annotated[
        str | None,
        typer.Option(
            "--max-weight-bytes", help="Most weight bytes allowed, e.g. 1GiB (2^30) or 500MB."
        ),
    ] = None,
    dtype: Annotated[
        str, typer.Option("--dtype", help="The dtype --max-weight-bytes is measured in.")
    ] = "bf16",
    length: Annotated[
        int | None,
        typer.Option("--length", "-T", help="A sequence length every model must accept."),
    ] = None,
    fmt: Annotated[
        CheckFormat, typer.Option("--format", "-f", help="Output format.", case_sensitive=False)
    ] = CheckFormat.table,
) -> None:
    """Check model configs: readable, valid, buildable, within budget. Exit 0 when every file
    passes, 1 when any has findings, 2 on wrong usage.

    Formats: costcalc's own YAML/JSON (its `budget:` section is checked too), nanoGPT-style
    configs and Hugging Face config.json.
    """
    from costcalc.check import Limits, check_paths
    from costcalc.compute import check_count
    from costcalc.config import Budget
    from costcalc.units import check_dtype, parse_bytes, parse_count

    with user_errors():
        budget = Budget(
            max_params=None if max_params is None else parse_count(max_params),
            max_weight_bytes=None if max_weight_bytes is None else parse_bytes(max_weight_bytes),
            dtype=check_dtype(dtype),
        )
        if length is not None:
            check_count("length", length)
    reports = check_paths(paths, Limits(budget, length))
    if fmt is CheckFormat.json:
        from costcalc.render import to_json

        typer.echo(to_json([report.to_dict() for report in reports]))
    elif fmt is CheckFormat.jsonl:
        from costcalc.render import to_jsonl

        typer.echo(to_jsonl([report.to_dict() for report in reports]))
    elif fmt is CheckFormat.github:
        typer.echo(github_annotations(reports))
    else:
        print_report(reports)
    if not all(report.ok for report in reports):
        raise typer.Exit(1)


def summary(reports: list[FileReport]) -> str:
    """'3 files, 1 failed'."""
    failed = sum(not report.ok for report in reports)
    return f"{len(reports)} file{'' if len(reports) == 1 else 's'}, {failed} failed"


def print_report(reports: list[FileReport]) -> None:
    """A Rich report: one line per file, its findings under it, then the summary."""
    from rich.console import Console
    from rich.text import Text

    from costcalc.errors import shown

    out = Text()
    for report in reports:
        out.append("ok    " if report.ok else "FAIL  ", style="green" if report.ok else "bold red")
        out.append(shown(report.path), style="bold")
        if report.model is not None:
            model = report.model
            out.append(f"  {shown(model.name)} ({model.format}), {report.parameters:,} parameters")
        out.append("\n")
        for finding in report.findings:
            where = f"line {finding.line}" if finding.line is not None else ""
            out.append(f"      {where:<10}", style="dim")
            out.append(f"{shown(finding.field)}: " if finding.field else "", style="yellow")
            out.append(shown(finding.message) + "\n")
    failed = not all(report.ok for report in reports)
    out.append(summary(reports), style="bold red" if failed else "bold green")
    Console(highlight=False, soft_wrap=True).print(out)


def github_annotations(reports: list[FileReport]) -> str:
    """GitHub Actions workflow commands: one ``::error`` per finding, then the summary."""
    from costcalc.errors import shown

    lines = []
    for report in reports:
        for finding in report.findings:
            props = f"file={_escape_property(shown(report.path))}"
            if finding.line is not None:
                props += f",line={finding.line}"
            message = f"{finding.field}: {finding.message}" if finding.field else finding.message
            message = shown(message)
            lines.append(f"::error {props},title=costcalc check::{_escape_data(message)}")
    lines.append(summary(reports))
    return "\n".join(lines)


def _escape_data(text: str) -> str:
    """Escaping GitHub's workflow commands need in a message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """Escaping GitHub's workflow commands need in a property value."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
