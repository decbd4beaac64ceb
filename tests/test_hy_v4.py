"""HY V4's block keys: hyper-connections without stream mixing (``stream_mixing: false``) and
MLA with an output gate and attention sinks (transformers 5.24 ``models/hy_v4``), each checked
against a count by hand; the golden HY V4 and HY V4 VL records check them together
(tests/test_hf_families.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.loaders import load_file
from costcalc.macs import forward_macs, residual_stream_macs_per_token
from costcalc.params import param_report
from costcalc.spec import ModelSpec, structural_problems
from costcalc.tensors import mixer_tensors, parameter_tensors
from tests.conftest import Invoke
from tests.hf_helpers import spec_of, write_config

D, H, N = 32, 4, 3
NOPE, ROPE, V, RQ, RKV = 6, 2, 5, 12, 10
MLA: dict[str, Any] = {
    "vocab_size": 50,
    "d_model": D,
    "n_layers": 2,
    "n_heads": H,
    "context_length": 64,
    "position": "rotary",
    "norm": "rmsnorm",
    "mixer": "mla",
    "q_lora_rank": RQ,
    "kv_lora_rank": RKV,
    "qk_nope_head_dim": NOPE,
    "qk_rope_head_dim": ROPE,
    "v_head_dim": V,
    "qkv_bias": False,
    "attn_out_bias": False,
    "ffn": "swiglu",
    "ffn_hidden": 20,
    "ffn_bias": False,
}


def spec(**changes: Any) -> ModelSpec:
    return ModelSpec.model_validate({**MLA, **changes})


def shapes(model: ModelSpec) -> dict[str, tuple[int, ...]]:
    return {t.name: t.shape for t in parameter_tensors(model)}


def test_independent_hyper_connections_by_hand() -> None:
    """``HYV4HyperConnection``: ``fn`` 2 n x n D, ``base`` 2 n, ``scale`` 2; the head as
    DeepSeek-V4's (n x n D, n, 1)."""
    one, streams = spec(), spec(residual_streams=N, stream_mixing=False)
    added = shapes(streams).items() - shapes(one).items()
    assert dict(added) == {
        "attn_hc.fn": (2 * N, N * D),
        "attn_hc.base": (2 * N,),
        "attn_hc.scale": (2,),
        "ffn_hc.fn": (2 * N, N * D),
        "ffn_hc.base": (2 * N,),
        "ffn_hc.scale": (2,),
        "hc_head.fn": (N, N * D),
        "hc_head.base": (N,),
        "hc_head.scale": (1,),
    }
    per_block = 2 * (2 * N * N * D + 2 * N + 2)
    head = N * N * D + N + 1
    assert param_report(streams).total - param_report(one).total == 2 * per_block + head


def test_without_mixing_only_the_weights_are_multiplied() -> None:
    """Collapse and expansion are elementwise: per token the blocks' ``fn`` matrices (2 x 2 n x
    n D each) and the head's n x n D, no 2 n^2 D per block for a mixing matrix."""
    one = spec()
    mixing, independent = spec(residual_streams=N), spec(residual_streams=N, stream_mixing=False)
    head = N * N * D
    assert residual_stream_macs_per_token(independent) == head
    assert residual_stream_macs_per_token(mixing) == 2 * N * N * D * 2 + head
    block_fn = 2 * (2 * N) * (N * D)
    added = forward_macs(independent, 1, 8) - forward_macs(one, 1, 8)
    assert added == 8 * (2 * block_fn + head)


def test_stream_mixing_needs_several_streams() -> None:
    with pytest.raises(ValueError, match="a model with one residual stream has no hyper-conn"):
        spec(stream_mixing=False)
    assert structural_problems(spec(residual_streams=2, stream_mixing=False)) == []


def test_mla_output_gate_and_sinks_by_hand() -> None:
    """``gate_proj`` D -> H v (no bias) and ``sinks`` H on an MLA block; the gate's MACs are
    its H v D per token. A.X K2's gate, the query projection's extra outputs, has no gate_proj."""
    plain = spec()
    gated = spec(attention_gate=True, attention_gate_proj=True, attention_sinks=True)
    fused = spec(attention_gate=True, attention_sinks=True)
    assert "attn.gate_proj.weight" not in {t.name for t in mixer_tensors(fused)}
    added = dict(shapes(gated).items() - shapes(plain).items())
    assert added == {"attn.gate_proj.weight": (H * V, D), "attn.sinks": (H,)}
    assert {"attn.gate_proj.weight", "attn.sinks"} <= {t.name for t in mixer_tensors(gated)}
    assert param_report(gated).total - param_report(plain).total == 2 * (H * V * D + H)
    macs = forward_macs(gated, 1, 8) - forward_macs(plain, 1, 8)
    assert macs == 2 * 8 * H * V * D


def test_a_gate_bias_stays_an_attention_block_key() -> None:
    with pytest.raises(ValueError, match="attention_gate_bias: applies to attention blocks"):
        spec(attention_gate=True, attention_gate_bias=True)


def test_schema_covers_the_keys(cli: Invoke) -> None:
    properties = json.loads(cli("schema").stdout)["properties"]
    assert properties["stream_mixing"]["type"] == "boolean"
    assert "HY V4" in properties["stream_mixing"]["description"]
    assert "residual_streams" in properties


def indexed_layers(model: ModelSpec) -> list[tuple[int, bool, bool]]:
    """(layers, holds an indexer, sparse FFN) of each stack."""
    return [
        (s.n_layers, s.indexer_heads is not None, s.moe_experts is not None) for s in model.stacks
    ]


def test_default_indexer_rule_is_the_listed_one(tmp_path: Path) -> None:
    """``__post_init__``: full in layer 0 and where (i - 1) % 4 == 0; the closed form equals the
    same list written out, dense FFN in the first layer."""
    n = 11
    listed = ["full" if i == 0 or (i - 1) % 4 == 0 else "shared" for i in range(n)]
    rule = spec_of(tmp_path, "hy-v4-defaults", num_hidden_layers=n)
    written = spec_of(tmp_path, "hy-v4-defaults", num_hidden_layers=n, indexer_types=listed)
    assert param_report(rule).total == param_report(written).total
    assert sorted(indexed_layers(rule)) == sorted(indexed_layers(written))
    assert sorted(indexed_layers(rule)) == [(1, True, False), (3, True, True), (7, False, True)]
    assert "layers" in rule.model_dump(exclude_none=True)
    assert len(rule.layers or []) <= 3


def test_listed_mlp_layer_types_and_one_layer(tmp_path: Path) -> None:
    one = spec_of(tmp_path, "hy-v4-defaults", num_hidden_layers=1)
    assert indexed_layers(one) == [(1, True, False)]
    sparse = spec_of(
        tmp_path, "hy-v4-defaults", num_hidden_layers=3, mlp_layer_types=["sparse"] * 3
    )
    assert sorted(indexed_layers(sparse)) == [(1, False, True), (2, True, True)]


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"q_lora_rank": None}, "q_lora_rank", "query latent"),
        ({"indexer_types": ["full"] * 33 + ["half"]}, "indexer_types", "unknown layer type"),
        ({"mlp_layer_types": ["dense"] * 33 + ["moe"]}, "mlp_layer_types", "unknown layer type"),
    ],
)
def test_bad_files_are_refused(
    tmp_path: Path, changes: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_file(write_config(tmp_path, "hy-v4-defaults", **changes))
    problems = raised.value.problems
    assert any(p.field == field and words in p.message for p in problems), problems
