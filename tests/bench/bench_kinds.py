"""Benchmark: the cost of one kind of block, at 3,000 kinds versus 30, for each command.

A layered model's counts are computed once per kind of block, so the time a command takes per
kind should not grow with the kinds: the target is that one kind of a 3,000-kind model costs at
most 2x one kind of a 30-kind model (per kind: each run's time divided by its kinds; the
30-kind time carries the command's fixed work too, so the target is a bound on the growth, not
on the fixed cost). The models: Laguna's config.json with a head count of its own in every
layer (3,000 and 30 layers; a kind per layer), and a costcalc JSON of one-layer groups, each
with an FFN width of its own (1,900 and 19: the most its 10,000-value limit lets a file hold).
Each command runs in-process (CliRunner), warmed once, best of RUNS.

Measured (2 cores shared with other jobs, load ~10, Python 3.11), ms per kind at 30 / 3,000:
see the printout; before the fix the differing keys of every kind were found again for each
kind, every count rebuilt each kind's tensors and a table's column widths were measured again
for each of its parts (36 s for `params -f json` of 1,900 groups, 109 s for 3,000 Laguna layers).
Run: python tests/bench/bench_kinds.py   (prints the times and the ratios; not a pytest test)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.update(COLUMNS="160", NO_COLOR="1", TERM="dumb")

from typer.testing import CliRunner

from costcalc.cli.app import app
from tests.layered_configs import group_kinds, laguna_kinds, write_json

RUNS = 3
COMMANDS = [
    ["params", "-f", "json"],
    ["params", "-T", "4096", "-f", "json"],
    ["params"],
    ["memory", "--train", "-T", "4096", "-f", "json"],
    ["lora", "-t", "all-linear", "-f", "json"],
    ["check"],
]
MODELS: list[tuple[str, Callable[[int], dict[str, Any]], int, int]] = [
    ("Laguna, a head count per layer", laguna_kinds, 30, 3000),
    ("costcalc JSON, one-layer groups", group_kinds, 19, 1900),
]


def best_time(args: list[str]) -> float:
    """The fastest of RUNS in-process runs of ``costcalc ARGS`` (seconds), asserting each passed."""
    runner = CliRunner()
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        done = runner.invoke(app, args)
        times.append(time.perf_counter() - start)
        if done.exit_code != 0:
            raise SystemExit(f"costcalc {' '.join(args)} failed:\n{done.output[-2000:]}")
    return min(times)


def main() -> None:
    CliRunner().invoke(app, ["params", "-p", "gpt2-small"])  # imports and first-use schemas
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for title, build, few, many in MODELS:
            print(title)
            paths = {n: write_json(Path(tmp), f"{n}.json", build(n)) for n in (few, many)}
            for command in COMMANDS:
                where = [
                    str(paths[n]) if command == ["check"] else f"--config={paths[n]}"
                    for n in (few, many)
                ]
                t_few, t_many = (best_time([*command, path]) for path in where)
                ratio = (t_many / many) / (t_few / few)
                worst = max(worst, ratio)
                print(
                    f"  {' '.join(command):36} {t_few / few * 1000:7.2f} ms/kind at {few:,}, "
                    f"{t_many / many * 1000:7.2f} at {many:,}: {ratio:5.2f}x"
                )
    print(f"worst ratio: {worst:.2f}x  (target: at most 2x)")


if __name__ == "__main__":
    main()
