"""GLM-5.3-Flash's text decoder (transformers 5.24 ``models/glm5_next``): the keys it needs (an
indexer over pooled keys, residual streams collapsed by their mean, MLA without a rotary part)
and the layouts its configuration class describes. The counts of the full model are checked
against transformers in test_hf_families.py (tiny-glm5-next for MACs and cache)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.loaders import load_file
from costcalc.macs import compressed_pairs, forward_macs, pair_width, residual_stream_macs_per_token
from costcalc.memory import kv_width
from costcalc.params import param_report
from costcalc.spec import ModelSpec, structural_problems
from costcalc.tensors import mixer_tensors, model_tensors
from tests.conftest import FIXTURES, Invoke

MLA: dict[str, Any] = {
    "vocab_size": 100,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "context_length": 32,
    "position": "none",
    "mixer": "mla",
    "q_lora_rank": 16,
    "kv_lora_rank": 8,
    "qk_rope_head_dim": 0,
    "qk_nope_head_dim": 6,
    "v_head_dim": 5,
    "indexer_heads": 3,
    "indexer_head_dim": 12,
}


def test_an_indexer_over_pooled_keys() -> None:
    """``Glm5NextTextIndexer``: a position bias m x di and a gate di x D; each query scores the
    floor(T / m) complete pools, Hi (di + 1) each, instead of every token; the cache keeps the
    key, the gate scores and a flag per token."""
    plain = ModelSpec.model_validate(MLA)
    spec = ModelSpec.model_validate({**MLA, "indexer_key_pool": 4})
    added = {t.name: t.shape for t in mixer_tensors(spec)}.items() - {
        t.name: t.shape for t in mixer_tensors(plain)
    }.items()
    assert dict(added) == {
        "attn.indexer.index_kpool_compress_ape": (4, 12),
        "attn.indexer.index_kpool_compress_gate": (12, 64),
    }
    assert pair_width(plain) - pair_width(spec) == 3 * (12 + 1)
    assert compressed_pairs(spec, 10, causal=False) == 10 * 2
    T = 10
    gate = T * 12 * 64
    scores = 3 * (12 + 1) * T * (T // 4) - 3 * (12 + 1) * T * T
    assert forward_macs(spec, 1, T) - forward_macs(plain, 1, T) == 2 * (gate + scores)
    assert kv_width(spec) == 8 + 2 * 12 + 1


def test_streams_collapsed_by_their_mean() -> None:
    """``Glm5NextTextHyperHead``: the streams' mean, no parameters and no products."""
    data = {**MLA, "residual_streams": 4}
    learned = ModelSpec.model_validate(data)
    mean = ModelSpec.model_validate({**data, "stream_collapse": "mean"})
    assert not [t for t in model_tensors(mean) if t.name.startswith("hc_head")]
    assert param_report(learned).total - param_report(mean).total == 4 * 4 * 64 + 4 + 1
    per_token = residual_stream_macs_per_token(learned) - residual_stream_macs_per_token(mean)
    assert per_token == 4 * 4 * 64


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        (
            {"indexer_key_pool": 4, "indexer_heads": None, "indexer_head_dim": None},
            "indexer_key_pool",
        ),
        ({"stream_collapse": "mean"}, "stream_collapse"),
    ],
)
def test_refused(changes: dict[str, Any], field: str) -> None:
    spec = ModelSpec.model_construct(**{**MLA, **changes})
    assert field in [f for f, _ in structural_problems(spec)]


def test_pooled_keys_belong_to_mla() -> None:
    data = {k: v for k, v in MLA.items() if "lora" not in k and "head_dim" not in k}
    data.update(mixer="attention", indexer_key_pool=4)
    problems = structural_problems(ModelSpec.model_construct(**data))
    assert (
        "indexer_key_pool",
        "applies to mla blocks; this block's mixer is attention",
    ) in problems


def _text_config(tmp_path: Path, fixture: str = "tiny-glm5-next", **changes: Any) -> Path:
    """A fixture's ``text_config`` as a file of its own, with keys changed."""
    data = json.loads((FIXTURES / "hf" / f"{fixture}.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**data["text_config"], **changes}))
    return path


def test_default_layout_is_in_closed_form(tmp_path: Path) -> None:
    """Latent attention where i % 4 == 3 as a cycling pattern, the first 3 layers dense."""
    spec = load_file(_text_config(tmp_path, "glm-5.3-flash-defaults")).spec
    assert len(spec.layers or ()) == 2
    kinds = {(s.mixer, s.moe_experts): s.n_layers for s in spec.stacks}
    assert kinds == {("kimi_delta", None): 3, ("mla", 288): 11, ("kimi_delta", 288): 31}


def test_shared_indexer_layers(tmp_path: Path) -> None:
    """A ``shared`` latent attention layer holds no indexer; a linear one is the same."""
    path = _text_config(
        tmp_path,
        num_hidden_layers=8,
        indexer_types=["full", "shared", "full", "shared", "shared", "full", "full", "full"],
    )
    stacks = load_file(path).spec.stacks
    kinds = [(s.n_layers, s.mixer, s.indexer_heads, s.moe_experts) for s in stacks]
    assert kinds == [
        (3, "kimi_delta", None, None),
        (1, "mla", None, 8),
        (3, "kimi_delta", None, 8),
        (1, "mla", 2, 8),
    ]


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"qk_rope_head_dim": 64}, "qk_rope_head_dim"),
        ({"q_lora_rank": None}, "q_lora_rank"),
        ({"layer_types": ["linear_attention"] * 5 + ["sliding_attention"]}, "layer_types"),
    ],
)
def test_refused_files(tmp_path: Path, changes: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_file(_text_config(tmp_path, **changes))
    assert key in str(caught.value)


def test_schema_covers_the_keys(cli: Invoke) -> None:
    properties = json.loads(cli("schema").stdout)["properties"]
    assert "indexer_key_pool" in properties
    assert set(properties["stream_collapse"]["enum"]) == {"learned", "mean"}
