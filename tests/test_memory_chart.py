"""The per-GPU memory chart of a parallel plan: bars stacked by component whose parts add up to
each stage's total, drawn to scale."""

from __future__ import annotations

import json
from fractions import Fraction

from costcalc.cli.memory import stacked_bar
from costcalc.loaders import load_preset
from costcalc.memory import memory_report, memory_setup
from costcalc.memory_results import stacked_parts
from costcalc.parallel import parallel_plan, stage_reports
from costcalc.units import format_bytes
from tests.conftest import Invoke

H100_USABLE = 85_045_477_376 - 512 * 2**20
"""An H100's CUDA-visible memory less the CUDA context's 512 MiB: what --gpu h100-sxm gives."""


def _cells(part: int) -> int:
    """Cells of 24 for ``part`` bytes of an H100's usable memory, half up."""
    return int(Fraction(part * 24, H100_USABLE) + Fraction(1, 2))


def test_stacked_bar_by_hand() -> None:
    # 10 + 20 + 30 of 120 bytes on 12 cells: ends at cells 1, 3, 6; 6 dots after
    assert stacked_bar([10, 20, 30], ["a", "b", "c"], 120, 12) == "abbccc······"
    # running totals round to the nearest cell: 5/120 x 12 = 0.5 rounds up; 14/120 x 12 = 1.4
    # ends at cell 1 too, so b is too small to show
    assert stacked_bar([5, 9], ["a", "b"], 120, 12) == "a···········"
    assert stacked_bar([5, 10], ["a", "b"], 120, 12) == "ab··········"  # 1.5 rounds up
    assert stacked_bar([120], ["─"], 120, 12) == "─" * 12
    assert stacked_bar([0], ["a"], 0, 4) == "····"


ARGS = ["memory", "-p", "llama-3.1-8b", "--train", "-T", "4096", "--gpus", "16", "--tp", "2"]
ARGS += ["--pp", "4", "--zero", "1", "--gpu", "h100-sxm"]


def test_stage_bars_add_up_to_each_stage(cli: Invoke) -> None:
    spec = load_preset("llama-3.1-8b").spec
    setup = memory_setup(dtype="bf16", train=True, batch=1, length=4096)
    plan = parallel_plan(16, 1, None, None, 2, 4)
    reports = stage_reports(spec, memory_report(spec, setup), plan)
    for report in reports:
        parts = dict(stacked_parts(report))
        assert sum(parts.values()) == report.bytes_total
        assert parts["optimizer"] == report.bytes_master_weights + report.bytes_optimizer
    table = cli(*ARGS).stdout
    chart = table[table.index("Memory per GPU of llama-3.1-8b, by component") :]
    for number, report in enumerate(reports, 1):
        line = next(row for row in chart.splitlines() if f"stage {number} " in row)
        assert format_bytes(report.bytes_total, "iec") in line
        drawn = line.split("│")[3].strip()
        cells = [dict(stacked_parts(report))[name] for name in ("weights", "gradients")]
        assert len(drawn) == 24 and drawn.count("·") == 24 - _cells(report.bytes_total)
        assert drawn.count("█") == _cells(cells[0])
        assert drawn.count("▓") == _cells(cells[0] + cells[1]) - _cells(cells[0])
    assert "GPU memory" in chart and format_bytes(H100_USABLE, "iec") in chart
    # the JSON keeps the largest stage only, as before
    data = json.loads(cli(*ARGS, "-f", "json").stdout)
    assert data["total"]["bytes"] == max(r.bytes_total for r in reports)
    assert (
        data["parallel"]["pipeline_stage"]
        == 0
        == reports.index(max(reports, key=lambda r: r.bytes_total))
    )


def test_markdown_leaves_the_stage_chart_out(cli: Invoke) -> None:
    assert "by component" not in cli(*ARGS, "-f", "markdown").stdout
