"""``differential_attention``: DiffLlama's two attention maps over the same queries and keys."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from costcalc.macs import attention_pair_macs, pair_width
from costcalc.memory import kv_cache_elements
from costcalc.params import block_params
from costcalc.spec import ModelSpec

BASE = {
    "vocab_size": 100,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "n_kv_heads": 2,
    "context_length": 32,
    "position": "rotary",
    "norm": "rmsnorm",
    "ffn": "swiglu",
}


def test_four_lambda_vectors_and_twice_the_pairs() -> None:
    plain = ModelSpec.model_validate(BASE)
    diff = ModelSpec.model_validate({**BASE, "differential_attention": True})
    assert block_params(diff) - block_params(plain) == 4 * 16  # lambda_q1, k1, q2, k2 of d
    assert pair_width(diff) == 2 * pair_width(plain) == 2 * 2 * 4 * 16
    assert attention_pair_macs(diff, 1, 8) == 2 * attention_pair_macs(plain, 1, 8)
    assert kv_cache_elements(diff, 1, 8) == kv_cache_elements(plain, 1, 8)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"n_kv_heads": 1}, "an even number is needed"),
        ({"mixer": "none", "n_heads": None, "n_kv_heads": None}, "applies to attention blocks"),
    ],
)
def test_differential_attention_is_refused_where_it_cannot_be_built(
    extra: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        ModelSpec.model_validate({**BASE, **extra, "differential_attention": True})
