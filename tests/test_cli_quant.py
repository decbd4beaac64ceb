"""Quantized formats wherever a weight dtype is accepted: params, memory, check and budgets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costcalc.loaders import load_file, load_preset
from costcalc.quant import format_bytes
from costcalc.weight_format import parse_format
from tests.conftest import FIXTURES, ROOT, Invoke

PRESETS = ROOT / "presets"

LLAMA = load_preset("llama-3.1-8b").spec


def test_memory_labels_int4_raw(cli: Invoke) -> None:
    table = cli("memory", "-p", "llama-3.1-8b", "--dtype", "int4", "-T", "16")
    assert "int4 (raw, no" in table.stdout
    data = json.loads(cli("memory", "-p", "llama-3.1-8b", "--dtype", "int4", "-f", "json").stdout)
    assert data["weights"]["description"] == "int4 (raw, no scales)"


@pytest.mark.parametrize("fmt", ["nf4", "gptq-int4:g128", "awq-int4", "fp8-block", "gguf:Q4_K_M"])
def test_memory_weights_are_the_format_bytes(cli: Invoke, fmt: str) -> None:
    result = cli("memory", "-p", "llama-3.1-8b", "--dtype", fmt, "-T", "16", "-f", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["weights"]["dtype"] == parse_format(fmt).label
    assert data["weights"]["bytes"] == format_bytes(LLAMA, parse_format(fmt)).bytes
    assert data["kv_cache"]["dtype"] == "bf16"


def test_params_adds_a_row_per_format(cli: Invoke) -> None:
    args = ("params", "-p", "llama-3.1-8b", "--dtype", "gptq-int4", "--dtype", "gguf:Q5_K_M")
    data = json.loads(cli(*args, "-f", "json").stdout)
    assert set(data["bytes"]) == {
        *("fp32", "fp16", "bf16", "fp8", "int8", "int4"),
        *("gptq-int4:g128", "gguf:Q5_K_M"),
    }
    assert data["bytes"]["gguf:Q5_K_M"] == format_bytes(LLAMA, parse_format("gguf:Q5_K_M")).bytes
    table = cli(*args).stdout
    assert "gptq-int4:g128" in table and "int4 (raw, no scales)" in table


def test_check_measures_the_budget_in_a_format(cli: Invoke, tmp_path: Path) -> None:
    config = FIXTURES / "hf" / "llama-3.1-8b.json"
    nf4 = format_bytes(load_file(config).spec, parse_format("nf4")).bytes
    ok = cli("check", str(config), "--max-weight-bytes", f"{nf4}B", "--dtype", "nf4")
    over = cli("check", str(config), "--max-weight-bytes", f"{nf4 - 1}B", "--dtype", "nf4")
    assert ok.exit_code == 0, ok.stdout + ok.stderr
    assert over.exit_code == 1
    assert "nf4 weights take 5,702,540,160 bytes" in " ".join(over.stdout.split())


def test_a_budget_names_a_format(cli: Invoke, tmp_path: Path) -> None:
    text = (PRESETS / "gpt2-small.yaml").read_text()
    path = tmp_path / "model.yaml"
    path.write_text(text + "budget:\n  max_weight_bytes: 100MB\n  dtype: gguf:Q4_K_M\n")
    q4 = format_bytes(load_file(path).spec, parse_format("gguf:Q4_K_M")).bytes
    assert q4 < 100 * 10**6
    assert cli("check", str(path)).exit_code == 0
    path.write_text(text + "budget:\n  max_weight_bytes: 100MB\n  dtype: gguf:Q3_X\n")
    result = cli("check", str(path), "--format", "json")
    [record] = json.loads(result.stdout)
    assert "unknown GGUF type 'Q3_X'" in record["findings"][0]["message"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--dtype", "gguf:Q3_X"), "unknown GGUF type 'Q3_X'"),
        (("--dtype", "nf4:+c_attn"), "'c_attn' names no matrix"),
        (("--dtype", "nf4", "--train", "-T", "16"), "costcalc lora --base-dtype"),
    ],
)
def test_bad_formats_are_one_clear_error(cli: Invoke, args: tuple[str, ...], message: str) -> None:
    result = cli("memory", "-p", "llama-3.1-8b", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
