"""The small things a newcomer trips over: -h, plurals, a folder's name, one decode row for one
sequence, figures right-aligned in mixed columns, Markdown sub-rows that keep their indent, the
presets list at 80 columns."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, Invoke


@pytest.mark.parametrize("command", [[], ["params"], ["presets", "show"], ["completion"]])
def test_h_is_help(cli: Invoke, command: list[str]) -> None:
    short, long = cli(*command, "-h"), cli(*command, "--help")
    assert short.exit_code == long.exit_code == 0
    assert short.stdout == long.stdout and "Usage: " in short.stdout


def test_one_micro_batch_and_one_expert(cli: Invoke) -> None:
    args = ["memory", "-p", "mixtral-8x7b", "--train", "-T", "1024", "--tp", "2", "--ep", "8"]
    out = " ".join(cli(*args, "--gpus", "16").stdout.split())
    assert "1 micro-batch in flight" in out and "1 micro-batches" not in out
    assert "Expert parallel over 8: 1 expert of each MoE layer per GPU" in out
    out = " ".join(cli(*args[:-2], "--ep", "4", "--gpus", "8").stdout.split())
    assert "Expert parallel over 4: 2 experts of each MoE layer per GPU" in out


def test_a_model_read_in_its_own_folder_is_named_after_it(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "my-gpt"
    folder.mkdir()
    shutil.copy(FIXTURES / "hf" / "gpt2.json", folder / "config.json")
    monkeypatch.chdir(folder)
    for source in (".", "config.json", "./config.json"):
        data = json.loads(cli("params", "-c", source, "-f", "json").stdout)
        assert data["name"] == "my-gpt", source
    monkeypatch.chdir(tmp_path)
    assert json.loads(cli("params", "-c", "my-gpt", "-f", "json").stdout)["name"] == "my-gpt"


def test_one_sequence_has_one_decode_row(cli: Invoke) -> None:
    args = ["plan", "-p", "qwen2.5-0.5b", "--gpu", "l4", "--prompt", "1k", "--generate", "256"]
    one = cli(*args).stdout
    assert one.count("decode tokens/s") == 1 and "decode tokens/s, batch 1 (memory-bound)" in one
    eight = cli(*args, "--batch", "8").stdout
    assert "decode tokens/s per sequence (memory-bound)" in eight
    assert "decode tokens/s, batch 8" in eight


def test_figures_are_right_aligned_beside_words(cli: Invoke) -> None:
    lines = cli("params", "-p", "gpt-oss-20b").stdout.splitlines()
    total = next(line for line in lines if line.startswith("│ total "))
    final = next(line for line in lines if line.startswith("│ final norm "))
    # the column also holds "by kind, below": its figures still end at its right edge
    assert total.index(" │", 2) == final.index(" │", 2)
    assert final.split("│")[2].endswith("2,880 ")


def test_untied_models_have_no_tying_row(cli: Invoke) -> None:
    untied = cli("params", "-p", "qwen3-8b").stdout
    assert "tying saves" not in untied and "is not tied; tying would save" in untied
    both = cli("params", "-p", "qwen3-8b", "-p", "gpt2-small").stdout
    row = next(line for line in both.splitlines() if "tying saves" in line)
    assert row.split("│")[2].strip() == "-" and row.split("│")[3].strip() == "38,597,376"


def test_markdown_keeps_the_indentation_of_sub_rows(cli: Invoke) -> None:
    markdown = cli("params", "-p", "gpt2-small", "-f", "markdown").stdout
    assert "| &nbsp;&nbsp;attention (per block) | 2,362,368 |" in markdown
    assert "|   attention" not in markdown


def test_presets_fit_80_columns(cli: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    listing = cli("presets").stdout.splitlines()
    assert len(listing) < 70
    assert all(len(line) <= 80 for line in listing)
