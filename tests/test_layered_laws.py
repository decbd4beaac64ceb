"""Laws every layered spec obeys, over random valid models (issue 9's property tests).

A layered spec of one group is the flat spec it describes, in every figure; the order of groups
does not change a total; the parts add up per kind of block; a pattern is the groups it expands
to; an MLA cache (the latent) is smaller than the cache of multi-head attention with its heads.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from costcalc.macs import decode_macs, forward_macs
from costcalc.memory import (
    OPTIMIZERS,
    kv_cache_elements,
    memory_report,
    memory_setup,
)
from costcalc.params import param_report
from costcalc.spec import ModelSpec
from costcalc.tensors import tensor_count
from tests.spec_strategies import specs

Overrides = dict[str, Any]

MLA_SIZES = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")


def _base_data(spec: ModelSpec, mla: bool) -> dict[str, Any]:
    """The model's keys; without the attention-only keys MLA blocks cannot carry."""
    data = spec.model_dump(exclude_none=True)
    data.pop("layers", None)
    if mla:
        data.pop("n_kv_heads", None)
    return data


@st.composite
def block_overrides(draw: st.DrawFn, base: ModelSpec, mla: bool) -> Overrides:
    """Block keys one group may set on top of ``base`` and still build."""
    out: Overrides = {}
    heads = base.n_heads or 1
    if mla and draw(st.booleans()):
        out["mixer"] = "mla"
        out["q_lora_rank"] = draw(st.one_of(st.none(), st.integers(1, 64)))
        for name in MLA_SIZES:
            even = name in ("qk_rope_head_dim", "qk_nope_head_dim")  # rotary pairs, when swapped
            out[name] = draw(st.integers(1, 16)) * (2 if even else 1)
    elif draw(st.booleans()):
        out["n_kv_heads"] = draw(
            st.sampled_from([k for k in range(1, heads + 1) if heads % k == 0])
        )
    if draw(st.booleans()):
        out["sliding_window"] = draw(st.integers(1, 64))
    if draw(st.booleans()):
        experts = draw(st.integers(2, 8))
        out["moe_experts"] = experts
        out["moe_top_k"] = draw(st.integers(1, experts))
        if draw(st.booleans()):
            out["moe_ffn_hidden"] = draw(st.integers(1, 256))
        if draw(st.booleans()):
            out["moe_shared_ffn_hidden"] = draw(st.integers(1, 256))
    if not base.fused_gate_up and draw(st.booleans()):
        out["ffn"] = draw(st.sampled_from(["mlp", "swiglu", "geglu"]))
    if draw(st.booleans()):
        out["ffn_hidden"] = draw(st.integers(1, 512))
    for flag in ("qkv_bias", "attn_out_bias", "ffn_bias"):
        if draw(st.booleans()):
            out[flag] = draw(st.booleans())
    if draw(st.booleans()):
        out["norms_per_block"] = draw(st.integers(0, 4))
    return out


@st.composite
def layered(draw: st.DrawFn, max_groups: int = 4) -> tuple[ModelSpec, list[dict[str, Any]]]:
    """A base flat spec from :func:`specs` and 1..max_groups groups (count + overrides); the
    groups may switch between attention and MLA when the base's head width is implicit."""
    base = draw(specs())
    mla = base.head_dim is None and draw(st.booleans())
    groups = [
        {"count": draw(st.integers(1, 8)), **draw(block_overrides(base, mla))}
        for _ in range(draw(st.integers(1, max_groups)))
    ]
    return base, groups


def build(base: ModelSpec, groups: list[dict[str, Any]], mla: bool | None = None) -> ModelSpec:
    """The layered spec; ``mla``: the base's key/value heads give way to MLA (default: when
    a group is MLA)."""
    mla = any(g.get("mixer") == "mla" for g in groups) if mla is None else mla
    data = _base_data(base, mla=mla)
    data["n_layers"] = sum(g["count"] for g in groups)
    return ModelSpec.model_validate({**data, "layers": groups})


def _figures(spec: ModelSpec) -> dict[str, Any]:
    """Every figure costcalc gives, at a small batch and length."""
    T = min(spec.context_length, 96)
    r = param_report(spec)
    figures: dict[str, Any] = {
        "total": r.total,
        "untied": r.untied_total,
        "active": r.active,
        "blocks": r.blocks,
        "tensors": tensor_count(spec),
        "forward": forward_macs(spec, 2, T),
        "forward_causal": forward_macs(spec, 2, T, causal=True),
        "decode": decode_macs(spec, prompt=T // 2 + 1, generated=T // 2 + 1, batch=3),
        "kv_cache": kv_cache_elements(spec, 3, T),
    }
    for name, setup in {
        "inference": memory_setup(batch=3, length=T),
        **{
            f"train-{opt}": memory_setup(train=True, optimizer=opt, batch=2, length=T)
            for opt in OPTIMIZERS
        },
        "train-full": memory_setup(train=True, batch=2, length=T, recompute="full"),
    }.items():
        report = asdict(memory_report(spec, setup))
        report.pop("setup")
        figures[name] = report
    return figures


@given(layered(max_groups=1))
def test_one_group_is_the_flat_spec(drawn: tuple[ModelSpec, list[dict[str, Any]]]) -> None:
    base, [group] = drawn
    one = build(base, [group])
    mla = group.get("mixer") == "mla"
    flat_data = {**_base_data(base, mla), **group, "n_layers": group["count"]}
    flat_data.pop("count")
    flat = ModelSpec.model_validate(flat_data)
    assert one.uniform
    assert param_report(one) == param_report(flat)
    assert _figures(one) == _figures(flat)


@given(layered(), st.randoms(use_true_random=False))
def test_order_of_groups_does_not_change_totals(
    drawn: tuple[ModelSpec, list[dict[str, Any]]], rng: Any
) -> None:
    base, groups = drawn
    shuffled = list(groups)
    rng.shuffle(shuffled)
    assert _figures(build(base, groups)) == _figures(build(base, shuffled))


@given(layered())
def test_parts_sum_to_the_total_per_group(drawn: tuple[ModelSpec, list[dict[str, Any]]]) -> None:
    base, groups = drawn
    spec = build(base, groups)
    r = param_report(spec)
    for stack in r.stacks:
        assert stack.attention + stack.ffn + stack.norms == stack.per_block
        assert stack.blocks == stack.layers * stack.per_block
    assert sum(stack.blocks for stack in r.stacks) == r.blocks
    assert sum(stack.layers for stack in r.stacks) == spec.n_layers
    parts = (
        r.token_embedding
        + r.position_embedding
        + r.embedding_projection
        + r.embedding_norm
        + r.blocks
        + r.final_norm
        + r.lm_head
    )
    assert parts == r.total
    if len(r.stacks) == 1:
        [stack] = r.stacks
        assert (r.attention, r.ffn, r.norms, r.per_block) == (
            stack.attention,
            stack.ffn,
            stack.norms,
            stack.per_block,
        )
    else:
        assert r.per_block is None


def _expand(count: int, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The explicit groups a pattern group stands for, layer by layer (small counts only)."""
    kinds = [i for i, run in enumerate(runs) for _ in range(run["count"])]
    groups: list[dict[str, Any]] = []
    for layer in range(count):
        kind = kinds[layer % len(kinds)]
        if groups and groups[-1]["kind"] == kind:
            groups[-1]["count"] += 1
        else:
            groups.append({"kind": kind, "count": 1})
    return [
        {**{k: v for k, v in runs[g["kind"]].items() if k != "count"}, "count": g["count"]}
        for g in groups
    ]


@st.composite
def patterned(draw: st.DrawFn) -> tuple[ModelSpec, int, list[dict[str, Any]]]:
    base = draw(specs())
    mla = base.head_dim is None and draw(st.booleans())
    runs = [
        {"count": draw(st.integers(1, 6)), **draw(block_overrides(base, mla))}
        for _ in range(draw(st.integers(1, 3)))
    ]
    return base, draw(st.integers(1, 40)), runs


@given(patterned())
@settings(max_examples=60)
def test_a_pattern_is_the_groups_it_expands_to(
    drawn: tuple[ModelSpec, int, list[dict[str, Any]]],
) -> None:
    base, count, runs = drawn
    mla = any(run.get("mixer") == "mla" for run in runs)
    data = {**_base_data(base, mla), "n_layers": count}
    pattern = ModelSpec.model_validate({**data, "layers": [{"count": count, "pattern": runs}]})
    explicit = ModelSpec.model_validate({**data, "layers": _expand(count, runs)})
    assert _figures(pattern) == _figures(explicit)


def test_ten_layers_of_five_sliding_one_full() -> None:
    data = {"vocab_size": 1000, "d_model": 64, "n_heads": 4, "context_length": 256}
    a, b = {"sliding_window": 16}, {"norms_per_block": 4}
    pattern = ModelSpec.model_validate(
        {**data, "layers": [{"count": 10, "pattern": [{"count": 5, **a}, {"count": 1, **b}]}]}
    )
    groups = ModelSpec.model_validate(
        {**data, "layers": [{"count": 5, **a}, {"count": 1, **b}, {"count": 4, **a}]}
    )
    assert pattern.n_layers == groups.n_layers == 10
    assert [s.n_layers for s in pattern.stacks] == [9, 1]
    assert _figures(pattern) == _figures(groups)


@st.composite
def mla_specs(draw: st.DrawFn) -> tuple[ModelSpec, ModelSpec]:
    """An MLA model and the multi-head attention model with its heads: H heads of the query/key
    width (nope + rope), values no wider; the latent a compression (rank <= H (nope + v))."""
    heads = draw(st.integers(2, 32))
    nope, rope = 2 * draw(st.integers(1, 32)), 2 * draw(st.integers(1, 32))
    value = draw(st.integers(1, nope + rope))
    rank = draw(st.integers(1, heads * (nope + value)))
    common = {
        "vocab_size": draw(st.integers(2, 5000)),
        "d_model": draw(st.integers(8, 512)),
        "n_layers": draw(st.integers(1, 64)),
        "context_length": 4096,
        "position": "rotary",
        "n_heads": heads,
        "sliding_window": draw(st.one_of(st.none(), st.integers(1, 4096))),
    }
    mla = ModelSpec(
        **common,
        mixer="mla",
        q_lora_rank=draw(st.one_of(st.none(), st.integers(1, 512))),
        kv_lora_rank=rank,
        qk_rope_head_dim=rope,
        qk_nope_head_dim=nope,
        v_head_dim=value,
    )
    mha = ModelSpec(**common, head_dim=nope + rope)
    return mla, mha


@given(mla_specs(), st.integers(1, 8), st.integers(1, 4096))
def test_mla_cache_is_smaller_than_mha_with_its_heads(
    pair: tuple[ModelSpec, ModelSpec], batch: int, length: int
) -> None:
    mla, mha = pair
    window = mla.sliding_window
    tokens = length if window in (None, 1) else min(length, window)  # 1 keeps every token
    latent = mla.n_layers * batch * tokens * ((mla.kv_lora_rank or 0) + (mla.qk_rope_head_dim or 0))
    assert kv_cache_elements(mla, batch, length) == latent
    assert latent < kv_cache_elements(mha, batch, length)


@given(layered())
def test_mla_groups_cache_less_than_mha_groups(
    drawn: tuple[ModelSpec, list[dict[str, Any]]],
) -> None:
    """Swapping every MLA group for attention with its heads never shrinks the cache."""
    base, groups = drawn
    spec = build(base, groups)
    swapped = [
        {k: v for k, v in g.items() if k not in (*MLA_SIZES, "q_lora_rank", "mixer")}
        | (
            {"head_dim": g["qk_nope_head_dim"] + g["qk_rope_head_dim"], "n_kv_heads": base.n_heads}
            if g.get("mixer") == "mla"
            else {}
        )
        for g in groups
    ]
    if swapped == groups:
        return
    with_mha = build(base, swapped, mla=True)  # the same heads in the other groups
    T = min(spec.context_length, 96)
    ok = all(
        (g["kv_lora_rank"] <= spec.n_heads * (g["qk_nope_head_dim"] + g["v_head_dim"]))
        and g["v_head_dim"] <= g["qk_nope_head_dim"] + g["qk_rope_head_dim"]
        for g in groups
        if g.get("mixer") == "mla"
    )
    if ok:
        assert kv_cache_elements(spec, 2, T) < kv_cache_elements(with_mha, 2, T)
