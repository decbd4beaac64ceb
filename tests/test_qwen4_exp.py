"""Qwen4-Exp's block keys: gated low-rank hyper-connections (``stream_rank``) and an indexer
over mean-pooled blocks of keys (``indexer_block``) (transformers 5.24
``models/qwen4_exp/modeling_qwen4_exp.py``), each checked against a count by hand; the golden
tiny Qwen4-Exp record checks them together (tests/test_hf_families.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.formats.families.linear_attention import QSA_KEYS
from costcalc.loaders import load_file
from costcalc.macs import decode_macs, decode_token_macs, forward_macs
from costcalc.macs import residual_stream_macs_per_token as stream_macs
from costcalc.memory import kv_cache_elements
from costcalc.params import param_report
from costcalc.spec import ModelSpec
from costcalc.tensors import model_tensors, parameter_tensors
from tests.conftest import Invoke
from tests.hf_helpers import write_config

D, H, K, d, N, R = 32, 4, 2, 8, 3, 5
HI, DI, M = 2, 6, 4
BASE: dict[str, Any] = {
    "vocab_size": 50,
    "d_model": D,
    "n_layers": 2,
    "n_heads": H,
    "n_kv_heads": K,
    "head_dim": d,
    "context_length": 64,
    "position": "rotary",
    "norm": "rmsnorm",
    "qkv_bias": False,
    "attn_out_bias": False,
    "fused_qkv": False,
    "ffn": "swiglu",
    "ffn_hidden": 20,
    "ffn_bias": False,
}
INDEXER = {"indexer_heads": HI, "indexer_head_dim": DI}


def spec(**changes: Any) -> ModelSpec:
    return ModelSpec.model_validate({**BASE, **changes})


def shapes(model: ModelSpec) -> dict[str, tuple[int, ...]]:
    return {t.name: t.shape for t in parameter_tensors(model)}


def test_low_rank_hyper_connections_by_hand() -> None:
    """``Qwen4ExpTextGatedResidual``: ``hc_norm`` n D, ``input_mix_weight_down`` r x n D,
    ``input_mix_weight_up`` n D x r, ``block_inject_weight`` n x n D; the last collapse
    without the injection."""
    one, streams = spec(), spec(residual_streams=N, stream_rank=R)
    nD = N * D
    weights = {
        "hc_norm.weight": (nD,),
        "input_mix_weight_down.weight": (R, nD),
        "input_mix_weight_up.weight": (nD, R),
        "block_inject_weight.weight": (N, nD),
    }
    mixer = {f"hyper_connection_mixer.{k}": v for k, v in weights.items() if "inject" not in k}
    assert dict(shapes(streams).items() - shapes(one).items()) == {
        **{f"{hc}.{name}": v for hc in ("attn_hc", "ffn_hc") for name, v in weights.items()},
        **mixer,
    }
    assert {t.name: t.shape for t in model_tensors(streams)}.items() >= mixer.items()
    per_block = 2 * (nD + 2 * R * nD + N * nD)
    collapse = nD + 2 * R * nD
    assert param_report(streams).total - param_report(one).total == 2 * per_block + collapse
    assert param_report(streams).stream_collapse == collapse


def test_low_rank_hyper_connections_multiply_their_weights_only() -> None:
    """Per token: each hyper-connection's three matrices (2 r n D + n^2 D), the last collapse's
    two (2 r n D); collapsing and injecting are elementwise."""
    one, streams = spec(), spec(residual_streams=N, stream_rank=R)
    nD = N * D
    assert stream_macs(streams) == 2 * R * nD
    per_block = 2 * (2 * R * nD + N * nD)
    assert forward_macs(streams, 1, 8) - forward_macs(one, 1, 8) == 8 * (2 * per_block + 2 * R * nD)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"stream_rank": R}, "stream_rank: a model with one residual stream"),
        (
            {"residual_streams": N, "stream_rank": R, "stream_mixing": False},
            "stream_mixing: low-rank hyper-connections .stream_rank. have no mixing matrix",
        ),
        ({"indexer_block": M}, "indexer_block: pools the indexer's keys; give indexer_heads"),
    ],
)
def test_inconsistent_keys_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        spec(**changes)


def test_block_indexer_tensors_by_hand() -> None:
    """One ``qk_proj`` (Hi + 1) di x D and a norm of di on each side: the parameters of the
    separate projections."""
    pooled, plain = spec(indexer_block=M, **INDEXER), spec(**INDEXER)
    names = shapes(pooled)
    assert names["attn.indexer.qk_proj.weight"] == ((HI + 1) * DI, D)
    assert names["attn.indexer.q_norm.weight"] == names["attn.indexer.k_norm.weight"] == (DI,)
    assert "attn.indexer.q_proj.weight" not in names
    assert param_report(pooled).total == param_report(plain).total


def pooled_blocks(length: int) -> int:
    """Complete blocks of M keys the queries at positions 0..length-1 see, one by one."""
    return sum((t + 1) // M for t in range(length))


@pytest.mark.parametrize("causal", [False, True])
def test_block_indexer_scores_complete_blocks(causal: bool) -> None:
    """Per query t: Hi di x floor((t + 1) / m), whatever the attention convention; the
    projection's (Hi + 1) di D per token."""
    T, L = 10, 2
    plain, pooled = spec(), spec(indexer_block=M, **INDEXER)
    projection = T * L * (HI + 1) * DI * D
    scores = L * HI * DI * pooled_blocks(T)
    added = forward_macs(pooled, 1, T, causal) - forward_macs(plain, 1, T, causal)
    assert added == projection + scores


def test_block_indexer_decoding_sums_the_tokens() -> None:
    pooled = spec(indexer_block=M, **INDEXER)
    plain = spec()
    for position in (0, 3, 7, 12):
        added = decode_token_macs(pooled, position) - decode_token_macs(plain, position)
        assert added == 2 * ((HI + 1) * DI * D + HI * DI * ((position + 1) // M))
    prompt, generated = 5, 9
    steps = range(prompt, prompt + generated - 1)
    each = sum(decode_token_macs(pooled, p) for p in steps)
    assert decode_macs(pooled, prompt, generated) == each


def test_block_indexer_caches_its_raw_keys() -> None:
    pooled, plain = spec(indexer_block=M, **INDEXER), spec()
    assert kv_cache_elements(pooled, 1, 16) - kv_cache_elements(plain, 1, 16) == 2 * 16 * DI


def test_schema_covers_the_keys(cli: Invoke) -> None:
    properties = json.loads(cli("schema").stdout)["properties"]
    assert "Qwen4-Exp" in properties["stream_rank"]["description"]
    assert "layers" in properties
    blocks = json.dumps(properties["layers"])
    assert "indexer_block" in blocks or "indexer_block" in properties


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"ple_layer_ids": [1]}, "text_config.ple_layer_ids"),
        ({"indexer_kv_heads": 2}, "text_config.indexer_kv_heads"),
        ({"indexer_n_heads": None}, "text_config.indexer_n_heads"),
    ],
)
def test_bad_files_are_refused(tmp_path: Path, changes: dict[str, Any], field: str) -> None:
    data = json.loads(write_config(tmp_path, "tiny-qwen4-exp").read_text())
    data["text_config"].update(changes)
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as raised:
        load_file(path)
    assert field in [p.field for p in raised.value.problems], raised.value.problems


def test_sizes_default_to_the_configuration_class(tmp_path: Path) -> None:
    """A ``qwen4_exp`` file that gives only the indexer (which has no defaults; its five QSA keys
    go together, as Qwen4ExpTextConfig's validate_architecture requires) is the class's
    defaults: the same model as the defaults written out."""
    written = load_file(write_config(tmp_path, "qwen4-exp-defaults")).spec
    keys = QSA_KEYS
    text = json.loads(write_config(tmp_path, "qwen4-exp-defaults").read_text())["text_config"]
    path = tmp_path / "short.json"
    short = {"model_type": "qwen4_exp_text", **{k: text[k] for k in keys}}
    path.write_text(json.dumps({"model_type": "qwen4_exp", "text_config": short}))
    assert param_report(load_file(path).spec).total == param_report(written).total


def rotary_of(tmp_path: Path, fixture: str, **keys: Any) -> tuple[int | None, tuple[str, ...]]:
    """The rotary dimensions per head (None: the whole head) and the notes, with ``keys`` set
    on the fixture's text decoder."""
    data = json.loads(write_config(tmp_path, fixture).read_text())
    data.get("text_config", data).update(keys)
    path = tmp_path / "rotary.json"
    path.write_text(json.dumps(data))
    model = load_file(path)
    return model.spec.rotary_dim, model.notes


def test_qwen4_exp_rotates_the_whole_head_by_default(tmp_path: Path) -> None:
    """Qwen4ExpTextConfig sets no ``partial_rotary_factor`` (Qwen3-Next's and Qwen3.5's set
    0.25), and its rotary embedding reads ``rope_parameters.get("partial_rotary_factor", 1.0)``
    (modeling_qwen4_exp.py, line 126): d = 16 rotated whole, unless the file says otherwise (at
    the top level, which transformers moves into ``rope_parameters``, or inside it)."""
    assert rotary_of(tmp_path, "tiny-qwen4-exp")[0] is None
    assert rotary_of(tmp_path, "tiny-qwen4-exp", partial_rotary_factor=0.5)[0] == 8
    rope = {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.25}
    assert rotary_of(tmp_path, "tiny-qwen4-exp", rope_parameters=rope)[0] == 4


def test_lara_mini_reads_no_rotary_factor(tmp_path: Path) -> None:
    """LaraMiniRotaryEmbedding takes d = head_dim whatever the file says
    (modeling_lara_mini.py, line 124): a factor given is not read, and a note says so."""
    rotary, notes = rotary_of(tmp_path, "tiny-lara-mini")
    assert rotary is None and not any("partial_rotary_factor" in n for n in notes)
    rotary, notes = rotary_of(tmp_path, "tiny-lara-mini", partial_rotary_factor=0.5)
    assert rotary is None
    assert any(n.startswith("partial_rotary_factor is not read: this family") for n in notes)
