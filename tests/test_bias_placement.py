"""Biases transformers puts on some linear layers of a block and not on others: an output gate's
own projection without one beside biased q/k/v/o (``nn.Linear(..., bias=False)`` in AFMoE, Beam,
Laguna, Muse Glimmer, Dory), and routed experts without one (stacked ``nn.Parameter``s) beside
dense and shared MLPs with one (``bias=config.mlp_bias`` or ``config.use_bias``). The figures are
the differential records' (tests/test_differential.py: afmoe/09, hy_v3/06, ...); these tests
pin the trigger of each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from costcalc.params import param_report
from costcalc.spec import ModelSpec
from costcalc.tensors import parameter_tensors
from tests.hf_helpers import config_data, spec_of
from tests.test_hf_gated_families import BASE


def _names(spec: ModelSpec) -> set[str]:
    return {t.name for t in parameter_tensors(spec)}


def _load(tmp_path: Path, fixture: str, **changes: Any) -> ModelSpec:
    """The fixture's spec with ``changes`` set in its text decoder's config: a wrapper's
    ``text_config``, unless the wrapper holds one of the keys itself."""
    data = config_data(fixture)
    text = data.get("text_config")
    if isinstance(text, dict) and not set(changes) & set(data):
        return spec_of(tmp_path, fixture, text_config={**text, **changes})
    return spec_of(tmp_path, fixture, **changes)


def test_gate_projection_bias_follows_the_queries_unless_given() -> None:
    gate = {**BASE, "attention_gate": True, "attention_gate_proj": True}
    biased = ModelSpec(**gate)  # qkv_bias true: HRM's gate_proj, bias=config.attention_bias
    free = ModelSpec(**gate, attention_gate_proj_bias=False)
    assert "attn.gate_proj.bias" in _names(biased)
    assert "attn.gate_proj.bias" not in _names(free)
    assert param_report(biased).total - param_report(free).total == 2 * 4 * 16  # L H d
    assert "attn.qkv_proj.bias" in _names(free)


def test_gate_projection_bias_needs_the_projection() -> None:
    with pytest.raises(ValidationError, match="attention_gate_proj_bias: a bias of the output"):
        ModelSpec(**BASE, attention_gate=True, attention_gate_proj_bias=True)


@pytest.mark.parametrize(
    "fixture",
    [
        "afmoe-defaults",
        "beam-defaults",
        "laguna-xs-2.1-per-element",
        "muse-glimmer-defaults",
        "dory-defaults",
    ],
)
def test_biased_attention_beside_a_bias_free_gate(tmp_path: Path, fixture: str) -> None:
    plain, biased = _load(tmp_path, fixture), _load(tmp_path, fixture, attention_bias=True)
    names = _names(biased)
    assert {"attn.q_proj.bias", "attn.o_proj.bias", "attn.gate_proj.weight"} <= names
    assert "attn.gate_proj.bias" not in names
    if any(stack.shared_weight_sets for stack in biased.stacks):
        return  # Dory's recurrent layers reuse their weights: its record checks the count
    added = sum(
        stack.n_layers
        * (
            (stack.n_heads or 0) * stack.head_width
            + 2 * stack.kv_heads * stack.head_width
            + stack.d_model
        )
        for stack in biased.stacks
    )
    assert param_report(biased).total - param_report(plain).total == added


def test_expert_bias_follows_the_ffn_unless_given() -> None:
    moe = {**BASE, "moe_experts": 4, "moe_top_k": 2, "moe_shared_ffn_hidden": 32}
    biased, free = ModelSpec(**moe), ModelSpec(**moe, moe_expert_bias=False)
    assert "mlp.experts.gate_up_proj_bias" in _names(biased)
    assert "mlp.experts.gate_up_proj_bias" not in _names(free)
    assert "mlp.shared_expert.down_proj.bias" in _names(free)
    h = 256  # the FFN width, 4 D: each expert's 2h + D biases
    assert param_report(biased).total - param_report(free).total == 2 * 4 * (2 * h + 64)
    with pytest.raises(ValidationError, match="moe_expert_bias: applies to a mixture of experts"):
        ModelSpec(**BASE, moe_expert_bias=True)


@pytest.mark.parametrize(
    ("fixture", "changes"),
    [
        ("hy-v3-defaults", {"mlp_bias": True}),
        ("tiny-step3p5", {"mlp_bias": True}),
        ("deepseek-v2-lite", {"mlp_bias": True}),
        ("deepseek-v4-flash", {"mlp_bias": True}),
        ("aria", {"mlp_bias": True}),
        ("deepseek-ocr2-defaults", {"mlp_bias": True}),
        ("ernie-4.5-21b-a3b", {"use_bias": True}),
        ("ernie-4.5-vl-28b-a3b", {"use_bias": True}),
        ("tiny-nemotron-h-latent-moe", {"mlp_bias": True}),
    ],
)
def test_biased_mlps_beside_bias_free_experts(
    tmp_path: Path, fixture: str, changes: dict[str, Any]
) -> None:
    spec = _load(tmp_path, fixture, **changes)
    names = _names(spec)
    assert not [name for name in names if "experts." in name and "bias" in name]
    assert [name for name in names if name.startswith("mlp.") and name.endswith("proj.bias")]
    assert any(stack.moe_experts for stack in spec.stacks)
