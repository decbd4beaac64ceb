"""The held-out hostile cases of round 3 (tests/hostile_cases.py): each ends cleanly, with no
traceback, the exit code docs/cli.md gives it, the words that say what is wrong, and output that
reads back when it succeeds; the whole set also runs in one fresh interpreter whose address
space may grow by at most 1 GiB, each case given 20 seconds (its time and memory are bounds
of the work, never the test's own targets: a case over them is a case that grows)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from costcalc.cli.app import app
from tests.conftest import ROOT, Invoke, unprivileged
from tests.hostile_cases import CASES, GPT2, Case, build, parses, stream


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    built = build(tmp_path_factory.mktemp("hostile"))
    yield built
    (built / "unreadable.yaml").chmod(0o644)


def _invoke(case: Case, folder: Path) -> tuple[int, str, str]:
    runner = CliRunner()
    if case.nobody:  # imports and first reads done as root: nobody only opens the file
        runner.invoke(app, ["params", "-p", "gpt2"])
        with unprivileged():
            result = runner.invoke(
                app, case.argv(folder), env=case.environ(folder), catch_exceptions=False
            )
    else:
        result = runner.invoke(
            app, case.argv(folder), env=case.environ(folder), catch_exceptions=False
        )
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_each_case_ends_cleanly(case: Case, folder: Path) -> None:
    code, stdout, stderr = _invoke(case, folder)
    assert code == case.code, (stdout[-500:], stderr)
    assert "Traceback" not in stderr
    assert case.says in stream(case, stdout, stderr), (stdout[-500:], stderr)
    if code == 0:
        assert parses(case, stdout) and not stderr
    elif case.args[0] != "check":
        assert stderr.startswith("error: ") or case.says == "does not fit", stderr


def test_there_are_seventy_cases_or_more() -> None:
    assert len(CASES) >= 70
    assert len({case.name for case in CASES}) == len(CASES)


CAPPED = """
import json, os, resource, signal, sys, time
from typer.testing import CliRunner
from costcalc.cli.app import app
from tests.conftest import unprivileged
from tests.hostile_cases import CASES
from pathlib import Path

folder = Path(sys.argv[1])
runner = CliRunner()
runner.invoke(app, ["params", "-p", "gpt2"])
with open("/proc/self/statm") as statm:
    in_use = int(statm.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (in_use + 2**30,) * 2)

def late(*_):
    raise TimeoutError("past 20 seconds")

signal.signal(signal.SIGALRM, late)
for case in CASES:
    start = time.monotonic()
    signal.alarm(20)
    try:
        if case.nobody:
            with unprivileged():
                result = runner.invoke(app, case.argv(folder), env=case.environ(folder))
        else:
            result = runner.invoke(app, case.argv(folder), env=case.environ(folder))
        code, failure = result.exit_code, result.exception
        failure = None if isinstance(failure, SystemExit) else failure
    except BaseException as exc:
        code, failure = None, exc
    signal.alarm(0)
    seconds = round(time.monotonic() - start, 2)
    shown = repr(failure) if failure else None
    print(json.dumps({"name": case.name, "code": code, "failure": shown, "seconds": seconds}))
"""


def test_the_set_ends_within_its_limits(folder: Path) -> None:
    """Every case in one fresh interpreter, its address space capped 1 GiB above what it
    holds once started, 20 seconds each: a case that grows with a number in a file or an
    option fails here by name (MemoryError or past 20 seconds), never by the machine."""
    done = subprocess.run(
        [sys.executable, "-c", CAPPED, str(folder)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=len(CASES) * 20,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = {r["name"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert list(results) == [case.name for case in CASES]
    wrong = [r for case in CASES if (r := results[case.name])["failure"] or r["code"] != case.code]
    assert not wrong, wrong


ZERO_ALLOWED = {"ffn_act_params", "norms_per_block", "position_offset"}
"""Fields where 0 means none (no activation parameters, no block norms, no position offset)."""


def _number_fields() -> list[str]:
    from costcalc.config import config_schema

    fields = []
    for name, prop in config_schema()["properties"].items():
        kinds = {prop.get("type"), *(branch.get("type") for branch in prop.get("anyOf", []))}
        if kinds & {"integer", "number"}:
            fields.append(name)
    return fields


def test_every_number_field_refuses_zero_negative_nan_and_infinity(
    cli: Invoke, tmp_path: Path
) -> None:
    """Each number field of costcalc's YAML, given 0, -1, .nan, .inf and 2^31 in turn: one
    finding naming that field and line, in one check run; 0 passes only where it means none."""
    fields = _number_fields()
    assert len(fields) > 40
    values = {"zero": "0", "negative": "-1", "nan": ".nan", "inf": ".inf", "big": str(2**31)}
    lines = [line for line in GPT2.splitlines() if line]
    for field in fields:
        kept = [line for line in lines if not line.startswith(f"{field}:")]
        for tag, value in values.items():
            text = "\n".join([*kept, f"{field}: {value}"]) + "\n"
            (tmp_path / f"{field}.{tag}.yaml").write_text(text)
    result = cli("check", str(tmp_path), "-f", "json")
    assert result.exit_code == 1
    records = json.loads(result.stdout)
    assert len(records) == len(fields) * len(values)
    for record in records:
        field, tag, _ = Path(record["path"]).name.split(".")
        if tag == "zero" and field in ZERO_ALLOWED:
            assert record["ok"], record
            continue
        assert not record["ok"], record
        assert any(f["field"] == field or field in f["message"] for f in record["findings"]), record
        assert all("costcalc itself" not in f["message"] for f in record["findings"])


API_MISUSE: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
    ("count", (b"gpt2",), {}, "UsageError"),
    ("count", ({"a": {1, 2}},), {}, "FileReadError"),
    ("count", ({"a": float("nan")},), {}, "FileReadError"),
    ("count", ({1: 2},), {}, "FileReadError"),
    ("count_macs", ("gpt2",), {"length": Decimal(3)}, "UsageError"),
    ("count_macs", ("gpt2",), {"length": Fraction(3)}, "UsageError"),
    ("count_macs", ("gpt2",), {"batch": True}, "UsageError"),
    ("count_macs", ("gpt2",), {"length": -1}, "RangeError"),
    ("count_memory", ("gpt2",), {"fits": b"24GiB"}, "UsageError"),
    ("count_memory", ("gpt2",), {"fits": float("inf")}, "UsageError"),
    ("count_memory", ("gpt2",), {"gpus": 2.0, "train": True, "length": 8}, "UsageError"),
    ("count_memory", ("gpt2",), {"zero": "3", "train": True, "length": 8}, "UsageError"),
    ("count_memory", ("gpt2",), {"batch": 10**101}, "RangeError"),
    ("count_lora", ("gpt2",), {"targets": "all-linear"}, "UsageError"),
    ("count_lora", ("gpt2",), {"targets": [None]}, "UsageError"),
    (
        "count_lora",
        ("gpt2",),
        {"targets": ["all-linear"], "modules_to_save": "lm_head"},
        "UsageError",
    ),
    ("count_lora", ("gpt2",), {"targets": ["all-linear"], "rank": 2**40}, "RangeError"),
    ("load", ("gpt2",), {"revision": 3}, "UsageError"),
    ("load", ("gpt2",), {"d_model": 10**40}, "ConfigError"),
    ("load", ("gpt2",), {"sliding_window": None, "n_layers": "12"}, "ConfigError"),
]


@pytest.mark.parametrize(
    ("function", "args", "kwargs", "error"),
    API_MISUSE,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(API_MISUSE)],
)
def test_api_misuse_is_one_of_costcalcs_errors(
    function: str, args: tuple[Any, ...], kwargs: dict[str, Any], error: str
) -> None:
    import costcalc
    from costcalc.errors import CostcalcError

    with pytest.raises(CostcalcError) as raised:
        getattr(costcalc, function)(*args, **kwargs)
    assert type(raised.value).__name__ == error, raised.value
