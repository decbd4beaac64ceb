"""Work bounded by the size of the input: every count is computed once per kind of block, so a
model's cost grows linearly with its kinds whatever the command or format, and a model with
more kinds than MAX_KINDS is refused with a clear error. Measured in Python calls (exact and
free of the machine's load), not in seconds: tests/bench/bench_kinds.py times it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import costcalc
from costcalc import spec
from costcalc.errors import ConfigError
from costcalc.spec import MAX_KINDS
from tests.conftest import Invoke
from tests.layered_configs import group_kinds, laguna_kinds, write_json

COMMANDS = [
    ["params", "-f", "json"],
    ["params", "--explain"],
    ["params", "-T", "64"],
    ["memory", "--train", "-T", "64", "-f", "markdown"],
    ["memory", "--train", "-T", "64", "--gpus", "4", "--zero", "3", "-f", "csv"],
    ["lora", "-t", "all-linear", "--train", "-T", "64", "-f", "jsonl"],
    ["plan", "--gpu", "h100-sxm", "--tokens", "1B", "--prompt", "64", "-T", "64"],
    ["scale", "--length", "16", "32"],
]


def _calls(run: Callable[[], Any]) -> int:
    """How many functions (Python and built-in) ``run`` calls, generator steps included."""
    count = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return count


def _marginal_ratio(run: Callable[[int], Any], sizes: tuple[int, int, int]) -> float:
    """The calls one more kind costs between the two larger sizes over what it costs between the
    two smaller: about 1 when the work is linear in the kinds, 2 when it is quadratic."""
    run(sizes[0])  # imports and first-use schemas out of the count
    a, b, c = (_calls(lambda n=n: run(n)) for n in sizes)
    return ((c - b) / (sizes[2] - sizes[1])) / ((b - a) / (sizes[1] - sizes[0]))


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: " ".join(args[:3]))
def test_work_is_linear_in_the_kinds_of_block(cli: Invoke, tmp_path: Path, args: list[str]) -> None:
    def run(kinds: int) -> None:
        path = write_json(tmp_path, f"groups-{kinds}.json", group_kinds(kinds))
        result = cli(*args, "-c", str(path))
        assert result.exit_code == 0, result.stderr

    assert _marginal_ratio(run, (10, 20, 40)) < 1.1


@pytest.mark.parametrize("command", [["check"], ["params", "-T", "64", "-c"]])
def test_hugging_face_layers_cost_linear_work(
    cli: Invoke, tmp_path: Path, command: list[str]
) -> None:
    """Laguna's per-layer head counts: a kind of block per layer, through the translation."""

    def run(kinds: int) -> None:
        path = write_json(tmp_path, f"laguna-{kinds}.json", laguna_kinds(kinds))
        result = cli(*command, str(path))
        assert result.exit_code == 0, result.stdout + result.stderr

    assert _marginal_ratio(run, (10, 20, 40)) < 1.1


def test_kinds_past_the_limit_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit is on kinds, not runs: runs that repeat a kind cost nothing more."""
    assert MAX_KINDS == 4096
    monkeypatch.setattr(spec, "MAX_KINDS", 8)
    with pytest.raises(ConfigError) as refused:
        costcalc.load(group_kinds(9))
    message = "9 kinds of block; at most 8 are counted"
    assert [(p.field, p.message) for p in refused.value.problems] == [("layers", message)]
    alternating = [{"count": 1, "ffn_hidden": 16 + i % 2} for i in range(100)]
    assert len(costcalc.load(group_kinds(2) | {"layers": alternating}).spec.stacks) == 2
    assert len(costcalc.load(group_kinds(8)).spec.stacks) == 8
