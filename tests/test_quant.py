"""Quantized weight bytes against the toolkits (tests/golden/quant_reference.json, written by
tests/reference/make_quant_reference.py running bitsandbytes, AutoAWQ, AutoGPTQ and gguf)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costcalc.errors import UsageError
from costcalc.gguf_mix import GGML_QUANT_SIZES, type_bytes, use_more_bits
from costcalc.loaders import load_preset
from costcalc.quant import (
    awq_bytes,
    format_bytes,
    fp8_bytes,
    gptq_bytes,
    int8_bytes,
    nf4_bytes,
    parse_format,
)
from costcalc.units import dtype_bytes

GOLDEN = json.loads((Path(__file__).parent / "golden" / "quant_reference.json").read_text())
LLAMA = load_preset("llama-3.1-8b").spec


def _ids(cases: list[dict]) -> list[str]:
    return [
        f"{c['format']}-{c['shape'][0]}x{c['shape'][1]}-{c.get('group', c.get('double_quant'))}"
        for c in cases
    ]


@pytest.mark.parametrize(
    "case", GOLDEN["bitsandbytes"]["cases"], ids=_ids(GOLDEN["bitsandbytes"]["cases"])
)
def test_bitsandbytes_bytes_equal_the_library(case: dict) -> None:
    """bitsandbytes 0.50.2 (CPU backend) quantized each weight; costcalc gives the same bytes."""
    out, inp = case["shape"]
    if case["format"] == "llm-int8":
        assert int8_bytes(out, inp) == case["bytes"]
    else:
        assert nf4_bytes(out * inp, case["double_quant"]) == case["bytes"]


@pytest.mark.parametrize("case", GOLDEN["gptq"]["cases"], ids=_ids(GOLDEN["gptq"]["cases"]))
def test_gptq_bytes_equal_autogptq_pack(case: dict) -> None:
    """AutoGPTQ 0.7.1 QuantLinear.pack: qweight, qzeros, scales, g_idx."""
    out, inp = case["shape"]
    group = None if case["group"] == -1 else case["group"]
    assert gptq_bytes(out, inp, int(case["format"][-1]), group) == case["bytes"]
    assert case["tensors"]["g_idx"]["dtype"] == "int32"


@pytest.mark.parametrize("case", GOLDEN["awq"]["cases"], ids=_ids(GOLDEN["awq"]["cases"]))
def test_awq_bytes_equal_autoawq_pack(case: dict) -> None:
    """AutoAWQ 0.2.9 WQLinear_GEMM.from_linear: qweight, qzeros, scales (bias apart)."""
    out, inp = case["shape"]
    assert awq_bytes(out, inp, case["group"]) == case["bytes"]


def test_gguf_block_table_equals_gguf_py() -> None:
    for name, size in GOLDEN["gguf"]["quant_sizes"].items():
        assert GGML_QUANT_SIZES[name] == tuple(size), name


@pytest.mark.parametrize("tensor", GOLDEN["gguf"]["file_tensors"], ids=lambda t: t["name"])
def test_gguf_tensor_bytes_equal_a_written_file(tensor: dict) -> None:
    """A GGUF file written by gguf's GGUFWriter: each tensor's data size."""
    *rows, length = tensor["shape"]
    assert type_bytes(tensor["type"], rows[0] if rows else 1, length) == tensor["bytes"]


def test_fp8_block_scales_as_deepseek_v3() -> None:
    """DeepSeek-V3's q_b_proj, 24576 x 1536: weight_scale_inv is 192 x 12 fp32."""
    assert fp8_bytes(24576, 1536, "block") == 24576 * 1536 + 4 * 192 * 12
    assert fp8_bytes(7, 300, "block") == 7 * 300 + 4 * 1 * 3
    assert fp8_bytes(10, 20, "channel") == 200 + 40
    assert fp8_bytes(10, 20, "tensor") == 204


def test_use_more_bits_of_32_layers() -> None:
    """llama.cpp's use_more_bits over 32 layers: 0-3, 28-31 and every third from 6."""
    chosen = [i for i in range(32) if use_more_bits(i, 32)]
    assert chosen == [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]


def test_llama_q4_k_m_types() -> None:
    """Llama-3.1-8B Q4_K_M: output Q6_K, token table Q4_K, 16 attn_v and 16 ffn_down in Q6_K,
    norms F32; the rest Q4_K (33 Q6_K tensors, 193 Q4_K, 65 F32)."""
    rows = format_bytes(LLAMA, parse_format("gguf:Q4_K_M")).tensors
    kinds = {(t.name, t.kind): t.copies for t in rows}
    assert kinds[("lm_head.weight", "Q6_K")] == 1
    assert kinds[("embed_tokens.weight", "Q4_K")] == 1
    assert kinds[("attn.v_proj.weight", "Q6_K")] == 16
    assert kinds[("attn.v_proj.weight", "Q4_K")] == 16
    assert kinds[("mlp.down_proj.weight", "Q6_K")] == 16
    assert kinds[("attn.q_proj.weight", "Q4_K")] == 32
    assert kinds[("norm.weight", "F32")] == 65  # 2 per block and the final norm
    count = {kind: sum(t.copies for t in rows if t.kind == kind) for kind in ("Q6_K", "Q4_K")}
    assert count == {"Q6_K": 33, "Q4_K": 193}


def test_raw_int4_is_labelled_and_formats_exceed_it_by_their_metadata() -> None:
    """int4 is raw (no scales); NF4 and GPTQ of Llama-3.1-8B exceed it by exactly their
    metadata and the tensors they keep in 16 bits."""
    raw = format_bytes(LLAMA, parse_format("int4"))
    assert parse_format("int4").description == "int4 (raw, no scales)"
    P = sum(t.elements for t in raw.tensors)
    assert raw.bytes == P // 2
    for text, metadata_of in [
        ("nf4", lambda out, inp: nf4_bytes(out * inp, True) - out * inp // 2),
        ("gptq-int4:g128", lambda out, inp: gptq_bytes(out, inp, 4, 128) - out * inp // 2),
    ]:
        fb = format_bytes(LLAMA, parse_format(text))
        quantized = [t for t in fb.tensors if t.quantized]
        metadata = sum(t.copies * metadata_of(*t.shape) for t in quantized)
        kept = [t for t in fb.tensors if not t.quantized]
        kept_16 = sum(2 * t.elements for t in kept)
        assert fb.bytes - raw.bytes == metadata + kept_16 - sum(t.elements for t in kept) // 2
        assert {t.name for t in kept} >= {"embed_tokens.weight", "lm_head.weight", "norm.weight"}


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("nf4", "nf4"),
        ("nf4:no-dq", "nf4:no-dq"),
        ("gptq-int4", "gptq-int4:g128"),
        ("gptq-int8:g-1", "gptq-int8:g-1"),
        ("awq-int4:g64,+lm_head", "awq-int4:g64,+lm_head"),
        ("fp8-block", "fp8-block"),
        ("gguf:Q4_K_M", "gguf:Q4_K_M"),
        ("gguf:Q5_K_M,-lm_head", "gguf:Q5_K_M,-lm_head"),
        ("bf16", "bf16"),
    ],
)
def test_format_syntax(text: str, label: str) -> None:
    assert parse_format(text).label == label


@pytest.mark.parametrize(
    "text",
    [
        *("NF4", "gguf:q4_k_m", "int4:g128", "int3", "gguf:Q3_X", "gptq-int4:g0"),
        *("nf4:g128", "nf4:+lm_head,-lm_head", "awq-int8"),
    ],
)
def test_bad_formats_are_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_format(text)


def test_options_move_tensors() -> None:
    base = format_bytes(LLAMA, parse_format("nf4"))
    head = format_bytes(LLAMA, parse_format("nf4:+lm_head"))
    V, D = 128256, 4096
    assert base.bytes - head.bytes == 2 * V * D - nf4_bytes(V * D, True)
    with pytest.raises(UsageError, match="names no matrix"):
        format_bytes(LLAMA, parse_format("nf4:+c_attn"))
    with pytest.raises(UsageError, match="only vectors"):
        format_bytes(LLAMA, parse_format("nf4:+norm"))


def test_fp8_block_of_deepseek_v3_keeps_head_router_and_norms_in_bf16() -> None:
    spec = load_preset("deepseek-v3").spec
    fb = format_bytes(spec, parse_format("fp8-block"))
    kept = {t.name for t in fb.tensors if not t.quantized}
    assert {"lm_head.weight", "embed_tokens.weight", "mlp.router.weight"} <= kept
    assert all(t.kind == "bf16" for t in fb.tensors if not t.quantized)
    assert fb.bytes == sum(t.bytes for t in fb.tensors)
    assert fb.bytes_unquantized == dtype_bytes(fb.elements_unquantized, "bf16")


def test_mixtral_q4_k_m_follows_the_eight_expert_rules() -> None:
    """n_expert == 8: attn_v and attn_k Q8_0, attn_output Q5_K; experts' ffn_down by layer."""
    spec = load_preset("mixtral-8x7b").spec
    rows = format_bytes(spec, parse_format("gguf:Q4_K_M")).tensors
    kinds = {(t.name, t.kind): t.copies for t in rows}
    assert kinds[("attn.v_proj.weight", "Q8_0")] == 32
    assert kinds[("attn.k_proj.weight", "Q8_0")] == 32
    assert kinds[("attn.o_proj.weight", "Q5_K")] == 32
    assert kinds[("mlp.experts.down_proj", "Q6_K")] == 16
    assert kinds[("mlp.router.weight", "F32")] == 32


def test_deepseek_v3_ffn_down_counts_layers_by_number() -> None:
    """MoE models take each ffn_down's layer number: the 3 dense layers first (all promoted,
    being in the first eighth of 61), then the MoE layers' experts and shared experts."""
    spec = load_preset("deepseek-v3").spec
    rows = format_bytes(spec, parse_format("gguf:Q4_K_M")).tensors
    promoted = [i for i in range(61) if use_more_bits(i, 61)]
    kinds = {(t.name, t.kind): t.copies for t in rows}
    assert kinds[("mlp.down_proj.weight", "Q6_K")] == 3
    moe = [i for i in promoted if i >= 3]
    assert kinds[("mlp.experts.down_proj", "Q6_K")] == len(moe)
    assert kinds[("mlp.shared_expert.down_proj.weight", "Q6_K")] == len(moe)
    assert kinds[("attn.kv_b_proj.weight", "Q6_K")] == len(promoted)
