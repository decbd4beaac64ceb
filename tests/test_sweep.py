"""The sweep: every shipped preset and every fixture config through every command, in every
output format, with the parallel options, in-process.

One test per command x format. Each asserts, for every model: no exception escapes (a
traceback); the exit code is one the command documents (docs/cli.md, docs/check.md); a failure
is ``error: ...`` lines on stderr and nothing on stdout; machine output parses (JSON, one JSON
record a line, CSV of the tidy columns) with one record per model, and its totals equal the
Python API's for the same model; a table or Markdown names every model. A model that loads
always gets a count (``params`` and ``check`` exit 0 for it, whatever the format).

Kept cheap (24 s measured on 2 cores, 26 s of CPU): models are loaded once for the module (the
loaders are memoised while it runs) and the command is built once; models go through a command a
batch at a time (``-c A -c B ...``: one run, one table), and a batch that fails is rerun model
by model so that each failure is judged alone. The options are sampled: each model takes one
variant of a command's options (parallel plans, engines, lengths) in turn, so every variant
meets every k-th model; Rich tables, the slow format, are drawn for a third of them (Markdown
prints the same grids for all). ``COSTCALC_SWEEP=full`` runs every variant for every model
(several times longer; .ci/run runs it after the suite).
"""

from __future__ import annotations

import csv
import functools
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.testing
from typer.testing import CliRunner, Result

import costcalc
from costcalc import loaders
from costcalc.check import is_model_folder
from costcalc.cli.app import app
from costcalc.errors import CostcalcError
from costcalc.presets import preset_names, preset_path
from tests.conftest import FIXTURES

FULL = os.environ.get("COSTCALC_SWEEP") == "full"
BATCH = 12
"""Models per run: a table of a dozen columns is one a user might ask for."""

CSV_HEADER = ["model", "table", "quantity", "value", "unit", "dtype"]


@dataclass(frozen=True)
class Model:
    """One model of the sweep: how the command line names it, and the file ``check`` reads."""

    label: str
    args: tuple[str, str]
    path: str


def _models() -> list[Model]:
    presets = [Model(name, ("-p", name), str(preset_path(name))) for name in preset_names()]
    files = sorted(
        path
        for path in FIXTURES.rglob("*")
        if path.is_file() and path.suffix in (".json", ".yaml", ".yml")
    )
    folders = sorted({path.parent for path in files if path.name == "config.json"})
    fixtures = [
        Model(str(path.relative_to(FIXTURES)), ("-c", str(path)), str(path))
        for path in [*files, *folders]
    ]
    return presets + fixtures


MODELS = _models()

# Each command's variants of options; a model takes variant (its index mod their number).
VARIANTS: dict[str, list[list[str]]] = {
    "params": [
        [],
        ["-T", "64"],
        ["-T", "48", "-B", "3", "--causal", "--recompute", "full", "--attention", "flash"],
        ["--prompt", "16", "--generate", "8"],
        ["--dtype", "nf4"],
        ["--explain"],
    ],
    "memory": [
        [],
        ["-T", "64", "-B", "2", "--kv-dtype", "fp8"],
        ["--train", "-T", "64"],
        ["--train", "-T", "64", "--gpus", "2"],
        ["--train", "-T", "64", "--tp", "2"],
        ["--train", "-T", "64", "--pp", "2"],
        ["--train", "-T", "64", "--gpus", "4", "--zero", "3"],
        ["--train", "-T", "64", "--gpus", "4", "--fsdp", "full"],
        ["--train", "-T", "64", "--gpus", "4", "--fsdp", "hybrid", "--node-gpus", "2"],
        ["--train", "-T", "64", "--gpus", "4", "--tp", "2", "--sp"],
        ["--train", "-T", "64", "--gpus", "4", "--ep", "2"],
        ["--train", "-T", "64", "--gpus", "2", "--cp", "2"],
        ["--train", "-T", "64", "--gpus", "8", "--tp", "2", "--pp", "2", "--zero", "1"],
        ["--engine", "llamacpp", "-T", "64"],
        ["--engine", "vllm", "--gpu", "h100-sxm"],
        ["-T", "64", "--fits", "24GiB"],
    ],
    "plan": [
        ["--gpu", "h100-sxm", "--tokens", "1B", "-T", "64"],
        ["--gpu", "h100-sxm", "--tokens", "1B", "-T", "64", "--gpus", "8"],
        ["--gpu", "h100-sxm", "--prompt", "64", "--generate", "16"],
        ["--gpu", "h100-sxm", "--prompt", "64", "--tp", "2"],
        ["--gpu", "a10", "--budget", "1e21", "-T", "64"],
        ["--gpu", "h100-sxm", "--prompt", "32", "--engine", "vllm"],
        ["--gpu", "h100-sxm", "--prompt", "32", "--engine", "llamacpp"],
    ],
    "lora": [
        ["-t", "all-linear"],
        ["-t", "all-linear", "-r", "16", "--dora"],
        ["-t", "all-linear", "--train", "-T", "64"],
        ["-t", "all-linear", "--train", "-T", "64", "--gpus", "2", "--zero", "2"],
        ["-t", "all-linear", "--train", "-T", "64", "--gpus", "2", "--fsdp", "full"],
        ["-t", "all-linear", "--train", "-T", "32", "--base-dtype", "nf4"],
    ],
    "scale": [["--d", "256", "512"], ["--d", "128", "-T", "16", "-B", "1", "--causal"]],
    "check": [
        [],
        ["--max-params", "1B"],
        ["--max-weight-bytes", "1GiB", "--dtype", "nf4"],
        ["-T", "4096"],
        ["--models-only"],
    ],
}
FORMATS = {
    **{command: ["table", "json", "jsonl", "csv", "markdown"] for command in VARIANTS},
    "check": ["table", "json", "jsonl", "github"],
}
ONE_MODEL = {"scale"}
"""Commands that compare one model at a time."""
EXIT_CODES = {0, 1, 2}
"""docs/cli.md: 0 success, 1 an invalid model, file or value (or does not fit), 2 wrong
usage (a parallel plan that does not divide the model included)."""


TABLE_SHARE = 3
"""Rich tables are the slow part (about 6 ms a model against 2 for JSON or Markdown, which
print the same grids): by default a table is drawn for every third model of each variant,
a different third for each command."""


def _assigned(command: str, fmt: str = "") -> Iterator[tuple[list[str], list[Model]]]:
    """Each variant of ``command``'s options with the models it runs with."""
    variants = VARIANTS[command]
    for k, variant in enumerate(variants):
        chosen = MODELS if FULL else MODELS[k :: len(variants)]
        if fmt == "table" and not FULL:
            chosen = chosen[len(command) % TABLE_SHARE :: TABLE_SHARE]
        yield variant, chosen


@pytest.fixture(scope="module")
def shared() -> Iterator[None]:
    """Models loaded once for the whole module, and the command line built once."""
    group = typer.main.get_command(app)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", lambda _: group)
        patch.setattr(loaders, "load_file", _memoised(loaders.load_file))
        patch.setattr(loaders, "load_preset", _memoised(loaders.load_preset))
        yield


def _memoised(load: Callable[..., Any]) -> Callable[..., Any]:
    """``load``, its result (or its error) kept per source and overrides."""
    kept: dict[object, tuple[bool, Any]] = {}

    @functools.wraps(load)
    def memoised(source: Any, overrides: Any = None) -> Any:
        key = (str(source), tuple(sorted((overrides or {}).items())))
        if key not in kept:
            try:
                kept[key] = (True, load(source, overrides))
            except CostcalcError as exc:
                kept[key] = (False, exc)
        done, value = kept[key]
        if not done:
            raise value
        return value

    return memoised


@functools.cache
def _reference(model: Model) -> tuple[str, int] | None:
    """The model's name and parameter total through the Python API; None when it does not
    load (a fixture kept to fail)."""
    source = model.args[1] if model.args[0] == "-p" else model.path
    try:
        loaded = costcalc.load(source)
        return loaded.name, costcalc.count(loaded).parameters.total
    except CostcalcError:
        return None


def _run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _reported(command: str, variant: list[str], result: Result) -> bool:
    """Whether the run printed its report: exit 0, or exit 1 with the report when memory
    given (by --fits or --gpu) does not hold it, as docs/memory.md says."""
    fits = command in ("memory", "lora") and ("--fits" in variant or "--gpu" in variant)
    return result.exit_code == 0 or (fits and result.exit_code == 1 and bool(result.stdout))


def _judge_failure(result: Result, where: str) -> str | None:
    """What is wrong with a run that did not exit 0, or None."""
    if result.exit_code not in EXIT_CODES:
        return f"{where}: exit code {result.exit_code}"
    if result.stdout:
        return f"{where}: exit {result.exit_code} printed {result.stdout[:200]!r}"
    if not result.stderr.startswith("error: ") or "Traceback" in result.stderr:
        return f"{where}: stderr {result.stderr[:300]!r}"
    return None


def _records(fmt: str, stdout: str) -> list[dict[str, Any]]:
    """The records of machine output (one per model), each at least its ``name``."""
    if fmt == "json":
        data = json.loads(stdout)
        return data if isinstance(data, list) else [data]
    if fmt == "jsonl":
        return [json.loads(line) for line in stdout.splitlines()]
    rows = list(csv.reader(stdout.splitlines()))
    assert rows[0] == CSV_HEADER, rows[0]
    assert all(len(row) == len(CSV_HEADER) for row in rows)
    names = list(dict.fromkeys(row[0] for row in rows[1:]))
    totals = {row[0]: int(row[3]) for row in rows[1:] if row[1:3] == ["parameters", "total"]}
    return [{"name": name, "total": totals.get(name)} for name in names]


def _judge_output(
    command: str, variant: list[str], fmt: str, result: Result, batch: list[Model]
) -> str | None:
    """What is wrong with the output of a run that printed a report for ``batch``, or None."""
    where = f"{command} {' '.join(variant)} -f {fmt} {[m.label for m in batch]}"
    references = [_reference(m) for m in batch]
    names = [ref[0] for ref in references if ref is not None]
    if None in references:
        return f"{where}: a report for a model the API does not load"
    if command == "scale":  # one record per width: the model named with it
        widths = variant[1 : variant.index("-T")] if "-T" in variant else variant[1:]
        names = [f"{names[0]} (D={d})" for d in widths] if fmt != "json" else names
    if fmt in ("table", "markdown"):
        shown = " ".join(result.stdout.split())  # a table may wrap a long name
        missing = [name for name in names if name.split()[0] not in shown]
        return f"{where}: names {missing} not shown" if missing else None
    try:
        records = _records(fmt, result.stdout)
    except (ValueError, AssertionError, IndexError) as exc:
        return f"{where}: output does not parse: {exc}"
    found = [r["model" if command == "scale" and fmt == "json" else "name"] for r in records]
    if found != names and fmt != "csv":
        return f"{where}: records {found}"
    if fmt == "csv" and sorted(set(names)) != sorted(found):
        return f"{where}: csv models {found}"
    if command == "params":
        totals = [r["total"] if fmt == "csv" else r["parameters"]["total"] for r in records]
        expected = [ref[1] for ref in references if ref is not None]
        if fmt != "csv" and totals != expected:
            return f"{where}: totals {totals} != the API's {expected}"
    return None


def _sweep(command: str, fmt: str) -> list[str]:
    """Every model through ``command`` in ``fmt``: the problems found."""
    problems: list[str] = []
    for variant, models in _assigned(command, fmt):
        size = 1 if command in ONE_MODEL else BATCH
        for start in range(0, len(models), size):
            batch = models[start : start + size]
            args = [command, *variant, "-f", fmt, *(a for m in batch for a in m.args)]
            result = _run(*args)
            if _reported(command, variant, result):
                problem = _judge_output(command, variant, fmt, result, batch)
                problems += [problem] if problem else []
                continue
            for model in batch if len(batch) > 1 else []:
                single = _run(command, *variant, "-f", fmt, *model.args)
                where = f"{command} {' '.join(variant)} -f {fmt} {model.label}"
                if _reported(command, variant, single):
                    problem = _judge_output(command, variant, fmt, single, [model])
                else:
                    problem = _judge_failure(single, where)
                    if command == "params" and not variant and _reference(model) is not None:
                        problem = f"{where}: a model that loads failed: {single.stderr[:300]}"
                problems += [problem] if problem else []
            if len(batch) == 1:
                problem = _judge_failure(result, f"{' '.join(args[:-2])} {batch[0].label}")
                problems += [problem] if problem else []
    return problems


@pytest.mark.usefixtures("shared")
@pytest.mark.parametrize(
    ("command", "fmt"),
    [(c, f) for c in VARIANTS if c != "check" for f in FORMATS[c]],
)
def test_every_model_through_every_command(command: str, fmt: str) -> None:
    problems = _sweep(command, fmt)
    assert not problems, "\n".join(problems[:30]) + f"\n({len(problems)} problems)"


def _check_records(fmt: str, stdout: str) -> list[dict[str, Any]]:
    if fmt == "json":
        records: list[dict[str, Any]] = json.loads(stdout)
        return records
    return [json.loads(line) for line in stdout.splitlines()]


@pytest.mark.usefixtures("shared")
@pytest.mark.parametrize("fmt", FORMATS["check"])
def test_every_file_through_check(fmt: str) -> None:
    """Every preset's file and every fixture in one run per variant: each file reported once,
    the exit code 1 exactly when one has a finding, a file that loads counted as the API
    counts it, and no file failing on costcalc itself."""
    problems: list[str] = []
    for variant, assigned in _assigned("check", fmt):
        # a folder without safetensors is searched for its config.json, a file checked already
        models = [m for m in assigned if Path(m.path).is_file() or is_model_folder(m.path)]
        result = _run("check", *variant, "-f", fmt, *(m.path for m in models))
        where = f"check {' '.join(variant)} -f {fmt}"
        if result.exit_code not in (0, 1) or "Traceback" in result.stderr:
            problems.append(f"{where}: exit {result.exit_code} {result.stderr[:300]}")
            continue
        if "an error in costcalc itself" in result.stdout:
            problems.append(f"{where}: {result.stdout[:500]}")
        if fmt in ("table", "github"):
            tail = result.stdout.splitlines()[-1]
            if not tail.startswith(f"{len(models)} files, "):
                problems.append(f"{where}: last line {tail!r}")
            continue
        records = _check_records(fmt, result.stdout)
        if [r["path"] for r in records] != [m.path for m in models]:
            problems.append(f"{where}: paths {[r['path'] for r in records]}")
            continue
        if (result.exit_code == 1) != any(not r["ok"] for r in records):
            problems.append(f"{where}: exit {result.exit_code} for these records")
        for model, record in zip(models, records, strict=True):
            reference = _reference(model)
            if reference is not None and record["parameters"] not in (None, reference[1]):
                problems.append(f"{where} {model.label}: {record['parameters']} != {reference}")
            # a file that loads has no finding but its own budget's, without a limit given (a
            # folder's headers may have one)
            loads = reference is not None and Path(model.path).is_file()
            fields = [str(f["field"]) for f in record["findings"]]
            if loads and not variant and not all(f.startswith("budget.") for f in fields):
                problems.append(f"{where} {model.label}: loads, yet {record['findings']}")
    assert not problems, "\n".join(problems[:30])


@pytest.mark.parametrize("fmt", ["table", "json", "jsonl", "csv", "markdown"])
def test_the_commands_without_a_model(fmt: str) -> None:
    """presets, gpus and heads in every format; schema in its two."""
    runs = [
        ["presets", "-f", fmt],
        ["gpus", "-f", fmt],
        ["heads", "--d", "4096", "--heads", "32", "-f", fmt],
        ["heads", "--d", "4096", "--heads", "31", "-f", fmt],
    ]
    runs += [["schema", "-f", fmt]] if fmt in ("json", "jsonl") else []
    for args in runs:
        result = _run(*args)
        assert result.exit_code in (0, 1), (args, result.stderr)
        assert result.stdout and "Traceback" not in result.stderr, args
        if fmt in ("json", "jsonl", "csv"):
            assert _records(fmt, result.stdout) if fmt != "csv" else result.stdout, args
