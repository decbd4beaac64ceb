"""Output a person and a program can trust: tables never cut a figure or a name at any width,
CSV is tidy data of plain integers, JSON Lines is one record per model, Markdown has no charts,
and a closed pipe ends quietly."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from costcalc.cli.memory import BAR_WIDTH
from costcalc.render import Grid, column_groups, print_grids
from tests.conftest import ROOT, Invoke

FIGURE = re.compile(r"\d(?:[\d,.]*\d)?")

SEVERAL = {
    "params": ["params", "-p", "llama-3.1-8b", "-p", "qwen2.5-7b", "-p", "mistral-7b", "-p",
               "gemma-2b", "-T", "8192", "--prompt", "1000", "--generate", "100"],
    "params-layered": ["params", "-p", "deepseek-v3", "-p", "gpt-oss-20b", "-p", "gemma-3-1b"],
    "memory": ["memory", "-p", "llama-3.1-8b", "-p", "qwen2.5-7b", "--train", "-T", "8192",
               "-B", "8", "--fits", "80GB"],
    "memory-parallel": ["memory", "-p", "llama-3.1-8b", "--train", "-T", "4096", "--gpus", "16",
                        "--tp", "2", "--pp", "4", "--zero", "1", "--gpu", "h100-sxm"],
    "memory-context": ["memory", "-p", "llama-3.1-8b", "--train", "-T", "32768", "--gpus", "16",
                       "--tp", "2", "--cp", "4", "--zero", "1", "--gpu", "h100-sxm"],
    "memory-inference": ["memory", "-p", "deepseek-v3", "-p", "gpt-oss-120b", "-B", "64"],
    "scale": ["scale", "--d", "256", "1024", "4096", "16384", "65536", "-T", "512"],
    "scale-preset": ["scale", "-p", "llama-3.1-8b", "--length", "1024", "8192", "131072"],
    "heads": ["heads", "--d", "12288"],
    "heads-check": ["heads", "--d", "4096", "--h", "7", "--kv-heads", "8"],
    "presets": ["presets"],
    "plan-inference": ["plan", "-p", "llama-3.1-8b", "-p", "qwen2.5-0.5b", "--gpu", "h100-sxm",
                       "--prompt", "100", "--generate", "28", "-B", "8"],
    "check": ["check", str(ROOT / "presets"), "--max-params", "1T"],
}  # fmt: skip


def _render(cli: Invoke, monkeypatch: pytest.MonkeyPatch, columns: int, args: list[str]) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    return cli(*args).stdout


def _figures(text: str) -> set[str]:
    return set(FIGURE.findall(text))


@pytest.mark.parametrize("columns", [60, 80, 120])
@pytest.mark.parametrize("command", sorted(SEVERAL))
def test_every_figure_is_whole_at_any_width(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch, columns: int, command: str
) -> None:
    args = SEVERAL[command]
    wide = _render(cli, monkeypatch, 400, args)
    narrow = _render(cli, monkeypatch, columns, args)
    assert "…" not in narrow
    if command != "check":  # check's lines are whole and left to the terminal to wrap
        assert max(map(len, narrow.splitlines())) <= columns
    whole, shown = _figures(wide), _figures(narrow)
    # Every figure of the wide rendering is in the narrow one, on one line, and the narrow one
    # has no piece of a figure (only "part 1 of 2" may add a small number).
    assert whole <= shown
    assert all(len(extra) == 1 for extra in shown - whole), shown - whole


TABLE_EDGES = {"┏": "┓", "┃": "┃", "┡": "┩", "│": "│", "└": "┘"}
"""A Rich table line's first box character and the one that closes it on the right."""


@pytest.mark.parametrize("columns", [60, 80, 120])
@pytest.mark.parametrize("command", sorted(SEVERAL))
def test_no_table_or_chart_is_cut_at_its_right_edge(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch, columns: int, command: str
) -> None:
    lines = _render(cli, monkeypatch, columns, SEVERAL[command]).splitlines()
    for line in (line.rstrip() for line in lines if line[:1] in TABLE_EDGES):
        assert len(line) <= columns and line.endswith(TABLE_EDGES[line[0]]), line


@pytest.mark.parametrize("columns", [60, 80, 120])
@pytest.mark.parametrize("command", ["memory", "memory-parallel", "memory-context"])
def test_where_memory_goes_shows_every_bar_whole(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch, columns: int, command: str
) -> None:
    text = _render(cli, monkeypatch, columns, SEVERAL[command])
    # a chart too wide for the terminal is split into parts: each part up to its bottom edge
    part = r"Where \S+ memory goes.*?\n└[─┴]+┘"
    for chart in re.findall(rf"{part}(?:\n(?:\(part \d+ of \d+\)|{part}))*", text, re.S):
        bars = re.findall(r"│ ([█▏][█·]*) │$", chart, re.M)
        assert bars and all(len(bar) == BAR_WIDTH for bar in bars), chart
        assert max(map(len, chart.splitlines())) <= columns


def test_a_wide_comparison_is_split_into_tables(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _render(cli, monkeypatch, 80, SEVERAL["params"])
    assert "Parameters (part 1 of 2)" in table and "Parameters (part 2 of 2)" in table
    assert "mistral-7b-v0.1" in table and "7,241,732,096" in table


def test_figures_wider_than_the_terminal_get_a_line_each(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    figure = f"{7**60:,}"  # 68 characters
    grid = Grid("Huge", ["", "model-a", "model-b"], [["total", figure, "1"]])
    assert column_groups(grid, 60) is None
    assert column_groups(grid, 85) == [[1], [2]]
    assert column_groups(grid, 200) == [[1, 2]]
    monkeypatch.setenv("COLUMNS", "70")
    print_grids([grid])
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == ["Huge", "model-a", "total", f"  {figure}"]
    assert lines[4:] == ["model-b", "total  1"]


# CSV: tidy data


def _csv(cli: Invoke, *args: str) -> list[dict[str, str]]:
    result = cli(*args, "--format", "csv")
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


@pytest.mark.parametrize(
    "args",
    [
        ["params", "-p", "gpt2-small", "-p", "deepseek-v3", "-T", "128", "--prompt", "8",
         "--generate", "4"],
        ["memory", "-p", "gpt2-small", "-p", "qwen2.5-0.5b", "--train", "-T", "1024",
         "--fits", "24GiB"],
        ["memory", "-p", "deepseek-v3", "-p", "gpt-oss-20b", "-T", "4096"],
        ["scale", "--d", "256", "512", "1024"],
        ["heads", "--d", "768"],
        ["presets"],
        ["plan", "-p", "gpt2-small", "-p", "qwen2.5-0.5b", "--gpu", "l4", "--prompt", "64"],
    ],
)  # fmt: skip
def test_csv_loads_into_integers(cli: Invoke, args: list[str]) -> None:
    rows = _csv(cli, *args)
    assert rows and list(rows[0]) == ["model", "table", "quantity", "value", "unit", "dtype"]
    values = [int(row["value"]) for row in rows]  # no string cleaning
    assert len(values) == len(rows)
    keys = [(row["model"], row["table"], row["quantity"]) for row in rows]
    assert len(set(keys)) == len(keys), "one row per model, table and quantity"
    for row in rows:
        assert row["quantity"] == row["quantity"].strip() and row["quantity"]
        assert "," not in row["value"] and "█" not in "".join(row.values())
        assert row["model"] != "model", "one header for the whole stream"


def test_csv_values_are_the_json_values(cli: Invoke) -> None:
    rows = _csv(cli, "params", "-p", "gpt2-small", "-p", "gpt2-medium")
    facts = {(r["model"], r["table"], r["quantity"]): (int(r["value"]), r["unit"]) for r in rows}
    assert facts["gpt2-small", "parameters", "total"] == (124_439_808, "parameters")
    assert facts["gpt2-medium", "parameters", "total"] == (354_823_168, "parameters")
    assert facts["gpt2-small", "parameters", "tying_saving"] == (38_597_376, "parameters")
    assert facts["gpt2-small", "bytes", "bf16"] == (248_879_616, "bytes")
    assert facts["gpt2-small", "parameters.stacks[0]", "layers"] == (12, "layers")


def test_memory_csv_units_and_dtypes(cli: Invoke) -> None:
    result = cli("memory", "-p", "gpt2-small", "--train", "-T", "128", "--fits", "1GB", "-f", "csv")
    assert result.exit_code == 1  # does not fit
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    by = {(r["table"], r["quantity"]): r for r in rows}
    assert by["weights", "bytes"]["unit"] == "bytes"
    assert by["weights", "bytes"]["dtype"] == "bf16"
    assert by["master_weights", "elements"]["dtype"] == "fp32"
    assert by["optimizer", "moment_elements"]["dtype"] == "fp32"
    assert by["setup", "length"]["unit"] == "tokens" and by["setup", "length"]["dtype"] == ""
    total = int(by["total", "bytes"]["value"])
    assert int(by["fits", "shortfall_bytes"]["value"]) == total - 10**9


def test_scale_csv_names_each_value(cli: Invoke) -> None:
    rows = _csv(cli, "scale", "--d", "256", "512")
    models = {row["model"] for row in rows}
    assert len(models) == 2 and any("D=512" in model for model in models)
    terms = {r["quantity"]: int(r["value"]) for r in rows if r["table"] == "terms"}
    assert len(terms) == 6


# JSON Lines


@pytest.mark.parametrize(
    ("args", "lines"),
    [
        (["params", "-p", "gpt2-small"], 1),
        (["params", "-p", "gpt2-small", "-p", "gpt2-medium", "-p", "mistral-7b"], 3),
        (["memory", "-p", "gpt2-small", "-T", "16"], 1),
        (["memory", "-p", "gpt2-small", "-p", "qwen2.5-0.5b", "-T", "16"], 2),
        (["scale", "--d", "256", "512", "1024"], 3),
        (["heads", "--d", "768", "--h", "12"], 1),
    ],
)
def test_jsonl_is_one_line_per_model(cli: Invoke, args: list[str], lines: int) -> None:
    result = cli(*args, "--format", "jsonl")
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == lines and all(isinstance(r, dict) for r in records)


def test_jsonl_records_are_the_json_records(cli: Invoke) -> None:
    args = ["params", "-p", "gpt2-small", "-p", "gpt2-medium"]
    whole = json.loads(cli(*args, "-f", "json").stdout)
    lines = [json.loads(line) for line in cli(*args, "-f", "jsonl").stdout.splitlines()]
    assert lines == whole


def test_presets_and_check_jsonl(cli: Invoke) -> None:
    presets = json.loads(cli("presets", "-f", "json").stdout)
    assert len(cli("presets", "-f", "jsonl").stdout.splitlines()) == len(presets)
    checked = json.loads(cli("check", str(ROOT / "presets"), "-f", "json").stdout)
    lines = cli("check", str(ROOT / "presets"), "-f", "jsonl").stdout.splitlines()
    assert [json.loads(line) for line in lines] == checked


def test_schema_and_presets_show_take_json(cli: Invoke, tmp_path: Path) -> None:
    schema = json.loads(cli("schema", "--format", "json").stdout)
    assert [json.loads(line) for line in cli("schema", "-f", "jsonl").stdout.splitlines()] == [
        schema
    ]
    shown = cli("presets", "show", "gpt2-small", "--format", "json")
    assert shown.exit_code == 0
    path = tmp_path / "gpt2.json"
    path.write_text(shown.stdout)
    data = json.loads(cli("params", "-c", str(path), "-f", "json").stdout)
    assert data["parameters"]["total"] == 124_439_808
    assert len(cli("presets", "show", "gpt2-small", "-f", "jsonl").stdout.splitlines()) == 1
    assert cli("schema", "-f", "table").exit_code == 2


# Markdown: the tables, no charts


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "-p", "gpt2-small", "--train", "-T", "128"],
        ["scale", "--d", "256", "512"],
        ["plan", "-p", "gpt2-small", "--gpu", "l4", "--prompt", "64"],
    ],
)
def test_markdown_leaves_charts_out(cli: Invoke, args: list[str]) -> None:
    md = cli(*args, "--format", "markdown").stdout
    assert "| --- |" in md
    assert "█" not in md and "·" not in md and "▏" not in md
    table = cli(*args).stdout
    assert "█" in table  # the terminal keeps its chart


# A closed pipe


def _script() -> str:
    script = shutil.which("costcalc", path=str(Path(sys.executable).parent))
    assert script is not None
    return script


def test_closed_pipe_ends_quietly_by_sigpipe(tmp_path: Path) -> None:
    reader = subprocess.Popen(
        [_script(), "params", "-p", "gpt2-small", "-p", "gpt2-xl"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()
    assert reader.wait(timeout=60) == -signal.SIGPIPE
    with reader.stderr:
        assert reader.stderr.read() == b""


def test_head_sees_no_error(tmp_path: Path) -> None:
    command = f"set -o pipefail; '{_script()}' params -p gpt2-small -f json | head -1"
    done = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "80"},
        timeout=60,
    )
    assert done.stdout == "{\n"
    assert done.stderr == ""
    assert done.returncode in (0, 128 + signal.SIGPIPE)  # 0 when all of it fit the pipe
