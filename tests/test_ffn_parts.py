"""The FFN as a part: the block's fields choose one kind, whose tensors are the block's FFN."""

from __future__ import annotations

from typing import Any

import pytest

from costcalc.anatomy.ffn import Dense, Experts, NoFfn, ProductKeyExperts, ffn_part
from costcalc.params import expert_ffn_params
from costcalc.spec import ModelSpec
from costcalc.tensors import ffn_tensors

BASE = {"vocab_size": 64, "d_model": 32, "n_layers": 1, "n_heads": 4, "context_length": 16}


def spec(**fields: Any) -> ModelSpec:
    return ModelSpec.model_validate({**BASE, **fields})


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({}, Dense),
        ({"ffn": "swiglu", "ffn_bias": False}, Dense),
        ({"ffn": "none"}, NoFfn),
        ({"ffn": "swiglu", "moe_experts": 4, "moe_top_k": 2}, Experts),
        (
            {"ffn": "swiglu", "moe_experts": 16, "moe_top_k": 2, "moe_product_keys": True},
            ProductKeyExperts,
        ),
    ],
)
def test_the_fields_choose_the_ffn(fields: dict[str, Any], kind: type) -> None:
    block = spec(**fields)
    part = ffn_part(block)
    assert type(part) is kind
    assert ffn_tensors(block) == part.tensors(block)
    assert expert_ffn_params(block) == part.expert_params(block)


def test_a_gated_expert_is_three_matrices_of_h() -> None:
    block = spec(ffn="swiglu", ffn_bias=False, moe_experts=4, moe_top_k=2, moe_ffn_hidden=8)
    assert expert_ffn_params(block) == 3 * 32 * 8
    assert ffn_part(spec(ffn="none")).expert_params(spec(ffn="none")) == 0
