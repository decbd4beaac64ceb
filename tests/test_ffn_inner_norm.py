"""``ffn_inner_norm``: a norm over the FFN's hidden width inside a dense FFN (BitNet)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from costcalc.params import block_params
from costcalc.spec import ModelSpec
from costcalc.tensors import ffn_tensors

BASE = {
    "vocab_size": 100,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "context_length": 32,
    "position": "rotary",
    "norm": "rmsnorm",
    "ffn": "swiglu",
    "ffn_hidden": 96,
}


def test_inner_norm_adds_one_norm_of_the_hidden_width() -> None:
    plain = ModelSpec.model_validate(BASE)
    normed = ModelSpec.model_validate({**BASE, "ffn_inner_norm": True})
    assert block_params(normed) - block_params(plain) == 96  # an RMSNorm weight of h
    names = {t.name for t in ffn_tensors(normed)} - {t.name for t in ffn_tensors(plain)}
    assert names == {"mlp.ffn_sub_norm.weight"}


def test_layernorm_inner_norm_has_a_bias_too() -> None:
    plain = ModelSpec.model_validate({**BASE, "norm": "layernorm"})
    normed = ModelSpec.model_validate({**BASE, "norm": "layernorm", "ffn_inner_norm": True})
    assert block_params(normed) - block_params(plain) == 2 * 96


@pytest.mark.parametrize("ffn", [{"ffn": "none"}, {"moe_experts": 4, "moe_top_k": 2}])
def test_inner_norm_needs_a_dense_ffn(ffn: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="ffn_inner_norm: only a dense FFN"):
        ModelSpec.model_validate({**BASE, **ffn, "ffn_inner_norm": True})
