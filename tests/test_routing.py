"""The experts a decode step reads: hand-worked counts, the uniform-routing expectation, and its
fixed-point bounds against the exact fraction."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from costcalc import routing
from costcalc.cli.app import app
from costcalc.gpus import Gpu, catalogue, find_gpu
from costcalc.loaders import load_preset
from costcalc.memory import weight_bytes
from costcalc.plan import decode_step, weight_rows
from costcalc.routing import expert_reads, untouched

MIXTRAL = load_preset("mixtral-8x7b").spec
# one layer's experts: 8 x (28,672 x 4,096 + 4,096 x 14,336) = 1,409,286,144 parameters
EXPERT_PARAMS = 32 * 8 * (28_672 * 4_096 + 4_096 * 14_336)
TOTAL_PARAMS = 46_702_792_704
BIG = Gpu("big", "big", 10**12, 10**12, {"bf16": 10**15, "fp16": 10**15}, "worked by hand")


def test_mixtral_batch_one_reads_two_of_eight_experts() -> None:
    assert EXPERT_PARAMS == 45_097_156_608
    step = decode_step(MIXTRAL, BIG, "bf16", "bf16", 1, 128)
    (read,) = step.experts
    assert (read.layers, read.experts, read.routed) == (32, 8, 2)
    assert read.exact_count and read.expected_experts == 2
    assert read.bytes == 2 * EXPERT_PARAMS
    assert read.bytes_read == 2 * EXPERT_PARAMS // 4  # 2 of 8
    dense = 2 * (TOTAL_PARAMS - EXPERT_PARAMS)  # attention, norms, routers, tables, head
    assert step.weight_bytes == dense + 2 * EXPERT_PARAMS // 4 == 25_759_850_496
    assert step.held_bytes == 2 * TOTAL_PARAMS == weight_bytes(MIXTRAL, "bf16")
    kv = 2 * 32 * 8 * 128 * 128 * 2  # 2 x L x K x d x T x 2 bytes
    assert step.step_bytes == 25_759_850_496 + kv
    assert step.all_experts_bytes == 2 * TOTAL_PARAMS + kv


def test_mixtral_batch_64_expectation() -> None:
    # 8 (1 - (3 / 4)^64): every expert is left out by a token with probability 6 / 8
    step = decode_step(MIXTRAL, BIG, "bf16", "bf16", 64, 128)
    (read,) = step.experts
    share = Fraction(3, 4) ** 64
    assert read.share_untouched.exact and read.share_untouched.value == share
    assert read.expected_experts == 8 * (1 - share)
    assert not read.exact_count
    unread = 2 * EXPERT_PARAMS * 3**64 // 4**64  # rounded down: bytes read rounded up
    assert read.bytes_read == 2 * EXPERT_PARAMS - unread
    assert step.weight_bytes == 2 * TOTAL_PARAMS - unread


def test_quantized_experts_read_their_share() -> None:
    # Q4_K_M: each expert's slice of a stacked tensor is 1 / 8 of its bytes, whatever its type
    rows = weight_rows(MIXTRAL, "gguf:Q4_K_M")
    experts = sum(b for name, _, b in rows if "experts" in name)
    unread, (read,) = expert_reads(MIXTRAL, rows, 1)
    assert read.bytes == experts and unread == experts * 6 // 8
    assert sum(b for _, _, b in rows) == weight_bytes(MIXTRAL, "gguf:Q4_K_M")


def test_stacked_expert_biases_are_sliced_too() -> None:
    # gpt-oss keeps X x 2h and X x D biases beside its experts: 4 of 32 of them at B = 1
    spec = load_preset("gpt-oss-20b").spec
    rows = weight_rows(spec, "bf16")
    experts = sum(b for name, _, b in rows if name.startswith("mlp.experts."))
    unread, (read,) = expert_reads(spec, rows, 1)
    assert (read.layers, read.experts, read.routed) == (24, 32, 4)
    assert read.bytes == experts and unread == experts * 28 // 32


def test_dense_models_read_every_weight() -> None:
    spec = load_preset("llama-3.1-8b").spec
    step = decode_step(spec, BIG, "bf16", "bf16", 16, 128)
    assert step.experts == () and step.weight_bytes == step.held_bytes


def test_all_experts_routed_is_a_count() -> None:
    share = untouched(8, 8, 3)
    assert share.exact and share.value == 0


@given(
    st.integers(2, 300),
    st.data(),
    st.integers(1, 5000),
    st.integers(1, 10**15),
)
def test_bounds_bracket_the_exact_share(
    experts: int, data: st.DataObject, batch: int, size: int
) -> None:
    routed = data.draw(st.integers(1, experts))
    exact = Fraction(experts - routed, experts) ** batch
    if batch * experts.bit_length() <= routing.EXACT_BITS:
        share = untouched(experts, routed, batch)
        assert share.exact and share.value == exact
    saved = routing.EXACT_BITS
    routing.EXACT_BITS = 0
    try:
        bounds = untouched(experts, routed, batch, size.bit_length())
    finally:
        routing.EXACT_BITS = saved
    assert bounds.low <= exact <= bounds.high <= 1
    # the unread bytes from the lower bound, rounded down: the exact ones, or one byte fewer
    assert size * bounds.low // 1 in (size * exact // 1, size * exact // 1 - 1)
    assert experts * (1 - bounds.value) <= experts


def test_huge_batches_stay_bounded_and_below_all_experts() -> None:
    step = decode_step(MIXTRAL, BIG, "bf16", "bf16", 10**60, 128)
    (read,) = step.experts
    assert not read.share_untouched.exact
    assert read.bytes_read == read.bytes  # (3 / 4)^(10^60) x bytes < 1 byte
    assert read.expected_experts <= 8


def test_plan_moe_table_and_json() -> None:
    runner = CliRunner()
    args = ["plan", "-p", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--prompt", "1000"]
    args += ["--generate", "24", "-B", "64"]
    data = json.loads(runner.invoke(app, [*args, "-f", "json"]).stdout)["inference"]
    (read,) = data["experts_read"]
    assert (read["layers"], read["experts"], read["routed_per_token"]) == (48, 128, 8)
    assert read["expected_experts_per_layer"] == float(128 * (1 - Fraction(120, 128) ** 64))
    assert read["estimate"] and "uniform routing" in read["assumption"]
    first = data["decode_by_batch"][0]
    assert first["expected_experts_per_layer"] == [8.0]
    assert first["step_bytes"] == first["weight_bytes_read"] + first["cache_bytes"]
    assert data["decode_all_experts_step_bytes"] > data["decode_step_bytes"]
    table = " ".join(runner.invoke(app, args, env={"COLUMNS": "120"}).stdout.split())
    assert "experts read per layer (expected), 48 layers" in table
    assert "125.94 of 128" in table and "8 of 128" in table
    assert "uniform routing" in table and "all experts" in table


def test_an_expectation_near_the_bound_shows_its_decimals() -> None:
    from costcalc.cli.plan import _expected

    assert _expected(8 * (1 - Fraction(3, 4) ** 64), 8) == "7.9999999"
    assert _expected(Fraction(1259, 10), 128) == "125.90"
    assert _expected(Fraction(8), 8) == "8.00"
    assert _expected(8 - Fraction(1, 10**20), 8) == "8.000000000000"  # at most 12 places


@pytest.mark.parametrize("dtype", ["gguf:Q4_K_M", "nf4"])
def test_quantized_plans_on_every_gpu(dtype: str) -> None:
    """Every GPU answers but one without a bandwidth; one without the peak its kernels compute
    at gives the decode at its memory bound, prefill without a time, and says which peak."""
    runner = CliRunner()
    for key, gpu in catalogue().items():
        args = ["plan", "-p", "qwen3-8b", "--gpu", key, "--prompt", "8192", "--dtype", dtype]
        result = runner.invoke(app, [*args, "-f", "json"])
        if gpu.bandwidth is None:
            message = " ".join(result.output.split())
            assert result.exit_code == 2 and f"no memory bandwidth for {key}" in message
            continue
        assert result.exit_code == 0, result.output
        inference = json.loads(result.stdout)["inference"]
        weights = inference["weights"]
        assert weights["compute_dtype"] in ("bf16", "fp16")
        step = inference["decode_by_batch"][0]
        if weights["compute_dtype"] in gpu.peak_flops:
            assert weights["peak_flops_per_gpu"] == gpu.peak_flops[weights["compute_dtype"]]
            assert weights["peak_missing"] is None and inference["prefill_seconds"] > 0
            continue
        assert weights["peak_flops_per_gpu"] is None and inference["prefill_seconds"] is None
        missing = weights["peak_missing"]
        assert f"no {weights['compute_dtype']} peak for {key}" in missing
        assert " ".join(gpu.source.split())[:40] in missing
        assert step["compute_seconds"] is None and step["bound"] == "memory"
        assert step["memory_seconds"] == step["step_bytes"] / gpu.bandwidth
        text = " ".join(runner.invoke(app, args).stdout.split())
        assert "prefill has no time, and the decode rates are its memory bound alone" in text


def test_compute_dtypes_by_format() -> None:
    from costcalc.plan import compute

    h100, a100, t4 = find_gpu("h100-sxm"), find_gpu("a100-80gb"), find_gpu("t4")
    assert compute("fp8-block", h100).dtype == "fp8"
    fallback = compute("fp8-block", a100)
    assert fallback.dtype == "bf16" and "a100-80gb has no fp8 peak" in fallback.kernels
    assert compute("int4", a100).kernels.startswith("W4A16")
    assert compute("gptq-int4:g128", a100).dtype == "fp16"
    assert compute("nf4", t4).dtype == "fp16"  # T4 has no bf16 peak
    assert compute("llm-int8", t4).dtype == "int8"
    missing = compute("int8", find_gpu("rtx-6000-ada"))
    assert missing.peak is None and missing.dtype == "int8"
    assert missing.missing is not None
    assert missing.missing.startswith("the catalogue gives no int8 peak for rtx-6000-ada")
