"""Laws every parameter count obeys, over random valid models."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from costcalc.params import param_report, total_params
from costcalc.spec import ModelSpec
from tests.spec_strategies import specs


@given(specs())
def test_parts_sum_to_total(spec: ModelSpec) -> None:
    r = param_report(spec)
    assert r.attention + r.ffn + r.norms == r.per_block
    assert r.blocks == spec.n_layers * r.per_block
    parts = (
        r.token_embedding
        + r.position_embedding
        + r.embedding_projection
        + r.blocks
        + r.final_norm
        + r.lm_head
    )
    assert parts == r.total


@given(specs())
def test_untied_minus_tied_is_the_output_matrix(spec: ModelSpec) -> None:
    tied = total_params(spec.model_copy(update={"tie_embeddings": True}))
    untied = total_params(spec.model_copy(update={"tie_embeddings": False}))
    assert untied - tied == spec.vocab_rows * spec.embed_width
    assert param_report(spec).untied_total == untied


@given(specs())
def test_tying_saving_is_the_output_matrix_tied_or_not(spec: ModelSpec) -> None:
    tied = param_report(spec.model_copy(update={"tie_embeddings": True}))
    untied = param_report(spec.model_copy(update={"tie_embeddings": False}))
    assert tied.tying_saving == untied.tying_saving == untied.total - tied.total
    assert tied.untied_increase == untied.untied_increase
    assert tied.untied_increase == Fraction(untied.total - tied.total, tied.total)


@given(specs())
def test_gqa_with_all_heads_is_mha(spec: ModelSpec) -> None:
    explicit = spec.model_copy(update={"n_kv_heads": spec.n_heads})
    implicit = spec.model_copy(update={"n_kv_heads": None})
    assert total_params(explicit) == total_params(implicit)


@given(specs(), st.integers(1, 5))
def test_count_is_linear_in_layers(spec: ModelSpec, k: int) -> None:
    one = total_params(spec.model_copy(update={"n_layers": 1}))
    two = total_params(spec.model_copy(update={"n_layers": 2}))
    many = total_params(spec.model_copy(update={"n_layers": k}))
    assert many == one + (k - 1) * (two - one)


@given(specs())
def test_active_never_exceeds_total(spec: ModelSpec) -> None:
    r = param_report(spec)
    assert r.active <= r.total
    assert (r.active == r.total) == (spec.moe_experts is None or spec.moe_top_k == spec.moe_experts)
