"""Start-up cost of `costcalc params --preset gpt2-small` against importing its dependencies.

Run: python tests/bench/bench_startup.py [runs]. Prints the median wall time of each and their
ratio, measured in one run so that machine load cancels out. Target: a ratio close to 1 (the
command should cost little more than `import typer, rich, pydantic, yaml`).

A second baseline also defines one pydantic model: pydantic imports most of its machinery
lazily, on the first model class, so any program that validates with pydantic pays that once.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

IMPORTS = "import typer, rich.console, rich.table, pydantic, yaml"
BASELINE = [sys.executable, "-c", IMPORTS]
BASELINE_MODEL = [sys.executable, "-c", f"{IMPORTS}\nclass M(pydantic.BaseModel):\n    x: int"]
COMMAND = [sys.executable, "-m", "costcalc", "params", "--preset", "gpt2-small"]


def median_seconds(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    median_seconds(COMMAND, 2)  # warm the file cache
    baseline = median_seconds(BASELINE, runs)
    baseline_model = median_seconds(BASELINE_MODEL, runs)
    command = median_seconds(COMMAND, runs)
    print(f"imports only:                        {baseline * 1000:7.1f} ms (median of {runs})")
    print(f"imports and one pydantic model:      {baseline_model * 1000:7.1f} ms")
    print(f"costcalc params --preset gpt2-small: {command * 1000:7.1f} ms")
    print(f"ratio to imports:                    {command / baseline:7.2f}")
    print(f"ratio to imports and one model:      {command / baseline_model:7.2f}")


if __name__ == "__main__":
    main()
