"""Configs transformers 5.24 takes but fails to build: counted, with a note saying so.

Each case edits a family's published config (the differential set's unedited variant,
``<family>/00``, which transformers builds and costcalc counts without such a note) so that
transformers' code fails on it (tests/test_differential.py holds the records where it did); the
count is the one the keys describe, and a note names the key, what the code does with it and
the error.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from costcalc.api import load
from costcalc.formats.families import text_location
from costcalc.formats.hf_unbuilt import NULLS
from tests.test_differential import records

FAILS = "transformers 5.24 fails to build this config: "


def base(family: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The family's unedited config, and the mapping in it that holds its text keys."""
    config: dict[str, Any] = copy.deepcopy(records()[f"{family}/00"]["config"])
    located = text_location(config["model_type"])
    path = located[0] if located else ("text_config",) if "text_config" in config else ()
    holder = config
    for key in path:
        holder = holder[key]
    return config, holder


def failures(config: dict[str, Any]) -> list[str]:
    return [note for note in load(config).notes if note.startswith(FAILS)]


NULL_CASES = [(family, rule.key) for family, rules in NULLS.items() for rule in rules]

SPELLED = {("bailing_hybrid", "n_shared_experts"): "num_shared_experts"}
"""The key set to null where it is not the rule's own: BailingHybridConfig types
``n_shared_experts`` as an int (a null is refused), but sets its alias after validating."""

DROPPED = {"hunyuan_vl_text": ("rope_scaling",)}
"""Keys left out beside the null: the fixture's rotary sections split its 128-wide heads, not
the D / H = 64 a null ``head_dim`` leaves, which HunYuanVLTextConfig refuses."""


@pytest.mark.parametrize("family", sorted(NULLS))
def test_the_unedited_config_has_no_such_note(family: str) -> None:
    assert failures(base(family)[0]) == []


@pytest.mark.parametrize(("family", "key"), NULL_CASES)
def test_a_null_the_code_computes_with_is_noted(family: str, key: str) -> None:
    rule = next(rule for rule in NULLS[family] if rule.key == key)
    config, holder = base(family)
    for other in (*rule.unless, *DROPPED.get(family, ())):
        holder.pop(other, None)
    spelled = SPELLED.get((family, key), key)
    holder[spelled] = None
    notes = failures(config)
    assert len(notes) == 1
    assert f"{spelled} is null, and {rule.code} (" in notes[0]
    assert rule.error in notes[0]


def edit_cohere2(holder: dict[str, Any]) -> None:
    holder["sliding_window"] = None


def edit_compass(holder: dict[str, Any]) -> None:
    holder["rope_parameters"] = {"full_attention": holder["rope_parameters"]["full_attention"]}
    holder["layer_types"] = ["sliding_attention"] * holder["num_hidden_layers"]


def edit_dbrx(holder: dict[str, Any]) -> None:
    holder["attn_config"] = {k: v for k, v in holder["attn_config"].items() if k != "rope_theta"}


def edit_deepseek_v4(holder: dict[str, Any]) -> None:
    holder["qk_rope_head_dim"] = 65  # beside the fixture's YaRN rope_scaling


def edit_olmo3(holder: dict[str, Any]) -> None:
    holder["hidden_size"] = 4095  # heads floored to 127 wide, rotated whole, beside YaRN


def edit_ernie(holder: dict[str, Any]) -> None:
    holder["num_attention_heads"], holder["num_key_value_heads"] = 2, 1


def edit_olmo(holder: dict[str, Any]) -> None:
    holder["linear_dt_max"] = 0.0


def edit_zamba(holder: dict[str, Any]) -> None:
    holder.pop("layers_block_type", None)
    holder.update(attn_layer_period=1, attn_layer_offset=4)


CHECK_CASES = {
    "cohere2": (edit_cohere2, "sliding_window is null, and its sliding layers", "TypeError"),
    "cohere_compass_text": (edit_compass, "no settings for sliding_attention layers", "KeyError"),
    "dbrx": (edit_dbrx, "attn_config gives no rope_theta", "AttributeError"),
    "deepseek_v4": (edit_deepseek_v4, "65 rotary dimensions per head, an odd", "RuntimeError"),
    "olmo3": (edit_olmo3, "127 rotary dimensions per head, an odd count, beside YaRN", "Runtime"),
    "ernie4_5_vl_moe_text": (edit_ernie, "does not cover the 640 rotary frequencies", "Runtime"),
    "olmo_hybrid": (edit_olmo, "linear_dt_max is 0.0", "ValueError"),
    "zamba": (edit_zamba, "the model has one hybrid layer", "ValueError"),
}
"""family -> (the edit, what the note says, the error): values of other kinds the code fails
on (``hf_unbuilt.CHECKS``; an odd rotary width beside YaRN settings, ``odd_yarn``)."""


@pytest.mark.parametrize("family", sorted(CHECK_CASES))
def test_other_values_the_code_fails_on_are_noted(family: str) -> None:
    edit, says, error = CHECK_CASES[family]
    config, holder = base(family)
    assert failures(config) == []
    edit(holder)
    notes = failures(config)
    assert len(notes) == 1
    assert says in notes[0]
    assert error in notes[0]
