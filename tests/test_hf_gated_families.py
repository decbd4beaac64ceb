"""Keys and refusals of the families Beam, A.X K1 and Flint beyond their golden records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from costcalc.errors import ConfigError
from costcalc.macs import forward_macs
from costcalc.parallel import tensor_parallel_shape
from costcalc.params import param_report
from costcalc.spec import ModelSpec
from costcalc.tensors import parameter_tensors
from tests.hf_helpers import assert_refused, spec_of

BASE: dict[str, Any] = {
    "vocab_size": 256,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "context_length": 128,
    "position": "rotary",
    "norm": "rmsnorm",
    "ffn": "swiglu",
}


def test_gate_bias_is_one_parameter_per_head_and_no_product() -> None:
    gated = ModelSpec(**BASE, attention_gate=True)
    biased = ModelSpec(**BASE, attention_gate=True, attention_gate_bias=True)
    assert param_report(biased).total - param_report(gated).total == 2 * 4  # L H
    assert forward_macs(biased, 1, 8) == forward_macs(gated, 1, 8)
    bias = next(t for t in parameter_tensors(biased) if t.name == "attn.gate_bias")
    assert tensor_parallel_shape(bias, 2, 256) == (2,)  # split with the heads


def test_gate_bias_needs_the_gate() -> None:
    with pytest.raises(ValidationError, match="attention_gate_bias: a bias of the output gate"):
        ModelSpec(**BASE, attention_gate_bias=True)


@pytest.mark.parametrize(
    ("fixture", "changes", "message"),
    [
        ("axk1-defaults", {"q_lora_rank": None}, "q_lora_rank"),
        ("flint-defaults", {"mlp_only_layers": "0"}, "mlp_only_layers"),
    ],
)
def test_unsupported_layouts_are_refused(
    tmp_path: Path, fixture: str, changes: dict[str, Any], message: str
) -> None:
    assert_refused(tmp_path, fixture, message, **changes)


def test_listed_layers_replace_the_rules(tmp_path: Path) -> None:
    # A.X K1: mlp_layer_types instead of first_k_dense_replace; the sparse layers keep 3 norms.
    listed = ["dense", "sparse", "dense", *["sparse"] * 58]
    spec = spec_of(tmp_path, "axk1-defaults", mlp_layer_types=listed)
    assert [s.n_layers for s in spec.stacks if s.norms_per_block == 3] == [59]
    # Beam without a window attends fully everywhere; FlintConfig types sliding_window as int,
    # so transformers refuses a null there.
    spec = spec_of(tmp_path, "beam-defaults", sliding_window=None)
    assert all(s.sliding_window is None for s in spec.stacks)
    with pytest.raises(ConfigError, match="null, but FlintConfig takes no null"):
        spec_of(tmp_path, "flint-defaults", sliding_window=None)
