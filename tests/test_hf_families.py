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
import math
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.formats.architectures import CLASSES
from costcalc.formats.families import PORTS, registry
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


def text_config(name: str) -> dict[str, Any]:
    """The record's config as the family reads it: its text_config when it has one."""
    data: dict[str, Any] = json.loads((ROOT / golden()[name]["config"]).read_text(encoding="utf-8"))
    text = data.get("text_config")
    return text if isinstance(text, dict) and "model_type" in text else data


def family(name: str) -> str:
    """The family costcalc reads the record as: its model_type, or (multimodal) its
    text_config's, or that of the first class its ``architectures`` names (Kimi-K2), or of
    that class's port (RWForCausalLM's, Falcon)."""
    record = golden()[name]
    if record["model_type"] in registry():
        return str(record["model_type"])
    data = text_config(name)
    if data.get("model_type") in registry():
        return str(data["model_type"])
    listed = data.get("architectures") or ()
    named = [PORTS.get(c) or CLASSES[c] for c in listed if c in PORTS or c in CLASSES]
    return named[0] if named else str(data.get("model_type"))


def supported(name: str) -> bool:
    return family(name) in registry()


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
    # Parameters several layers hold (a block reused at several depths), counted once.
    assert sum(s.shared for s in report.stacks) == record.get("parameters_shared", 0)
    assert spec.n_layers == record["n_layers"]
    # The layers' own counts, as a multiset: each kind of block as often as transformers has it.
    ours = Counter({block_params(stack): 0 for stack in spec.stacks})
    for stack in spec.stacks:
        ours[block_params(stack)] += stack.n_layers
    assert ours == Counter(record["parameters_per_layer"])


DENSE_EXPERT_FORWARD: dict[str, tuple[str, str]] = {
    "llama4_text": (
        "transformers/models/llama4/modeling_llama4.py: Llama4TextMoe.forward repeats every token "
        "for all X experts (unchosen ones weighted by zero) and Llama4TextExperts.forward runs "
        "them as one bmm over the stacked experts",
        "num_experts_per_tok",
    ),
}
"""Families whose transformers forward computes every expert for every token: FlopCounterMode
counts X experts per token where the model's cost (and costcalc) counts the k routed ones.
Value: the modeling-code reference and the config key of k."""


def idle_expert_macs(name: str) -> int:
    """MACs of the experts a token is not routed to, from the golden record itself: per MoE
    layer kind, one expert's MACs per token is its stacked expert tensors' elements / X (X their
    leading dimension); idle = B T x sum over MoE layers of (X - k) x that. Cross-checked: the
    same sum with X instead of X - k is the record's ``macs_experts``."""
    record = golden()[name]
    macs = record["macs_forward"]
    _, top_k_key = DENSE_EXPERT_FORWARD[family(name)]
    k = text_config(name)[top_k_key]
    tokens = macs["batch"] * macs["seq_len"]
    every, idle = 0, 0
    for kind in record["layer_kinds"]:
        stacked = [s for t, s in kind["tensors"].items() if ".experts." in t and len(s) == 3]
        if not stacked:
            continue
        (x,) = {shape[0] for shape in stacked}
        per_expert = sum(shape[1] * shape[2] for shape in stacked)
        every += tokens * len(kind["layers"]) * x * per_expert
        idle += tokens * len(kind["layers"]) * (x - k) * per_expert
    assert every == macs["macs_experts"]
    return idle


@pytest.mark.parametrize("name", [n for n in NAMES if "macs_forward" in golden()[n]])
def test_forward_macs_match_flop_counter(name: str) -> None:
    only_supported(name)
    macs = golden()[name]["macs_forward"]
    spec = load(name).spec
    expected = macs["macs_total"]
    if family(name) in DENSE_EXPERT_FORWARD:
        expected -= idle_expert_macs(name)  # costcalc counts the routed experts only
    assert forward_macs(spec, macs["batch"], macs["seq_len"]) == expected


@pytest.mark.parametrize(
    "name", [n for n in NAMES if "kv_cache_elements" in golden()[n].get("kv_cache", {})]
)
def test_cache_matches_transformers(name: str) -> None:
    # A model that returns no cache object (RecurrentGemma keeps its state in its modules) has
    # a note instead, and nothing to compare.
    only_supported(name)
    cache_record = golden()[name]["kv_cache"]
    spec = load(name).spec
    B, T = cache_record["batch"], cache_record["seq_len"]
    # A sparse-attention indexer's keys (DeepSeek-V3.2's indexer_keys, MiniMax M3's idx_keys)
    # are cached beside the keys and values.
    by_kind = cache_record.get("cache_elements_by_kind", {})
    indexer = by_kind.get("indexer_keys", 0) + by_kind.get("idx_keys", 0)
    expected = cache_record["kv_cache_elements"] + indexer
    if any(kind["layer_class"] in COMPRESSED_CACHES for kind in cache_record["cache_layer_kinds"]):
        expected = compressed_cache_elements(cache_record)
    assert kv_cache_elements(spec, B, T) == expected


COMPRESSED_CACHES = {
    "DeepseekV4HCACache": "transformers/models/deepseek_v4/modeling_deepseek_v4.py",
    "DeepseekV4CSACache": "transformers/models/deepseek_v4/modeling_deepseek_v4.py",
}
"""Cache layers of key compressors: ``update`` sets ``self.values = self.keys`` (one tensor
read as keys and values) and the compressor's entries, window buffers and overlap live beside
them. Value: the modeling code."""


def compressed_cache_elements(cache_record: dict[str, Any]) -> int:
    """Everything the cache layers hold, the values of compressed cache layers once (they are
    the keys' own tensor): the record's total less those layers' ``values``."""
    aliased = sum(
        len(kind["layers"]) * math.prod(kind["tensors"]["values"])
        for kind in cache_record["cache_layer_kinds"]
        if kind["layer_class"] in COMPRESSED_CACHES
    )
    return cache_record["cache_elements_total"] - aliased


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


def test_gpt_neo_local_layers_cache_every_token() -> None:
    # modeling_gpt_neo.py masks local layers to window_size (256) keys, but GPTNeoConfig names no
    # sliding_window or layer_types, so DynamicCache(config=...) builds a DynamicLayer (every
    # token) for each layer: keys and values, 2 x L x B x T x H x d, windowed layers alike.
    spec = load("gpt-neo-125m").spec
    assert {s.sliding_window for s in spec.stacks} == {None, 256}
    long = golden()["gpt-neo-125m"]["kv_cache_long"]
    B, T = long["batch"], long["seq_len"]
    assert T > 256
    expected = 2 * 12 * B * T * 768
    assert long["kv_cache_elements"] == expected
    assert kv_cache_elements(spec, B, T) == expected


def test_a_layer_count_past_any_model_is_one_error(tmp_path: Path) -> None:
    # The per-layer rule is evaluated in closed form; the absurd count is reported once.
    data = json.loads((ROOT / "tests/fixtures/hf/qwen2.5-0.5b.json").read_text())
    data.update(use_sliding_window=True, max_window_layers=3, num_hidden_layers=10**18)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as raised:
        load_file(path)
    assert [p.field for p in raised.value.problems] == ["num_hidden_layers"]
