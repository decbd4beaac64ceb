"""Presets of the newer Hugging Face families: each is the model its config.json describes, and
its total is transformers' count (golden: tests/golden/hf_families.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costcalc.loaders import load_file, load_preset
from costcalc.params import total_params

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = json.loads((ROOT / "tests" / "golden" / "hf_families.json").read_text())["models"]

# preset name -> (golden/fixture name, Hugging Face model id named in the preset's source)
PRESETS = {
    "gemma-2-2b": ("gemma-2-2b", "google/gemma-2-2b"),
    "gemma-3-1b": ("gemma-3-1b", "google/gemma-3-1b-pt"),
    "olmo-2-1b": ("olmo-2-1b", "allenai/OLMo-2-0425-1B"),
    "qwen3-0.6b": ("qwen3-0.6b", "Qwen/Qwen3-0.6B"),
    "qwen3-8b": ("qwen3-8b", "Qwen/Qwen3-8B"),
}


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_total_is_transformers_count(preset: str) -> None:
    golden_name, _ = PRESETS[preset]
    assert total_params(load_preset(preset).spec) == GOLDEN[golden_name]["parameters_total"]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_is_the_model_its_config_describes(preset: str) -> None:
    golden_name, hub_id = PRESETS[preset]
    loaded = load_preset(preset)
    from_config = load_file(ROOT / GOLDEN[golden_name]["config"])
    assert loaded.spec.resolved() == from_config.spec.resolved()
    assert loaded.source is not None and f"Hugging Face {hub_id} config.json" in loaded.source
    assert "transformers" in loaded.source and "modeling code" in loaded.source


def test_layered_presets_keep_their_window_pattern() -> None:
    # Gemma 2: 13 sliding (4,096) and 13 full layers; Gemma 3 1B: 22 sliding (512) and 4 full.
    gemma2 = load_preset("gemma-2-2b").spec
    assert [(s.n_layers, s.sliding_window) for s in gemma2.stacks] == [(13, 4096), (13, None)]
    gemma3 = load_preset("gemma-3-1b").spec
    assert [(s.n_layers, s.sliding_window) for s in gemma3.stacks] == [(22, 512), (4, None)]
