"""Recurrent token mixers (Mamba-2, Mamba, Gated DeltaNet, short convolution): their fixed-size
state against transformers' cache, their structural rules, and what is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from costcalc.errors import UsageError
from costcalc.loaders import load_file
from costcalc.macs import decode_macs, decode_token_macs, forward_macs
from costcalc.memory import kv_cache_elements, state_elements
from costcalc.params import param_report
from costcalc.spec import ModelSpec
from costcalc.tensors import tensor_count
from tests.conftest import Invoke
from tests.hf_helpers import assert_refused
from tests.test_hf_families import NAMES, ROOT, golden, load, supported

STATE_KINDS = ("conv_states", "recurrent_states")


def _has_state(name: str) -> bool:
    kinds = golden()[name].get("kv_cache", {}).get("cache_elements_by_kind", {})
    return any(kind in kinds for kind in STATE_KINDS)


WITH_STATE = [n for n in NAMES if supported(n) and _has_state(n)]


def test_golden_models_with_state_are_present() -> None:
    assert {
        "tiny-mamba2",
        "tiny-jamba",
        "tiny-lfm2",
        "tiny-nemotron-h",
        "mamba-130m",
        "tiny-bamba",
        "tiny-falcon-h1",
        "tiny-granite-4.0-h",
    } <= set(WITH_STATE)


@pytest.mark.parametrize("name", WITH_STATE)
def test_state_matches_transformers_cache(name: str) -> None:
    record = golden()[name]["kv_cache"]
    spec = load(name).spec
    by_kind = record["cache_elements_by_kind"]
    # The state is what the cache holds beyond keys and values (and an indexer's keys,
    # Qwen4-Exp's indexer_keys); it does not grow with T.
    assert state_elements(spec, record["batch"]) == sum(by_kind.get(k, 0) for k in STATE_KINDS)
    # A sparse-attention indexer's keys (GLM-5.3-Flash's) are cached beside the keys and values.
    indexer = by_kind.get("indexer_keys", 0)
    kv = kv_cache_elements(spec, record["batch"], record["seq_len"])
    assert kv == record["kv_cache_elements"] + indexer
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


PARALLEL = {
    "mixer": "attention",
    "n_heads": 4,
    "parallel_mamba2": True,
    "mamba2": {**MAMBA2["mamba2"], "gated_norm": False},
}


def test_attention_and_mamba2_side_by_side() -> None:
    # Falcon-H1's block: both mixers' tensors, the keys and values of attention and the state
    # of Mamba-2 (conv over I + 2GN = 160 channels x k 4, H P N = 8 x 16 x 16).
    spec = ModelSpec(**BASE, **PARALLEL)
    attention_only = ModelSpec(**BASE, mixer="attention", n_heads=4)
    mamba2 = ModelSpec(**BASE, mixer="mamba2", mamba2=PARALLEL["mamba2"])
    assert param_report(spec).blocks == (
        param_report(attention_only).blocks + param_report(mamba2).blocks - 2 * 64
    )  # one block norm (D) in each of the 2 blocks, not two
    assert kv_cache_elements(spec, 1, 16) == kv_cache_elements(attention_only, 1, 16)
    assert state_elements(spec, 1) == state_elements(mamba2, 1) == 2 * (160 * 4 + 8 * 16 * 16)
    assert forward_macs(spec, 1, 128) == (
        forward_macs(attention_only, 1, 128) + forward_macs(mamba2, 1, 128) - 128 * 64 * 256
    )  # one LM head
    # Without a norm weight: I = 128 fewer parameters per block than the gated-norm mixer.
    normed = ModelSpec(**BASE, mixer="mamba2", mamba2=MAMBA2["mamba2"])
    assert param_report(normed).blocks - param_report(mamba2).blocks == 2 * 128
    with pytest.raises(UsageError, match="mamba2"):
        decode_token_macs(spec, 10)


def test_parallel_mamba2_needs_attention_and_sizes() -> None:
    with pytest.raises(ValidationError, match="mamba2: required for mamba2 blocks"):
        ModelSpec(**BASE, mixer="attention", n_heads=4, parallel_mamba2=True)
    with pytest.raises(ValidationError, match="parallel_mamba2: applies to attention blocks"):
        ModelSpec(**BASE, **{**MAMBA2, "parallel_mamba2": True})
    with pytest.raises(ValidationError, match="mamba2: applies to mamba2 blocks"):
        ModelSpec(**BASE, **{**PARALLEL, "parallel_mamba2": False})


def test_decoding_recurrent_mixers_is_refused() -> None:
    spec = ModelSpec(**BASE, **MAMBA2)
    with pytest.raises(UsageError, match="mamba2"):
        decode_token_macs(spec, 10)
    with pytest.raises(UsageError, match="not modelled"):
        decode_macs(spec, 10, 5)


def _load_changed(tmp_path: Path, fixture: str, **changes: Any) -> Any:
    data = json.loads((ROOT / "tests/fixtures/hf" / fixture).read_text())
    data.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return load_file(path)


@pytest.mark.parametrize(
    ("fixture", "changes", "message"),
    [
        ("tiny-mamba2", {"expand": 3}, "expand"),
        ("tiny-nemotron-h", {"hybrid_override_pattern": "M-X"}, "string of M, E"),
        ("tiny-jamba", {"attn_layer_offset": 4}, "attn_layer_offset"),
        ("tiny-bamba", {"attn_layer_indices": "9"}, "attn_layer_indices"),
        ("tiny-bamba", {"mamba_d_head": 8}, "mamba_d_head"),
        ("mamba-130m", {"expand": "2"}, "expand"),
    ],
)
def test_translators_refuse_what_they_cannot_build(
    tmp_path: Path, fixture: str, changes: dict[str, Any], message: str
) -> None:
    assert_refused(tmp_path, fixture, message, **changes)


def test_qwen3_next_attention_every_interval_is_a_cycle(tmp_path: Path) -> None:
    spec = _load_changed(
        tmp_path, "tiny-qwen3-next.json", num_hidden_layers=10, full_attention_interval=3
    ).spec
    assert spec.layers is not None and len(spec.layers) == 1  # one cycling group, closed form
    assert [(s.mixer, s.n_layers) for s in spec.stacks] == [
        ("gated_deltanet", 7),
        ("attention", 3),
    ]


def test_jamba_periods_cycle(tmp_path: Path) -> None:
    spec = _load_changed(tmp_path, "tiny-jamba.json", num_hidden_layers=12).spec
    kinds = sorted((s.mixer, s.moe_experts or 0, s.n_layers) for s in spec.stacks)
    # attention on i % 4 == 2 (3 layers), MoE on odd layers (6); attention layers are even.
    assert kinds == [("attention", 0, 3), ("mamba", 0, 3), ("mamba", 4, 6)]


def test_lfm2_full_attn_idxs(tmp_path: Path) -> None:
    data_changes = {"layer_types": None, "full_attn_idxs": [1, 3]}
    spec = _load_changed(tmp_path, "tiny-lfm2.json", **data_changes).spec
    assert [(s.mixer, s.n_layers) for s in spec.stacks] == [("short_conv", 2), ("attention", 2)]


HYBRID_RECORDS = [
    "mamba-130m",
    "falcon-mamba-7b",
    "bamba-9b",
    "granite-4.0-h-tiny",
    "falcon-h1-7b",
    "olmo-hybrid-7b",
    "lfm3-1.7b",
    "kimi-linear-48b-a3b",
    "ling-3.0-flash",
    "recurrentgemma-2b",
    "tiny-granite-4.0-h-dense",
]


@pytest.mark.parametrize("name", HYBRID_RECORDS)
def test_tensor_count_matches_transformers(name: str) -> None:
    # Every parameter tensor transformers builds, once per layer that holds it (the optimizer's
    # step scalars follow this count): OLMo Hybrid's q/k/v are three tensors, Granite 4.0's
    # gate and up one.
    record = golden()[name]
    theirs = sum(len(k["tensors"]) * len(k["layers"]) for k in record["layer_kinds"])
    theirs += len(record["parameters_by_tensor_other"])
    assert tensor_count(load(name).spec) == theirs


def test_lfm3_default_layers_are_a_closed_form_cycle(tmp_path: Path) -> None:
    # Lfm3Config: layer 0 a convolution, then full attention where i % 4 == 2, sliding where
    # i % 4 == 0, convolutions elsewhere; as the 24 layers lfm3-1.7b.json lists.
    spec = _load_changed(tmp_path, "lfm3-1.7b.json", layer_types=None).spec
    assert spec.layers is not None and len(spec.layers) == 2
    assert param_report(spec).total == golden()["lfm3-1.7b"]["parameters_total"]
    assert [(s.mixer, s.sliding_window, s.n_layers) for s in spec.stacks] == [
        ("short_conv", None, 13),
        ("attention", None, 6),
        ("attention", 256, 5),
    ]
    short = _load_changed(tmp_path, "tiny-lfm3.json", num_hidden_layers=3).spec
    assert [(s.mixer, s.n_layers) for s in short.stacks] == [("short_conv", 2), ("attention", 1)]


@pytest.mark.parametrize(("layers", "dense"), [(13, 2), (5, 0), (3, 1), (1, 1), (9, 9)])
def test_kimi_linear_default_layers_match_the_listed_ones(
    tmp_path: Path, layers: int, dense: int
) -> None:
    # KimiLinearConfig fills layer_types (attention where i > 0 and i % 4 == 0) and
    # mlp_layer_types (dense for i < first_k_dense_replace); costcalc keeps them closed form.
    changes: dict[str, Any] = {"num_hidden_layers": layers, "first_k_dense_replace": dense}
    closed = _load_changed(tmp_path, "tiny-kimi-linear.json", **changes).spec
    listed = _load_changed(
        tmp_path,
        "tiny-kimi-linear.json",
        **changes,
        layer_types=[
            "full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(layers)
        ],
        mlp_layer_types=["dense" if i < dense else "sparse" for i in range(layers)],
    ).spec
    assert len(closed.layers or ()) <= 5

    def kinds(spec: ModelSpec) -> list[tuple[str, int, int]]:
        return sorted((s.mixer, s.moe_experts or 0, s.n_layers) for s in spec.stacks)

    assert kinds(closed) == kinds(listed)
    assert param_report(closed).total == param_report(listed).total


@pytest.mark.parametrize(("layers", "dense", "group"), [(7, 2, 3), (20, 0, 6), (4, 5, 2)])
def test_bailing_hybrid_default_layers_match_the_listed_ones(
    tmp_path: Path, layers: int, dense: int, group: int
) -> None:
    # BailingHybridConfig: attention where (i + 1) % layer_group_size == 0, dense MLPs on the
    # first first_k_dense_replace layers.
    changes: dict[str, Any] = {
        "num_hidden_layers": layers,
        "first_k_dense_replace": dense,
        "layer_group_size": group,
    }
    closed = _load_changed(tmp_path, "tiny-ling-hybrid.json", **changes).spec
    listed = _load_changed(
        tmp_path,
        "tiny-ling-hybrid.json",
        **changes,
        layer_types=[
            "full_attention" if (i + 1) % group == 0 else "linear_attention" for i in range(layers)
        ],
        mlp_layer_types=["dense" if i < dense else "sparse" for i in range(layers)],
    ).spec
    assert sorted((s.mixer, s.moe_experts or 0, s.n_layers) for s in closed.stacks) == sorted(
        (s.mixer, s.moe_experts or 0, s.n_layers) for s in listed.stacks
    )
    assert param_report(closed).total == param_report(listed).total


def test_recurrent_gemma_state_is_what_its_modules_keep() -> None:
    # modeling_recurrent_gemma.py keeps the state in the recurrent blocks themselves (no cache
    # object): conv1d_state pads the conv input to conv1d_width - 1 positions, recurrent_states
    # is one value per channel, W each (B = 1).
    spec = load("tiny-recurrentgemma").spec
    recurrent = [s for s in spec.stacks if s.mixer == "rg_lru"]
    assert [s.n_layers for s in recurrent] == [4]
    assert state_elements(spec, 1) == 4 * (64 * (4 - 1) + 64)
    with pytest.raises(ValidationError, match="equal gate blocks"):
        ModelSpec(**BASE, mixer="rg_lru", rg_lru={"width": 64, "heads": 5})


def test_head_gate_is_for_attention_blocks() -> None:
    with pytest.raises(ValidationError, match="attention_head_gate: applies to attention"):
        ModelSpec(**BASE, **MAMBA2, attention_head_gate=True)
    gated = ModelSpec(**BASE, mixer="attention", n_heads=4, attention_head_gate=True)
    plain = ModelSpec(**BASE, mixer="attention", n_heads=4)
    assert param_report(gated).total - param_report(plain).total == 2 * 4 * 64  # L H D
    assert forward_macs(gated, 1, 8) - forward_macs(plain, 1, 8) == 8 * 2 * 4 * 64


def test_mamba_inner_width_is_the_file_s_else_expand(tmp_path: Path) -> None:
    # MambaConfig computes int(expand x D), then the file's own keys overwrite it:
    # falcon-mamba-7b.json says expand 16 but intermediate_size 8192, which transformers builds.
    spec = load("falcon-mamba-7b").spec
    assert spec.mamba is not None and spec.mamba.inner == 8192
    data = json.loads((ROOT / "tests/fixtures/hf/falcon-mamba-7b.json").read_text())
    del data["intermediate_size"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    without = load_file(path).spec
    assert without.mamba is not None and without.mamba.inner == 16 * 4096


def test_bamba_without_attention_indices_is_all_mamba2(tmp_path: Path) -> None:
    spec = _load_changed(tmp_path, "tiny-bamba.json", attn_layer_indices=None).spec
    assert [(s.mixer, s.n_layers) for s in spec.stacks] == [("mamba2", 4)]


@pytest.mark.parametrize("fixture", ["tiny-bamba.json", "tiny-granite-4.0-h.json"])
def test_a_head_width_belongs_to_the_attention_layers(tmp_path: Path, fixture: str) -> None:
    spec = _load_changed(tmp_path, fixture, head_dim=32).spec
    assert {(s.mixer, s.head_dim) for s in spec.stacks} == {("mamba2", None), ("attention", 32)}


def test_granite_legacy_and_current_layer_types_agree(tmp_path: Path) -> None:
    current = ["linear_attention", "full_attention", "linear_attention", "linear_attention"]
    spec = _load_changed(tmp_path, "tiny-granite-4.0-h.json", layer_types=current).spec
    assert spec == load("tiny-granite-4.0-h").spec


def test_recurrent_state_is_its_own_memory_row(cli: Invoke) -> None:
    # tests/golden/hf_families.json: transformers' cache after B=1, T=16 holds conv and
    # recurrent states for tiny-mamba2; costcalc reports them as "state", apart from the KV cache.
    record = golden()["tiny-mamba2"]
    kinds = record["kv_cache"]["cache_elements_by_kind"]
    path = str(ROOT / record["config"])
    data = json.loads(cli("memory", "-c", path, "-T", "16", "-f", "json").stdout)
    assert data["state"]["elements"] == kinds["conv_states"] + kinds["recurrent_states"]
    assert data["kv_cache"]["elements"] == 0
    assert data["total"]["bytes"] == data["weights"]["bytes"] + data["state"]["bytes"]
    assert "recurrent state" in cli("memory", "-c", path, "-T", "16").stdout


def test_mac_parts_add_up_with_scans(cli: Invoke) -> None:
    record = golden()["tiny-mamba2"]
    path = str(ROOT / record["config"])
    data = json.loads(cli("params", "-c", path, "--length", "128", "-f", "json").stdout)
    macs = data["macs"]
    parts = ("projection_ffn", "attention_pair", "sequence_mixing", "embedding_projection")
    assert sum(macs[p] for p in parts) + macs["lm_head"] == macs["total"]
    assert macs["sequence_mixing"] > 0
    assert macs["total"] == record["macs_forward"]["macs_total"]


def test_falcon_h1_out_proj_bias_of_its_own(tmp_path: Path) -> None:
    """modeling_falcon_h1.py: in_proj's bias is mamba_proj_bias, out_proj's projectors_bias
    (nn.Linear(I, D, bias=config.projectors_bias)): D more per layer."""
    plain = _load_changed(tmp_path, "tiny-falcon-h1.json").spec
    biased = _load_changed(tmp_path, "tiny-falcon-h1.json", projectors_bias=True).spec
    assert param_report(biased).total - param_report(plain).total == plain.n_layers * plain.d_model


@pytest.mark.parametrize("fixture", ["tiny-falcon-h1.json", "tiny-bamba.json"])
@pytest.mark.parametrize("key", ["mamba_conv_bias", "mamba_proj_bias"])
def test_a_null_bias_switch_builds_no_bias(tmp_path: Path, fixture: str, key: str) -> None:
    """modeling_falcon_h1.py, modeling_bamba.py: ``nn.Conv1d(..., bias=config.mamba_conv_bias)``
    and ``nn.Linear(..., bias=self.use_bias)`` test ``if bias:``; the classes take a null
    (``bool | None``): it builds no bias, as false does."""
    total = {
        value: param_report(_load_changed(tmp_path, fixture, **{key: value}).spec).total
        for value in (None, False, True)
    }
    assert total[None] == total[False] < total[True]
