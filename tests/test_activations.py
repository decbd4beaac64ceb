"""Activation bytes against tests/golden/activation_reference.json: what small GPT-2, Llama,
Qwen3, Mixtral and Qwen3-MoE models save for backward under transformers (eager and SDPA
attention, bf16 and fp32, two batch x length points), each storage counted once."""

from __future__ import annotations

import json
from typing import Any

import pytest

from costcalc.activations import (
    activation_note,
    activation_source,
    exact,
    layer_terms,
    measured,
    outside_terms,
)
from costcalc.loaders import load_file, load_preset
from costcalc.memory import activation_bytes, logit_elements, memory_report, memory_setup
from costcalc.memory_results import memory_result
from costcalc.parallel import parallel_plan
from costcalc.spec import ModelSpec
from tests.conftest import FIXTURES, GOLDEN, Invoke
from tests.hf_helpers import spec_of

REFERENCE = json.loads((GOLDEN / "activation_reference.json").read_text())
RECORDS = [r for r in REFERENCE["records"] if not r["dropout"]]
DROPOUT_RECORDS = [r for r in REFERENCE["records"] if r["dropout"]]


def record_id(record: dict[str, Any]) -> str:
    return "-".join(str(record[key]) for key in ("model", "attention", "dtype", "batch", "seq_len"))


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModelSpec]:
    """Each fixture config with the reference script's changes (small sizes, dropout off)."""
    return {
        model: spec_of(tmp_path_factory.mktemp(model), model, **config["overrides"])
        for model, config in REFERENCE["configs"].items()
    }


def terms_bytes(terms: list[Any]) -> int:
    return sum(t.bytes for t in terms)


def known_difference(spec: ModelSpec, record: dict[str, Any]) -> int:
    """Bytes per layer costcalc counts beyond the measurement, each explained. Qwen3-MoE's
    router casts its top-k weights to the dtype (``router_top_value.to(router_logits.dtype)``),
    so in bf16 each routed row's weight is e bytes; costcalc keeps Mixtral's fp32 weight (its
    router does not cast): (4 - e) R more, R = B T k routed rows."""
    if record["model"] != "qwen3-30b-a3b":
        return 0
    e = 4 if record["dtype"] == "fp32" else 2
    return (4 - e) * record["batch"] * record["seq_len"] * spec.experts_active


@pytest.mark.parametrize("record", RECORDS, ids=record_id)
def test_one_layer_saves_what_transformers_saves(
    small: dict[str, ModelSpec], record: dict[str, Any]
) -> None:
    spec = small[record["model"]]
    assert measured(spec)
    B, T = record["batch"], record["seq_len"]
    terms = layer_terms(spec, B, T, "none", record["attention"], record["dtype"])
    assert terms_bytes(terms) == record["layer_bytes"] + known_difference(spec, record)


@pytest.mark.parametrize("record", RECORDS, ids=record_id)
def test_outside_the_layers_plus_the_log_probabilities(
    small: dict[str, ModelSpec], record: dict[str, Any]
) -> None:
    # Outside the layers the reference also counts the fp32 log-probabilities cross_entropy
    # saves, 4 B T V: memory's logits_fp32 row, not an activation term.
    spec = small[record["model"]]
    B, T = record["batch"], record["seq_len"]
    log_probs = 4 * logit_elements(spec, B, T)
    measured_outside = record["outside_bytes"] + record["shared_bytes"]
    assert terms_bytes(outside_terms(spec, B, T, record["dtype"])) + log_probs == measured_outside


@pytest.mark.parametrize("record", RECORDS, ids=record_id)
def test_the_whole_forward(small: dict[str, ModelSpec], record: dict[str, Any]) -> None:
    # Every saved storage: L layers, what is outside them, and the log-probabilities.
    spec = small[record["model"]]
    B, T, dtype = record["batch"], record["seq_len"], record["dtype"]
    setup = memory_setup(dtype=dtype, train=True, batch=B, length=T, attention=record["attention"])
    report = memory_report(spec, setup)
    counted = report.bytes_activations + report.bytes_logits_fp32
    assert counted == record["total_bytes"] + spec.n_layers * known_difference(spec, record)
    assert activation_bytes(spec, B, T, "none", record["attention"], dtype) == (
        report.bytes_activations
    )


def test_the_measurement_is_what_the_script_says() -> None:
    # dropout off and no cache; SDPA ran its CPU flash kernel (the fp32 log-sum-exp is saved)
    assert {r["attention_ran"] for r in RECORDS} == {"eager", "sdpa"}
    for record in RECORDS:
        assert record["attention_ran"] == record["attention"]
        B, T = record["batch"], record["seq_len"]  # every small config has H = 4
        lse = f"float32 [{B}, 4, {T}] storage {4 * B * 4 * T}"
        assert (lse in record["layer_tensors"]) == (record["attention"] == "sdpa")
    moe = [r for r in RECORDS if r["model"] in ("mixtral-8x7b", "qwen3-30b-a3b")]
    assert {r["experts_ran"] for r in moe} == {"grouped_mm"}


def test_blocks_not_measured_keep_the_estimate_and_say_so() -> None:
    # Jamba: Mamba blocks (not measured) beside attention blocks (measured)
    model = load_file(FIXTURES / "hf" / "jamba-v0.1.json")
    spec = model.spec
    assert not exact(spec) and any(measured(stack) for stack in spec.stacks)
    result = memory_result(model, memory_setup(train=True, length=64))
    assert result.estimated_activations
    assert "Korthikanti et al. 2022" in activation_source(spec)
    assert "partly an ESTIMATE" in activation_note(spec, "none", "sdpa", "bf16")
    qwen = load_preset("qwen2.5-0.5b")
    assert exact(qwen.spec)
    assert not memory_result(qwen, memory_setup(train=True, length=64)).estimated_activations


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_one_gpu_of_a_data_parallel_plan_is_the_single_gpu_figure(
    recompute: str, attention: str
) -> None:
    # without tensor or pipeline parallelism a rank saves what one GPU saves
    model = load_preset("qwen2.5-0.5b")
    setup = memory_setup(train=True, batch=2, length=256, recompute=recompute, attention=attention)
    single = memory_result(model, setup).report
    plan = parallel_plan(4, 2, None, None, 1, 1)
    rank = memory_result(model, setup, plan=plan).report
    assert (rank.bytes_activations, rank.bytes_attention_scores) == (
        single.bytes_activations,
        single.bytes_attention_scores,
    )
    assert rank.bytes_logits_fp32 == single.bytes_logits_fp32


def test_json_lists_the_terms_that_add_up_to_the_activations(cli: Invoke) -> None:
    # one GPU: layers x each term + the terms outside the layers = activations.bytes
    result = cli("memory", "-p", "qwen2.5-0.5b", "--train", "-B", "2", "-T", "64", "-f", "json")
    activations = json.loads(result.stdout)["activations"]
    terms = activations["terms"]
    layers = sum(g["layers"] * sum(t["bytes"] for t in g["terms"]) for g in terms["layers"])
    assert layers + sum(t["bytes"] for t in terms["outside"]) == activations["bytes"]
    assert [g["measured"] for g in terms["layers"]] == [True]
    assert "4 e N F" in [t["formula"] for t in terms["layers"][0]["terms"]]


def test_tensor_parallel_ranks_keep_the_labelled_estimate(cli: Invoke) -> None:
    # Korthikanti et al. 2022, Table 2 under --tp: the estimate, its source and no terms
    args = ("memory", "-p", "llama-3.1-8b", "--train", "-T", "4096", "--tp", "8", "--sp")
    data = json.loads(cli(*args, "-f", "json").stdout)["activations"]
    assert data["estimate"] is True and data["terms"] is None
    assert "Table 2" in data["source"]
    assert data["formula"] == "micro-batches in flight x L / P x (34 s b h / t) bytes, t = 8, P = 1"


@pytest.mark.parametrize("record", DROPOUT_RECORDS, ids=record_id)
def test_dropout_adds_what_cpu_dropout_saves(
    small: dict[str, ModelSpec], record: dict[str, Any]
) -> None:
    # GPT-2 with its config's dropout (0.1), eager attention. On CPU F.dropout multiplies by a
    # noise tensor of the dtype, which autograd saves: the attention probabilities' noise and
    # the dropped probabilities the matmul with V saves, 2 e B H T^2; the two residual dropouts,
    # 2 e N D; outside the layers the embedding dropout, e N D. (CUDA saves 1-byte masks.)
    spec = small["gpt2"]
    B, T, dtype = record["batch"], record["seq_len"], record["dtype"]
    e, N, D, H = (4 if dtype == "fp32" else 2), B * T, spec.d_model, spec.n_heads or 0
    without = next(
        r
        for r in RECORDS
        if (r["model"], r["attention"], r["dtype"], r["batch"], r["seq_len"])
        == ("gpt2", "eager", dtype, B, T)
    )
    layer = terms_bytes(layer_terms(spec, B, T, "none", "eager", dtype))
    assert layer == without["layer_bytes"]
    assert record["layer_bytes"] - layer == 2 * e * B * H * T * T + 2 * e * N * D
    assert record["outside_bytes"] - without["outside_bytes"] == e * N * D
