"""Golden data from transformers/PyTorch and the specs of the models it was generated for.

hf_reference.json is written by tests/reference/make_golden.py, memory_reference.json by
tests/reference/make_memory_reference.py (torch 2.13.0 CPU, transformers 5.24.0; both record
their versions). Llama-family configs are read here key by key (the fields their transformers
configuration classes define), so the memory formulas can be checked on GQA, MQA, explicit head
widths and mixtures of experts.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from costcalc.loaders import load_preset
from costcalc.spec import ModelSpec

TESTS = Path(__file__).resolve().parent
GOLDEN = TESTS / "golden"
FIXTURES = TESTS / "fixtures" / "hf"

PRESET_OF = {
    "gpt2": "gpt2-small",
    "gpt2-medium": "gpt2-medium",
    "gpt2-large": "gpt2-large",
    "gpt2-xl": "gpt2-xl",
    "qwen2.5-0.5b": "qwen2.5-0.5b",
    "book-gpt-small": "book-gpt-small",
    "book-gpt-fairytale": "book-gpt-fairytale",
}
"""Golden models that have a preset of the same architecture."""

LLAMA_FAMILY = ("llama-3.1-8b", "gemma-2b", "qwen2.5-3b", "qwen2.5-7b", "mixtral-8x7b")
"""Golden models with a Llama-style config fixture in tests/fixtures/hf."""


@cache
def hf_reference() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / "hf_reference.json").read_text())
    return data


@cache
def memory_reference() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / "memory_reference.json").read_text())
    return data


def golden(name: str) -> dict[str, Any]:
    record: dict[str, Any] = hf_reference()["models"][name]
    return record


def llama_family_spec(name: str) -> ModelSpec:
    """The spec of a Llama, Gemma, Qwen2 or Mixtral config.json fixture."""
    c = json.loads((FIXTURES / f"{name}.json").read_text())
    kind = c["model_type"]
    bias = c.get("attention_bias", kind == "qwen2")
    fields: dict[str, Any] = {
        "vocab_size": c["vocab_size"],
        "context_length": c["max_position_embeddings"],
        "d_model": c["hidden_size"],
        "n_layers": c["num_hidden_layers"],
        "n_heads": c["num_attention_heads"],
        "n_kv_heads": c["num_key_value_heads"],
        "head_dim": c.get("head_dim"),
        "position": "rotary",
        "ffn": "geglu" if kind == "gemma" else "swiglu",
        "ffn_hidden": c["intermediate_size"],
        "norm": "rmsnorm",
        "qkv_bias": bias,
        "attn_out_bias": bias and kind != "qwen2",
        "ffn_bias": c.get("mlp_bias", False),
        "lm_head_bias": False,
        "tie_embeddings": c.get("tie_word_embeddings", kind == "gemma"),
        "fused_qkv": False,
        "moe_experts": c.get("num_local_experts"),
        "moe_top_k": c.get("num_experts_per_tok"),
    }
    return ModelSpec(**fields)


def golden_spec(name: str) -> ModelSpec:
    """The spec of a golden model: its preset, or its Llama-family fixture."""
    return load_preset(PRESET_OF[name]).spec if name in PRESET_OF else llama_family_spec(name)
