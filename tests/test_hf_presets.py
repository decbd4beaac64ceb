"""Presets of Hugging Face models: each is the model its config.json describes, and its total is
transformers' count (golden: tests/golden/hf_reference.json)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from costcalc.loaders import load_file, load_preset
from costcalc.params import total_params
from costcalc.spec import ModelSpec

Invoke = Callable[..., Result]  # the `cli` fixture of conftest.py

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = json.loads((ROOT / "tests" / "golden" / "hf_reference.json").read_text())["models"]

# preset name -> (golden/fixture name, Hugging Face model id named in the preset's source)
PRESETS = {
    "llama-3.2-1b": ("llama-3.2-1b", "meta-llama/Llama-3.2-1B"),
    "llama-3.1-8b": ("llama-3.1-8b", "meta-llama/Llama-3.1-8B"),
    "mistral-7b": ("mistral-7b-v0.1", "mistralai/Mistral-7B-v0.1"),
    "qwen2.5-1.5b": ("qwen2.5-1.5b", "Qwen/Qwen2.5-1.5B"),
    "qwen2.5-3b": ("qwen2.5-3b", "Qwen/Qwen2.5-3B"),
    "qwen2.5-7b": ("qwen2.5-7b", "Qwen/Qwen2.5-7B"),
    "smollm2-135m": ("smollm2-135m", "HuggingFaceTB/SmolLM2-135M"),
    "pythia-160m": ("pythia-160m", "EleutherAI/pythia-160m"),
    "opt-125m": ("opt-125m", "facebook/opt-125m"),
    "gemma-2b": ("gemma-2b", "google/gemma-2b"),
    "phi-2": ("phi-2", "microsoft/phi-2"),
    "mixtral-8x7b": ("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1"),
}


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_total_is_transformers_count(preset: str) -> None:
    golden_name, _ = PRESETS[preset]
    assert total_params(load_preset(preset).spec) == GOLDEN[golden_name]["parameters_total"]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_is_the_model_its_config_describes(preset: str) -> None:
    golden_name, hub_id = PRESETS[preset]
    loaded = load_preset(preset)
    from_config = load_file(ROOT / "tests" / "fixtures" / "hf" / f"{golden_name}.json")
    assert loaded.spec.resolved() == from_config.spec.resolved()
    assert loaded.source is not None and f"Hugging Face {hub_id} config.json" in loaded.source


def test_mixtral_preset_shows_active_parameters(cli: Invoke) -> None:
    result = cli("params", "--preset", "mixtral-8x7b", "--format", "json")
    parameters = json.loads(result.stdout)["parameters"]
    assert parameters["total"] == GOLDEN["mixtral-8x7b"]["parameters_total"]
    # 32 layers x 6 idle experts x (3 x 4,096 x 14,336): Mixtral 8x7B's 12.9B active (Mistral AI).
    assert parameters["active"] == parameters["total"] - 32 * 6 * 3 * 4096 * 14336
    table = cli("params", "--preset", "mixtral-8x7b").stdout
    assert "active per token" in table and f"{parameters['active']:,}" in table


FAMILIES_GOLDEN = json.loads((ROOT / "tests" / "golden" / "hf_families.json").read_text())["models"]

# Layered and mixture-of-experts presets, checked against tests/golden/hf_families.json.
MOE_PRESETS = {
    "qwen3-30b-a3b": ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B"),
    "deepseek-v3": ("deepseek-v3", "deepseek-ai/DeepSeek-V3"),
    "gpt-oss-20b": ("gpt-oss-20b", "openai/gpt-oss-20b"),
    "gpt-oss-120b": ("gpt-oss-120b", "openai/gpt-oss-120b"),
}


@pytest.mark.parametrize("preset", sorted(MOE_PRESETS))
def test_moe_preset_total_is_transformers_count(preset: str) -> None:
    golden_name, _ = MOE_PRESETS[preset]
    assert (
        total_params(load_preset(preset).spec) == FAMILIES_GOLDEN[golden_name]["parameters_total"]
    )


@pytest.mark.parametrize("preset", sorted(MOE_PRESETS))
def test_moe_preset_is_the_model_its_config_describes(preset: str) -> None:
    # Same kinds of block, as many layers of each, as the translated config.json.
    golden_name, hub_id = MOE_PRESETS[preset]
    loaded = load_preset(preset)
    from_config = load_file(ROOT / FAMILIES_GOLDEN[golden_name]["config"])

    def kinds(spec: ModelSpec) -> list[dict[str, object]]:
        return [stack.resolved() for stack in spec.stacks]

    assert kinds(loaded.spec) == kinds(from_config.spec)
    assert loaded.source is not None and f"Hugging Face {hub_id} config.json" in loaded.source


def test_deepseek_v3_preset_is_the_published_671b() -> None:
    # DeepSeek-V3 technical report: 671B total parameters (the MTP module not included).
    assert total_params(load_preset("deepseek-v3").spec) == 671_026_404_352
