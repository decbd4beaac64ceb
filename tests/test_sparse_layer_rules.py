"""Which layers hold the sparse block when a rule, not a list, says so: Qwen3-Next's and Flint's
``mlp_only_layers`` and ``decoder_sparse_step`` (``layer_idx not in mlp_only_layers and
(layer_idx + 1) % decoder_sparse_step == 0``, modeling_qwen3_next.py and modeling_flint.py), and
A.X K1's ``moe_layer_freq`` (``i >= first_k_dense_replace and i % moe_layer_freq == 0``,
AXK1Config.__post_init__). The figures are the differential records' (qwen3_next/05, /10,
flint/02, axk1/09); these tests pin each rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from costcalc.params import param_report
from costcalc.spec import ModelSpec
from tests.hf_helpers import assert_refused, spec_of


def sparse_layers(spec: ModelSpec) -> int:
    return sum(stack.n_layers for stack in spec.stacks if stack.moe_experts is not None)


@pytest.mark.parametrize(
    ("changes", "sparse"),
    [
        ({}, 4),
        ({"mlp_only_layers": [0]}, 3),
        ({"decoder_sparse_step": 2}, 2),  # layers 1 and 3
        ({"decoder_sparse_step": 2, "mlp_only_layers": [3]}, 1),
        ({"num_experts": 0}, 0),
    ],
)
def test_qwen3_next_dense_layers(tmp_path: Path, changes: dict[str, Any], sparse: int) -> None:
    """tiny-qwen3-next: D 64, 4 layers; the sparse block holds 8 experts of 32 (3 D 32 each),
    the router 8 x D, a shared expert of 32 and its gate D; a dense layer a SwiGLU of
    ``intermediate_size`` 128."""
    spec = spec_of(tmp_path, "tiny-qwen3-next", **changes)
    assert sparse_layers(spec) == sparse
    D = 64
    moe, dense = 8 * 3 * D * 32 + 8 * D + 3 * D * 32 + D, 3 * D * 128
    full = param_report(spec_of(tmp_path, "tiny-qwen3-next")).total
    assert param_report(spec).total == full - (4 - sparse) * (moe - dense)


def test_flint_sparse_step(tmp_path: Path) -> None:
    # 49 layers, mlp_only_layers [0, 1]: with decoder_sparse_step 2 the odd layers from 3 on.
    assert sparse_layers(spec_of(tmp_path, "flint-defaults")) == 47
    assert sparse_layers(spec_of(tmp_path, "flint-defaults", decoder_sparse_step=2)) == 23
    spec = spec_of(tmp_path, "flint-defaults", decoder_sparse_step=3, mlp_only_layers=[])
    assert sparse_layers(spec) == 16  # layers 2, 5, ..., 47


def test_axk1_sparse_frequency(tmp_path: Path) -> None:
    # 61 layers, first_k_dense_replace 1: with moe_layer_freq 2 the even layers from 2 on,
    # each with its third norm (post_mlp_layernorm).
    spec = spec_of(tmp_path, "axk1-defaults", moe_layer_freq=2)
    assert sparse_layers(spec) == 30
    assert all((s.moe_experts is not None) == (s.norms_per_block == 3) for s in spec.stacks)
    # A list of layer types wins over the rule, as __post_init__ reads the rule only without one.
    listed = ["dense", *["sparse"] * 60]
    assert (
        sparse_layers(spec_of(tmp_path, "axk1-defaults", moe_layer_freq=2, mlp_layer_types=listed))
        == 60
    )


@pytest.mark.parametrize(
    ("fixture", "changes", "key"),
    [
        ("axk1-defaults", {"moe_layer_freq": 0}, "moe_layer_freq"),
        ("flint-defaults", {"decoder_sparse_step": 0}, "decoder_sparse_step"),
        ("tiny-qwen3-next", {"decoder_sparse_step": 0}, "decoder_sparse_step"),
        ("tiny-qwen3-next", {"mlp_only_layers": "0"}, "mlp_only_layers"),
    ],
)
def test_rules_that_cannot_be_evaluated(
    tmp_path: Path, fixture: str, changes: dict[str, Any], key: str
) -> None:
    # transformers divides by the step (ZeroDivisionError) or cannot test membership.
    assert_refused(tmp_path, fixture, key, **changes)
