"""The shipped presets: every one loads, is listed, and shows as a valid config file."""

from __future__ import annotations

import json

import pytest
import yaml

from costcalc.loaders import load_preset
from costcalc.presets import aliases, preset_names, preset_text
from tests.conftest import GOLDEN, Invoke

# seed 000 (lrn-gpt), seed 004 (book-gpt), GPT-2 paper Table 2, issue #2's Qwen2.5-0.5B.
REQUIRED = {
    "gpt2-small",
    "gpt2-medium",
    "gpt2-large",
    "gpt2-xl",
    "qwen2.5-0.5b",
    "book-gpt-small",
    "book-gpt-fairytale",
    "lrn-gpt",
    "lrn-gpt-cpu",
    "lrn-gpt-nsmc",
}


def test_required_presets_are_shipped() -> None:
    assert set(preset_names()) >= REQUIRED
    assert aliases()["gpt2"] == "gpt2-small"


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_loads_and_names_its_source(name: str) -> None:
    model = load_preset(name)
    assert model.name == name
    assert model.description and model.source
    raw = yaml.safe_load(preset_text(name))
    assert raw["name"] == name


@pytest.mark.parametrize(
    ("name", "width", "layers", "heads"),
    # GPT-2 paper (Radford et al. 2019), Table 2: widths and layers; heads: released configs.
    [
        ("gpt2-small", 768, 12, 12),
        ("gpt2-medium", 1024, 24, 16),
        ("gpt2-large", 1280, 36, 20),
        ("gpt2-xl", 1600, 48, 25),
    ],
)
def test_gpt2_sizes(name: str, width: int, layers: int, heads: int) -> None:
    spec = load_preset(name).spec
    assert (spec.d_model, spec.n_layers, spec.n_heads) == (width, layers, heads)
    assert (spec.vocab_size, spec.context_length) == (50_257, 1_024)


def test_presets_list(cli: Invoke) -> None:
    result = cli("presets")
    assert result.exit_code == 0
    for name in REQUIRED:
        assert name in result.stdout
    # The list names each model; `presets show` prints its description and source whole.
    flat = " ".join(result.stdout.split())
    assert "│ gpt2-small, gpt2 │ 124,439,808 │ GPT-2 small │" in flat
    assert "A whole GPT" not in flat and "seed" not in flat
    assert "`costcalc presets show NAME` prints a preset's file" in flat
    assert "lrn-gpt *" in flat and "* rests on assumed values" in flat
    data = json.loads(cli("presets", "--format", "json").stdout)
    by_name = {entry["name"]: entry for entry in data}
    assert "Hugging Face Qwen/Qwen2.5-0.5B config.json" in by_name["qwen2.5-0.5b"]["source"]
    assert by_name["lrn-gpt"]["assumed_values"] is True
    assert by_name["gpt2-small"]["assumed_values"] is False
    assert by_name["gpt2-small"]["aliases"] == ["gpt2"]
    assert by_name["gpt2-small"]["parameters"] == 124_439_808  # transformers' count
    assert by_name["book-gpt-small"]["parameters"] == 4_273_664  # seed 004


GOLDEN_NAMES = {
    "gpt2-small": "gpt2",
    "gpt2-medium": "gpt2-medium",
    "gpt2-large": "gpt2-large",
    "gpt2-xl": "gpt2-xl",
    "qwen2.5-0.5b": "qwen2.5-0.5b",
    "book-gpt-small": "book-gpt-small",
    "book-gpt-fairytale": "book-gpt-fairytale",
}


@pytest.mark.parametrize(("preset", "golden"), sorted(GOLDEN_NAMES.items()))
def test_preset_totals_equal_transformers(preset: str, golden: str) -> None:
    # tests/golden/hf_reference.json: sum(p.numel() for p in model.parameters()) of the
    # transformers model built from the published config.json (tests/reference/make_golden.py).
    from costcalc.params import param_report

    reference = json.loads((GOLDEN / "hf_reference.json").read_text())["models"][golden]
    report = param_report(load_preset(preset).spec)
    assert report.total == reference["parameters_total"]
    assert report.per_block == reference["parameters_per_layer"]
    assert report.untied_total - report.total == reference["parameters_untied_extra"]
