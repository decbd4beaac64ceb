"""Start-up cost of `costcalc params -p gpt2-small -f json` against importing its dependencies.

Run: python tests/bench/bench_startup.py [runs]. Prints the median wall time of each and their
ratios, measured in one run, the runs interleaved, so that machine load cancels out.

The baseline is what any program built on the same four libraries pays: `import typer, rich,
pydantic, yaml` and validating one small pydantic model (pydantic builds most of its machinery
lazily, on the first model). Target: the JSON command at most 1.15 x that baseline. The table
command is shown too; it also imports Rich's table machinery, which JSON output never does.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

BASELINE = [
    sys.executable,
    "-c",
    "import typer, rich, pydantic, yaml\n"
    "class M(pydantic.BaseModel):\n    x: int\n"
    "M.model_validate({'x': 1})",
]
JSON = [sys.executable, "-m", "costcalc", "params", "-p", "gpt2-small", "-f", "json"]
TABLE = [sys.executable, "-m", "costcalc", "params", "-p", "gpt2-small"]
TARGET = 1.15


def medians(commands: dict[str, list[str]], runs: int) -> dict[str, float]:
    """The median wall time of each command, the runs interleaved."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    medians({"warm": JSON}, 2)  # warm the file cache
    m = medians({"baseline": BASELINE, "json": JSON, "table": TABLE}, runs)
    ratio = m["json"] / m["baseline"]
    print(f"imports + one pydantic model:        {m['baseline'] * 1000:7.1f} ms (median of {runs})")
    print(f"params -p gpt2-small -f json:        {m['json'] * 1000:7.1f} ms")
    print(f"params -p gpt2-small (table):        {m['table'] * 1000:7.1f} ms")
    verdict = "within" if ratio <= TARGET else "over"
    print(f"ratio json / baseline:               {ratio:7.2f} ({verdict} the {TARGET} target)")
    print(f"ratio table / baseline:              {m['table'] / m['baseline']:7.2f}")


if __name__ == "__main__":
    main()
