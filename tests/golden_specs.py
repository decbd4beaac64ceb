"""ModelSpecs of the models in tests/golden/hf_reference.json, for tests that compare with it.

GPT-2-family fixtures load through the Hugging Face loader; the others are written out from their
fixture config.json (tests/fixtures/hf/<name>.json) and the family's modeling code in transformers.
test_golden_specs_match_parameter_counts checks each against the golden parameter count.
"""

from __future__ import annotations

from pathlib import Path

from costcalc.loaders import load_file, load_preset
from costcalc.spec import ModelSpec

HF = Path(__file__).resolve().parent / "fixtures" / "hf"
GOLDEN = Path(__file__).resolve().parent / "golden"

# Llama-style blocks: rotary positions, SwiGLU, RMSNorm, no biases, untied.
LLAMA: dict[str, object] = {
    "position": "rotary",
    "ffn": "swiglu",
    "norm": "rmsnorm",
    "qkv_bias": False,
    "attn_out_bias": False,
    "ffn_bias": False,
    "tie_embeddings": False,
}
QWEN2 = {**LLAMA, "qkv_bias": True}


def _llama(**fields: object) -> ModelSpec:
    return ModelSpec.model_validate({**LLAMA, **fields})


def _qwen2(**fields: object) -> ModelSpec:
    return ModelSpec.model_validate({**QWEN2, **fields})


def golden_spec(name: str) -> ModelSpec:
    """The spec of golden model ``name``; KeyError when the tests do not know it."""
    if name in ("gpt2", "gpt2-medium", "book-gpt-small", "book-gpt-fairytale"):
        return load_file(HF / f"{name}.json").spec
    if name in ("qwen2.5-0.5b", "gpt2-large", "gpt2-xl"):
        return load_preset(name).spec
    return SPECS[name]


SPECS: dict[str, ModelSpec] = {
    # GPT-1: GPT-2's block with post-norm, so no final norm.
    "openai-gpt": ModelSpec(
        vocab_size=40478, context_length=512, d_model=768, n_layers=12, n_heads=12, final_norm=False
    ),
    # GPT-NeoX: rotary on a quarter of each head (16 of 64), untied embed_out.
    "pythia-160m": ModelSpec(
        vocab_size=50304,
        context_length=2048,
        d_model=768,
        n_layers=12,
        n_heads=12,
        position="rotary",
        rotary_dim=16,
        tie_embeddings=False,
    ),
    # OPT: learned positions with 2 extra rows; opt-350m has a 512-wide table, projected, and
    # post-norm blocks without a final norm.
    "opt-125m": ModelSpec(
        vocab_size=50272,
        context_length=2048,
        position_offset=2,
        d_model=768,
        n_layers=12,
        n_heads=12,
    ),
    "opt-350m": ModelSpec(
        vocab_size=50272,
        context_length=2048,
        position_offset=2,
        d_model=1024,
        embedding_dim=512,
        n_layers=24,
        n_heads=16,
        final_norm=False,
    ),
    "smollm2-135m": _llama(
        vocab_size=49152,
        context_length=8192,
        d_model=576,
        n_layers=30,
        n_heads=9,
        n_kv_heads=3,
        ffn_hidden=1536,
        tie_embeddings=True,
    ),
    "llama-3.2-1b": _llama(
        vocab_size=128256,
        context_length=131072,
        d_model=2048,
        n_layers=16,
        n_heads=32,
        n_kv_heads=8,
        head_dim=64,
        ffn_hidden=8192,
        tie_embeddings=True,
    ),
    "mistral-7b-v0.1": _llama(
        vocab_size=32000,
        context_length=32768,
        d_model=4096,
        n_layers=32,
        n_heads=32,
        n_kv_heads=8,
        ffn_hidden=14336,
        sliding_window=4096,
    ),
    "qwen2.5-1.5b": _qwen2(
        vocab_size=151936,
        context_length=131072,
        d_model=1536,
        n_layers=28,
        n_heads=12,
        n_kv_heads=2,
        ffn_hidden=8960,
        tie_embeddings=True,
    ),
    # Phi-2: parallel block with one LayerNorm, rotary on 32 of 80 dims, LM head with bias.
    "phi-2": ModelSpec(
        vocab_size=51200,
        context_length=2048,
        d_model=2560,
        n_layers=32,
        n_heads=32,
        ffn_hidden=10240,
        position="rotary",
        rotary_dim=32,
        norms_per_block=1,
        lm_head_bias=True,
        tie_embeddings=False,
    ),
    "phi-3-mini-4k": _llama(
        vocab_size=32064,
        context_length=4096,
        d_model=3072,
        n_layers=32,
        n_heads=32,
        ffn_hidden=8192,
        sliding_window=2047,
    ),
    "llama-3.1-8b": _llama(
        vocab_size=128256,
        context_length=131072,
        d_model=4096,
        n_layers=32,
        n_heads=32,
        n_kv_heads=8,
        ffn_hidden=14336,
    ),
    "qwen2.5-3b": _qwen2(
        vocab_size=151936,
        context_length=32768,
        d_model=2048,
        n_layers=36,
        n_heads=16,
        n_kv_heads=2,
        ffn_hidden=11008,
        tie_embeddings=True,
    ),
    "qwen2.5-7b": _qwen2(
        vocab_size=152064,
        context_length=131072,
        d_model=3584,
        n_layers=28,
        n_heads=28,
        n_kv_heads=4,
        ffn_hidden=18944,
    ),
    # Gemma: GeGLU, head_dim 256 given explicitly, multi-query (1 KV head), tied.
    "gemma-2b": _llama(
        vocab_size=256000,
        context_length=8192,
        d_model=2048,
        n_layers=18,
        n_heads=8,
        n_kv_heads=1,
        head_dim=256,
        ffn="geglu",
        ffn_hidden=16384,
        tie_embeddings=True,
    ),
    "mixtral-8x7b": _llama(
        vocab_size=32000,
        context_length=32768,
        d_model=4096,
        n_layers=32,
        n_heads=32,
        n_kv_heads=8,
        ffn_hidden=14336,
        moe_experts=8,
        moe_top_k=2,
    ),
    "tiny-mixtral": _llama(
        vocab_size=128,
        context_length=64,
        d_model=64,
        n_layers=2,
        n_heads=4,
        n_kv_heads=2,
        ffn_hidden=96,
        moe_experts=4,
        moe_top_k=2,
    ),
}
