"""DeepSeek-V4's block keys: low-rank queries, the grouped output projection, the key
compressor with its indexer, and hyper-connections over several residual streams
(transformers 5.24 ``models/deepseek_v4/modeling_deepseek_v4.py``), each checked against a
count by hand or a sum done term by term; the golden DeepSeek-V4-Flash record checks them
together (tests/test_hf_families.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.loaders import load_file
from costcalc.macs import (
    compressed_keys_below,
    compressed_pairs,
    decode_macs,
    decode_token_macs,
    forward_macs,
    residual_stream_macs_per_token,
)
from costcalc.memory import compressor_cache_elements, kv_cache_elements
from costcalc.params import param_report
from costcalc.spec import ModelSpec, structural_problems
from costcalc.tensors import mixer_tensors, model_tensors, parameter_tensors
from tests.conftest import Invoke
from tests.hf_helpers import spec_of, write_config

D, H, d, RQ, G, R, N = 32, 4, 8, 12, 2, 6, 3
BASE: dict[str, Any] = {
    "vocab_size": 50,
    "d_model": D,
    "n_layers": 2,
    "n_heads": H,
    "n_kv_heads": 1,
    "head_dim": d,
    "context_length": 64,
    "position": "rotary",
    "norm": "rmsnorm",
    "qkv_bias": False,
    "attn_out_bias": False,
    "fused_qkv": False,
    "keys_as_values": True,
    "qk_norm": "key",
    "attention_sinks": True,
    "query_rank": RQ,
    "out_groups": G,
    "out_rank": R,
    "sliding_window": 16,
    "ffn": "swiglu",
    "ffn_hidden": 20,
    "ffn_bias": False,
}
HCA: dict[str, Any] = {"kv_compress_rate": 8}
CSA: dict[str, Any] = {
    "kv_compress_rate": 4,
    "kv_compress_overlap": True,
    "indexer_heads": 2,
    "indexer_head_dim": 6,
}


def spec(**keys: Any) -> ModelSpec:
    return ModelSpec.model_validate({**BASE, **keys})


def shapes(s: ModelSpec) -> dict[str, tuple[int, ...]]:
    return {t.name: t.shape for t in mixer_tensors(s)}


def test_attention_tensors_by_hand() -> None:
    assert shapes(spec()) == {
        "attn.q_a_proj.weight": (RQ, D),
        "attn.q_a_norm.weight": (RQ,),
        "attn.q_b_proj.weight": (H * d, RQ),
        "attn.k_proj.weight": (d, D),
        "attn.o_a_proj.weight": (G * R, H * d // G),
        "attn.o_b_proj.weight": (D, G * R),
        "attn.k_norm.weight": (d,),
        "attn.sinks": (H,),
    }


def test_compressor_tensors_by_hand() -> None:
    heavy = shapes(spec(**HCA)).items() - shapes(spec()).items()
    assert dict(heavy) == {
        "attn.compressor.kv_proj.weight": (d, D),
        "attn.compressor.gate_proj.weight": (d, D),
        "attn.compressor.position_bias": (8, d),
        "attn.compressor.kv_norm.weight": (d,),
    }
    sparse = shapes(spec(**CSA)).items() - shapes(spec()).items()
    assert dict(sparse) == {
        "attn.compressor.kv_proj.weight": (2 * d, D),
        "attn.compressor.gate_proj.weight": (2 * d, D),
        "attn.compressor.position_bias": (4, 2 * d),
        "attn.compressor.kv_norm.weight": (d,),
        "attn.compressor.indexer.kv_proj.weight": (12, D),
        "attn.compressor.indexer.gate_proj.weight": (12, D),
        "attn.compressor.indexer.position_bias": (4, 12),
        "attn.compressor.indexer.kv_norm.weight": (6,),
        "attn.compressor.indexer.q_b_proj.weight": (12, RQ),
        "attn.compressor.indexer.weights_proj.weight": (2, D),
    }


def test_hyper_connections_by_hand() -> None:
    one, streams = spec(), spec(residual_streams=N)
    added = {t.name: t.shape for t in parameter_tensors(streams)}.items() - {
        t.name: t.shape for t in parameter_tensors(one)
    }.items()
    hc = (2 + N) * N
    assert dict(added) == {
        "attn_hc.fn": (hc, N * D),
        "attn_hc.base": (hc,),
        "attn_hc.scale": (3,),
        "ffn_hc.fn": (hc, N * D),
        "ffn_hc.base": (hc,),
        "ffn_hc.scale": (3,),
        "hc_head.fn": (N, N * D),
        "hc_head.base": (N,),
        "hc_head.scale": (1,),
    }
    per_block = 2 * (hc * N * D + hc + 3)
    head = N * N * D + N + 1
    assert param_report(streams).total - param_report(one).total == 2 * per_block + head
    assert param_report(streams).stream_collapse == head
    assert (
        sum(t.elements for t in model_tensors(streams))
        - sum(t.elements for t in model_tensors(one))
        == head
    )
    # per token: the fn matrices, n x n mixing of n x D twice per block, the last collapse
    assert residual_stream_macs_per_token(streams) == 2 * 2 * N * N * D + N * N * D
    T = 5
    assert forward_macs(streams, 1, T) - forward_macs(one, 1, T) == T * (
        2 * 2 * hc * N * D + 2 * 2 * N * N * D + N * N * D
    )


@pytest.mark.parametrize("m", [1, 3, 4, 128])
def test_compressed_keys_below_is_the_sum(m: int) -> None:
    for n in range(0, 3 * m + 2):
        assert compressed_keys_below(n, m) == sum(k // m for k in range(1, n + 1))


def test_compressed_pairs_eager_and_causal() -> None:
    s = spec(**CSA)
    assert compressed_pairs(s, 10, causal=False) == 10 * 2
    assert compressed_pairs(s, 10, causal=True) == sum((t + 1) // 4 for t in range(10))
    assert compressed_pairs(spec(), 10) == 0


def test_forward_macs_add_the_compressed_pairs_and_indexer_scores() -> None:
    """Each query meets floor(T / m) compressed keys: H (d + d) for the attention, Hi di for
    the indexer's scores."""
    T = 12
    extra = forward_macs(spec(**CSA), 1, T) - forward_macs(spec(), 1, T)
    projections = sum(
        t.macs_per_token(1) for t in mixer_tensors(spec(**CSA)) if t.use == "matmul"
    ) - sum(t.macs_per_token(1) for t in mixer_tensors(spec()) if t.use == "matmul")
    pairs = T * (T // 4) * (H * 2 * d + 2 * 6)
    assert extra == 2 * (T * projections + pairs)


def test_decode_macs_are_the_sum_of_their_steps() -> None:
    s = spec(**CSA)
    for prompt, generated in ((1, 9), (5, 14), (16, 3)):
        steps = range(prompt, prompt + generated - 1)
        assert decode_macs(s, prompt, generated) == sum(decode_token_macs(s, p) for p in steps)


def simulated_cache(length: int, m: int, width: int, overlap: bool, d_keys: int) -> int:
    """What the compressed cache layers hold after ``length`` tokens, step by step as
    DeepseekV4HCACache / DeepseekV4CSACache fill them: the window's keys (values alias them),
    emitted entries, the buffer of projections and gates, the overlap state."""
    series = 2 if overlap else 1
    emitted, buffered, closed = 0, 0, False
    for _ in range(length):
        buffered += 1
        if buffered == m:
            emitted, buffered, closed = emitted + 1, 0, True
    keys = min(length, 16) * d_keys
    saved = 2 * m * width if overlap and closed else 0
    return keys + emitted * width + 2 * buffered * series * width + saved


@pytest.mark.parametrize("length", [1, 3, 4, 7, 8, 9, 16])
def test_cache_follows_the_cache_layers(length: int) -> None:
    heavy, sparse = spec(**HCA), spec(**CSA)
    assert kv_cache_elements(heavy, 1, length) == 2 * simulated_cache(length, 8, d, False, d)
    assert kv_cache_elements(sparse, 1, length) == 2 * simulated_cache(length, 4, d + 6, True, d)
    assert compressor_cache_elements(spec(), length) == 0
    # an uncompressed block keeps keys and values apart, even when the values are the keys
    assert kv_cache_elements(spec(), 1, length) == 2 * 2 * min(length, 16) * d


@pytest.mark.parametrize(
    ("keys", "field"),
    [
        ({"out_rank": None}, "out_rank"),
        ({"out_groups": 3}, "out_groups"),
        ({"kv_compress_overlap": True}, "kv_compress_overlap"),
        ({"query_rank": None, **CSA}, "indexer_heads"),
    ],
)
def test_rules(keys: dict[str, Any], field: str) -> None:
    data = {**BASE, **keys}
    problems = structural_problems(ModelSpec.model_construct(**data))
    assert field in [f for f, _ in problems]


@pytest.mark.parametrize("field", ["query_rank", "out_groups", "kv_compress_rate"])
def test_keys_belong_to_attention(field: str) -> None:
    data = {
        "vocab_size": 50,
        "d_model": 32,
        "n_layers": 1,
        "context_length": 8,
        "mixer": "none",
        field: 2,
    }
    problems = structural_problems(ModelSpec.model_construct(**data))
    assert (field, "applies to attention blocks; this block's mixer is none") in problems


def kinds(s: ModelSpec) -> list[tuple[int, int | None, bool]]:
    return [(x.n_layers, x.kv_compress_rate, x.kv_compress_overlap) for x in s.stacks]


@pytest.mark.parametrize(("n", "csa"), [(1, 0), (2, 0), (3, 0), (4, 1), (5, 1), (6, 2), (43, 20)])
def test_default_layers_follow_the_configuration_rule(tmp_path: Path, n: int, csa: int) -> None:
    """``DeepseekV4Config.__post_init__``: two heavily compressed layers, then heavily
    compressed and compressed sparse alternating (n = 3: all heavily compressed; 4: one sparse)."""
    s = spec_of(tmp_path, "deepseek-v4-flash", num_hidden_layers=n, compress_ratios=...)
    counted = {(rate, overlap): layers for layers, rate, overlap in kinds(s)}
    assert counted.get((4, True), 0) == csa
    assert counted[(128, False)] == n - csa


def test_legacy_compress_ratios_and_rates(tmp_path: Path) -> None:
    """``compress_ratios`` (0, 4, 128 per layer, cut to the model's layers) lays the layers out;
    ``compress_rate_csa`` sets the sparse layers' rate."""
    s = spec_of(
        tmp_path,
        "deepseek-v4-flash",
        num_hidden_layers=5,
        compress_ratios=[0, 4, 128, 0, 4, 128],
        compress_rate_csa=8,
    )
    assert sorted(kinds(s), key=str) == sorted(
        [(2, None, False), (2, 8, True), (1, 128, False)], key=str
    )
    listed = ["sliding_attention"] * 3 + ["heavily_compressed_attention"] * 2
    s = spec_of(tmp_path, "deepseek-v4-flash", num_hidden_layers=5, layer_types=listed)
    assert kinds(s) == [(3, None, False), (2, 128, False)]


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"mlp_layer_types": ["moe", "dense"]}, "mlp_layer_types"),
        ({"compress_ratios": [0, 2]}, "compress_ratios"),
        ({"compress_rates": {"compressed_sparse_attention": 4}}, "compress_rates"),
    ],
)
def test_refused(tmp_path: Path, changes: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_file(write_config(tmp_path, "deepseek-v4-flash", **changes))
    assert key in str(caught.value)


def test_shared_expert_is_one_whatever_n_shared_experts(tmp_path: Path) -> None:
    """``DeepseekV4SparseMoeBlock`` builds one ``DeepseekV4MLP`` of ``moe_intermediate_size``."""
    one = spec_of(tmp_path, "deepseek-v4-flash")
    two = spec_of(tmp_path, "deepseek-v4-flash", n_shared_experts=2)
    assert param_report(one).total == param_report(two).total


def test_schema_covers_the_keys(cli: Invoke) -> None:
    properties = json.loads(cli("schema").stdout)["properties"]
    for key in ("query_rank", "out_groups", "out_rank", "kv_compress_rate", "residual_streams"):
        assert key in properties
    assert "kv_compress_overlap" in properties


def test_memory_names_the_compressor_terms(cli: Invoke) -> None:
    """The cache note adds each compressed kind's compressor term (T = 16: a
    compressed sparse layer keeps 4 keys of 512 + 128, and 4 x 640 overlap twice: 7,680; a
    heavily compressed one 16 open-window projections and gates of 512: 16,384)."""
    fixture = str(Path(__file__).parent / "fixtures" / "hf" / "deepseek-v4-flash.json")
    result = cli("memory", "-c", fixture, "-T", "16")
    text = " ".join(result.stdout.split())
    assert "2 x 1 x 16 x 1,024 + 21 x 1 x (16 x 512 + 7,680) + 20 x 1 x (16 x 512 + 16,384)" in text


def test_activations_of_the_new_blocks_are_estimates() -> None:
    from costcalc.activations import measured

    dropped = ("keys_as_values", "attention_sinks", "query_rank", "out_groups", "out_rank")
    plain = {k: v for k, v in BASE.items() if k not in dropped}
    plain["qk_norm"] = "none"
    assert measured(ModelSpec.model_validate(plain))
    for keys in ({"query_rank": 4}, {"out_groups": 2, "out_rank": 3}, HCA, {"residual_streams": 2}):
        assert not measured(ModelSpec.model_validate({**plain, **keys}))
