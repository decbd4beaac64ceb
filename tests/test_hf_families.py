"""Every decoder family costcalc reads, counted against transformers' own count.

Golden values: tests/golden/hf_families.json, written by tests/reference/make_golden_families.py
(torch 2.13.0 + transformers 5.24.0; each model built from its published config.json, fixture
under tests/fixtures/hf/, on the meta device, or with tiny real weights where a family's forward
needs values). Recorded: ``sum(p.numel())``, every layer's parameters, the parameters outside the
layers, FlopCounterMode's forward MACs at B=1, T=128 (eager attention), and the cache elements
after a B=1, T=16 forward.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from costcalc.formats.families import registry
from costcalc.loaders import LoadedModel, load_file
from costcalc.macs import forward_macs
from costcalc.memory import kv_cache_elements
from costcalc.params import block_params, param_report

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "hf_families.json"


@cache
def golden() -> dict[str, dict[str, Any]]:
    models: dict[str, dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))["models"]
    return models


def supported(name: str) -> bool:
    """Read by costcalc: its model_type, or (multimodal) its text_config's."""
    record = golden()[name]
    if record["model_type"] in registry():
        return True
    text = json.loads((ROOT / record["config"]).read_text(encoding="utf-8")).get("text_config")
    return isinstance(text, dict) and text.get("model_type") in registry()


NAMES = sorted(golden())


def load(name: str) -> LoadedModel:
    return load_file(ROOT / golden()[name]["config"])


def only_supported(name: str) -> None:
    if not supported(name):
        pytest.skip(f"{golden()[name]['model_type']} is not read by costcalc")


@pytest.mark.parametrize("name", NAMES)
def test_parameters_match_transformers(name: str) -> None:
    only_supported(name)
    record = golden()[name]
    spec = load(name).spec
    report = param_report(spec)
    assert report.total == record["parameters_total"]
    assert report.untied_total - report.total == record["parameters_untied_extra"]
    assert report.total - report.blocks == record["parameters_other"]
    assert spec.n_layers == record["n_layers"]
    # The layers' own counts, as a multiset: each kind of block as often as transformers has it.
    ours = Counter({block_params(stack): 0 for stack in spec.stacks})
    for stack in spec.stacks:
        ours[block_params(stack)] += stack.n_layers
    assert ours == Counter(record["parameters_per_layer"])


@pytest.mark.parametrize("name", [n for n in NAMES if "macs_forward" in golden()[n]])
def test_forward_macs_match_flop_counter(name: str) -> None:
    only_supported(name)
    macs = golden()[name]["macs_forward"]
    spec = load(name).spec
    assert forward_macs(spec, macs["batch"], macs["seq_len"]) == macs["macs_total"]


@pytest.mark.parametrize("name", [n for n in NAMES if "kv_cache" in golden()[n]])
def test_cache_matches_transformers(name: str) -> None:
    only_supported(name)
    cache_record = golden()[name]["kv_cache"]
    spec = load(name).spec
    B, T = cache_record["batch"], cache_record["seq_len"]
    assert kv_cache_elements(spec, B, T) == cache_record["kv_cache_elements"]


def test_qwen2_windows_from_max_window_layers_are_layer_groups(tmp_path: Path) -> None:
    # transformers Qwen2Config: with use_sliding_window, layers from max_window_layers on slide.
    data = json.loads((ROOT / "tests/fixtures/hf/qwen2.5-0.5b.json").read_text())
    data.update(use_sliding_window=True, sliding_window=8, max_window_layers=10)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    spec = load_file(path).spec
    assert [(s.n_layers, s.sliding_window) for s in spec.stacks] == [(10, None), (14, 8)]
    # K d = 2 x 64 per token and layer, keys and values: 10 layers keep 16 tokens, 14 keep 8.
    assert kv_cache_elements(spec, 1, 16) == 2 * 128 * (10 * 16 + 14 * 8)
