"""Timing of `costcalc check` in fresh processes, shared by the check benchmarks."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNS = 5


def best_time(args: list[str]) -> float:
    """The fastest of RUNS runs of ``costcalc check ARGS`` (seconds), asserting it passed."""
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "costcalc", "check", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"check failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return min(times)


@contextmanager
def one_and_many(
    write_configs: Callable[[Path, int], None], count: int
) -> Iterator[tuple[Path, Path]]:
    """Two temporary directories: one holding one config, the other ``count`` configs."""
    with tempfile.TemporaryDirectory() as tmp:
        one, many = Path(tmp, "one"), Path(tmp, "many")
        one.mkdir()
        many.mkdir()
        write_configs(one, 1)
        write_configs(many, count)
        yield one, many
