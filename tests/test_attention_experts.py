"""A mixture of attention heads (``attention_experts``; transformers 5.24
``models/jetmoe/modeling_jetmoe.py``: ``JetMoeMoA``) and a mixture's output bias
(``moe_output_bias``: ``JetMoeMoE.bias``)."""

from __future__ import annotations

from typing import Any

import pytest

from costcalc.errors import UsageError
from costcalc.macs import attention_projection_macs_per_token, pair_width, router_macs_per_token
from costcalc.memory import kv_width
from costcalc.parallel import check_tensor_parallel
from costcalc.params import active_params, total_params
from costcalc.spec import ModelSpec, structural_problems
from costcalc.tensors import ffn_tensors, mixer_tensors

# D 64, K 2 key/value heads of 16, H 4 query heads: each token runs H / K = 2 of X 5 experts.
MOA: dict[str, Any] = {
    "vocab_size": 100,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "n_kv_heads": 2,
    "head_dim": 16,
    "context_length": 32,
    "position": "rotary",
    "qkv_bias": False,
    "attention_experts": 5,
}


def test_query_and_output_projections_are_experts() -> None:
    spec = ModelSpec.model_validate(MOA)
    shapes = {t.name: t.shape for t in mixer_tensors(spec)}
    assert shapes == {
        "attn.kv_proj.weight": (2 * 2 * 16, 64),
        "attn.experts.input_linear.weight": (5, 2 * 16, 64),
        "attn.experts.output_linear.weight": (5, 64, 2 * 16),
        "attn.experts.router.layer.weight": (5, 64),
        "attn.experts.bias": (64,),
    }
    separate = ModelSpec.model_validate({**MOA, "fused_qkv": False, "attn_out_bias": False})
    assert {t.name for t in mixer_tensors(separate)} == {
        "attn.k_proj.weight",
        "attn.v_proj.weight",
        "attn.experts.input_linear.weight",
        "attn.experts.output_linear.weight",
        "attn.experts.router.layer.weight",
    }


def test_a_token_runs_h_over_k_experts() -> None:
    # whatever the FFN routes (dense here), per block: keys and values 2 K d D, then 2 of the 5
    # query experts (K d D each) and 2 of the 5 output experts (D K d each); the router X D
    # counts with the routers; pairs over all H heads
    spec = ModelSpec.model_validate(MOA)
    assert attention_projection_macs_per_token(spec) == 2 * (2 * 32 * 64 + 2 * 32 * 64 * 2)
    assert router_macs_per_token(spec) == 2 * 5 * 64
    assert pair_width(spec) == 2 * 4 * 16
    assert kv_width(spec) == 2 * 2 * 16
    # a token skips 3 of the 5 query and output experts in each of the 2 blocks
    assert total_params(spec) - active_params(spec) == 2 * 3 * 2 * 32 * 64


def test_output_bias_of_a_mixture() -> None:
    moe = {**MOA, "ffn": "swiglu", "moe_experts": 4, "moe_top_k": 2, "ffn_hidden": 8}
    plain = ModelSpec.model_validate(moe)
    spec = ModelSpec.model_validate({**moe, "moe_output_bias": True})
    added = {(t.name, t.shape) for t in ffn_tensors(spec)} - {
        (t.name, t.shape) for t in ffn_tensors(plain)
    }
    assert added == {("mlp.bias", (64,))}
    assert total_params(spec) - total_params(plain) == 2 * 64


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"attention_experts": 1}, "attention_experts"),  # 2 per token, 1 expert
        ({"query_rank": 8}, "query_rank"),
        ({"attention_gate": True}, "attention_gate"),
        ({"mixer": "mla"}, "attention_experts"),
        ({"moe_output_bias": True}, "moe_output_bias"),  # no mixture of experts
    ],
)
def test_what_does_not_go_with_the_experts(extra: dict[str, Any], field: str) -> None:
    spec = ModelSpec.model_construct(**{**MOA, **extra})
    assert field in [f for f, _ in structural_problems(spec)]


def test_tensor_parallelism_of_the_experts_is_refused() -> None:
    spec = ModelSpec.model_validate(MOA)
    with pytest.raises(UsageError, match="attention_experts"):
        check_tensor_parallel(spec, 2)
