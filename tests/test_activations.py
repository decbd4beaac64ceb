"""Activation bytes against tests/golden/activation_reference.json: what small GPT-2, Llama,
Qwen3 and Mixtral models save for backward under transformers (eager and SDPA attention, bf16
and fp32, two batch x length points), each storage counted once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.activations import layer_terms, measured, outside_terms
from costcalc.memory import activation_bytes, logit_elements, memory_report, memory_setup
from costcalc.spec import ModelSpec
from tests.conftest import GOLDEN
from tests.hf_helpers import spec_of

REFERENCE = json.loads((GOLDEN / "activation_reference.json").read_text())
RECORDS = REFERENCE["records"]


def record_id(record: dict[str, Any]) -> str:
    return "-".join(str(record[key]) for key in ("model", "attention", "dtype", "batch", "seq_len"))


def small_spec(tmp_path: Path, model: str) -> ModelSpec:
    """The fixture config with the reference script's changes (small sizes, dropout off)."""
    return spec_of(tmp_path, model, **REFERENCE["configs"][model]["overrides"])


def terms_bytes(terms: list[Any]) -> int:
    return sum(t.bytes for t in terms)


@pytest.mark.parametrize("record", RECORDS, ids=record_id)
def test_one_layer_saves_what_transformers_saves(tmp_path: Path, record: dict[str, Any]) -> None:
    spec = small_spec(tmp_path, record["model"])
    assert measured(spec)
    B, T = record["batch"], record["seq_len"]
    terms = layer_terms(spec, B, T, "none", record["attention"], record["dtype"])
    assert terms_bytes(terms) == record["layer_bytes"]


@pytest.mark.parametrize("record", RECORDS, ids=record_id)
def test_outside_the_layers_plus_the_log_probabilities(
    tmp_path: Path, record: dict[str, Any]
) -> None:
    # Outside the layers the reference also counts the fp32 log-probabilities cross_entropy
    # saves, 4 B T V: memory's logits_fp32 row, not an activation term.
    spec = small_spec(tmp_path, record["model"])
    B, T = record["batch"], record["seq_len"]
    log_probs = 4 * logit_elements(spec, B, T)
    measured_outside = record["outside_bytes"] + record["shared_bytes"]
    assert terms_bytes(outside_terms(spec, B, T, record["dtype"])) + log_probs == measured_outside


@pytest.mark.parametrize("record", RECORDS, ids=record_id)
def test_the_whole_forward(tmp_path: Path, record: dict[str, Any]) -> None:
    # Every saved storage: L layers, what is outside them, and the log-probabilities.
    spec = small_spec(tmp_path, record["model"])
    B, T, dtype = record["batch"], record["seq_len"], record["dtype"]
    setup = memory_setup(dtype=dtype, train=True, batch=B, length=T, attention=record["attention"])
    report = memory_report(spec, setup)
    assert report.bytes_activations + report.bytes_logits_fp32 == record["total_bytes"]
    assert activation_bytes(spec, B, T, "none", record["attention"], dtype) == (
        report.bytes_activations
    )
