"""The Python API: docs/api.md's examples run as written, and `import costcalc` stays cheap."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import costcalc
from costcalc.errors import UsageError
from tests.conftest import FIXTURES, ROOT, Invoke


def test_docs_examples_run() -> None:
    result = doctest.testfile(
        str(ROOT / "docs" / "api.md"),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert result.failed == 0
    assert result.attempted >= 12


def test_import_is_cheap() -> None:
    code = (
        "import sys, costcalc; "
        "print(sorted(m for m in sys.modules if m.startswith(('costcalc', 'pydantic', 'yaml', "
        "'typer', 'rich', 'huggingface_hub'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['costcalc']"


def as_json(data: dict[str, Any]) -> Any:
    return json.loads(json.dumps(data))


def test_results_are_the_cli_s(cli: Invoke) -> None:
    shown = json.loads(cli("params", "-p", "qwen3-8b", "-T", "512", "-f", "json").stdout)
    model = costcalc.load("qwen3-8b")
    counted = costcalc.count(model).to_dict() | costcalc.count_macs(model, length=512).to_dict()
    assert as_json(counted) == shown
    memory = json.loads(
        cli("memory", "-p", "qwen3-8b", "--train", "-T", "512", "-f", "json").stdout
    )
    assert as_json(costcalc.count_memory(model, train=True, length=512).to_dict()) == memory


def test_sources(tmp_path: Path) -> None:
    config = FIXTURES / "hf" / "gpt2.json"
    by_path = costcalc.load(config)
    assert by_path.format == "huggingface"
    assert costcalc.load(str(config)).spec == by_path.spec
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_bytes(config.read_bytes())
    assert costcalc.count(folder).parameters.total == 124_439_808
    assert costcalc.load(by_path) is by_path
    with pytest.raises(UsageError, match="overrides"):
        costcalc.load(by_path, n_layers=2)


def test_misuse_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="go together"):
        costcalc.count_macs("gpt2-small", prompt=10)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        costcalc.nothing  # noqa: B018


def test_the_attention_kernel_reaches_memory_and_macs() -> None:
    # GPT-2's eager attention keeps the bf16 T x T probabilities (L x 2 B H T^2 bytes), sdpa
    # recomputes them and keeps an fp32 log-sum-exp instead (L x 4 B H T)
    eager = costcalc.count_memory("gpt2-small", train=True, length=256, attention="eager")
    sdpa = costcalc.count_memory("gpt2-small", train=True, length=256, attention="sdpa")
    difference = eager.report.bytes_total - sdpa.report.bytes_total
    assert difference == 12 * (2 * 12 * 256 * 256 - 4 * 12 * 256)
    flash = costcalc.count_macs("gpt2-small", length=256, attention="flash")
    plain = costcalc.count_macs("gpt2-small", length=256)
    assert flash.forward is not None and plain.forward is not None
    # FlashAttention's backward recomputes QK^T: half the attention pairs (Dao 2023, Alg. 2)
    extra = flash.training(flash.forward) - plain.training(plain.forward)
    assert extra == flash.forward.attention_pair // 2


def test_count_lora_is_the_cli_s(cli: Invoke) -> None:
    args = ["-t", "q_proj,v_proj", "-r", "16", "--train", "--base-dtype", "nf4", "-T", "256"]
    plan = ["--fsdp", "full", "--gpus", "4", "--gpu", "rtx-4090"]
    shown = json.loads(cli("lora", "-p", "qwen3-8b", *args, *plan, "-f", "json").stdout)
    counted = costcalc.count_lora(
        "qwen3-8b",
        targets=["q_proj", "v_proj"],
        rank=16,
        train=True,
        base_dtype="nf4",
        length=256,
        fsdp="full",
        gpus=4,
        gpu="rtx-4090",
    )
    assert as_json(counted.to_dict()) == shown
    assert counted.memory is not None and counted.memory.plan is not None
    plain = costcalc.count_lora("qwen3-8b", targets=["q_proj"])
    assert plain.memory is None and plain.fits is None
    with pytest.raises(UsageError, match="add train=True"):
        costcalc.count_lora("qwen3-8b", targets=["q_proj"], gpus=2)
    with pytest.raises(UsageError, match="targets is str 'q_proj'; expected a list of strings"):
        costcalc.count_lora("qwen3-8b", targets="q_proj")
