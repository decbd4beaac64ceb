"""ModelSpecs of the models in tests/golden/hf_reference.json, for tests that compare with it.

GPT-2-family fixtures load through the Hugging Face loader, and presets stand for the models they
name; the others are written out from their fixture config.json (tests/fixtures/hf/<name>.json)
and the family's modeling code in transformers. test_golden_specs_match_parameter_counts checks
each against the golden parameter count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from costcalc.loaders import load_file, load_preset
from costcalc.spec import ModelSpec

TESTS = Path(__file__).resolve().parent
HF = TESTS / "fixtures" / "hf"
GOLDEN = TESTS / "golden"

SHORT = {
    "V": "vocab_size",
    "N": "context_length",
    "D": "d_model",
    "L": "n_layers",
    "H": "n_heads",
    "K": "n_kv_heads",
    "d": "head_dim",
    "h": "ffn_hidden",
}
# Llama-style blocks: rotary positions, SwiGLU, RMSNorm, no biases, untied.
LLAMA: dict[str, Any] = {
    "position": "rotary",
    "ffn": "swiglu",
    "norm": "rmsnorm",
    "qkv_bias": False,
    "attn_out_bias": False,
    "ffn_bias": False,
    "tie_embeddings": False,
}
QWEN2 = {**LLAMA, "qkv_bias": True, "tie_embeddings": True}  # bias on q/k/v only
GPT2: dict[str, Any] = {}  # the ModelSpec defaults describe a GPT-2 block


def spec(family: dict[str, Any], **fields: Any) -> ModelSpec:
    """A spec of ``family``'s block with ``fields`` (short names V, N, D, L, H, K, d, h allowed)."""
    return ModelSpec.model_validate({**family, **{SHORT.get(k, k): v for k, v in fields.items()}})


def golden_spec(name: str) -> ModelSpec:
    """The spec of golden model ``name``; KeyError when the tests do not know it."""
    if name in ("gpt2", "gpt2-medium", "book-gpt-small", "book-gpt-fairytale"):
        return load_file(HF / f"{name}.json").spec
    if name in ("qwen2.5-0.5b", "gpt2-large", "gpt2-xl"):
        return load_preset(name).spec
    return SPECS[name]


# fmt: off
SPECS: dict[str, ModelSpec] = {
    # GPT-1: GPT-2's block with post-norm, so no final norm.
    "openai-gpt": spec(GPT2, V=40478, N=512, D=768, L=12, H=12, final_norm=False),
    # GPT-NeoX: rotary on a quarter of each head (16 of 64), untied embed_out.
    "pythia-160m": spec(GPT2, V=50304, N=2048, D=768, L=12, H=12, position="rotary",
                        rotary_dim=16, tie_embeddings=False),
    # OPT: 2 extra position rows; opt-350m projects a 512-wide table and has no final norm.
    "opt-125m": spec(GPT2, V=50272, N=2048, position_offset=2, D=768, L=12, H=12),
    "opt-350m": spec(GPT2, V=50272, N=2048, position_offset=2, D=1024, embedding_dim=512,
                     L=24, H=16, final_norm=False),
    # Phi-2: parallel block with one LayerNorm, rotary on 32 of 80 dims, LM head with bias.
    "phi-2": spec(GPT2, V=51200, N=2048, D=2560, L=32, H=32, h=10240, position="rotary",
                  rotary_dim=32, norms_per_block=1, lm_head_bias=True, tie_embeddings=False),
    "smollm2-135m": spec(LLAMA, V=49152, N=8192, D=576, L=30, H=9, K=3, h=1536,
                         tie_embeddings=True),
    "llama-3.2-1b": spec(LLAMA, V=128256, N=131072, D=2048, L=16, H=32, K=8, d=64, h=8192,
                         tie_embeddings=True),
    "llama-3.1-8b": spec(LLAMA, V=128256, N=131072, D=4096, L=32, H=32, K=8, h=14336),
    "mistral-7b-v0.1": spec(LLAMA, V=32000, N=32768, D=4096, L=32, H=32, K=8, h=14336,
                            sliding_window=4096),
    "phi-3-mini-4k": spec(LLAMA, V=32064, N=4096, D=3072, L=32, H=32, h=8192,
                          sliding_window=2047),
    "qwen2.5-1.5b": spec(QWEN2, V=151936, N=131072, D=1536, L=28, H=12, K=2, h=8960),
    "qwen2.5-3b": spec(QWEN2, V=151936, N=32768, D=2048, L=36, H=16, K=2, h=11008),
    "qwen2.5-7b": spec(QWEN2, V=152064, N=131072, D=3584, L=28, H=28, K=4, h=18944,
                       tie_embeddings=False),
    # Gemma: GeGLU, head_dim 256 given explicitly, multi-query (1 KV head), tied.
    "gemma-2b": spec(LLAMA, V=256000, N=8192, D=2048, L=18, H=8, K=1, d=256, ffn="geglu",
                     h=16384, tie_embeddings=True),
    "mixtral-8x7b": spec(LLAMA, V=32000, N=32768, D=4096, L=32, H=32, K=8, h=14336,
                         moe_experts=8, moe_top_k=2),
    "tiny-mixtral": spec(LLAMA, V=128, N=64, D=64, L=2, H=4, K=2, h=96, moe_experts=4,
                         moe_top_k=2),
}
# fmt: on
