"""Attention whose values have a width of their own (``v_head_dim`` on an attention block, as
MiMo-V2-Flash builds it: transformers 5.24 ``models/mimo_v2_flash``: ``v_proj`` D -> K dv,
``o_proj`` H dv -> D)."""

from __future__ import annotations

import pytest

from costcalc.macs import pair_width
from costcalc.memory import kv_width
from costcalc.spec import ModelSpec
from costcalc.tensors import mixer_tensors

BLOCK = {
    "vocab_size": 100,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "n_kv_heads": 2,
    "head_dim": 12,
    "context_length": 32,
    "fused_qkv": False,
}


def test_values_of_their_own_width() -> None:
    same = ModelSpec.model_validate(BLOCK)
    narrow = ModelSpec.model_validate({**BLOCK, "v_head_dim": 8})
    shapes = {t.name: t.shape for t in mixer_tensors(narrow)}
    assert shapes["attn.v_proj.weight"] == (2 * 8, 64)
    assert shapes["attn.o_proj.weight"] == (64, 4 * 8)
    assert shapes["attn.k_proj.weight"] == (2 * 12, 64)
    # scores over d, weights x values over dv: H (d + dv) per pair; the cache K (d + dv)
    assert (pair_width(same), pair_width(narrow)) == (2 * 4 * 12, 4 * (12 + 8))
    assert (kv_width(same), kv_width(narrow)) == (2 * 2 * 12, 2 * (12 + 8))


def test_value_width_as_head_width_changes_nothing() -> None:
    same = ModelSpec.model_validate(BLOCK)
    explicit = ModelSpec.model_validate({**BLOCK, "v_head_dim": 12})
    assert mixer_tensors(same) == mixer_tensors(explicit)


def test_queries_of_their_own_width() -> None:
    # query_width 64 beside 4 heads of 12 (DBRX's Wqkv D -> D + 2 K d and out_proj D x D where
    # its heads floor D / H): the fused projection 64 + 2 x 2 x 12 rows, o_proj 64 x 64.
    wide = ModelSpec.model_validate({**BLOCK, "fused_qkv": True, "query_width": 64})
    shapes = {t.name: t.shape for t in mixer_tensors(wide)}
    assert shapes["attn.qkv_proj.weight"] == (64 + 2 * 2 * 12, 64)
    assert shapes["attn.o_proj.weight"] == (64, 64)
    with pytest.raises(ValueError, match="v_head_dim: not with query_width"):
        ModelSpec.model_validate({**BLOCK, "query_width": 64, "v_head_dim": 8})
