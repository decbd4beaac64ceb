"""A.X K2's pieces as costcalc keys, counted by hand from transformers 5.24
``models/axk2/modeling_axk2.py``: the low-rank gates of the input norms (``norm_gate_rank``,
``ffn_norm_gate_rank``: ``AXK2GatedRMSNorm``), and MLA's query projection reading the latent twice
and yielding an output gate (``query_latent_both``, ``attention_gate``: ``q_gate_proj``). The
golden axk2 record checks them together (tests/test_hf_families.py)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from costcalc.activations import measured
from costcalc.macs import forward_macs, pair_width
from costcalc.memory import kv_width
from costcalc.params import param_report
from costcalc.spec import ModelSpec
from costcalc.tensors import ffn_tensors, mixer_tensors
from tests.conftest import Invoke
from tests.test_indexer import MLA

D, R, L = 64, 3, 2


def _shapes(tensors: list) -> dict[str, tuple[int, ...]]:
    return {t.name: t.shape for t in tensors}


def test_norm_gates_add_two_low_rank_matrices_each() -> None:
    plain = ModelSpec.model_validate({**MLA, "ffn": "swiglu", "ffn_hidden": 40})
    spec = plain.model_copy(update={"norm_gate_rank": R, "ffn_norm_gate_rank": R})
    spec = ModelSpec.model_validate(spec.model_dump(exclude_defaults=True))
    mixer = _shapes(mixer_tensors(spec)).items() - _shapes(mixer_tensors(plain)).items()
    ffn = _shapes(ffn_tensors(spec)).items() - _shapes(ffn_tensors(plain)).items()
    assert dict(mixer) == {"attn_norm_gate.fc1.weight": (R, D), "attn_norm_gate.fc2.weight": (D, R)}
    assert dict(ffn) == {"mlp_norm_gate.fc1.weight": (R, D), "mlp_norm_gate.fc2.weight": (D, R)}
    # 2 D r per gate and layer, as parameters and as MACs per token; nothing per pair or cached
    assert param_report(spec).total - param_report(plain).total == L * 2 * (2 * D * R)
    B, T = 1, 8
    assert forward_macs(spec, B, T) - forward_macs(plain, B, T) == B * T * L * 2 * (2 * D * R)
    assert (pair_width(spec), kv_width(spec)) == (pair_width(plain), kv_width(plain))
    assert not measured(spec)


def test_mla_query_latent_both_and_output_gate() -> None:
    H, n, r, v, rq = 4, 6, 4, 5, 16
    spec = ModelSpec.model_validate({**MLA, "query_latent_both": True, "attention_gate": True})
    assert _shapes(mixer_tensors(spec))["attn.q_b_proj.weight"] == (H * (n + r + v), 2 * rq)
    direct = {k: v for k, v in MLA.items() if k != "q_lora_rank"}
    gated = ModelSpec.model_validate({**direct, "attention_gate": True})
    assert _shapes(mixer_tensors(gated))["attn.q_proj.weight"] == (H * (n + r + v), D)


@pytest.mark.parametrize(
    ("keys", "field", "message"),
    [
        ({"query_latent_both": True, "q_lora_rank": None}, "query_latent_both", "q_lora_rank"),
        ({"ffn": "none", "ffn_norm_gate_rank": 2}, "ffn_norm_gate_rank", "FFN's input norm"),
        ({"norms_per_block": 0, "norm_gate_rank": 2}, "norm_gate_rank", "has no norm"),
    ],
)
def test_bad_combinations_are_refused(keys: dict, field: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message) as info:
        ModelSpec.model_validate({**MLA, **keys})
    assert field in str(info.value)


def test_query_latent_both_belongs_to_mla_blocks() -> None:
    data = {k: v for k, v in MLA.items() if "lora" not in k and "head_dim" not in k}
    with pytest.raises(ValidationError, match="applies to mla blocks"):
        ModelSpec.model_validate({**data, "mixer": "attention", "query_latent_both": True})


def test_schema_covers_the_keys(cli: Invoke) -> None:
    schema = json.loads(cli("schema").stdout)
    keys = {"norm_gate_rank", "ffn_norm_gate_rank", "query_latent_both"}
    assert keys <= set(schema["properties"])
    assert keys <= set(schema["definitions"]["LayerGroup"]["properties"])
    assert "mla block" in schema["properties"]["attention_gate"]["description"]
