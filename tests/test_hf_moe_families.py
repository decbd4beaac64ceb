"""Layer rules of the mixture-of-experts families beyond what their golden records exercise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.formats.hf_layers import rotate
from costcalc.loaders import load_file
from costcalc.memory import kv_cache_elements
from costcalc.params import param_report

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf"


def _load(tmp_path: Path, fixture: str, **changes: Any) -> Any:
    data = json.loads((FIXTURES / fixture).read_text())
    data.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return load_file(path).spec


def test_dots1_windows_and_dense_layers_combine(tmp_path: Path) -> None:
    # Dots1Config: layers from max_window_layers on slide; Dots1DecoderLayer: dense FFNs below
    # first_k_dense_replace. 62 layers: 3 dense + full, 7 sparse + full, 52 sparse + window.
    spec = _load(
        tmp_path,
        "dots.llm1.base.json",
        sliding_window=8,
        max_window_layers=10,
        first_k_dense_replace=3,
    )
    assert [(s.n_layers, s.sliding_window, s.moe_experts) for s in spec.stacks] == [
        (3, None, None),
        (7, None, 128),
        (52, 8, 128),
    ]
    # K d = 32 x 128 per token and layer, keys and values: 10 layers keep 16 tokens, 52 keep 8.
    assert kv_cache_elements(spec, 1, 16) == 2 * 4096 * (10 * 16 + 52 * 8)


def test_dots1_layer_types_name_the_sliding_layers(tmp_path: Path) -> None:
    kinds = ["sliding_attention", "full_attention"] * 31
    spec = _load(tmp_path, "dots.llm1.base.json", sliding_window=8, layer_types=kinds)
    assert sorted((s.n_layers, s.sliding_window, s.moe_experts) for s in spec.stacks) == [
        (1, 8, None),
        (30, 8, 128),
        (31, None, 128),
    ]


def test_hunyuan_per_layer_top_k_must_agree(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, "hunyuan-a13b.json", moe_topk=[8] * 31 + [4])
    assert [p.field for p in raised.value.problems] == ["moe_topk"]


def test_glm5_layers_sharing_an_indexer_hold_none(tmp_path: Path) -> None:
    # GlmMoeDsaConfig: layer i runs its own indexer when max(i - offset + 1, 0) % freq == 0;
    # the others ("shared") reuse the previous selection. 12 layers, freq 3, offset 4:
    # F F F F S S F S S F S S. The total is transformers 5.24's sum(p.numel()) of this config.
    spec = _load(
        tmp_path, "glm-5.json", index_topk_freq=3, index_skip_topk_offset=4, num_hidden_layers=12
    )
    assert [(s.n_layers, s.indexer_heads, s.moe_experts) for s in spec.stacks] == [
        (3, 32, None),
        (3, 32, 256),
        (6, None, 256),
    ]
    assert param_report(spec).total == 91_946_276_352


def test_windows_after_dense_layers_stay_a_pattern(tmp_path: Path) -> None:
    # AfmoeConfig: layer i is full when (i + 1) % 4 == 0; the first num_dense_layers are dense.
    # Two groups (dense, sparse), each cycling through the window pattern from where it starts,
    # whatever the depth: 3 dense layers (s s s), then 997 sparse (f, then s s s f ...).
    spec = _load(tmp_path, "afmoe-defaults.json", num_dense_layers=3, num_hidden_layers=1000)
    assert spec.layers is not None and len(spec.layers) == 2
    assert [(s.n_layers, s.sliding_window, s.moe_experts) for s in spec.stacks] == [
        (3, 1024, None),
        (250, None, 64),
        (747, 1024, 64),
    ]


def test_rotated_window_pattern() -> None:
    pattern = [("sliding_attention", 3), ("full_attention", 1)]
    assert rotate(pattern, 1) == [
        ("sliding_attention", 2),
        ("full_attention", 1),
        ("sliding_attention", 1),
    ]
    assert rotate(pattern, 7) == [("full_attention", 1), ("sliding_attention", 3)]


def test_mimo_listed_layer_types_match_the_rule(tmp_path: Path) -> None:
    # MiMoV2FlashConfig's default: the first layer and every 6th full, the others sliding.
    kinds = [
        "full_attention" if i == 0 or (i + 1) % 6 == 0 else "sliding_attention" for i in range(48)
    ]
    listed = _load(tmp_path, "mimo-v2-flash.json", layer_types=kinds)
    ruled = load_file(FIXTURES / "mimo-v2-flash.json").spec
    key = [(s.n_layers, s.n_kv_heads, s.sliding_window, s.moe_experts) for s in ruled.stacks]
    assert [
        (s.n_layers, s.n_kv_heads, s.sliding_window, s.moe_experts) for s in listed.stacks
    ] == key
    assert key == [(1, 4, None, None), (39, 8, 129, 256), (8, 4, None, 256)]
