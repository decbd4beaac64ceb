"""``gated_cross_attention``: a block over another modality's states, which text-only input skips
(Llama 3.2 Vision's cross-attention layers, ``mllama_text_model``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from costcalc.api import load
from costcalc.config import config_schema
from costcalc.loaders import load_file
from costcalc.macs import decode_token_macs, forward_macs, skipped_layers
from costcalc.memory import kv_cache_elements
from costcalc.params import block_params, param_report
from costcalc.spec import ModelSpec
from tests.conftest import FIXTURES, Invoke
from tests.test_differential import records

BASE: dict[str, Any] = {
    "vocab_size": 100,
    "d_model": 64,
    "n_layers": 3,
    "n_heads": 4,
    "n_kv_heads": 2,
    "context_length": 32,
    "position": "rotary",
    "norm": "rmsnorm",
    "ffn": "swiglu",
    "qkv_bias": False,
    "attn_out_bias": False,
    "ffn_bias": False,
    "fused_qkv": False,
}
CROSS = {"gated_cross_attention": True, "qk_norm": "head"}
MLLAMA = FIXTURES / "hf" / "llama-3.2-11b-vision-instruct.json"


def test_two_gates_and_nothing_run_or_cached_for_text() -> None:
    plain = ModelSpec.model_validate({**BASE, "n_layers": 2})
    mixed = ModelSpec.model_validate(
        {**BASE, "layers": [{"count": 2}, {"count": 1, **CROSS}], "n_layers": None}
    )
    cross = ModelSpec.model_validate({**BASE, **CROSS, "n_layers": 1})
    # q_norm and k_norm of d = 16, and the two scalar gates.
    assert block_params(cross) - block_params(plain) == 2 * 16 + 2
    assert param_report(mixed).total == param_report(plain).total + block_params(cross)
    assert skipped_layers(mixed) == 1 and skipped_layers(plain) == 0
    assert forward_macs(mixed, 2, 8) == forward_macs(plain, 2, 8)
    assert decode_token_macs(mixed, 5) == decode_token_macs(plain, 5)
    assert kv_cache_elements(mixed, 2, 8) == kv_cache_elements(plain, 2, 8)


def test_refused_on_a_block_without_attention() -> None:
    with pytest.raises(ValidationError, match="applies to attention blocks"):
        ModelSpec.model_validate(
            {**BASE, "mixer": "none", "n_heads": None, "n_kv_heads": None, **CROSS}
        )


def test_schema_describes_the_key_on_every_layer_group() -> None:
    schema = json.dumps(config_schema())
    assert schema.count('"gated_cross_attention"') >= 2  # the model's and a layer group's
    assert "Text-only input skips the block" in schema


def test_outputs_say_what_text_only_input_skips(cli: Invoke) -> None:
    out = cli("params", "--config", str(MLLAMA), "-T", "128").stdout
    assert "gated cross-attention" in out
    assert "8 gated cross-attention layers" in out and "0 MACs" in out
    memory = cli("memory", "--config", str(MLLAMA), "-T", "16").stdout
    assert "nothing cached" in memory


def _mllama(tmp_path: Path, **text: Any) -> ModelSpec:
    data = json.loads(MLLAMA.read_text())
    data["text_config"].update(text)
    data["text_config"] = {k: v for k, v in data["text_config"].items() if v is not None}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return load_file(path).spec


def test_mllama_layers_and_tables(tmp_path: Path) -> None:
    spec = _mllama(tmp_path)
    assert [(s.n_layers, s.gated_cross_attention) for s in spec.stacks] == [(32, False), (8, True)]
    assert (spec.vocab_rows, spec.output_rows, spec.tie_embeddings) == (128_264, 128_256, False)
    # MllamaTextConfig's default list when the key is absent; indices past the last layer (10)
    # name no layer, as MllamaTextModel builds them.
    absent = _mllama(tmp_path, cross_attention_layers=None, num_hidden_layers=10)
    assert [(s.n_layers, s.gated_cross_attention) for s in absent.stacks] == [(8, False), (2, True)]
    tied = _mllama(tmp_path, tie_word_embeddings=True)
    assert param_report(tied).total == param_report(spec).total  # the class ties nothing


def test_mllama_bad_layer_list_is_named(tmp_path: Path) -> None:
    from costcalc.errors import ConfigError

    with pytest.raises(ConfigError, match=r"text_config\.cross_attention_layers"):
        _mllama(tmp_path, cross_attention_layers="3,8")


def test_encoder_attention_counts_its_weights_and_runs_nothing_for_text() -> None:
    """``encoder_attention`` (GPT-2's add_cross_attention): q, k, v and output projections
    (D H d, 2 D K d, H d D; no biases here) and a norm of D per layer, none of it run by a
    text-only forward, so the decoding step reads none of it either."""
    plain = ModelSpec(**BASE)
    cross = ModelSpec(**BASE, encoder_attention=True)
    D, H, K, d = 64, 4, 2, 16
    added = param_report(cross).total - param_report(plain).total
    assert added == 3 * (D * H * d + 2 * D * K * d + H * d * D + D)
    assert forward_macs(cross, 1, 8) == forward_macs(plain, 1, 8)
    assert decode_token_macs(cross, 8) == decode_token_macs(plain, 8)
    assert kv_cache_elements(cross, 1, 8) == kv_cache_elements(plain, 1, 8)
    with pytest.raises(ValidationError, match="encoder_attention: applies to attention blocks"):
        ModelSpec(**{**BASE, "mixer": "none"}, encoder_attention=True)


def test_mllama_floors_a_head_width_its_heads_do_not_divide() -> None:
    """modeling_mllama.py: both text attentions take ``head_dim = config.hidden_size //
    self.num_heads`` (q_proj D -> H (D // H)), and MllamaTextConfig takes such a width."""
    config = records()["mllama_text_model/00"]["config"]
    text = {**config["text_config"], "num_attention_heads": 33, "num_key_value_heads": 1}
    model = load({**config, "text_config": text})
    assert {stack.head_width for stack in model.spec.stacks} == {4096 // 33}
    assert "floors head_dim to 124" in " ".join(model.notes)
