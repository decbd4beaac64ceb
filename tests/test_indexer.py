"""The sparse-attention indexer block keys (DeepSeek-V3.2's lightning indexer on MLA,
transformers 5.24 ``models/deepseek_v32/modular_deepseek_v32.py``: ``DeepseekV32Indexer``; MiniMax
M3's on attention)."""

from __future__ import annotations

from typing import Any

import pytest

from costcalc.macs import pair_width
from costcalc.memory import kv_width
from costcalc.spec import ModelSpec, structural_problems
from costcalc.tensors import mixer_tensors

MLA: dict[str, Any] = {
    "vocab_size": 100,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "context_length": 32,
    "mixer": "mla",
    "q_lora_rank": 16,
    "kv_lora_rank": 8,
    "qk_rope_head_dim": 4,
    "qk_nope_head_dim": 6,
    "v_head_dim": 5,
}


def test_indexer_tensors_costs_and_cache() -> None:
    plain = ModelSpec.model_validate(MLA)
    spec = ModelSpec.model_validate({**MLA, "indexer_heads": 3, "indexer_head_dim": 12})
    added = {t.name: t.shape for t in mixer_tensors(spec)}.items() - {
        t.name: t.shape for t in mixer_tensors(plain)
    }.items()
    assert dict(added) == {
        "attn.indexer.wq_b.weight": (3 * 12, 16),
        "attn.indexer.wk.weight": (12, 64),
        "attn.indexer.k_norm.weight": (12,),
        "attn.indexer.k_norm.bias": (12,),
        "attn.indexer.weights_proj.weight": (3, 64),
    }
    # scores q k over Hi heads of di, then the heads' weighted sum: Hi (di + 1) per pair
    assert pair_width(spec) - pair_width(plain) == 3 * (12 + 1)
    # the indexer's key (di) is cached beside the latent (kv rank + r)
    assert kv_width(spec) == 8 + 4 + 12


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"indexer_heads": 3}, "indexer_head_dim"),
        ({"indexer_heads": 3, "indexer_head_dim": 12, "q_lora_rank": None}, "indexer_heads"),
    ],
)
def test_indexer_needs_both_sizes_and_a_query_latent(extra: dict[str, Any], field: str) -> None:
    spec = ModelSpec.model_construct(**{**MLA, **extra})
    assert field in [f for f, _ in structural_problems(spec)]


def test_indexer_belongs_to_attention_blocks() -> None:
    data = {k: v for k, v in MLA.items() if "lora" not in k and "head_dim" not in k}
    data.update(mixer="short_conv", indexer_heads=3, indexer_head_dim=12)
    problems = structural_problems(ModelSpec.model_construct(**data))
    message = "applies to attention and mla blocks; this block's mixer is short_conv"
    assert ("indexer_heads", message) in problems


def test_an_indexer_on_attention_is_minimax_m3s() -> None:
    # transformers 5.24 models/minimax_m3_vl/modeling_minimax_m3_vl.py: MiniMaxM3VLIndexer
    data = {k: v for k, v in MLA.items() if "lora" not in k and "head_dim" not in k}
    data.update(mixer="attention", norm="rmsnorm", n_kv_heads=2)
    plain = ModelSpec.model_validate(data)
    spec = ModelSpec.model_validate({**data, "indexer_heads": 3, "indexer_head_dim": 12})
    added = {t.name: t.shape for t in mixer_tensors(spec)}.items() - {
        t.name: t.shape for t in mixer_tensors(plain)
    }.items()
    assert dict(added) == {
        "attn.indexer.q_proj.weight": (3 * 12, 64),
        "attn.indexer.k_proj.weight": (12, 64),
        "attn.indexer.q_norm.weight": (12,),
        "attn.indexer.k_norm.weight": (12,),
    }
    # scores q k over Hi heads of di per pair; its one key head (di) cached beside K d keys and
    # values (2 heads of 16)
    assert pair_width(spec) - pair_width(plain) == 3 * 12
    assert kv_width(spec) == 2 * 2 * 16 + 12
