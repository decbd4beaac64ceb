"""What memory's weights leave out, and say so: buffers, the tensors a model holds beside its
parameters, and in 16 bits the parameters a class keeps in fp32.

Golden data: tests/golden/buffers.json, written by tests/reference/make_buffers.py (torch 2.13.0,
transformers 5.24.0): every golden fixture built on the meta device in bfloat16, its buffers by
name pattern (numel, dtype, persistent), their totals, the parameters not in bfloat16 and
``model.get_memory_footprint()``.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from costcalc.anatomy.model import sinusoidal_table_elements
from costcalc.errors import CostcalcError
from costcalc.loaders import load_file
from costcalc.memory import weight_bytes
from costcalc.spec import ModelSpec
from tests.conftest import GOLDEN, ROOT, Invoke

BYTES = {"float32": 4, "bfloat16": 2}
TABLES = ("embed_positions.weights", "pos_encoding")
"""The names of the sinusoidal position tables: XGLM's and Kosmos-2's, CTRL's."""


@cache
def golden() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / "buffers.json").read_text(encoding="utf-8"))
    return data


def configs() -> dict[str, str]:
    """Record name -> the fixture config the record was built from."""
    found: dict[str, str] = {}
    for name in ("hf_reference.json", "hf_families.json"):
        models = json.loads((GOLDEN / name).read_text(encoding="utf-8"))["models"]
        found.update({record: data["config"] for record, data in models.items()})
    return found


NAMES = sorted(golden()["models"])


def spec_of(name: str) -> ModelSpec:
    try:
        return load_file(ROOT / configs()[name]).spec
    except CostcalcError as exc:
        pytest.skip(f"costcalc does not read {name}: {exc}")


def test_the_golden_data_names_its_source() -> None:
    data = golden()
    assert data["generator"] == "tests/reference/make_buffers.py"
    versions = (data["torch"], data["transformers"], data["dtype"])
    assert versions == ("2.13.0+cpu", "5.24.0", "bfloat16")
    assert set(NAMES) == set(configs()), "a golden fixture without its buffers"
    assert not [name for name in NAMES if "error" in golden()["models"][name]]


def kept_fp32_extra(record: dict[str, Any]) -> int:
    """Bytes the parameters kept out of bfloat16 take beyond 2 each."""
    rows = record["parameters_not_in_dtype"]
    return sum(count * numel * (BYTES[dtype] - 2) for _, count, numel, dtype, _ in rows)


@pytest.mark.parametrize("name", NAMES)
def test_the_weights_are_the_footprint_less_what_the_note_names(name: str) -> None:
    """transformers' get_memory_footprint() at a bf16 load is costcalc's bf16 weights, the
    buffers and the 2 more bytes of each parameter kept in fp32: nothing else differs."""
    record = golden()["models"][name]
    assert record["parameter_bytes"] + record["buffer_bytes"] == record["memory_footprint"]
    weights = weight_bytes(spec_of(name), "bf16")
    extra = kept_fp32_extra(record)
    assert weights + extra + record["buffer_bytes"] == record["memory_footprint"]


def test_deepseek_v3_keeps_its_routers_in_fp32() -> None:
    """The example the note names: 58 routers of 256 x 7,168 (mlp.gate.weight,
    _keep_in_fp32_modules_strict of DeepseekV3PreTrainedModel)."""
    record = golden()["models"]["deepseek-v3"]
    assert record["parameters_not_in_dtype"] == [
        ["model.layers.*.mlp.gate.weight", 58, 256 * 7168, "float32", True]
    ]
    assert kept_fp32_extra(record) == 212_860_928


@pytest.mark.parametrize("name", NAMES)
def test_the_sinusoidal_table_is_the_buffer_transformers_makes(name: str) -> None:
    rows = golden()["models"][name]["buffers"]
    tables = [numel * count for pattern, count, numel, _, _ in rows if pattern.endswith(TABLES)]
    assert sinusoidal_table_elements(spec_of(name)) == sum(tables)
    assert all(not persistent for pattern, *_, persistent in rows if pattern.endswith(TABLES))


def test_the_note_states_the_sizes_it_names() -> None:
    """4,096 bytes or less in most models, up to 591,799,552 (MiniMax-Text-01's decay tables)."""
    sizes = {name: r["buffer_bytes"] for name, r in golden()["models"].items()}
    assert sum(size <= 4 * 1024 for size in sizes.values()) > len(sizes) / 2
    largest = max(sizes, key=sizes.__getitem__)
    assert (largest, sizes[largest], round(sizes[largest] / 2**20)) == (
        "minimax-text-01",
        591_799_552,
        564,
    )


def test_memory_says_it_leaves_the_buffers_out(cli: Invoke) -> None:
    for args in (("-T", "16"), ("--train", "-T", "16"), ("--dtype", "fp32", "-T", "16")):
        out = " ".join(cli("memory", "-p", "qwen2.5-0.5b", *args).stdout.split())
        assert "Not counted: buffers, the tensors a loaded model holds beside its parameters" in out
        assert "4,096 bytes or less in most models, up to 591,799,552 (MiniMax-Text-01)" in out
        assert "sinusoidal position table," not in out
        assert ("keeps in fp32" in out) == ("fp32" not in args)
    xglm = str(ROOT / configs()["xglm-564m"])
    out = " ".join(cli("memory", "-c", xglm, "-T", "16").stdout.split())
    assert "include a sinusoidal position table, 2,050 x 1,024 = 2,099,200 values" in out


DOC_FIGURES = {
    "llama-3.1-8b": "Llama-3.1-8B 512 bytes",
    "deepseek-v3": "DeepSeek-V3 59,648 bytes",
    "openai-gpt": "GPT-1 6,295,552 bytes",
    "gpt-neo-125m": "GPT-Neo 125M 50,331,648",
    "starcoderbase-1b": "StarCoderBase-1B 67,108,864",
    "xglm-564m": "XGLM 564M 4,198,400 bytes",
    "minimax-text-01": "MiniMax-Text-01's decay tables (591,799,552 bytes",
}
"""docs/memory.md's buffer figures, each a model's buffer bytes."""


def test_the_docs_figures_are_the_golden_ones() -> None:
    doc = " ".join((ROOT / "docs" / "memory.md").read_text(encoding="utf-8").split())
    models = golden()["models"]
    for name, text in DOC_FIGURES.items():
        assert text in doc
        assert f"{models[name]['buffer_bytes']:,}" in text, name
    small = sum(r["buffer_bytes"] <= 4 * 1024 for r in models.values())
    assert f"{small} of the {len(models)} models hold 4 KiB or less" in doc
    kept = sum(bool(r["parameters_not_in_dtype"]) for r in models.values())
    assert f"{kept} of the {len(models)} models keep some at a bf16 load" in doc
    assert f"take {kept_fp32_extra(models['deepseek-v3']):,} bytes more" in doc
    masks = {
        "gpt-neo-125m": ["transformer.h.*.attn.attention.bias", 12, 2048 * 2048, "bool", False],
        "starcoderbase-1b": ["transformer.bias", 1, 8192 * 8192, "bool", False],
        "openai-gpt": ["transformer.h.*.attn.bias", 12, 512 * 512, "bfloat16", False],
    }
    for name, row in masks.items():
        assert row in models[name]["buffers"], name
