"""Hugging Face configs counted by costcalc against transformers' own count.

Golden values: tests/golden/hf_reference.json, written by tests/reference/make_golden.py
(torch 2.13.0 + transformers 5.24.0, each model built from its fixture config on the meta
device; ``sum(p.numel() for p in model.parameters())``, per-layer sums and every tensor's shape),
and tests/golden/hf_reference_extra.json, written the same way by
tests/reference/make_golden_defaults.py from minimal configs that leave every optional key to the
family's defaults.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from costcalc.loaders import LoadedModel, load_file
from costcalc.params import ParamReport, active_params, expert_ffn_params, param_report

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"


@cache
def golden() -> dict[str, dict[str, Any]]:
    """Published models by name, plus each family's minimal config as ``defaults/<family>``."""
    models: dict[str, dict[str, Any]] = read_models("hf_reference.json")
    extra = read_models("hf_reference_extra.json")
    models.update({f"defaults/{name}": record for name, record in extra.items()})
    return models


def read_models(file_name: str) -> dict[str, dict[str, Any]]:
    models: dict[str, dict[str, Any]] = json.loads(
        (GOLDEN / file_name).read_text(encoding="utf-8")
    )["models"]
    return models


def load(name: str) -> LoadedModel:
    return load_file(ROOT / golden()[name]["config"])


NAMES = sorted(golden())


@pytest.mark.parametrize("name", NAMES)
def test_total_per_layer_and_tying_match_transformers(name: str) -> None:
    record = golden()[name]
    report = param_report(load(name).spec)
    assert report.total == record["parameters_total"]
    assert report.per_block == record["parameters_per_layer"]
    assert load(name).spec.n_layers == record["n_layers"]
    assert report.total - report.blocks == record["parameters_other"]
    # transformers' tied extra is the output matrix when tied, 0 when untied: so is ours.
    assert report.untied_total - report.total == record["parameters_untied_extra"]


def block_part(tensor: str) -> str:
    """Which costcalc row a tensor of one decoder layer belongs to, by its name."""
    if "norm" in tensor or tensor.startswith(("ln_", "input_layernorm")):
        return "norms"
    if "attn" in tensor or "attention" in tensor:
        return "attention"
    return "ffn"


def model_part(tensor: str) -> str:
    """Which costcalc row a tensor outside the decoder layers belongs to, by its name."""
    if "lm_head" in tensor or "embed_out" in tensor:
        return "lm_head"
    if "project_in" in tensor or "project_out" in tensor:
        return "embedding_projection"
    if "pos" in tensor or tensor.endswith("wpe.weight"):
        return "position_embedding"
    if "norm" in tensor or "ln_f" in tensor:
        return "final_norm"
    return "token_embedding"


def numel_by_part(shapes: dict[str, list[int]], part_of: Any) -> dict[str, int]:
    parts: dict[str, int] = {}
    for tensor, shape in shapes.items():
        n = 1
        for size in shape:
            n *= size
        parts[part_of(tensor)] = parts.get(part_of(tensor), 0) + n
    return parts


def our_parts(report: ParamReport, keys: list[str]) -> dict[str, int]:
    return {key: getattr(report, key) for key in keys if getattr(report, key)}


@pytest.mark.parametrize("name", NAMES)
def test_breakdown_matches_transformers_tensors(name: str) -> None:
    record = golden()[name]
    report = param_report(load(name).spec)
    layer = numel_by_part(record["parameters_by_tensor_layer0"], block_part)
    assert our_parts(report, ["attention", "ffn", "norms"]) == layer
    other = numel_by_part(record["parameters_by_tensor_other"], model_part)
    keys = ["token_embedding", "position_embedding", "embedding_projection"]
    assert our_parts(report, [*keys, "final_norm", "lm_head"]) == other


def model_types(file_name: str) -> set[str]:
    return {
        json.loads((ROOT / record["config"]).read_text(encoding="utf-8"))["model_type"]
        for record in read_models(file_name).values()
    }


LEGACY = sorted(model_types("hf_reference_extra.json"))
"""The families whose defaults make_golden_defaults.py recorded."""


@pytest.mark.parametrize("family", LEGACY)
def test_family_defaults_are_transformers_defaults(family: str) -> None:
    defaults = golden()[f"defaults/{family}"]["config_defaults"]
    spec = load(f"defaults/{family}").spec
    assert spec.tie_embeddings == defaults["tie_word_embeddings"]
    assert spec.kv_heads == defaults.get("num_key_value_heads", spec.n_heads)
    assert spec.head_width == (defaults.get("head_dim") or spec.d_model // spec.n_heads)
    assert spec.sliding_window == defaults.get("sliding_window")


@pytest.mark.parametrize(
    "name",
    [name for name in NAMES if "expert_parameters" in golden()[name].get("macs_forward", {})],
)
def test_moe_expert_size_and_active_parameters(name: str) -> None:
    moe = golden()[name]["macs_forward"]
    spec = load(name).spec
    assert (spec.moe_experts, spec.moe_top_k) == (moe["num_experts"], moe["experts_per_token"])
    assert expert_ffn_params(spec) == moe["expert_parameters"]
    idle = spec.n_layers * (moe["num_experts"] - moe["experts_per_token"])
    expected = golden()[name]["parameters_total"] - idle * moe["expert_parameters"]
    assert active_params(spec) == expected


def test_mixtral_8x7b_total_and_active_as_published() -> None:
    # Mistral AI, "Mixtral of experts" (11 Dec 2023): 46.7B total parameters, 12.9B used per token.
    spec = load("mixtral-8x7b").spec
    report = param_report(spec)
    assert round(report.total / 10**8) == 467
    assert round(report.active / 10**8) == 129
    # Every expert weighs 3 x 4,096 x 14,336 (gate, up, down); 6 of 8 idle in each of 32 layers.
    assert report.total - report.active == 32 * 6 * 3 * 4096 * 14336
