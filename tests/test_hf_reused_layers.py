"""Hugging Face families whose forward runs layer modules several times (HRM-Text, Dory) and
Doge's product-key experts: what their files may say and what costcalc refuses. The counts
themselves are checked against transformers in tests/test_hf_families.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.loaders import load_file
from costcalc.memory import kv_cache_elements
from costcalc.params import param_report
from costcalc.spec import ModelSpec

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf"


def load(tmp_path: Path, fixture: str, **changes: Any) -> ModelSpec:
    data = json.loads((FIXTURES / f"{fixture}.json").read_text())
    data.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return load_file(path).spec


def test_hrm_text_saved_and_legacy_files_agree(tmp_path: Path) -> None:
    # A saved file gives (uses, layers per stack); a legacy one the layers per stack alone.
    saved = load(tmp_path, "hrm-text-defaults")
    legacy = load(tmp_path, "hrm-text-defaults", num_hidden_layers=16, num_layers_per_stack=None)
    assert saved == legacy
    assert saved.n_layers == 16 * 2 * (3 + 1)
    assert param_report(saved).stacks[0].shared == 2 * 16 * (5 * 1536 * 1536 + 3 * 1536 * 4096)


def test_hrm_text_one_cycle_of_each_reuses_nothing(tmp_path: Path) -> None:
    spec = load(tmp_path, "hrm-text-one-high-cycle", L_cycles=1)
    assert spec.n_layers == 4
    assert all(stack.shared_weight_sets is None for stack in spec.stacks)


@pytest.mark.parametrize("key", ["H_cycles", "L_cycles"])
def test_hrm_text_needs_a_cycle(tmp_path: Path, key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        load(tmp_path, "hrm-text-defaults", **{key: 0})


def test_dory_released_and_halved_layouts_agree(tmp_path: Path) -> None:
    released = load(tmp_path, "dory-defaults")
    halved = {
        "layer_types": json.loads((FIXTURES / "dory-defaults.json").read_text())["layer_types"][
            ::2
        ],
        "num_hidden_layers": 36,
        "n_input_layers": 8,
        "n_recurrent_layers": None,
        "n_output_layers": 8,
    }
    assert load(tmp_path, "dory-defaults", **halved) == released


def test_dory_last_loop_caches_each_recurrent_layer_once(tmp_path: Path) -> None:
    per_loop = load(tmp_path, "dory-defaults")
    last_loop = load(tmp_path, "dory-defaults", recurrent_kv_cache_mode="last_loop")
    # K d = 4 x 256, keys and values, per token: the 20 recurrent layers are cached once, not twice.
    assert kv_cache_elements(per_loop, 1, 16) - kv_cache_elements(last_loop, 1, 16) == (
        20 * 16 * 2 * 4 * 256
    )
    assert param_report(per_loop).total == param_report(last_loop).total


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"recurrent_kv_cache_mode": "every_loop"}, "recurrent_kv_cache_mode"),
        ({"n_recurrent_loops": 0}, "n_recurrent_loops"),
        ({"n_recurrent_layers": 2}, "n_recurrent_layers"),
        ({"layer_types": ["conv", "mlp"] * 36}, "layer_types"),
    ],
)
def test_dory_refusals(tmp_path: Path, changes: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        load(tmp_path, "dory-defaults", **changes)


def test_doge_top_k_within_the_product_keys_reach(tmp_path: Path) -> None:
    # floor(sqrt(72))^2 = 64 experts are reachable: 65 per token cannot be chosen.
    load(tmp_path, "doge-cdmoe-small", num_experts_per_tok=64)
    with pytest.raises(ConfigError, match="num_experts_per_tok"):
        load(tmp_path, "doge-cdmoe-small", num_experts_per_tok=65)


def test_product_key_experts_refuse_an_expert_width() -> None:
    base = {
        "vocab_size": 100,
        "d_model": 64,
        "n_layers": 2,
        "n_heads": 4,
        "context_length": 32,
        "ffn": "swiglu",
        "moe_experts": 16,
        "moe_top_k": 2,
        "moe_product_keys": True,
    }
    ModelSpec.model_validate(base)
    with pytest.raises(ValueError, match="moe_ffn_hidden"):
        ModelSpec.model_validate({**base, "moe_ffn_hidden": 32})


def test_hrm_text_heads_divide_the_width(tmp_path: Path) -> None:
    # HrmTextConfig.validate_architecture refuses it, though head_dim sets the heads' width.
    with pytest.raises(ConfigError, match="num_attention_heads"):
        load(tmp_path, "hrm-text-defaults", num_attention_heads=7)


def test_dory_null_sections_are_refused_as_transformers_refuses_them(tmp_path: Path) -> None:
    # DoryConfig types its sections as int: its strict dataclass refuses a null.
    for key in ("n_input_layers", "n_output_layers"):
        with pytest.raises(ConfigError, match=rf"{key} .*null, but DoryConfig takes no null"):
            load(tmp_path, "dory-defaults", **{key: None})
