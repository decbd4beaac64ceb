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
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costcalc.cli.app import app
from tests.conftest import ROOT, unprivileged
from tests.hostile_cases import CASES, Case, build, parses, stream


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
            result = runner.invoke(app, case.argv(folder), env=case.env, catch_exceptions=False)
    else:
        result = runner.invoke(app, case.argv(folder), env=case.env, catch_exceptions=False)
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
                result = runner.invoke(app, case.argv(folder), env=case.env)
        else:
            result = runner.invoke(app, case.argv(folder), env=case.env)
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
