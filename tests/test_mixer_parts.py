"""The token mixers as parts: every kind a block may name has one, and a block's tensors, pairs
and cache are the ones its part gives."""

from __future__ import annotations

from typing import get_args

import pytest

from costcalc.anatomy.attention import SUB_PARTS, Attention
from costcalc.anatomy.mixer import token_mixer
from costcalc.blocks import MixerKind
from costcalc.loaders import load_file
from costcalc.macs import pair_width
from costcalc.memory import kv_width
from costcalc.spec import ModelSpec
from costcalc.tensors import mixer_tensors
from tests.conftest import FIXTURES


@pytest.mark.parametrize("kind", get_args(MixerKind))
def test_every_mixer_kind_has_its_part(kind: str) -> None:
    part = token_mixer(kind)
    assert part.kind == kind
    assert part.words


def test_attention_is_its_sub_parts_in_order() -> None:
    spec = ModelSpec.model_validate(
        {
            "vocab_size": 64,
            "d_model": 32,
            "n_layers": 1,
            "n_heads": 4,
            "n_kv_heads": 2,
            "context_length": 16,
            "norm": "rmsnorm",
            "fused_qkv": False,
            "qk_norm": "head",
            "attention_sinks": True,
            "attention_head_gate": True,
        }
    )
    names = [t.name for t in Attention().tensors(spec)]
    assert names == [t.name for sub_part in SUB_PARTS for t in sub_part(spec)]
    assert names == [
        *(f"attn.{p}_proj.{kind}" for p in "qkvo" for kind in ("weight", "bias")),
        "attn.q_norm.weight",
        "attn.k_norm.weight",
        "attn.sinks",
        "attn.g_proj.weight",
    ]
    assert [t.name for t in mixer_tensors(spec)] == names
    # 2 H d per query-key pair; 2 K d cached per token.
    assert pair_width(spec) == 2 * 4 * 8
    assert kv_width(spec) == 2 * 2 * 8


@pytest.mark.parametrize("name", ["bamba-9b", "deepseek-v3", "gemma-3-1b"])
def test_quantities_ask_the_part(name: str) -> None:
    for stack in load_file(FIXTURES / "hf" / f"{name}.json").spec.stacks:
        part = token_mixer(stack.mixer)
        assert pair_width(stack) == part.pair_width(stack)
        assert kv_width(stack) == part.cache_width(stack)
        assert (pair_width(stack) > 0) == stack.has_attention
