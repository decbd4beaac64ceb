"""Mistral Large 4's text decoder (transformers 5.24 ``models/mistral_large4``): the block keys it
needs (an indexer reading the block input, a learned query scale per head, MLA without a rotary
part, a learned scale per rotary frequency) and the layouts its configuration class describes.
The counts of the full model are checked against transformers in test_hf_families.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.loaders import load_file
from costcalc.macs import pair_width
from costcalc.memory import kv_width
from costcalc.spec import ModelSpec, structural_problems
from costcalc.tensors import mixer_tensors, model_tensors
from tests.conftest import FIXTURES, Invoke

MLA: dict[str, Any] = {
    "vocab_size": 100,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "context_length": 32,
    "position": "rotary",
    "mixer": "mla",
    "kv_lora_rank": 8,
    "qk_rope_head_dim": 4,
    "qk_nope_head_dim": 6,
    "v_head_dim": 5,
    "indexer_heads": 3,
    "indexer_head_dim": 12,
}


def _added(spec: ModelSpec, plain: ModelSpec) -> dict[str, tuple[int, ...]]:
    ours = {t.name: t.shape for t in mixer_tensors(spec)}
    return dict(ours.items() - {t.name: t.shape for t in mixer_tensors(plain)}.items())


def test_an_indexer_reading_the_block_input() -> None:
    """``MistralLarge4TextIndexer``: ``q_input_norm`` (LayerNorm of D) and ``wq_b`` D -> Hi di
    instead of the query latent; the scores and the cached key as DeepSeek-V3.2's."""
    spec = ModelSpec.model_validate({**MLA, "indexer_query_norm": True})
    plain = ModelSpec.model_validate({k: v for k, v in MLA.items() if "indexer" not in k})
    assert _added(spec, plain) == {
        "attn.indexer.q_input_norm.weight": (64,),
        "attn.indexer.q_input_norm.bias": (64,),
        "attn.indexer.wq_b.weight": (3 * 12, 64),
        "attn.indexer.wk.weight": (12, 64),
        "attn.indexer.k_norm.weight": (12,),
        "attn.indexer.k_norm.bias": (12,),
        "attn.indexer.weights_proj.weight": (3, 64),
    }
    assert pair_width(spec) - pair_width(plain) == 3 * (12 + 1)
    assert kv_width(spec) == 8 + 4 + 12


def test_a_query_scale_per_head_in_attention_and_indexer() -> None:
    """``MistralLarge4TextSoftmaxScaling``: a scale and a bias per query head, no products."""
    base = {**MLA, "indexer_query_norm": True}
    spec = ModelSpec.model_validate({**base, "query_position_scale": True})
    plain = ModelSpec.model_validate(base)
    assert _added(spec, plain) == {
        "attn.softmax_scaling.scale": (4,),
        "attn.softmax_scaling.bias": (4,),
        "attn.indexer.softmax_scaling.scale": (3,),
        "attn.indexer.softmax_scaling.bias": (3,),
    }
    assert pair_width(spec) == pair_width(plain)


def test_mla_without_a_rotary_part() -> None:
    """qk_rope_head_dim 0: the latent projection D -> rkv, a cache of rkv per token."""
    data = {k: v for k, v in MLA.items() if "indexer" not in k}
    spec = ModelSpec.model_validate({**data, "qk_rope_head_dim": 0, "qk_nope_head_dim": 10})
    shapes = {t.name: t.shape for t in mixer_tensors(spec)}
    assert shapes["attn.kv_a_proj_with_mqa.weight"] == (8, 64)
    assert shapes["attn.kv_b_proj.weight"] == (4 * (10 + 5), 8)
    assert kv_width(spec) == 8


def test_a_learned_scale_per_rotary_frequency() -> None:
    spec = ModelSpec.model_validate({**MLA, "indexer_query_norm": True, "rotary_scale": True})
    assert ("rotary_emb.alpha", (2,)) in [(t.name, t.shape) for t in model_tensors(spec)]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({}, "indexer_heads"),  # MLA without a query latent: the indexer needs another source
        ({"indexer_heads": None, "indexer_head_dim": None, "indexer_query_norm": True}, None),
        ({"mixer": "attention", "query_position_scale": True}, "query_position_scale"),
        ({"position": "none", "rotary_scale": True, "indexer_query_norm": True}, "rotary_scale"),
    ],
)
def test_refused(changes: dict[str, Any], field: str | None) -> None:
    spec = ModelSpec.model_construct(**{**MLA, **changes})
    fields = [f for f, _ in structural_problems(spec)]
    assert (field or "indexer_query_norm") in fields


def _text_config(tmp_path: Path, **changes: Any) -> Path:
    """The fixture's ``text_config`` as a file of its own, with keys changed."""
    data = json.loads((FIXTURES / "hf" / "mistral-large-4-defaults.json").read_text())
    text = {**data["text_config"], **changes}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(text))
    return path


def test_layers_without_positions_and_shared_indexers(tmp_path: Path) -> None:
    """``no_rope_layers`` (1 rotary, 0 none) and ``indexer_types`` shape the layers together
    with the dense first layer."""
    flags = [1, 0, 1, 0]
    path = _text_config(
        tmp_path,
        num_hidden_layers=4,
        no_rope_layers=flags,
        indexer_types=["full", "shared", "full", "shared"],
    )
    stacks = load_file(path).spec.stacks
    kinds = [(s.n_layers, s.qk_rope_head_dim, s.indexer_heads, s.moe_experts) for s in stacks]
    assert kinds == [(1, 64, 32, None), (2, 0, None, 128), (1, 64, 32, 128)]


def test_default_layout_is_in_closed_form(tmp_path: Path) -> None:
    """Every 4th layer without positions (``no_rope_layer_interval``), as a cycling pattern."""
    spec = load_file(_text_config(tmp_path, no_rope_layer_interval=3)).spec
    assert len(spec.layers or ()) == 2
    rope = [s.n_layers for s in spec.stacks if s.qk_rope_head_dim]
    assert (sum(rope), spec.n_layers - sum(rope)) == (48, 24)


def test_shared_caches_are_refused(tmp_path: Path) -> None:
    sources = list(range(72))
    sources[1] = 0
    with pytest.raises(ConfigError) as caught:
        load_file(_text_config(tmp_path, kv_source_layers=sources))
    assert "kv_source_layers" in str(caught.value)


def test_schema_covers_the_keys(cli: Invoke) -> None:
    properties = json.loads(cli("schema").stdout)["properties"]
    for key in ("indexer_query_norm", "query_position_scale", "rotary_scale", "qk_rope_head_dim"):
        assert key in properties
    assert properties["qk_rope_head_dim"]["anyOf"][0]["minimum"] == 0
