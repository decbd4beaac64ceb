"""xLSTM's mLSTM layer (``mixer: mlstm``); transformers 5.24 ``models/xlstm/modeling_xlstm.py``:
``xLSTMLayer``, its native chunkwise and step kernels, ``xLSTMCache``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from costcalc.api import load
from costcalc.errors import ConfigError, UsageError
from costcalc.loaders import load_file
from costcalc.macs import decode_token_macs, forward_macs, scan_macs
from costcalc.memory import kv_cache_elements, state_elements
from costcalc.params import param_report
from costcalc.spec import ModelSpec
from costcalc.tensors import mixer_tensors, parameter_tensors
from tests.test_differential import records

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = json.loads((ROOT / "tests/golden/hf_families.json").read_text(encoding="utf-8"))["models"]

MLSTM: dict[str, Any] = {
    "vocab_size": 100,
    "d_model": 64,
    "n_layers": 2,
    "context_length": 32,
    "position": "none",
    "norm": "rmsnorm",
    "mixer": "mlstm",
    "mlstm": {"heads": 4, "qk_width": 32, "v_width": 64, "chunk_size": 48},
    "ffn": "swiglu",
    "ffn_bias": False,
}


def test_mlstm_tensors() -> None:
    spec = ModelSpec.model_validate(MLSTM)
    D, qk, v, H = 64, 32, 64, 4
    assert {t.name: t.shape for t in mixer_tensors(spec)} == {
        "attn.q.weight": (qk, D),
        "attn.k.weight": (qk, D),
        "attn.v.weight": (v, D),
        "attn.ogate_preact.weight": (v, D),
        "attn.igate_preact.weight": (H, D),
        "attn.igate_preact.bias": (H,),
        "attn.fgate_preact.weight": (H, D),
        "attn.fgate_preact.bias": (H,),
        "attn.multihead_norm.weight": (v,),
        "attn.out_proj.weight": (D, v),
    }
    fused = ModelSpec.model_validate({**MLSTM, "mlstm": {**MLSTM["mlstm"], "fused": True}})
    assert {t.name: t.shape for t in mixer_tensors(fused)} == {
        "attn.qkv_opreact.weight": (2 * qk + 2 * v, D),
        "attn.ifgate_preact.weight": (2 * H, D),
        "attn.ifgate_preact.bias": (2 * H,),
        "attn.multihead_norm.weight": (v,),
        "attn.out_proj.weight": (D, v),
    }


@pytest.mark.parametrize(("length", "chunks", "steps"), [(128, 2, 32), (48, 1, 0), (5, 0, 5)])
def test_chunks_then_steps(length: int, chunks: int, steps: int) -> None:
    # per chunk of c: K^T V and Q C (c dk dv each), Q K^T (c^2 dk), scores x V (c^2 dv), Q n
    # (c dk); per step: k v^T and q C (dk dv each), q n (dk)
    spec = ModelSpec.model_validate(MLSTM)
    H, dk, dv, c = 4, 8, 16, 48
    chunk = 2 * c * dk * dv + c * c * (dk + dv) + c * dk
    step = 2 * dk * dv + dk
    assert scan_macs(spec, 3, length) == 3 * H * (chunks * chunk + steps * step)


def test_state_not_cache() -> None:
    spec = ModelSpec.model_validate(MLSTM)
    assert kv_cache_elements(spec, 1, 16) == 0
    assert state_elements(spec, 2) == 2 * 2 * 4 * (8 * 16 + 8 + 1)
    with pytest.raises(UsageError, match="mlstm"):
        decode_token_macs(spec, 10)


def test_heads_split_the_widths() -> None:
    with pytest.raises(ValidationError, match="qk_width 30 does not split into 4 heads"):
        ModelSpec.model_validate({**MLSTM, "mlstm": {**MLSTM["mlstm"], "qk_width": 30}})


@pytest.mark.parametrize("name", ["xlstm-7b", "tiny-xlstm"])
def test_cached_state_matches_transformers(name: str) -> None:
    # xLSTMCache.rnn_state: per layer (C: B H dk dv, n: B H dk, m: B H 1), beside a 1-element
    # position counter (seqlen_offset)
    record = GOLDEN[name]["kv_cache"]
    spec = load_file(ROOT / GOLDEN[name]["config"]).spec
    assert state_elements(spec, record["batch"]) == record["cache_elements_by_kind"]["rnn_state"]


def _xlstm(tmp_path: Path, **changes: Any) -> Path:
    data = json.loads((ROOT / "tests/fixtures/hf/xlstm-7b.json").read_text(encoding="utf-8"))
    data.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in data.items() if v is not None}))
    return path


def test_xlstm_reads_its_sizes(tmp_path: Path) -> None:
    spec = load_file(_xlstm(tmp_path, weight_mode="single")).spec
    assert spec.mlstm is not None
    assert (spec.mlstm.heads, spec.mlstm.qk_width, spec.mlstm.v_width) == (8, 2048, 4096)
    assert not spec.mlstm.fused and not spec.fused_gate_up
    assert spec.ffn_hidden == 10944  # 4096 x 2.667 rounded up to a multiple of 64


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"num_blocks": 33}, "num_blocks"),
        ({"hidden_size": 2048}, "embedding_dim"),
        ({"qk_dim_factor": 0}, "qk_dim_factor"),
        ({"weight_mode": "split"}, "weight_mode"),
    ],
)
def test_xlstm_refusals(tmp_path: Path, changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_file(_xlstm(tmp_path, **changes))
    assert field in [p.field for p in raised.value.problems]


def test_values_zero_wide(tmp_path: Path) -> None:
    # xLSTMLayer: v_dim = int(D x 0.0) = 0, so v, ogate_preact, multihead_norm and out_proj's
    # input are 0 wide (xlstm/fresh-03 of the differential records); the state keeps dk + 1
    loaded = load_file(_xlstm(tmp_path, v_dim_factor=0.0, weight_mode="single"))
    full = load_file(_xlstm(tmp_path, weight_mode="single")).spec
    spec = loaded.spec
    shapes = {t.name: t.shape for t in mixer_tensors(spec)}
    D, dk, H, L, v = 4096, 256, 8, 32, 4096
    assert shapes["attn.v.weight"] == shapes["attn.ogate_preact.weight"] == (0, D)
    assert shapes["attn.out_proj.weight"] == (D, 0)
    assert param_report(full).total - param_report(spec).total == L * (3 * v * D + v)
    assert state_elements(spec, 1) == L * H * (dk + 1)
    assert any("v_dim_factor 0.0" in note for note in loaded.notes)


@pytest.mark.parametrize("factor", [0, 0.0001])
def test_queries_zero_wide_are_refused(tmp_path: Path, factor: float) -> None:
    # int(4096 x 0.0001) = 0 as well: transformers' forward divides by dk ** 0.5
    with pytest.raises(ConfigError, match="ZeroDivisionError") as raised:
        load_file(_xlstm(tmp_path, qk_dim_factor=factor))
    assert [p.field for p in raised.value.problems] == ["qk_dim_factor"]


@pytest.mark.parametrize("mode", ["single", "fused"])
def test_use_bias_biases_the_blocks_not_out_norm(tmp_path: Path, mode: str) -> None:
    # xLSTMLayer and xLSTMFeedForward: bias=config.use_bias on every projection (the gates'
    # always), multihead_norm and the block norms use_bias=config.use_bias, out_norm none
    loaded = load_file(_xlstm(tmp_path, use_bias=True, weight_mode=mode))
    spec, plain = loaded.spec, load_file(_xlstm(tmp_path, weight_mode=mode)).spec
    names = {t.name for t in parameter_tensors(spec)}
    D, qk, v, h, L = 4096, 2048, 4096, 10944, 32
    first = (
        ("attn.qkv_opreact", "mlp.gate_up_proj") if mode == "fused" else ("attn.q", "mlp.up_proj")
    )
    assert {f"{name}.bias" for name in first} <= names
    assert {"attn.out_proj.bias", "attn.multihead_norm.bias", "mlp.down_proj.bias"} <= names
    per_block = (2 * qk + 2 * v) + D + v + 2 * D + (2 * h + D)  # projections, out_proj, norms, FFN
    assert param_report(spec).total - param_report(plain).total == L * per_block
    assert param_report(spec).final_norm == D  # out_norm: a weight only
    assert any("out_norm" in note for note in loaded.notes)


def test_rmsnorm_with_a_bias() -> None:
    # xLSTM's RMSNorms with use_bias: a weight and a bias each, the final norm as told
    spec = ModelSpec.model_validate({**MLSTM, "norm_bias": True, "final_norm_bias": False})
    plain = ModelSpec.model_validate(MLSTM)
    assert param_report(spec).total - param_report(plain).total == 2 * 2 * 64  # L x 2 norms x D
    assert param_report(spec).final_norm == 64
    both = ModelSpec.model_validate({**MLSTM, "norm_bias": True})
    assert param_report(both).final_norm == 2 * 64
    with pytest.raises(ValidationError, match="final_norm_bias: a bias of the final norm needs"):
        ModelSpec.model_validate({**MLSTM, "final_norm": False, "final_norm_bias": True})


def test_more_layers_of_state_than_blocks(tmp_path: Path) -> None:
    # xLSTMModel builds num_blocks blocks; xLSTMCache keeps num_hidden_layers layers of state
    loaded = load_file(_xlstm(tmp_path, num_blocks=31))
    spec, full = loaded.spec, load_file(_xlstm(tmp_path)).spec
    assert (spec.n_layers, spec.state_layers) == (31, 32)
    assert param_report(full).total - param_report(spec).total == param_report(full).blocks // 32
    assert state_elements(spec, 1) == state_elements(full, 1)
    assert forward_macs(spec, 1, 16) < forward_macs(full, 1, 16)
    assert any("num_hidden_layers 32 layers of state" in note for note in loaded.notes)


def test_state_layers_rules() -> None:
    with pytest.raises(ValidationError, match="every block needs its own"):
        ModelSpec.model_validate({**MLSTM, "state_layers": 1})
    with pytest.raises(ValidationError, match="state_layers: applies to a model of one kind"):
        ModelSpec.model_validate(
            {**MLSTM, "mixer": "attention", "mlstm": None, "n_heads": 4, "state_layers": 3}
        )
    groups = [{"count": 1}, {"count": 1, "mlstm": {**MLSTM["mlstm"], "chunk_size": 8}}]
    with pytest.raises(ValidationError, match="state_layers: applies to a model of one kind"):
        ModelSpec.model_validate({**MLSTM, "layers": groups, "state_layers": 3})
    assert state_elements(ModelSpec.model_validate({**MLSTM, "state_layers": 3}), 1) == 3 * 4 * (
        8 * 16 + 8 + 1
    )


XLSTM_RECORDS = [
    case
    for case, record in records().items()
    if record["family"] == "xlstm" and "kv_cache" in record
]


@pytest.mark.parametrize("case", XLSTM_RECORDS)
def test_state_matches_the_differential_records(case: str) -> None:
    # tests/golden/differential*.json.gz: xLSTMCache.rnn_state of each variant that runs
    record = records()[case]
    cache = record["kv_cache"]
    spec = load(record["config"]).spec
    assert state_elements(spec, cache["batch"]) == cache["cache_elements_by_kind"]["rnn_state"]


def test_a_cache_of_other_widths_is_refused(tmp_path: Path) -> None:
    # D = 4000: the layer's heads are 2000 / 8 = 250 and 4000 / 8 = 500 wide, xLSTMCache's
    # 2048 / 8 = 256 and 4032 / 8 = 504 (xLSTMConfig.qk_dim, v_dim round up to 64)
    with pytest.raises(ConfigError, match="256 \\(rounded up") as raised:
        load_file(_xlstm(tmp_path, hidden_size=4000, embedding_dim=None))
    assert [p.field for p in raised.value.problems] == ["qk_dim_factor", "v_dim_factor"]


def test_a_long_prompt_runs_in_pieces() -> None:
    # xLSTMModel.forward: a prompt longer than max_inference_chunksize runs piece by piece
    sizes = {**MLSTM["mlstm"], "piece_size": 100}
    spec = ModelSpec.model_validate({**MLSTM, "mlstm": sizes})
    whole = ModelSpec.model_validate(MLSTM)
    assert scan_macs(spec, 2, 250) == 2 * scan_macs(whole, 2, 100) + scan_macs(whole, 2, 50)
    assert scan_macs(spec, 1, 100) == scan_macs(whole, 1, 100)
