"""Quantized weight bytes against the toolkits (tests/golden/quant_reference.json, written by
tests/reference/make_quant_reference.py running bitsandbytes, AutoAWQ, AutoGPTQ and gguf)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costcalc.errors import UsageError
from costcalc.gguf_mix import GGML_QUANT_SIZES, type_bytes, use_more_bits
from costcalc.loaders import load_file, load_preset
from costcalc.quant import (
    awq_bytes,
    format_bytes,
    fp8_bytes,
    gptq_bytes,
    int8_bytes,
    mxfp4_bytes,
    nf4_bytes,
    nvfp4_bytes,
)
from costcalc.quant_layouts import nf4_code_bytes
from costcalc.units import dtype_bytes
from costcalc.weight_format import parse_format

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
    """bitsandbytes 0.50.2 (CPU backend) quantized each weight; costcalc gives the same bytes:
    the packed weight and every tensor of its QuantState, code tables included. Saved, the
    offset goes into the quant-state JSON instead (``as_dict(packed=True)``)."""
    out, inp = case["shape"]
    if case["format"] == "llm-int8":
        assert int8_bytes(out, inp) == case["bytes"]
        return
    dq = case["double_quant"]
    assert nf4_bytes(out * inp, dq) + nf4_code_bytes(dq) == case["bytes"]
    saved = case["tensors"]["packed"]["bytes"] + sum(t["bytes"] for t in case["saved"].values())
    blob = len(case["quant_state_json"].encode())
    assert saved == case["bytes"] - (4 if dq else 0) + blob


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


FP4_CASES = [c for c in GOLDEN["compressed_tensors"]["cases"] if "FP4" in c["scheme"]]


@pytest.mark.parametrize(
    "case", FP4_CASES, ids=[f"{c['scheme']}-{c['shape'][0]}x{c['shape'][1]}" for c in FP4_CASES]
)
def test_fp4_bytes_equal_compressed_tensors(case: dict) -> None:
    """compressed-tensors 0.20.1 compressed a bf16 linear layer to NVFP4 or MXFP4: packed values,
    block scales, and NVFP4's global scale (and input scale under W4A4)."""
    out, inp = case["shape"]
    if case["scheme"].startswith("MXFP4"):
        assert mxfp4_bytes(out, inp) == case["bytes"]
        assert case["tensors"]["weight_scale"]["dtype"] == "uint8"
    else:
        w4a4 = case["scheme"] == "NVFP4"
        assert nvfp4_bytes(out, inp, w4a4) == case["bytes"]
        assert case["tensors"]["weight_scale"]["dtype"] == "float8_e4m3fn"


@pytest.mark.parametrize("case", GOLDEN["gpt_oss_mxfp4"]["cases"], ids=lambda c: str(c["shape"]))
def test_mxfp4_bytes_equal_gpt_oss_layout(case: dict) -> None:
    """Stacked experts as gpt-oss stores them (``*_blocks``, ``*_scales``), read back by
    transformers' MXFP4 dequantizer."""
    experts, out, inp = case["shape"]
    assert experts * mxfp4_bytes(out, inp) == case["bytes"]
    assert case["tensors"]["blocks"]["shape"] == [experts, out, inp // 32, 16]


def test_fp4_formats_quantize_linear_layers_and_experts() -> None:
    """mxfp4 and nvfp4 quantize what fp8 does: linear layers and stacked experts, not the LM
    head or router; an odd row length is an error naming the tensor."""
    oss = load_preset("gpt-oss-20b").spec
    rows = {t.name: t for t in format_bytes(oss, parse_format("mxfp4")).tensors}
    assert rows["mlp.experts.down_proj"].kind == "mxfp4"
    assert rows["attn.q_proj.weight"].kind == "mxfp4"
    assert rows["lm_head.weight"].kind == rows["mlp.router.weight"].kind == "bf16"
    kept = {t.name: t for t in format_bytes(oss, parse_format("mxfp4:-attn")).tensors}
    assert kept["attn.q_proj.weight"].kind == "bf16"
    nv = format_bytes(LLAMA, parse_format("nvfp4"))
    w4a4 = format_bytes(LLAMA, parse_format("nvfp4:w4a4"))
    assert w4a4.bytes - nv.bytes == 4 * 7 * 32  # one input scale per linear layer
    assert parse_format("nvfp4:w4a4").label == "nvfp4:w4a4"
    odd = load_preset("llama-3.2-1b", {"ffn_hidden": 8191}).spec
    with pytest.raises(UsageError, match="odd number"):
        format_bytes(odd, parse_format("nvfp4"))


GPTQMODEL_GEMMA3N_TREE = {
    *(f"attn.{name}_proj.weight" for name in "qkvo"),
    *(f"mlp.{name}_proj.weight" for name in ("gate", "up", "down")),
    "per_layer_input_gate.weight",
    "per_layer_projection.weight",
}
"""The matrices of GPTQModel 7.7's Gemma 3n and Gemma 4 ``module_tree`` under
``model.layers.#`` (``models/definitions/gemma3n.py``, ``gemma4.py``), as costcalc names them."""


@pytest.mark.parametrize("fmt", ["gptq-int4", "gptq-int8:g-1", "awq-int4"])
@pytest.mark.parametrize("source", ["preset gemma-4-e2b", "tests/fixtures/hf/gemma-3n-e2b-it.json"])
def test_gptq_and_awq_quantize_what_gptqmodel_lists_in_the_decoder_layers(
    fmt: str, source: str
) -> None:
    """GPTQ and AWQ toolkits quantize the decoder layers' linear layers only: Gemma 4's and 3n's
    model-level ``per_layer_model_projection`` (and 3n's AltUp projections) stay in fp16, as
    do 3n's AltUp and LAuReL, which GPTQModel's tree leaves out (and whose 4-wide matrices it
    could not pack)."""
    spec = (
        load_preset(source.removeprefix("preset ")).spec
        if source.startswith("preset ")
        else load_file(source).spec
    )
    rows = format_bytes(spec, parse_format(fmt)).tensors
    assert {t.name for t in rows if t.quantized} == GPTQMODEL_GEMMA3N_TREE
    kept = {t.name: t for t in rows if not t.quantized}
    out, inp = kept["per_layer_model_projection.weight"].shape
    assert kept["per_layer_model_projection.weight"].bytes == 2 * out * inp


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
        ("nf4", lambda out, inp: nf4_bytes(out * inp, True) + 64 + 1024 - out * inp // 2),
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
        ("gguf:Q4_K", "gguf:Q4_K_M"),
        ("gguf:Q3_K,imatrix,pure", "gguf:Q3_K_M,pure,imatrix"),
        ("gguf:IQ2_XXS", "gguf:IQ2_XXS"),
        ("mxfp4:-attn.q_proj", "mxfp4:-attn.q_proj"),
        ("nvfp4:w4a4,+lm_head", "nvfp4:w4a4,+lm_head"),
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
        *("gguf:Q4_K_M,w4a4", "nvfp4:pure", "gguf:NVFP4", "mxfp4:g32", "gguf:Q8_K"),
    ],
)
def test_bad_formats_are_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_format(text)


def test_options_move_tensors() -> None:
    base = format_bytes(LLAMA, parse_format("nf4"))
    head = format_bytes(LLAMA, parse_format("nf4:+lm_head"))
    V, D = 128256, 4096
    assert base.bytes - head.bytes == 2 * V * D - nf4_bytes(V * D, True) - 64 - 1024
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


def test_gguf_options_in_words() -> None:
    assert parse_format("gguf:Q4_0,imatrix,pure").description == (
        "GGUF Q4_0 (pure, importance matrix)"
    )
    assert parse_format("gguf:Q4_0").description == "GGUF Q4_0"


def test_pure_gives_every_quantizable_tensor_the_type() -> None:
    """--pure: no mix, the LM head too; rows the block does not divide still fall back."""
    rows = format_bytes(LLAMA, parse_format("gguf:Q4_K_M,pure")).tensors
    assert {t.kind for t in rows if t.quantized} == {"Q4_K"}
    qwen = load_preset("qwen2.5-0.5b").spec  # rows of 896, no multiple of 256, and 4,864
    rows = format_bytes(qwen, parse_format("gguf:Q4_K_M,pure")).tensors
    assert {t.name for t in rows if t.kind == "Q4_K"} == {"mlp.down_proj.weight"}
    assert {t.kind for t in rows} == {"Q4_K", "Q5_0", "F32"}


def test_an_importance_matrix_changes_q4_0s_first_ffn_down() -> None:
    """With an imatrix, ffn_down of the first eighth of the layers becomes Q4_1 (4 of 32)."""
    plain = format_bytes(LLAMA, parse_format("gguf:Q4_0")).tensors
    given = format_bytes(LLAMA, parse_format("gguf:Q4_0,imatrix")).tensors
    assert not [t for t in plain if t.kind == "Q4_1"]
    assert [(t.name, t.copies) for t in given if t.kind == "Q4_1"] == [("mlp.down_proj.weight", 4)]


def test_q1_0_has_no_fallback() -> None:
    smollm = load_preset("smollm2-135m").spec  # 576 is no multiple of 128
    with pytest.raises(UsageError, match="no fallback for Q1_0"):
        format_bytes(smollm, parse_format("gguf:Q1_0"))


def test_gemma_per_layer_table_is_a_token_table() -> None:
    """llama.cpp quantizes per_layer_token_embd as a token table: tied, it takes the output
    type; altup, laurel and per_layer_model_proj stay as converted."""
    spec = load_preset("gemma-4-e2b").spec
    rows = {t.name: t.kind for t in format_bytes(spec, parse_format("gguf:Q4_K_M")).tensors}
    assert rows["embed_tokens_per_layer.weight"] == rows["embed_tokens.weight"] == "Q6_K"
    assert rows["per_layer_model_projection.weight"] == "F16"


def test_mxfp4_moe_puts_experts_in_mxfp4_and_the_rest_in_q8_0() -> None:
    spec = load_preset("qwen3-30b-a3b").spec
    rows = format_bytes(spec, parse_format("gguf:MXFP4_MOE")).tensors
    kinds = {t.name: t.kind for t in rows if t.quantized}
    assert kinds["mlp.experts.down_proj"] == kinds["mlp.experts.gate_up_proj"] == "MXFP4"
    assert {k for n, k in kinds.items() if "experts" not in n} == {"Q8_0"}
