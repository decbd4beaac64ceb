"""Per-layer rules of the newer families when a config leaves out ``layer_types``: each
configuration class's own rule (transformers 5.24), evaluated in closed form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.loaders import load_file
from costcalc.spec import ModelSpec

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "hf"


def spec_with(tmp_path: Path, fixture: str, **changes: Any) -> ModelSpec:
    data = json.loads((FIXTURES / f"{fixture}.json").read_text())
    for key, value in changes.items():
        if value is ...:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return load_file(path).spec


def kinds(spec: ModelSpec) -> list[tuple[int, int | None]]:
    return [(stack.n_layers, stack.sliding_window) for stack in spec.stacks]


def test_olmo3_slides_on_three_layers_of_four(tmp_path: Path) -> None:
    # Olmo3Config: "sliding_attention" if (i + 1) % 4 != 0.
    spec = spec_with(tmp_path, "olmo-3-7b", layer_types=..., num_hidden_layers=30)
    assert kinds(spec) == [(23, 4096), (7, None)]


def test_exaone4_rule_and_no_window(tmp_path: Path) -> None:
    spec = spec_with(tmp_path, "exaone-4.0-1.2b", layer_types=..., sliding_window=128)
    assert kinds(spec) == [(23, 128), (7, None)]  # pattern null read as absent: 4
    spec = spec_with(tmp_path, "exaone-4.0-1.2b", layer_types=..., sliding_window=...)
    assert kinds(spec) == [(23, 4096), (7, None)]  # no key: the class's 4,096
    assert kinds(spec_with(tmp_path, "exaone-4.0-1.2b", layer_types=...)) == [(30, None)]


def test_exaone4_pattern_must_be_a_count(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="sliding_window_pattern"):
        spec_with(tmp_path, "exaone-4.0-1.2b", layer_types=..., sliding_window=8,
                  sliding_window_pattern="LLLG")  # fmt: skip


def test_gemma_null_window_means_full_attention(tmp_path: Path) -> None:
    assert kinds(spec_with(tmp_path, "gemma-2-2b", sliding_window=None)) == [(26, None)]
    assert kinds(spec_with(tmp_path, "gemma-3-1b", sliding_window_pattern=1)) == [(26, None)]


def test_smollm3_windows_fall_on_layers_without_rotary(tmp_path: Path) -> None:
    assert kinds(spec_with(tmp_path, "smollm3-3b", sliding_window=64)) == [(36, None)]
    on = {"use_sliding_window": True, "sliding_window": 64}
    assert kinds(spec_with(tmp_path, "smollm3-3b", **on)) == [(27, None), (9, 64)]
    spec = spec_with(tmp_path, "smollm3-3b", no_rope_layers=..., no_rope_layer_interval=3, **on)
    assert kinds(spec) == [(24, None), (12, 64)]


def test_ministral_window_on_every_layer_unless_null(tmp_path: Path) -> None:
    assert kinds(spec_with(tmp_path, "ministral-8b", sliding_window=...)) == [(36, 4096)]
    assert kinds(spec_with(tmp_path, "ministral-8b", sliding_window=None)) == [(36, None)]


def test_ernie_null_head_dim_and_kv_heads(tmp_path: Path) -> None:
    spec = spec_with(tmp_path, "ernie-4.5-0.3b", head_dim=None, num_key_value_heads=None)
    assert (spec.head_width, spec.kv_heads) == (1024 // 16, 16)
    spec = spec_with(tmp_path, "ernie-4.5-0.3b", head_dim=..., num_key_value_heads=...)
    assert (spec.head_width, spec.kv_heads) == (128, 2)
