"""Benchmark: `costcalc check` of a 1 MiB JSON file of 100,000 keys versus a 1 MiB file of 10
keys, each in a fresh process, as a ratio in one run.

Caps and key lines cost time linear in the file, whatever its shape, so the many-key file
should take under 2x the few-key one (before the fix the key-line search rescanned the text per
key: 60 s and more).
Run: python tests/bench/bench_big_json.py   (prints the times and the ratio; not a pytest test)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIZE = 2**20 - 64
RUNS = 5


def padded(data: dict[str, object]) -> str:
    """``data`` as JSON padded with spaces to just under 1 MiB (the size limit)."""
    text = json.dumps(data)
    return text[:-1] + " " * (SIZE - len(text)) + "}"


def many_keys() -> str:
    return padded({f"k{i:05d}": i for i in range(100_000)})


def few_keys() -> str:
    filler = "x" * (SIZE // 10)
    return padded({f"k{i}": filler for i in range(9)} | {"model_type": "gpt2"})


def best_time(path: Path) -> float:
    """The fastest of RUNS runs of ``costcalc check PATH`` (seconds)."""
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "costcalc", "check", str(path)],
            cwd=ROOT,
            capture_output=True,
            check=False,
        )
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        many, few = Path(tmp, "many.json"), Path(tmp, "few.json")
        many.write_text(many_keys())
        few.write_text(few_keys())
        t_many, t_few = best_time(many), best_time(few)
    print(f"check 1 MiB, 100,000 keys: {t_many * 1000:8.1f} ms")
    print(f"check 1 MiB, 10 keys:      {t_few * 1000:8.1f} ms")
    print(f"ratio:                     {t_many / t_few:8.2f}x  (target: < 2x)")


if __name__ == "__main__":
    main()
