"""JSON's ``model`` echoes the fields that differ from their defaults, and a record shows only
the parts a model has (docs/json.md, contract version 2); ``--full-model`` echoes every field."""

from __future__ import annotations

import json

import pytest

from costcalc.loaders import load_preset
from costcalc.params import OPTIONAL_PARTS
from costcalc.presets import preset_names
from costcalc.results import params_result
from costcalc.spec import ModelSpec
from tests.conftest import Invoke

DERIVED = ("n_kv_heads", "head_dim", "ffn_hidden", "embedding_dim", "norm_bias", "rotary_dim")
"""The widths :meth:`ModelSpec.resolved` derives when the config leaves them out."""


def _json(cli: Invoke, *args: str) -> dict:
    result = cli("params", *args, "-f", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_gpt2_small_echoes_its_sizes_and_its_widths_only(cli: Invoke) -> None:
    """GPT-2 small is costcalc's default block: no option differs from its default."""
    assert _json(cli, "-p", "gpt2-small")["model"] == {
        "vocab_size": 50257,
        "d_model": 768,
        "n_layers": 12,
        "n_heads": 12,
        "context_length": 1024,
        "n_kv_heads": 12,
        "head_dim": 64,
        "ffn_hidden": 3072,
        "embedding_dim": 768,
        "norm_bias": True,
    }


def test_an_option_set_to_other_than_its_default_is_echoed(cli: Invoke) -> None:
    model = _json(cli, "-p", "gpt2-small", "--no-tie", "--ffn", "swiglu")["model"]
    assert (model["tie_embeddings"], model["ffn"]) == (False, "swiglu")
    assert "position" not in model  # learned, the default


def test_full_model_echoes_every_field_resolved(cli: Invoke) -> None:
    full = _json(cli, "-p", "gemma-2-2b", "--full-model")["model"]
    assert full == json.loads(json.dumps(load_preset("gemma-2-2b").spec.resolved()))
    assert full["attention_sinks"] is False
    assert full["layers"][0]["mixer"] is None


def test_layer_groups_echo_the_keys_they_set(cli: Invoke) -> None:
    layers = _json(cli, "-p", "gemma-2-2b")["model"]["layers"]
    assert layers == [
        {"count": 26, "pattern": [{"count": 1, "sliding_window": 4096}, {"count": 1}]}
    ]


@pytest.mark.parametrize("name", preset_names())
def test_what_is_echoed_rebuilds_the_model(name: str) -> None:
    """Nothing but defaults is left out: the echoed fields (less the widths derived from
    others) validate to the same model."""
    spec = load_preset(name).spec
    echoed = spec.differing()
    given = {k: v for k, v in echoed.items() if k not in DERIVED or getattr(spec, k) is not None}
    assert ModelSpec.model_validate(given).resolved() == spec.resolved()
    assert all(value == spec.resolved()[key] for key, value in echoed.items() if key != "layers")


def test_a_part_only_some_families_have_is_shown_where_a_model_has_it() -> None:
    gpt2 = params_result(load_preset("gpt2-small")).to_dict()["parameters"]
    gemma = params_result(load_preset("gemma-4-e2b")).to_dict()["parameters"]
    assert not set(OPTIONAL_PARTS) & set(gpt2)
    assert gemma["per_layer_embedding"] == load_preset("gemma-4-e2b").spec.vocab_size * 35 * 256
    assert "shared" not in gpt2["stacks"][0]


def test_csv_has_no_row_of_a_part_the_model_lacks(cli: Invoke) -> None:
    result = cli("params", "-p", "gpt2-small", "-f", "csv")
    assert result.exit_code == 0
    assert not [part for part in OPTIONAL_PARTS if f",{part}," in result.stdout]
