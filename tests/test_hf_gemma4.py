"""Gemma 4's text decoder: the settings its golden model (gemma-4-31b) leaves out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.loaders import load_file
from costcalc.spec import ModelSpec
from tests.conftest import FIXTURES


def text_spec(tmp_path: Path, **changes: Any) -> ModelSpec:
    """gemma-4-31b.json with keys of its ``text_config`` changed (``...`` deletes a key)."""
    data = json.loads((FIXTURES / "hf" / "gemma-4-31b.json").read_text())
    text = data["text_config"]
    for key, value in changes.items():
        if value is ...:
            text.pop(key, None)
        else:
            text[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return load_file(path).spec


def test_full_layers_have_their_own_heads_and_reuse_keys_as_values(tmp_path: Path) -> None:
    sliding, full = text_spec(tmp_path).stacks
    assert (sliding.n_layers, sliding.head_width, sliding.kv_heads) == (50, 256, 16)
    assert (sliding.sliding_window, sliding.keys_as_values) == (1024, False)
    assert (full.n_layers, full.head_width, full.kv_heads) == (10, 512, 4)
    assert (full.sliding_window, full.keys_as_values) == (None, True)


def test_without_keys_as_values_full_layers_keep_the_key_value_heads(tmp_path: Path) -> None:
    full = text_spec(tmp_path, attention_k_eq_v=False).stacks[1]
    assert (full.head_width, full.kv_heads, full.keys_as_values) == (512, 16, False)


@pytest.mark.parametrize(
    ("layers", "kinds"), [(8, [(6, 1024), (2, None)]), (4, [(3, 1024), (1, None)])]
)
def test_default_layers_end_with_a_full_layer(
    tmp_path: Path, layers: int, kinds: list[tuple[int, int | None]]
) -> None:
    """Every 6th layer is full and transformers forces the last one full too."""
    spec = text_spec(tmp_path, num_hidden_layers=layers, layer_types=...)
    assert [(s.n_layers, s.sliding_window) for s in spec.stacks] == kinds


def test_a_listed_last_layer_is_forced_full(tmp_path: Path) -> None:
    listed = ["sliding_attention"] * 6
    spec = text_spec(tmp_path, num_hidden_layers=6, layer_types=listed)
    assert [(s.n_layers, s.sliding_window) for s in spec.stacks] == [(5, 1024), (1, None)]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("hidden_size_per_layer_input", 256),
        ("num_kv_shared_layers", 20),
        ("enable_moe_block", True),
    ],
)
def test_parts_costcalc_does_not_count_are_refused(tmp_path: Path, key: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"text_config.{key}.*not supported"):
        text_spec(tmp_path, **{key: value})


def test_per_layer_embeddings_are_on_by_default(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="hidden_size_per_layer_input"):
        text_spec(tmp_path, hidden_size_per_layer_input=...)
