"""Nemotron-H MoE layers (``E`` in ``hybrid_override_pattern``): Nemotron 3 Nano and Super.

Golden values: tests/golden/hf_families.json (tests/reference/make_golden_families.py,
transformers 5.24 on the meta device; tiny twins on CPU for MACs and the cache), compared in
tests/test_hf_families.py. Here: the figures the issue names, and the paths no golden file
covers, each against the same config written another way transformers reads alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.files import Document
from costcalc.loaders import load_document, load_file
from costcalc.macs import forward_macs
from costcalc.params import param_report
from costcalc.spec import ModelSpec
from tests.conftest import FIXTURES
from tests.hf_helpers import config_data

HF = FIXTURES / "hf"
GOLDEN = Path(__file__).parent / "golden" / "hf_families.json"


def golden(record: str) -> dict[str, Any]:
    models: dict[str, dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))["models"]
    return models[record]


def spec(data: dict[str, Any]) -> ModelSpec:
    return load_document(Document("config.json", data)).spec


def total(data: dict[str, Any]) -> int:
    return param_report(spec(data)).total


@pytest.mark.parametrize(
    ("fixture", "parameters", "active"),
    [
        ("nemotron-3-nano-30b-a3b", 31_577_937_344, None),
        # Active: the BF16 checkpoint's headers less the experts a token skips (see SOURCES.md).
        ("nemotron-3-super-120b-a12b", 120_668_687_360, 12_770_216_960),
    ],
)
def test_nemotron_3_counts_as_transformers(fixture: str, parameters: int, active: int) -> None:
    model = load_file(HF / f"{fixture}.json")
    report = param_report(model.spec)
    assert report.total == golden(fixture)["parameters_total"] == parameters
    if active is not None:
        assert report.active == active


def test_class_defaults_stand_for_absent_moe_keys() -> None:
    """NemotronHConfig: 8 routed experts of 7688, top 2, a shared expert of 7688."""
    dropped = config_data(
        "tiny-nemotron-3-nano",
        n_routed_experts=...,
        num_experts_per_tok=...,
        moe_intermediate_size=...,
        moe_shared_expert_intermediate_size=...,
    )
    given = config_data(
        "tiny-nemotron-3-nano",
        n_routed_experts=8,
        num_experts_per_tok=2,
        moe_intermediate_size=7688,
        moe_shared_expert_intermediate_size=7688,
    )
    assert spec(dropped) == spec(given)
    assert total(dropped) != golden("tiny-nemotron-3-nano")["parameters_total"]


def test_num_local_experts_is_read_and_wins_over_n_routed_experts() -> None:
    """``attribute_map`` maps num_local_experts to n_routed_experts; given both, the alias is
    set last and wins."""
    both = config_data("tiny-nemotron-3-nano", n_routed_experts=4, num_local_experts=6)
    alias = config_data("tiny-nemotron-3-nano", n_routed_experts=..., num_local_experts=6)
    assert spec(both) == spec(alias)
    assert total(both) > golden("tiny-nemotron-3-nano")["parameters_total"]


def test_a_shared_expert_of_zero_is_the_mlp_width() -> None:
    """``NemotronHMLP(intermediate_size=0)`` takes ``config.intermediate_size``."""
    zero = config_data("tiny-nemotron-3-nano", moe_shared_expert_intermediate_size=0)
    wide = config_data("tiny-nemotron-3-nano", moe_shared_expert_intermediate_size=128)
    assert spec(zero) == spec(wide)
    assert total(zero) == total(wide)


def test_n_shared_experts_and_mtp_layers_change_nothing() -> None:
    """One shared expert is built whatever n_shared_experts says, and transformers builds no
    multi-token-prediction layers (their weights are ignored on load)."""
    super_ = config_data("nemotron-3-super-120b-a12b")
    fewer = config_data(
        "nemotron-3-super-120b-a12b",
        n_shared_experts=4,
        num_nextn_predict_layers=0,
        mtp_hybrid_override_pattern=...,
    )
    assert spec(super_) == spec(fewer)


def test_the_latent_changes_the_experts_not_the_router_or_shared_expert() -> None:
    """Dropping the latent (null, as the class default) widens each expert from L to D and
    removes the two projections: 2 X h (D - L) - 2 D L, when the block has no biases."""
    latent = config_data("tiny-nemotron-h-latent-moe")
    flat = config_data("tiny-nemotron-h-latent-moe", moe_latent_size=None)
    D, L, X, h = 64, 16, 8, 32
    moe_layers = latent["hybrid_override_pattern"].count("E")
    assert total(flat) - total(latent) == moe_layers * (2 * X * h * (D - L) - 2 * D * L)


def test_latent_macs_run_top_k_experts_in_the_latent() -> None:
    """Per token and MoE block: router X D, both projections 2 D L, k experts of 2 L h, the
    shared expert 2 D S; the difference the latent makes is k experts' 2 h (D - L) less the
    projections."""
    latent = spec(config_data("tiny-nemotron-h-latent-moe"))
    flat = spec(config_data("tiny-nemotron-h-latent-moe", moe_latent_size=None))
    D, L, k, h, T = 64, 16, 2, 32, 128
    moe_layers = 2
    difference = forward_macs(flat, 1, T) - forward_macs(latent, 1, T)
    assert difference == T * moe_layers * (k * 2 * h * (D - L) - 2 * D * L)


def test_mlp_bias_biases_the_shared_expert_not_the_experts() -> None:
    """NemotronHMLP (the shared expert) is ``nn.Linear(..., bias=config.mlp_bias)``; the
    experts are stacked parameters without bias: each of the 2 MoE layers gains the shared
    expert's up (S = 48) and down (D = 64) biases, nothing more."""
    plain = spec(config_data("tiny-nemotron-3-nano"))
    biased = spec(config_data("tiny-nemotron-3-nano", mlp_bias=True))
    assert param_report(biased).total - param_report(plain).total == 2 * (48 + 64)
