"""Recurrent token mixers (Mamba-2, Mamba, Gated DeltaNet, short convolution): their fixed-size
state against transformers' cache, their structural rules, and what is refused."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from costcalc.errors import UsageError
from costcalc.macs import decode_macs, decode_token_macs, forward_macs
from costcalc.memory import kv_cache_elements, state_elements
from costcalc.spec import ModelSpec
from tests.test_hf_families import NAMES, golden, load, supported

STATE_KINDS = ("conv_states", "recurrent_states")


def _has_state(name: str) -> bool:
    kinds = golden()[name].get("kv_cache", {}).get("cache_elements_by_kind", {})
    return any(kind in kinds for kind in STATE_KINDS)


WITH_STATE = [n for n in NAMES if supported(n) and _has_state(n)]


def test_golden_models_with_state_are_present() -> None:
    assert {"tiny-mamba2", "tiny-jamba", "tiny-lfm2", "tiny-nemotron-h"} <= set(WITH_STATE)


@pytest.mark.parametrize("name", WITH_STATE)
def test_state_matches_transformers_cache(name: str) -> None:
    record = golden()[name]["kv_cache"]
    spec = load(name).spec
    by_kind = record["cache_elements_by_kind"]
    # The state is what the cache holds beyond keys and values; it does not grow with T.
    assert state_elements(spec, record["batch"]) == sum(by_kind.get(k, 0) for k in STATE_KINDS)
    assert (
        kv_cache_elements(spec, record["batch"], record["seq_len"]) == record["kv_cache_elements"]
    )
    assert state_elements(spec, 3) == 3 * state_elements(spec, 1)


BASE: dict[str, Any] = {
    "vocab_size": 256,
    "d_model": 64,
    "n_layers": 2,
    "context_length": 256,
    "position": "none",
    "norm": "rmsnorm",
    "ffn": "none",
    "norms_per_block": 1,
}
MAMBA2 = {"mixer": "mamba2", "mamba2": {"heads": 8, "head_dim": 16, "state": 16, "chunk_size": 8}}


def test_mamba2_spec_counts_like_tiny_mamba2() -> None:
    # tests/fixtures/hf/tiny-mamba2.json written in costcalc's own keys.
    spec = ModelSpec(**BASE, **MAMBA2)
    record = golden()["tiny-mamba2"]
    assert forward_macs(spec, 1, 128) == record["macs_forward"]["macs_total"]
    assert state_elements(spec, 1) == record["kv_cache"]["cache_elements_total"]


def test_mixer_sizes_are_required_and_only_for_their_mixer() -> None:
    with pytest.raises(ValidationError, match="mamba2: required for mamba2 blocks"):
        ModelSpec(**BASE, mixer="mamba2")
    with pytest.raises(ValidationError, match="short_conv: applies to short_conv blocks"):
        ModelSpec(**BASE, **MAMBA2, short_conv={"conv_kernel": 3})


def test_grouping_rules() -> None:
    with pytest.raises(ValidationError, match="multiple of groups"):
        ModelSpec(**{**BASE, "mixer": "mamba2"}, mamba2={**MAMBA2["mamba2"], "groups": 3})
    net = {"key_heads": 3, "value_heads": 4, "key_head_dim": 16, "value_head_dim": 16}
    with pytest.raises(ValidationError, match="multiple of key_heads"):
        ModelSpec(**BASE, mixer="gated_deltanet", gated_deltanet=net)


def test_layer_groups_mix_mixers() -> None:
    spec = ModelSpec(
        **{**BASE, "ffn": "mlp", "n_layers": 3},
        layers=[
            {"count": 2, **MAMBA2},
            {"count": 1, "mixer": "attention", "n_heads": 4},
        ],
    )
    assert [s.mixer for s in spec.stacks] == ["mamba2", "attention"]
    # Keys and values of the attention layer only; the Mamba-2 layers keep a fixed state.
    assert kv_cache_elements(spec, 1, 16) == 2 * 64 * 16
    assert state_elements(spec, 1) == 2 * (160 * 4 + 8 * 16 * 16)


def test_decoding_recurrent_mixers_is_refused() -> None:
    spec = ModelSpec(**BASE, **MAMBA2)
    with pytest.raises(UsageError, match="mamba2"):
        decode_token_macs(spec, 10)
    with pytest.raises(UsageError, match="not modelled"):
        decode_macs(spec, 10, 5)
