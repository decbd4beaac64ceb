"""MAC formulas: seed 000's terms, PyTorch's FlopCounterMode counts, and the laws they obey."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costcalc import macs
from costcalc.compute import decode_report, mac_report
from costcalc.params import param_report
from costcalc.spec import ModelSpec
from tests.golden_specs import GOLDEN, golden_spec

GOLDEN_MODELS: dict[str, Any] = json.loads((GOLDEN / "hf_reference.json").read_text())["models"]
MACS_GOLDEN = {
    name: record["macs_forward"]
    for name, record in GOLDEN_MODELS.items()
    if "macs_total" in record.get("macs_forward", {})
}


def seed_block(d: int = 256) -> ModelSpec:
    """Seed 000's leading_cost setting: V=50,257, context 1,024, one GPT-2 block, r=4."""
    return ModelSpec(vocab_size=50257, context_length=1024, d_model=d, n_layers=1, n_heads=8)


def test_seed_000_values_at_d_256() -> None:
    # seed 000: leading_cost(50257, 1024, 256, batch=2, length=4)
    spec = seed_block()
    assert macs.projection_ffn_macs(spec, 2, 4) == 6_291_456
    assert macs.attention_pair_macs(spec, 2, 4) == 16_384
    assert macs.lm_head_macs(spec, 2, 4) == 102_926_336


def test_gpt2_small_matches_flop_counter_mode() -> None:
    # Issue 3: FlopCounterMode / 2 for GPT-2 small, eager attention, B=1, T=128.
    report = mac_report(golden_spec("gpt2"), 1, 128)
    assert report.total == 16_114_089_984
    assert report.lm_head == 4_940_464_128
    assert report.attention_pair == 301_989_888


@pytest.mark.parametrize("name", sorted(MACS_GOLDEN))
def test_forward_macs_match_golden(name: str) -> None:
    # tests/golden/hf_reference.json, made by tests/reference/make_golden.py (FlopCounterMode).
    golden = MACS_GOLDEN[name]
    report = mac_report(golden_spec(name), golden["batch"], golden["seq_len"])
    assert report.total == golden["macs_total"]
    assert report.lm_head == golden["macs_lm_head"]
    assert report.attention_pair == golden["macs_attention_pair"]
    if "macs_router" in golden:
        assert report.router == golden["macs_router"]
        assert report.ffn == golden["macs_experts"]


@pytest.mark.parametrize("name", sorted(GOLDEN_MODELS))
def test_golden_specs_match_parameter_counts(name: str) -> None:
    # The specs the MAC comparisons use describe the golden models: same parameter count.
    assert param_report(golden_spec(name)).total == GOLDEN_MODELS[name]["parameters_total"]


def test_flops_and_training_multipliers() -> None:
    assert macs.flops(16_114_089_984) == 32_228_179_968
    # Forward 10 MACs of which 4 are attention pairs (QK^T 2, weights x V 2).
    assert macs.training_macs(10, 4) == 30
    assert macs.training_macs(10, 4, "selective") == 34
    assert macs.training_macs(10, 4, "full") == 40
    # A fused kernel's backward recomputes QK^T, half the pair MACs, on top of any mode.
    for kernel in ("sdpa", "flash"):
        assert macs.training_macs(10, 4, "none", kernel) == 32
        assert macs.training_macs(10, 4, "selective", kernel) == 36
        assert macs.training_macs(10, 4, "full", kernel) == 42
    assert macs.training_rule("none", "flash") == "3 x forward + QK^T (half the attention pairs)"


def brute_force_pairs(T: int, causal: bool, window: int | None) -> int:
    """Count query-key pairs by listing them: query i sees keys j in its window (and j <= i)."""
    W = T if window is None else window
    count = 0
    for i in range(T):
        keys = range(max(0, i - W + 1), i + 1) if causal else range(T)
        count += min(len(keys), W)
    return count


@given(
    st.integers(1, 40),
    st.booleans(),
    st.one_of(st.none(), st.integers(1, 50)),
)
def test_attention_pairs_equal_brute_force(T: int, causal: bool, window: int | None) -> None:
    assert macs.attention_pairs(T, causal, window) == brute_force_pairs(T, causal, window)


@given(st.integers(1, 40), st.booleans(), st.one_of(st.none(), st.integers(1, 50)))
def test_bidirectional_pairs_are_those_less_than_the_window_apart(
    T: int, causal: bool, window: int | None
) -> None:
    W = T if window is None else window
    pairs = sum(abs(i - j) < W for i in range(T) for j in range(T))
    assert macs.attention_pairs(T, causal, window, bidirectional=True) == pairs


def test_attention_pairs_small_cases() -> None:
    assert macs.attention_pairs(4) == 16
    assert macs.attention_pairs(4, causal=True) == 10  # T(T+1)/2
    assert macs.attention_pairs(6, causal=True, window=2) == 3 + 4 * 2
    assert macs.attention_pairs(6, window=2) == 12


specs = st.builds(
    lambda d, heads, layers, vocab, kv, gated, experts: ModelSpec(
        vocab_size=vocab,
        context_length=4096,
        d_model=d * heads,
        n_layers=layers,
        n_heads=heads,
        n_kv_heads=kv if heads % kv == 0 else None,
        ffn="swiglu" if gated else "mlp",
        moe_experts=experts if experts > 1 else None,
        moe_top_k=min(2, experts) if experts > 1 else None,
    ),
    d=st.integers(1, 32),
    heads=st.integers(1, 8),
    layers=st.integers(1, 4),
    vocab=st.integers(1, 1000),
    kv=st.integers(1, 8),
    gated=st.booleans(),
    experts=st.integers(1, 4),
)


@given(specs, st.integers(1, 4), st.integers(1, 64), st.booleans())
def test_parts_sum_to_total(spec: ModelSpec, B: int, T: int, causal: bool) -> None:
    r = mac_report(spec, B, T, causal)
    assert r.projection_ffn == r.attention_projections + r.ffn + r.router
    assert r.total == r.projection_ffn + r.attention_pair + r.embedding_projection + r.lm_head


@given(specs, st.integers(1, 4), st.integers(1, 64))
def test_causal_never_exceeds_full(spec: ModelSpec, B: int, T: int) -> None:
    causal = macs.attention_pair_macs(spec, B, T, causal=True)
    assert causal <= macs.attention_pair_macs(spec, B, T)
    assert macs.forward_macs(spec, B, T, causal=True) <= macs.forward_macs(spec, B, T)


@given(specs, st.integers(1, 4), st.integers(1, 64))
def test_tying_never_changes_macs(spec: ModelSpec, B: int, T: int) -> None:
    flipped = spec.model_copy(update={"tie_embeddings": not spec.tie_embeddings})
    assert mac_report(flipped, B, T) == mac_report(spec, B, T)


@given(specs, st.integers(1, 4), st.integers(1, 64))
def test_gqa_with_kv_equal_heads_is_mha(spec: ModelSpec, B: int, T: int) -> None:
    mha = ModelSpec.model_validate({**spec.model_dump(), "n_kv_heads": None})
    gqa = ModelSpec.model_validate({**spec.model_dump(), "n_kv_heads": spec.n_heads})
    assert mac_report(gqa, B, T) == mac_report(mha, B, T)


@given(st.integers(1, 64), st.integers(1, 4), st.integers(1, 8), st.integers(1, 16))
def test_plain_block_is_seed_formula(d: int, L: int, B: int, T: int) -> None:
    # seed 000: (4 + 2r) B T D^2, 2 B T^2 D and B T D V per block, r = 4.
    spec = ModelSpec(vocab_size=97, context_length=64, d_model=d, n_layers=L, n_heads=1)
    assert macs.projection_ffn_macs(spec, B, T) == L * 12 * B * T * d * d
    assert macs.attention_pair_macs(spec, B, T) == L * 2 * B * T * T * d
    assert macs.lm_head_macs(spec, B, T) == B * T * d * 97


def test_gated_moe_counts_active_experts_and_router() -> None:
    # Mixtral-style: 3 matrices of D x h per active expert, router D x X per token.
    spec = golden_spec("tiny-mixtral")
    per_token = spec.n_layers * spec.experts_active * 3 * spec.d_model * spec.ffn_width
    assert macs.ffn_macs(spec, 1, 16) == 16 * per_token
    assert macs.router_macs(spec, 1, 16) == 16 * spec.n_layers * spec.d_model * 4


def test_embedding_projection_for_a_narrow_table() -> None:
    # OPT-350m: a 512-wide table projected in and out of a 1,024-wide model.
    spec = ModelSpec(
        vocab_size=50272, context_length=2048, d_model=1024, embedding_dim=512, n_layers=24,
        n_heads=16,
    )  # fmt: skip
    assert macs.embedding_projection_macs(spec, 1, 128) == 128 * 2 * 512 * 1024
    assert macs.lm_head_macs(spec, 1, 128) == 128 * 512 * 50272


@given(
    specs,
    st.integers(1, 3),
    st.integers(1, 40),
    st.integers(1, 40),
    st.one_of(st.none(), st.integers(1, 30)),
)
def test_cached_decoding_equals_causal_forward(
    spec: ModelSpec, B: int, P: int, N: int, window: int | None
) -> None:
    # With a KV cache, prefill (causal) + N - 1 steps does the work of one causal forward of the
    # P + N - 1 tokens that are fed, each attending to the keys before it.
    spec = spec.model_copy(update={"sliding_window": window})
    report = decode_report(spec, B, P, N, causal=True)
    assert report.total == macs.forward_macs(spec, B, P + N - 1, causal=True)
    steps = sum(macs.decode_token_macs(spec, t, B) for t in range(P, P + N - 1))
    assert report.decode == steps


def test_decode_token_at_position() -> None:
    # GPT-2 small, one token at position t = 127: every matrix once, 128 cached keys.
    spec = golden_spec("gpt2")
    linear = 12 * 12 * 768 * 768 + 768 * 50257
    assert macs.decode_token_macs(spec, 127) == linear + 12 * 2 * 768 * 128
