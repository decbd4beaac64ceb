"""Presets of Hugging Face models: each is the model its config.json describes, and its total is
transformers' count (golden: tests/golden/hf_reference.json and tests/golden/hf_families.json)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from costcalc.loaders import load_file, load_preset
from costcalc.params import total_params
from costcalc.spec import ModelSpec
from tests.conftest import GOLDEN, ROOT, Invoke

REFERENCE = json.loads((GOLDEN / "hf_reference.json").read_text())["models"]
FAMILIES = json.loads((GOLDEN / "hf_families.json").read_text())["models"]

# preset name -> (golden entry, Hugging Face model id named in the preset's source)
PRESETS: dict[str, tuple[dict[str, Any], str]] = {
    "llama-3.2-1b": (REFERENCE["llama-3.2-1b"], "meta-llama/Llama-3.2-1B"),
    "llama-3.1-8b": (REFERENCE["llama-3.1-8b"], "meta-llama/Llama-3.1-8B"),
    "mistral-7b": (REFERENCE["mistral-7b-v0.1"], "mistralai/Mistral-7B-v0.1"),
    "qwen2.5-1.5b": (REFERENCE["qwen2.5-1.5b"], "Qwen/Qwen2.5-1.5B"),
    "qwen2.5-3b": (REFERENCE["qwen2.5-3b"], "Qwen/Qwen2.5-3B"),
    "qwen2.5-7b": (REFERENCE["qwen2.5-7b"], "Qwen/Qwen2.5-7B"),
    "smollm2-135m": (REFERENCE["smollm2-135m"], "HuggingFaceTB/SmolLM2-135M"),
    "pythia-160m": (REFERENCE["pythia-160m"], "EleutherAI/pythia-160m"),
    "opt-125m": (REFERENCE["opt-125m"], "facebook/opt-125m"),
    "gemma-2b": (REFERENCE["gemma-2b"], "google/gemma-2b"),
    "phi-2": (REFERENCE["phi-2"], "microsoft/phi-2"),
    "mixtral-8x7b": (REFERENCE["mixtral-8x7b"], "mistralai/Mixtral-8x7B-v0.1"),
    "gemma-2-2b": (FAMILIES["gemma-2-2b"], "google/gemma-2-2b"),
    "gemma-3-1b": (FAMILIES["gemma-3-1b"], "google/gemma-3-1b-pt"),
    "olmo-2-1b": (FAMILIES["olmo-2-1b"], "allenai/OLMo-2-0425-1B"),
    "qwen3-0.6b": (FAMILIES["qwen3-0.6b"], "Qwen/Qwen3-0.6B"),
    "qwen3-8b": (FAMILIES["qwen3-8b"], "Qwen/Qwen3-8B"),
    "qwen3-30b-a3b": (FAMILIES["qwen3-30b-a3b"], "Qwen/Qwen3-30B-A3B"),
    "deepseek-v3": (FAMILIES["deepseek-v3"], "deepseek-ai/DeepSeek-V3"),
    "deepseek-v3.2-exp": (FAMILIES["deepseek-v3.2-exp"], "deepseek-ai/DeepSeek-V3.2-Exp"),
    "minimax-m2": (FAMILIES["minimax-m2"], "MiniMaxAI/MiniMax-M2"),
    "gpt-oss-20b": (FAMILIES["gpt-oss-20b"], "openai/gpt-oss-20b"),
    "gpt-oss-120b": (FAMILIES["gpt-oss-120b"], "openai/gpt-oss-120b"),
    "gemma-4-31b": (FAMILIES["gemma-4-31b-text"], "google/gemma-4-31B"),
    "gemma-4-e2b": (FAMILIES["gemma-4-e2b-text"], "google/gemma-4-E2B"),
    "qwen2.5-vl-7b": (FAMILIES["qwen2.5-vl-7b-instruct"], "Qwen/Qwen2.5-VL-7B-Instruct"),
}
# Presets that group their layers otherwise than the translated config.json: the same kinds of
# block, as many layers of each, listed in other groups.
REGROUPED = {"gpt-oss-20b", "gpt-oss-120b", "gemma-4-31b", "gemma-4-e2b"}


def kinds(spec: ModelSpec) -> list[dict[str, object]]:
    return [stack.resolved() for stack in spec.stacks]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_total_is_transformers_count(preset: str) -> None:
    golden, _ = PRESETS[preset]
    assert total_params(load_preset(preset).spec) == golden["parameters_total"]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_is_the_model_its_config_describes(preset: str) -> None:
    golden, hub_id = PRESETS[preset]
    loaded = load_preset(preset)
    from_config = load_file(ROOT / golden["config"])
    assert kinds(loaded.spec) == kinds(from_config.spec)
    if preset not in REGROUPED:
        assert loaded.spec.resolved() == from_config.spec.resolved()
    assert loaded.source is not None and f"Hugging Face {hub_id} config.json" in loaded.source
    assert "transformers" in loaded.source and "modeling code" in loaded.source


def test_layered_presets_keep_their_window_pattern() -> None:
    # Gemma 2: 13 sliding (4,096) and 13 full layers; Gemma 3 1B: 22 sliding (512) and 4 full.
    gemma2 = load_preset("gemma-2-2b").spec
    assert [(s.n_layers, s.sliding_window) for s in gemma2.stacks] == [(13, 4096), (13, None)]
    gemma3 = load_preset("gemma-3-1b").spec
    assert [(s.n_layers, s.sliding_window) for s in gemma3.stacks] == [(22, 512), (4, None)]


def test_mixtral_preset_shows_active_parameters(cli: Invoke) -> None:
    result = cli("params", "--preset", "mixtral-8x7b", "--format", "json")
    parameters = json.loads(result.stdout)["parameters"]
    assert parameters["total"] == REFERENCE["mixtral-8x7b"]["parameters_total"]
    # 32 layers x 6 idle experts x (3 x 4,096 x 14,336): Mixtral 8x7B's 12.9B active (Mistral AI).
    assert parameters["active"] == parameters["total"] - 32 * 6 * 3 * 4096 * 14336
    table = cli("params", "--preset", "mixtral-8x7b").stdout
    assert "active per token" in table and f"{parameters['active']:,}" in table


def test_deepseek_v3_preset_is_the_published_671b() -> None:
    # DeepSeek-V3 technical report: 671B total parameters (the MTP module not included).
    assert total_params(load_preset("deepseek-v3").spec) == 671_026_404_352


def test_deepseek_v32_preset_adds_the_indexer_to_v3() -> None:
    # Per layer: wq_b 1,536 x 64 x 128, wk 7,168 x 128, k_norm 2 x 128, weights_proj 7,168 x 64.
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    v3, v32 = (
        total_params(load_preset(name).spec) for name in ("deepseek-v3", "deepseek-v3.2-exp")
    )
    assert v32 - v3 == 61 * indexer


def test_qwen25_vl_preset_says_the_vision_tower_is_excluded() -> None:
    loaded = load_preset("qwen2.5-vl-7b")
    assert loaded.source is not None and "vision tower" in loaded.source
    assert "excluded" in loaded.source
