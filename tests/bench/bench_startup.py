"""Start-up cost of `costcalc params -p gpt2-small -f json` against importing its dependencies.

Run: python tests/bench/bench_startup.py [runs] [--source]. Prints the median wall time of each
and their ratios to the baseline, the runs interleaved: the median of the ratios round by round,
each pair timed in the same round, so that machine load cancels out.

The baseline is what any program built on the same four libraries pays: `import typer, rich,
pydantic, yaml` and validating one small pydantic model (pydantic builds most of its machinery
lazily, on the first model). Target: the JSON command at most 1.15 x that baseline. The table
command is shown too; it also imports Rich's table machinery, which JSON output never does. So
is every shipped preset side by side in JSON: what each model adds after the first.

costcalc's entry point freezes the objects built by the end of a run (``gc.freeze``), so that
the collector does not walk them once more at shutdown, as it does for the baseline's. The JSON
command is also timed without that, through the same Typer app called directly: the work of
start-up alone.

Every process reads compiled bytecode, as an installed costcalc and its dependencies do
(installed.py); ``--source`` measures the case of an editable install never written to instead:
every process compiles the modules it imports that have no cache beside them.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from installed import child_env

BASELINE = [
    sys.executable,
    "-c",
    "import typer, rich, pydantic, yaml\n"
    "class M(pydantic.BaseModel):\n    x: int\n"
    "M.model_validate({'x': 1})",
]
JSON = [sys.executable, "-m", "costcalc", "params", "-p", "gpt2-small", "-f", "json"]
TABLE = [sys.executable, "-m", "costcalc", "params", "-p", "gpt2-small"]
UNFROZEN = [
    sys.executable,
    "-c",
    "import sys\nfrom costcalc.cli.app import app\napp(sys.argv[1:], prog_name='costcalc')",
    *JSON[3:],
]
PRESETS = sorted(
    path.stem
    for path in (Path(__file__).resolve().parents[2] / "presets").glob("*.yaml")
    if path.stem != "aliases"
)
EVERY = [
    sys.executable,
    "-m",
    "costcalc",
    "params",
    *(f"-p{name}" for name in PRESETS),
    "-f",
    "json",
]
TARGET = 1.15


def timings(
    commands: dict[str, list[str]], runs: int, env: dict[str, str]
) -> dict[str, list[float]]:
    """The wall time of each command in each run, the runs interleaved."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True, env=env)
            times[name].append(time.perf_counter() - start)
    return times


def paired(times: dict[str, list[float]], name: str) -> float:
    """The median of ``name``'s time over the baseline's, round by round (each pair timed in
    the same round, under the same load)."""
    return statistics.median(a / b for a, b in zip(times[name], times["baseline"], strict=True))


def main() -> None:
    args = sys.argv[1:]
    source = "--source" in args
    runs = int(next((a for a in args if a != "--source"), 15))
    with child_env(source) as env:
        commands = {
            "baseline": BASELINE,
            "json": JSON,
            "unfrozen": UNFROZEN,
            "table": TABLE,
            "every": EVERY,
        }
        timings(commands, 2, env)  # warm the file cache (and fill the bytecode cache)
        times = timings(commands, runs, env)
    m = {name: statistics.median(values) for name, values in times.items()}
    print("bytecode: " + ("compiled in every run (--source)" if source else "cached, as installed"))
    ratio = paired(times, "json")
    print(f"imports + one pydantic model:        {m['baseline'] * 1000:7.1f} ms (median of {runs})")
    print(f"params -p gpt2-small -f json:        {m['json'] * 1000:7.1f} ms")
    print(f"params -p gpt2-small (table):        {m['table'] * 1000:7.1f} ms")
    verdict = "within" if ratio <= TARGET else "over"
    print(f"ratio json / baseline:               {ratio:7.2f} ({verdict} the {TARGET} target)")
    print(f"ratio table / baseline:              {paired(times, 'table'):7.2f}")
    unfrozen = paired(times, "unfrozen")
    print(f"ratio json / baseline, no gc.freeze: {unfrozen:7.2f} (start-up work alone)")
    extra = (m["every"] - m["json"]) / (len(PRESETS) - 1)
    print(f"all {len(PRESETS)} presets, -f json:          {m['every'] * 1000:7.1f} ms")
    print(f"each model after the first:          {extra * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
