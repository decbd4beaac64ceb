"""Activation bytes against tests/golden/activation_reference.json: what small GPT-2, Llama,
Qwen3, Mixtral, Qwen3-MoE, Gemma 2, Gemma 3, OLMo 2, Qwen2-MoE and gpt-oss models save for
backward under transformers (eager and SDPA attention, bf16 and fp32, two batch x length points),
each storage counted once."""

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


ROUTER_CASTS = {"qwen3-30b-a3b", "qwen1.5-moe-a2.7b", "gpt-oss-20b"}
"""Routers that cast their top-k weights to the dtype (``router_top_value.to(...)``)."""
TOP_K_NOT_RENORMALIZED = {"qwen1.5-moe-a2.7b"}
"""Configs with ``norm_topk_prob`` false: the top-k weights are not divided by their sum."""
NORM_WEIGHT_IN_FP32 = {"gemma-2-2b", "gemma-3-1b", "olmo-2-1b", "gpt-oss-20b"}
"""RMSNorms that apply their weight before casting back (``(w * x).to(dtype)``)."""
UNIT_OFFSET_NORMS = {"gemma-2-2b", "gemma-3-1b"}
"""Gemma's RMSNorm, ``x * (1 + w.float())``: the fp32 1 + w is a new tensor."""
SOFTCAPPED = {"gemma-2-2b"}
"""Gemma 2: tanh soft-capping of the attention scores and of the logits."""
FP32_ROTARY = {"olmo-2-1b"}
"""OLMo 2 keeps the rotary cos and sin in fp32."""
INTERLEAVED_ROTARY = {"glm-4-9b-chat-hf"}
"""GLM repeats its cos and sin, interleaved, inside each layer (``repeat_interleave(2)`` in its
``apply_rotary_pos_emb``): the products save those copies, and the model's table is saved by
none of them."""
GPT_OSS = {"gpt-oss-20b"}
"""gpt-oss: its router takes the top k of the logits and a softmax over those k in the dtype,
its experts run a clamped SwiGLU, its rotary cos and sin are half the head width."""


def known_difference(spec: ModelSpec, record: dict[str, Any]) -> tuple[int, int]:
    """Bytes costcalc counts beyond the measurement (per layer, outside the layers), each a
    stated convention the spec cannot tell apart (N = B T, R = N k routed rows):

    - routers that cast their top-k weights to the dtype (Qwen2/3-MoE): costcalc keeps
      Mixtral's fp32 weight, (4 - e) R more;
    - no renormalization of the top-k weights (``norm_topk_prob`` false): costcalc counts the
      top-k weights and their sum, 4 N (k + 1) more;
    - RMSNorms that multiply by the weight in fp32 (Gemma, OLMo 2) keep the normalized input in
      fp32: (4 - e) n w less per norm of n rows and width w; Gemma's 1 + w in fp32, 4 w less;
    - Gemma 2's soft-capping keeps the tanh of the scores (eager), e B H T^2 less, and of the
      logits, e N V less;
    - OLMo 2's rotary cos and sin in fp32: (4 - e) 2 T r less;
    - GLM's cos and sin repeated in each layer: 2 e T r less per layer, 2 e T r more outside;
    - gpt-oss's router saves the softmax over the top k in the dtype, e N k, and one more int64
      index per routed row, 8 R, where costcalc counts Mixtral's softmax over E, top-k and sum,
      4 N (E + k + 1); its clamped SwiGLU (``clamp``, ``g sigmoid(1.702 g)``, ``(u + 1) glu``)
      saves 7 e R F, 3 e R F more than a SwiGLU; its cos and sin are d / 2 wide, e T r less."""
    model, B, T = record["model"], record["batch"], record["seq_len"]
    e = 4 if record["dtype"] == "fp32" else 2
    N, D, H, K, d = B * T, spec.d_model, spec.n_heads or 0, spec.kv_heads, spec.head_width
    k = spec.experts_active
    layer = outside = 0
    if model in ROUTER_CASTS:
        layer += (4 - e) * N * k
    if model in TOP_K_NOT_RENORMALIZED:
        layer += 4 * N * (k + 1)
    qk = (H + K) * d if spec.qk_norm != "none" else 0  # query and key norm elements per token
    qk_weights = 2 * d if spec.qk_norm == "head" else qk
    if model in NORM_WEIGHT_IN_FP32:
        layer -= (4 - e) * N * (spec.norms_per_block * D + qk)
        outside -= (4 - e) * N * D
    if model in UNIT_OFFSET_NORMS:
        layer -= 4 * (spec.norms_per_block * D + qk_weights)
        outside -= 4 * D
    if model in SOFTCAPPED:
        layer -= e * B * H * T * T if record["attention"] == "eager" else 0
        outside -= e * N * spec.vocab_size
    if model in GPT_OSS:
        R = N * k
        layer += 4 * N * (spec.experts + k + 1) - e * N * k - 8 * R - 3 * e * R * spec.expert_width
        outside += e * T * (spec.rotary_width or 0)
    if model in FP32_ROTARY:
        outside -= (4 - e) * 2 * T * (spec.rotary_width or 0)
    if model in INTERLEAVED_ROTARY:
        layer -= 2 * e * T * (spec.rotary_width or 0)
        outside += 2 * e * T * (spec.rotary_width or 0)
    return layer, outside


@pytest.mark.parametrize("record", RECORDS, ids=record_id)
def test_one_layer_saves_what_transformers_saves(
    small: dict[str, ModelSpec], record: dict[str, Any]
) -> None:
    spec = small[record["model"]]
    assert measured(spec)
    B, T = record["batch"], record["seq_len"]
    terms = layer_terms(spec, B, T, "none", record["attention"], record["dtype"])
    assert terms_bytes(terms) == record["layer_bytes"] + known_difference(spec, record)[0]


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
    counted = terms_bytes(outside_terms(spec, B, T, record["dtype"])) + log_probs
    assert counted == measured_outside + known_difference(spec, record)[1]


@pytest.mark.parametrize("record", RECORDS, ids=record_id)
def test_the_whole_forward(small: dict[str, ModelSpec], record: dict[str, Any]) -> None:
    # Every saved storage: L layers, what is outside them, and the log-probabilities.
    spec = small[record["model"]]
    B, T, dtype = record["batch"], record["seq_len"], record["dtype"]
    setup = memory_setup(dtype=dtype, train=True, batch=B, length=T, attention=record["attention"])
    report = memory_report(spec, setup)
    counted = report.bytes_activations + report.bytes_logits_fp32
    layer, outside = known_difference(spec, record)
    assert counted == record["total_bytes"] + spec.n_layers * layer + outside
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
    moe = [r for r in RECORDS if r["experts_ran"] is not None]
    assert {r["model"] for r in moe} == {
        "mixtral-8x7b",
        "qwen3-30b-a3b",
        "qwen1.5-moe-a2.7b",
        "gpt-oss-20b",
    }
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
    # per-layer inputs and shared keys/values (Gemma 3n/4), a per-head gate (LFM3): not measured
    for fixture in ("gemma-4-e2b", "tiny-lfm3"):
        spec = load_file(FIXTURES / "hf" / f"{fixture}.json").spec
        assert not exact(spec)
    qwen = load_preset("qwen2.5-0.5b")
    assert exact(qwen.spec)
    assert not memory_result(qwen, memory_setup(train=True, length=64)).estimated_activations


@pytest.mark.parametrize("preset", ["gemma-2-2b", "gemma-3-1b", "olmo-2-1b", "gpt-oss-20b"])
def test_layouts_counted_with_llamas_dtypes_are_labelled_estimates(preset: str) -> None:
    # sandwich norms, whole-projection q/k norms, sinks: their families keep norms, rotary
    # tables and routers in other dtypes (the golden records state each gap), so the figure is
    # the measured layout and a labelled ESTIMATE
    model = load_preset(preset)
    assert all(measured(stack) for stack in model.spec.stacks)
    assert not exact(model.spec)
    assert memory_result(model, memory_setup(train=True, length=64)).estimated_activations
    note = activation_note(model.spec, "none", "eager", "bf16")
    assert "partly an ESTIMATE" in note and "11-24% more" in note


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
