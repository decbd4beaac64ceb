"""The lightning attention mixer (``mixer: lightning``; transformers 5.24
``models/minimax/modeling_minimax.py``: ``MiniMaxLightningAttention``) and the minimax family's
layers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError, UsageError
from costcalc.loaders import load_file
from costcalc.macs import decode_token_macs, mixer_sequence_macs, scan_macs
from costcalc.memory import kv_cache_elements, state_elements
from costcalc.spec import ModelSpec, structural_problems
from costcalc.tensors import mixer_tensors

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = json.loads((ROOT / "tests/golden/hf_families.json").read_text(encoding="utf-8"))["models"]

LIGHTNING: dict[str, Any] = {
    "vocab_size": 100,
    "d_model": 64,
    "n_layers": 2,
    "context_length": 32,
    "position": "rotary",
    "norm": "rmsnorm",
    "mixer": "lightning",
    "lightning": {"heads": 4, "head_dim": 16, "block_size": 48},
}


def test_lightning_tensors() -> None:
    spec = ModelSpec.model_validate(LIGHTNING)
    assert {t.name: t.shape for t in mixer_tensors(spec)} == {
        "attn.qkv_proj.weight": (3 * 64, 64),
        "attn.output_gate.weight": (64, 64),
        "attn.norm.weight": (64,),
        "attn.out_proj.weight": (64, 64),
    }


@pytest.mark.parametrize(("length", "blocks"), [(128, (48, 48, 32)), (48, (48,)), (5, (5,))])
def test_block_wise_prompt(length: int, blocks: tuple[int, ...]) -> None:
    # per block of c tokens and head: Q K^T and scores x V (c^2 d each), the state read by the
    # queries and the block's K^T V (c d^2 each); no conv
    spec = ModelSpec.model_validate(LIGHTNING)
    H, d = 4, 16
    expected = sum(H * (2 * c * c * d + 2 * c * d * d) for c in blocks)
    assert scan_macs(spec, 1, length) == expected
    assert mixer_sequence_macs(spec, 3, length) == 2 * 3 * expected


def test_state_not_cache() -> None:
    spec = ModelSpec.model_validate(LIGHTNING)
    assert kv_cache_elements(spec, 1, 16) == 0
    assert state_elements(spec, 2) == 2 * 2 * 4 * 16 * 16
    with pytest.raises(UsageError, match="lightning"):
        decode_token_macs(spec, 10)


def test_sizes_belong_to_the_mixer() -> None:
    missing = ModelSpec.model_construct(**{**LIGHTNING, "lightning": None})
    assert "lightning" in [f for f, _ in structural_problems(missing)]
    stray = ModelSpec.model_construct(**{**LIGHTNING, "mixer": "attention", "n_heads": 4})
    assert "lightning" in [f for f, _ in structural_problems(stray)]


def test_cached_state_matches_transformers() -> None:
    # MiniMaxCache keeps each lightning layer's K^T V (B x H x d x d) in linear_cache
    record = GOLDEN["tiny-minimax"]["kv_cache"]
    spec = load_file(ROOT / GOLDEN["tiny-minimax"]["config"]).spec
    assert state_elements(spec, record["batch"]) == record["linear_cache_elements"]


def _minimax(tmp_path: Path, **changes: Any) -> Path:
    data = json.loads((ROOT / "tests/fixtures/hf/tiny-minimax.json").read_text(encoding="utf-8"))
    data.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in data.items() if v is not None}))
    return path


def test_minimax_alternates_without_layer_types(tmp_path: Path) -> None:
    # MiniMaxConfig: full attention on even layers, lightning on odd ones
    spec = load_file(_minimax(tmp_path, layer_types=None, num_hidden_layers=5)).spec
    assert [(s.mixer, s.n_layers) for s in spec.stacks] == [("attention", 3), ("lightning", 2)]


def test_minimax_attn_type_list_is_refused(tmp_path: Path) -> None:
    path = _minimax(tmp_path, layer_types=None, attn_type_list=[0, 0, 0, 1])
    with pytest.raises(ConfigError) as raised:
        load_file(path)
    assert [p.field for p in raised.value.problems] == ["attn_type_list"]


def test_minimax_window_keeps_every_token(tmp_path: Path) -> None:
    # the softmax layers are masked to the window; MiniMaxCache's layers keep every token
    spec = load_file(_minimax(tmp_path, sliding_window=4)).spec
    assert kv_cache_elements(spec, 1, 16) == 2 * 16 * 2 * 16
