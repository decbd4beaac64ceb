"""What each family's translation keeps beyond the count: rotary width, windows, projections,
offsets. Values are those of the fixture config.json files (tests/fixtures/hf/SOURCES.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from costcalc.formats.families import registry
from costcalc.loaders import load_file
from costcalc.presets import preset_names
from costcalc.spec import ModelSpec

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
Invoke = Callable[..., Result]  # the `cli` fixture of conftest.py


def spec(name: str) -> ModelSpec:
    return load_file(FIXTURES / "hf" / f"{name}.json").spec


@pytest.mark.parametrize(
    ("name", "rotary"),
    [
        ("pythia-160m", 16),  # rotary_pct 0.25 of head 768 / 12 = 64
        ("phi-2", 32),  # partial_rotary_factor 0.4 of head 2,560 / 32 = 80
        ("phi-3-mini-4k", 96),  # whole head 3,072 / 32
        ("llama-3.1-8b", 128),  # whole head 4,096 / 32
        ("gpt2", None),  # learned positions
    ],
)
def test_rotary_width(name: str, rotary: int | None) -> None:
    assert spec(name).rotary_width == rotary


@pytest.mark.parametrize(
    ("name", "window"),
    [
        ("mistral-7b-v0.1", 4096),  # sliding_window 4096
        ("phi-3-mini-4k", 2047),  # sliding_window 2047
        ("mixtral-8x7b", None),  # sliding_window null
        ("qwen2.5-7b", None),  # use_sliding_window false, though sliding_window is set
    ],
)
def test_sliding_window(name: str, window: int | None) -> None:
    assert spec(name).sliding_window == window


def test_opt_350m_projections_offset_and_no_final_norm() -> None:
    opt = spec("opt-350m")  # word_embed_proj_dim 512, hidden_size 1024, do_layer_norm_before false
    assert (opt.embed_width, opt.d_model, opt.position_offset) == (512, 1024, 2)
    assert opt.position_rows == 2048 + 2
    assert opt.final_norm is False
    assert spec("opt-125m").embedding_dim is None  # word_embed_proj_dim equals hidden_size


def test_gemma_explicit_head_dim_and_geglu() -> None:
    gemma = spec("gemma-2b")  # head_dim 256, 8 heads, 1 KV head, hidden_act gelu
    assert (gemma.head_width, gemma.n_heads, gemma.kv_heads, gemma.ffn) == (256, 8, 1, "geglu")


def test_phi_one_norm_per_block_and_head_bias() -> None:
    phi = spec("phi-2")
    assert (phi.norms_per_block, phi.lm_head_bias, phi.tie_embeddings) == (1, True, False)


def test_name_comes_from_name_or_path(cli: Invoke) -> None:
    result = cli("params", "-c", str(FIXTURES / "hf" / "opt-350m.json"), "-f", "json")
    data = json.loads(result.stdout)
    assert (data["name"], data["format"]) == ("facebook/opt-350m", "huggingface")


def test_docs_cover_every_family_and_preset() -> None:
    text = (ROOT / "docs" / "huggingface.md").read_text(encoding="utf-8")
    for family in registry():
        assert f"| {family} |" in text
    for name in [name for name in preset_names() if "gpt" not in name]:
        assert f"`{name}`" in text
    hub_settings = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")
    hub_settings += ("HF_ENDPOINT", "HF_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    for variable in hub_settings:
        assert f"`{variable}`" in text, variable
