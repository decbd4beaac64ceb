"""Context parallelism (``--cp C``, Megatron-Core's ``context_parallel_size``): a rank runs T / C
tokens of each sequence, so its activations and logits are those of sequences of T / C tokens,
worked out here by hand for Llama-3.1-8B; its weights and optimizer state are those of a
data-parallel replica, sharded by ZeRO over the DP x CP ranks; and the splits that do not hold
are errors naming what does not divide."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from costcalc.cli.app import app
from costcalc.errors import UsageError
from costcalc.loaders import load_preset
from costcalc.memory import memory_setup
from costcalc.memory_results import MemoryResult, memory_result
from costcalc.parallel import ParallelPlan, check_context_parallel, parallel_plan
from costcalc.spec import ModelSpec
from tests.test_recurrent_mixers import BASE, MAMBA2

runner = CliRunner()

# Llama-3.1-8B: D 4,096, H 32, K 8, d 128, F 14,336, L 32, V 128,256, rotary width 128; bf16.
D, H, K, d, F, L, V, R = 4096, 32, 8, 128, 14336, 32, 128_256, 128
P = 8_030_261_248
"""Llama-3.1-8B's parameters (the token table and head untied)."""


def llama_activations(tokens: int) -> int:
    """One sequence (B = 1) of ``tokens`` under SDPA, bf16 (e = 2), term by term as
    costcalc/activations.py names them, N = T = ``tokens``."""
    e, N = 2, tokens
    layer = (
        2 * 4 * N * D  # two RMSNorms' fp32 inputs
        + 2 * 4 * N  # their rsqrt
        + 2 * e * N * D  # their normalized inputs
        + 2 * e * N * D  # the norm outputs the projections save
        + e * N * (H + K) * d  # rotated queries and keys
        + e * N * K * d  # values
        + e * N * H * d  # attention output
        + 4 * H * N  # log-sum-exp, fp32
        + 4 * e * N * F  # gate, up, activation, product
    )
    outside = 4 * N * D + 4 * N + e * N * D + e * N * D + 8 * N + 8 * (N + 1) + 2 * e * N * R + 4
    return L * layer + outside


def per_gpu(plan: ParallelPlan, length: int = 8192, **setup: Any) -> MemoryResult:
    """Llama-3.1-8B's training memory on one GPU of ``plan``."""
    model = load_preset("llama-3.1-8b")
    return memory_result(model, memory_setup(train=True, length=length, **setup), plan=plan)


def plan(gpus: int | None = None, zero: int | None = None, **grid: Any) -> ParallelPlan:
    return parallel_plan(gpus, zero, None, None, **grid)


def test_llama_8k_over_cp_2_holds_what_4k_holds_by_hand() -> None:
    """T = 8,192 over CP 2: 4,096 tokens a GPU. Activations 26,460,897,292 bytes (32 layers of
    822,640,640 and 136,396,812 outside them), the logits 4,096 x 128,256, and the states of a
    whole replica."""
    assert llama_activations(4096) == 32 * 822_640_640 + 136_396_812 == 26_460_897_292
    cp = per_gpu(plan(cp=2)).report
    assert cp.bytes_activations == 26_460_897_292
    assert cp.elements_logits == 4096 * V == 525_336_576
    assert (cp.bytes_logits, cp.bytes_logits_fp32) == (2 * 525_336_576, 4 * 525_336_576)
    assert (cp.bytes_weights, cp.bytes_gradients) == (2 * P, 2 * P)
    assert (cp.bytes_master_weights, cp.elements_optimizer_moments) == (4 * P, 2 * P)
    plain = memory_result(load_preset("llama-3.1-8b"), memory_setup(train=True, length=4096)).report
    assert cp.bytes_activations == plain.bytes_activations
    assert cp.bytes_optimizer == plain.bytes_optimizer
    assert cp.bytes_total == plain.bytes_total


@pytest.mark.parametrize("recompute", ["selective", "full"])
def test_every_recompute_mode_runs_t_over_c_tokens(recompute: str) -> None:
    cp = per_gpu(plan(cp=4), length=16384, recompute=recompute).report
    plain = memory_result(
        load_preset("llama-3.1-8b"), memory_setup(train=True, length=4096, recompute=recompute)
    ).report
    assert cp.bytes_activations == plain.bytes_activations


def test_tensor_parallel_estimate_takes_s_over_c() -> None:
    """TP 2 x CP 2 with --sp at T = 8,192: Korthikanti's 34 s b h / t per layer, s = 4,096."""
    report = per_gpu(plan(tp=2, cp=2)).report
    assert report.bytes_activations == L * (10 + 24 // 2) * 4096 * D
    result = per_gpu(plan(tp=2, sp=True, cp=2))
    assert result.report.bytes_activations == L * 34 * 4096 * D // 2
    padded = 128_256  # already a multiple of 128 x 2
    assert result.report.elements_logits == 4096 * padded // 2


def test_zero_shards_over_dp_times_cp() -> None:
    """8 GPUs = DP 4 x CP 2: ZeRO-1 shards the masters and moments 8 ways, as over DP 8;
    ZeRO-3 the weights too. 4 GPUs = DP 2 x CP 2: 4 ways."""
    over_dp = per_gpu(plan(8, 1)).report
    over_dp_cp = per_gpu(plan(8, 1, cp=2))
    assert over_dp_cp.plan is not None
    assert (over_dp_cp.plan.dp, over_dp_cp.plan.shard_gpus) == (4, 8)
    report = over_dp_cp.report
    assert report.bytes_master_weights == over_dp.bytes_master_weights == 4 * 1_003_782_656
    assert report.elements_optimizer_moments == 2 * 1_003_782_656 == 2 * -(-P // 8)
    assert report.bytes_weights == 2 * P
    zero3 = per_gpu(plan(4, 3, cp=2)).report
    assert zero3.bytes_weights == 2 * -(-P // 4) and zero3.bytes_gradients == 2 * -(-P // 4)
    hybrid = parallel_plan(16, None, "hybrid", 8, cp=2)  # DP 8 x CP 2, nodes of 8 GPUs
    assert (hybrid.dp, hybrid.shard_gpus) == (8, 8)


def test_experts_are_dealt_over_dp_times_cp() -> None:
    """Mixtral-8x7B on 8 GPUs = DP 4 x CP 2 with EP 8: each GPU one expert of each layer, the
    expert states sharded over DP x CP / EP = 1 GPU, the rest over 8."""
    with_cp, without = plan(8, 1, ep=8, cp=2), plan(8, 1, ep=8)
    model = load_preset("mixtral-8x7b")
    setup = memory_setup(train=True, length=4096)
    a = memory_result(model, setup, plan=with_cp).report
    b = memory_result(model, setup, plan=without).report
    assert (a.params_total, a.bytes_master_weights) == (b.params_total, b.bytes_master_weights)
    assert plan(ep=2, cp=2).gpus == 4  # without --gpus: TP x PP x CP x EP


def test_cli_json_and_label() -> None:
    args = ["memory", "-p", "llama-3.1-8b", "--train", "-T", "8192", "--gpus", "16", "--tp", "2"]
    result = runner.invoke(app, [*args, "--cp", "2", "--zero", "1", "-f", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    parallel = data["parallel"]
    assert parallel["context_parallel"] == 2 and parallel["data_parallel"] == 4
    assert parallel["shard_gpus"] == 8
    assert data["setup"]["length"] == 8192
    assert "T / C" in data["activations"]["formula"]
    table = " ".join(runner.invoke(app, [*args, "--cp", "2"]).output.split())
    assert "16 GPUs (DP 4 x TP 2 x PP 1 x CP 2)" in table
    assert "T=8,192 (4,096 per GPU)" in table
    assert "Context parallel over 2" in table and "no T x T scores" in table


def test_cli_terms_are_those_of_t_over_c_tokens() -> None:
    args = ["memory", "-p", "llama-3.1-8b", "--train", "-f", "json"]
    cp = json.loads(runner.invoke(app, [*args, "-T", "8192", "--cp", "2"]).stdout)
    plain = json.loads(runner.invoke(app, [*args, "-T", "4096"]).stdout)
    assert cp["activations"]["terms"] == plain["activations"]["terms"]
    assert cp["activations"]["bytes"] == plain["activations"]["bytes"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-T", "1026", "--cp", "2"], "the length 1,026 does not divide into 2 x CP = 4 chunks"),
        (["-T", "4096", "--cp", "2", "--attention", "eager"], "--cp with --attention eager"),
        (["-T", "4096", "--cp", "0"], "--cp: '0' is not a positive count"),
        (
            ["-T", "4096", "--cp", "2", "--tp", "2", "--gpus", "6"],
            "--gpus 6 does not divide into groups of TP 2 x PP 1 x CP 2 = 4 GPUs",
        ),
    ],
)
def test_plans_that_do_not_hold_are_errors(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["memory", "-p", "llama-3.1-8b", "--train", *args])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())


def test_errors_of_the_plan() -> None:
    with pytest.raises(UsageError, match="the 4 data- and context-parallel ranks"):
        plan(4, ep=8, cp=2)
    with pytest.raises(UsageError, match="context parallelism of mamba2 blocks"):
        check_context_parallel(ModelSpec(**BASE, **MAMBA2), 2, 64, "sdpa")
    inference = runner.invoke(app, ["memory", "-p", "gpt2-small", "--cp", "2"])
    assert inference.exit_code == 2 and "add --train" in inference.output
