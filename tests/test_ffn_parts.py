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


def test_experts_built_for_another_width_size_the_router_and_experts() -> None:
    # moe_width 16 beside D 32: router 4 x 16, experts 4 x (2 x 8 x 16 + 16 x 8) (swiglu).
    built = spec(
        ffn="swiglu", ffn_bias=False, moe_experts=4, moe_top_k=2, moe_width=16, ffn_hidden=8
    )
    names = {t.name: t.shape for t in ffn_tensors(built)}
    assert names == {
        "mlp.router.weight": (4, 16),
        "mlp.experts.gate_up_proj": (4, 16, 16),
        "mlp.experts.down_proj": (4, 16, 8),
    }
    assert expert_ffn_params(built) == 3 * 16 * 8
    with pytest.raises(ValueError, match="moe_width: applies to a mixture of experts"):
        spec(moe_width=16)
    with pytest.raises(ValueError, match="moe_latent: not with moe_width"):
        spec(ffn="swiglu", moe_experts=4, moe_top_k=2, moe_width=16, moe_latent=8)
