"""RWKV-4's time mix (``mixer: rwkv``) and channel mix (``ffn: channel_mix``); transformers 5.24
``models/rwkv/modeling_rwkv.py``: ``RwkvSelfAttention``, ``RwkvFeedForward``, ``RwkvBlock``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from costcalc.errors import UsageError
from costcalc.explain import block_rows
from costcalc.loaders import load_file
from costcalc.macs import decode_token_macs, forward_macs, mixer_sequence_macs
from costcalc.memory import kv_cache_elements, state_elements
from costcalc.params import param_report
from costcalc.spec import ModelSpec
from costcalc.tensors import block_tensors

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = json.loads((ROOT / "tests/golden/hf_families.json").read_text(encoding="utf-8"))["models"]

RWKV: dict[str, Any] = {
    "vocab_size": 100,
    "d_model": 64,
    "n_layers": 2,
    "context_length": 32,
    "position": "none",
    "norm": "layernorm",
    "mixer": "rwkv",
    "rwkv": {"attention_width": 48},
    "ffn": "channel_mix",
    "ffn_hidden": 256,
    "ffn_bias": False,
}


def test_block_tensors_as_transformers_names_them() -> None:
    spec = ModelSpec.model_validate(RWKV)
    D, A, h = 64, 48, 256
    assert {t.name: t.shape for t in block_tensors(spec)} == {
        "norm.weight": (D,),
        "norm.bias": (D,),
        "attn.time_decay": (A,),
        "attn.time_first": (A,),
        "attn.time_mix_key": (1, 1, D),
        "attn.time_mix_value": (1, 1, D),
        "attn.time_mix_receptance": (1, 1, D),
        "attn.key.weight": (A, D),
        "attn.value.weight": (A, D),
        "attn.receptance.weight": (A, D),
        "attn.output.weight": (D, A),
        "mlp.time_mix_key": (1, 1, D),
        "mlp.time_mix_receptance": (1, 1, D),
        "mlp.key.weight": (h, D),
        "mlp.receptance.weight": (D, D),
        "mlp.value.weight": (D, h),
    }


def test_macs_are_the_projections_only() -> None:
    # the token shifts and the WKV recurrence are elementwise
    spec = ModelSpec.model_validate(RWKV)
    D, A, h, V, L = 64, 48, 256, 100, 2
    assert mixer_sequence_macs(spec, 1, 128) == 0
    assert forward_macs(spec, 2, 8) == 2 * 8 * (L * (4 * A * D + 2 * h * D + D * D) + V * D)


def test_state_not_cache() -> None:
    # per layer: the previous input of the time mix and of the channel mix (D each), the WKV
    # numerator, denominator and running maximum (A each)
    spec = ModelSpec.model_validate(RWKV)
    assert kv_cache_elements(spec, 1, 16) == 0
    assert state_elements(spec, 3) == 3 * 2 * (2 * 64 + 3 * 48)
    with pytest.raises(UsageError, match="rwkv"):
        decode_token_macs(spec, 10)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"ffn_bias": True}, "ffn_bias"),
        ({"moe_experts": 4, "moe_top_k": 1}, "moe_experts"),
        ({"mixer": "attention", "rwkv": None, "n_heads": 4}, "ffn"),
    ],
)
def test_channel_mix_as_transformers_builds_it(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        ModelSpec.model_validate({**RWKV, **change})


def test_rwkv_mixer_needs_its_sizes() -> None:
    with pytest.raises(ValidationError, match="rwkv: required for rwkv blocks"):
        ModelSpec.model_validate({**RWKV, "rwkv": None})


def test_state_matches_transformers() -> None:
    # RwkvModel returns five B x D x L state tensors
    record = GOLDEN["rwkv-4-169m-pile"]["kv_cache"]
    spec = load_file(ROOT / GOLDEN["rwkv-4-169m-pile"]["config"]).spec
    assert state_elements(spec, record["batch"]) == record["state_elements"]
    assert kv_cache_elements(spec, record["batch"], record["seq_len"]) == 0


def test_pre_ln_is_layer_zero_s() -> None:
    # RwkvBlock(layer_id=0) holds pre_ln, the norm of the embeddings
    spec = load_file(ROOT / "tests/fixtures/hf/rwkv-4-169m-pile.json").spec
    first, rest = spec.stacks
    assert (first.n_layers, first.norms_per_block) == (1, 3)
    assert (rest.n_layers, rest.norms_per_block) == (11, 2)
    assert param_report(spec).total == 169_342_464  # RWKV-4 169M


def _rwkv(tmp_path: Path, **changes: Any) -> Path:
    path = ROOT / "tests/fixtures/hf/rwkv-4-169m-pile.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(changes)
    out = tmp_path / "config.json"
    out.write_text(json.dumps({k: v for k, v in data.items() if v is not None}))
    return out


def test_rwkv_defaults(tmp_path: Path) -> None:
    # RwkvConfig: attention_hidden_size defaults to hidden_size, intermediate_size to 4 x it
    spec = load_file(
        _rwkv(tmp_path, attention_hidden_size=None, intermediate_size=None, num_hidden_layers=1)
    ).spec
    assert spec.rwkv is not None and spec.rwkv.attention_width == 768
    assert spec.ffn_hidden == 4 * 768
    assert spec.norms_per_block == 3 and spec.layers is None


def test_explain_sums_the_channel_mix_tensors() -> None:
    spec = ModelSpec.model_validate(RWKV)
    row = block_rows(spec, spec.n_layers)["ffn"]
    assert row == "channel-mix tensors: 64 + 64 + 256 x 64 + 64 x 64 + 64 x 256 = 36,992"
