"""``moe_modality_ffn_hidden``: another modality's experts (ERNIE 4.5 VL's ``vision_moe``),
counted in the parameters and run by no text token."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from costcalc.config import config_schema
from costcalc.loaders import load_file
from costcalc.macs import forward_macs
from costcalc.params import active_params, block_params
from costcalc.spec import ModelSpec
from tests.conftest import FIXTURES

BASE: dict[str, Any] = {
    "vocab_size": 100,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "context_length": 32,
    "ffn": "swiglu",
    "ffn_bias": False,
    "moe_experts": 4,
    "moe_top_k": 2,
    "moe_ffn_hidden": 32,
    "moe_router_bias": True,
}
ERNIE_VL = FIXTURES / "hf" / "ernie-4.5-vl-28b-a3b.json"


def test_a_second_expert_set_no_text_token_runs() -> None:
    text = ModelSpec.model_validate(BASE)
    both = ModelSpec.model_validate({**BASE, "moe_modality_ffn_hidden": 16})
    # A router of X x D with its bias of X, and X gated experts of 3 D h'.
    assert block_params(both) - block_params(text) == 4 * 64 + 4 + 4 * 3 * 64 * 16
    assert forward_macs(both, 1, 8) == forward_macs(text, 1, 8)
    assert active_params(both) == active_params(text)


def test_refused_without_experts() -> None:
    dense = {k: v for k, v in BASE.items() if not k.startswith("moe_")}
    with pytest.raises(ValidationError, match="applies to a mixture of experts"):
        ModelSpec.model_validate({**dense, "moe_modality_ffn_hidden": 16})


def test_schema_describes_the_key() -> None:
    assert "another modality's tokens run instead" in json.dumps(config_schema())


def _ernie(tmp_path: Path, **text: Any) -> ModelSpec:
    data = json.loads(ERNIE_VL.read_text())
    data["text_config"].update(text)
    data["text_config"] = {k: v for k, v in data["text_config"].items() if v is not None}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return load_file(path).spec


def test_ernie_vl_layers_and_widths(tmp_path: Path) -> None:
    spec = _ernie(tmp_path)
    kinds = [(s.n_layers, s.moe_ffn_hidden, s.moe_modality_ffn_hidden) for s in spec.stacks]
    assert kinds == [(1, None, None), (27, 1536, 512)]
    # Without mlp_layer_types the class makes the first layer dense, the others sparse.
    assert _ernie(tmp_path, mlp_layer_types=None, num_hidden_layers=4).layers is not None


def test_ernie_vl_bad_widths_are_named(tmp_path: Path) -> None:
    from costcalc.errors import ConfigError

    with pytest.raises(ConfigError, match=r"text_config\.moe_intermediate_size"):
        _ernie(tmp_path, moe_intermediate_size=1536)
