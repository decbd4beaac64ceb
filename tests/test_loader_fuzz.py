"""Whatever a file holds, reading and loading it raises only costcalc's own errors.

Random bytes, YAML-ish text, random nested structures (dumped as JSON and as YAML, and fed
in directly), and every preset and fixture mutated with tags, unpaired surrogates and huge values
(a fixed seed and budget) go through the same path as `costcalc check`; anything but a
CostcalcError (a KeyError, a TypeError, a RecursionError, ...) fails the test.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costcalc.check import FAULT, Limits, check_file
from costcalc.config import CONFIG_FIELDS
from costcalc.errors import CostcalcError
from costcalc.files import Document, parse_document
from costcalc.formats.nanogpt import KNOWN as NANOGPT_KEYS
from costcalc.loaders import load_document
from costcalc.params import total_params

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

KEYS = st.sampled_from(
    [
        *CONFIG_FIELDS,
        *NANOGPT_KEYS,
        "model_type",
        "n_positions",
        "n_inner",
        "tie_word_embeddings",
        "max_params",
        "max_weight_bytes",
        "dtype",
    ]
) | st.text(max_size=8)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.integers(min_value=0, max_value=4096)
    | st.floats()
    | st.sampled_from(["gpt2", "rotary", "rmsnorm", "swiglu", "30M", "1GiB", "bf16", "learned"])
    | st.text(max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=24,
)
BASE = {"vocab_size": 50257, "context_length": 1024, "d_model": 256, "n_layers": 6, "n_heads": 8}
"""seed 000's lrn-gpt sizes: a valid start that random changes then break in every way."""
NANOGPT_BASE = {"vocab_size": 4096, "block_size": 256, "n_layer": 4, "n_head": 4, "n_embd": 256}
"""seed 004's book-gpt-small as a nanoGPT GPTConfig."""
CONFIGS = st.dictionaries(KEYS, VALUES, max_size=14) | st.builds(
    lambda base, changes: {**base, **changes},
    st.sampled_from([BASE, NANOGPT_BASE, {**BASE, "model_type": "gpt2"}]),
    st.dictionaries(KEYS, VALUES, max_size=3),
)
YAMLISH = st.text(alphabet=":-[]{}&*!|>'\"#%@`,?\n\t .0123456789abceinrsuxy_", max_size=300)


def _load(text: str, json_text: bool) -> None:
    """Parse and load ``text``; only CostcalcError may come out; a model that loads is counted."""
    try:
        model = load_document(parse_document(text, "fuzz", json_text=json_text))
    except CostcalcError:
        return
    assert total_params(model.spec) > 0


def _check_bytes(data: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, f"fuzz{suffix}")
        path.write_bytes(data)
        report = check_file(path, Limits())
    assert report.ok == (report.model is not None and not report.findings)
    assert not any(finding.message.startswith(FAULT) for finding in report.findings)


@FUZZ
@given(st.binary(max_size=512), st.sampled_from([".yaml", ".json"]))
def test_random_bytes(data: bytes, suffix: str) -> None:
    _check_bytes(data, suffix)


@FUZZ
@given(YAMLISH, st.sampled_from([".yaml", ".json"]))
def test_random_yaml_like_text(text: str, suffix: str) -> None:
    _check_bytes(text.encode("utf-8"), suffix)


@FUZZ
@given(CONFIGS)
def test_random_structures_as_json_and_yaml(config: dict[str, Any]) -> None:
    _load(json.dumps(config), json_text=True)
    _load(yaml.safe_dump(config), json_text=False)


@FUZZ
@given(CONFIGS)
def test_random_structures_loaded_directly(config: dict[str, Any]) -> None:
    try:
        model = load_document(Document("fuzz", config))
    except CostcalcError:
        return
    assert total_params(model.spec) > 0


FIXTURES = sorted(
    [
        *Path(__file__).parent.parent.joinpath("presets").glob("*.yaml"),
        *Path(__file__).parent.joinpath("fixtures", "hf").glob("*.json"),
    ]
)
"""Every shipped preset and Hugging Face fixture: real configs for the mutators to break."""
TAGS = ["!!int", "!!float", "!!bool", "!!timestamp", "!!set", "!!binary", "!!omap", "!!null"]
HUGE = ["9" * 5000, "9" * 101, str(2**63), str(10**18), "1e999", "-" + "9" * 99, "0" * 300]
MUTATE = settings(max_examples=150, deadline=None, derandomize=True)
"""A fixed seed and budget, so CI runs the same cases every time."""


def _mutated(text: str, index: int, replacement: str) -> str:
    """``text`` with the value after its ``index``-th colon replaced."""
    colons = [i for i, ch in enumerate(text) if ch == ":"]
    if not colons:
        return text
    at = colons[index % len(colons)] + 1
    end = min((text.find(ch, at) % (len(text) + 1) for ch in ",\n}"), default=len(text))
    return text[:at] + " " + replacement + text[end:]


@MUTATE
@given(
    st.sampled_from(FIXTURES),
    st.integers(min_value=0, max_value=200),
    st.sampled_from(TAGS),
    st.sampled_from(['"-"', '""', "maybe", "x", "[1]", "{a: 1}", "01400", "12:48"]),
)
def test_tag_mutations(fixture: Path, index: int, tag: str, value: str) -> None:
    text = _mutated(fixture.read_text(encoding="utf-8"), index, f"{tag} {value}")
    _check_bytes(text.encode("utf-8"), ".yaml")


@MUTATE
@given(
    st.sampled_from(FIXTURES),
    st.integers(min_value=0, max_value=200),
    st.integers(min_value=0xD800, max_value=0xDFFF),
)
def test_surrogate_mutations(fixture: Path, index: int, surrogate: int) -> None:
    text = _mutated(fixture.read_text(encoding="utf-8"), index, f'"\\u{surrogate:04x}"')
    _check_bytes(text.encode("utf-8"), fixture.suffix)


@MUTATE
@given(st.sampled_from(FIXTURES), st.integers(min_value=0, max_value=200), st.sampled_from(HUGE))
def test_huge_value_mutations(fixture: Path, index: int, value: str) -> None:
    text = _mutated(fixture.read_text(encoding="utf-8"), index, value)
    _check_bytes(text.encode("utf-8"), fixture.suffix)
