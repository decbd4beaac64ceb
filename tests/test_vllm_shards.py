"""Serving on many GPUs as vLLM shards a model: costcalc's per-GPU weights and KV cache against
tests/golden/vllm_shards.json (tests/reference/vllm_shards.py, vLLM 0.34.0's shape rules from its
source), and the rules worked by hand."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest
from typer.testing import CliRunner

import costcalc
from costcalc.cli.app import app
from costcalc.engines.vllm_shards import (
    ServingPlan,
    pp_partitions,
    rank_stacks,
    rank_tensors,
    serving_plan,
)
from costcalc.errors import UsageError
from costcalc.loaders import load_file, load_preset
from costcalc.memory import kv_cache_elements, memory_setup
from costcalc.memory_results import memory_result
from tests.conftest import ROOT

GOLDEN = json.loads((ROOT / "tests/golden/vllm_shards.json").read_text())
CASES = [
    (name, case) for name, model in sorted(GOLDEN["models"].items()) for case in model["plans"]
]
runner = CliRunner()


def _plan(case: dict[str, Any]) -> ServingPlan:
    tp, dp = case["tp"], case["dp_attention"]
    ep = tp * dp if case["expert_parallel"] else None
    return serving_plan(None, tp, case["pp"], ep, dp)


@pytest.mark.parametrize(
    ("name", "case"),
    CASES,
    ids=[
        f"{n}-tp{c['tp']}-pp{c['pp']}-dp{c['dp_attention']}-ep{c['expert_parallel']}"
        for n, c in CASES
    ],
)
def test_per_gpu_elements_and_cache_equal_vllm(name: str, case: dict[str, Any]) -> None:
    spec = load_file(ROOT / f"tests/fixtures/hf/{name}.json").spec
    plan = _plan(case)
    for stage in case["stages"]:
        tensors = rank_tensors(spec, plan, stage["stage"])
        assert sum(t.elements for t in tensors) == stage["elements"]
        width = stage["kv_width"]
        cached = sum(
            kv_cache_elements(s, 1, 32768) for s in rank_stacks(spec, plan, stage["stage"])
        )
        assert cached == stage["kv_layers"] * 32768 * width
        experts = {t.name: t.shape for t in tensors if t.name.startswith("mlp.experts.")}
        golden = {k.rpartition(".")[2]: v["shape"] for k, v in stage["params"].items()}
        if experts:
            assert list(experts["mlp.experts.gate_up_proj"]) == golden["w13_weight"]
            assert list(experts["mlp.experts.down_proj"]) == golden["w2_weight"]


def test_pipeline_split_as_get_pp_indices() -> None:
    assert pp_partitions(32, 3) == [11, 11, 10]
    assert pp_partitions(61, 4) == [15, 15, 16, 15]  # the remainder goes before the last
    assert pp_partitions(61, 2) == [31, 30]
    assert pp_partitions(8, 8) == [1] * 8


def test_rules_by_hand() -> None:
    spec = load_preset("qwen3-30b-a3b").spec
    shapes = {t.name: t.shape for t in rank_tensors(spec, serving_plan(tp=8), 0)}
    # 4 KV heads over 8 GPUs: one each, held by 2; 32 query heads, 4 each
    assert shapes["attn.k_proj.weight"] == (128, 2048)
    assert shapes["attn.q_proj.weight"] == (512, 2048)
    assert shapes["attn.o_proj.weight"] == (2048, 512)
    assert shapes["embed_tokens.weight"] == (151936 // 8, 2048)  # 151,936 is 64 x 2,374
    assert shapes["mlp.router.weight"] == (128, 2048)
    assert shapes["mlp.experts.gate_up_proj"] == (128, 2 * 96, 2048)
    ep = {t.name: t.shape for t in rank_tensors(spec, serving_plan(tp=8, ep=8), 0)}
    assert ep["mlp.experts.gate_up_proj"] == (16, 1536, 2048)
    deepseek = load_preset("deepseek-v3").spec
    mla = {t.name: t.shape for t in rank_tensors(deepseek, serving_plan(tp=8), 0)}
    assert mla["attn.q_a_proj.weight"] == (1536, 7168)  # replicated
    assert mla["attn.kv_a_proj_with_mqa.weight"] == (576, 7168)
    assert mla["attn.q_b_proj.weight"] == (24576 // 8, 1536)
    assert mla["attn.kv_b_proj.weight"] == (32768 // 8, 512)
    # DP attention 2 x TP 4 with EP: the MoE runs sequence parallel, shared experts whole
    sp = {
        t.name: t.shape for t in rank_tensors(deepseek, serving_plan(tp=4, ep=8, dp_attention=2), 0)
    }
    assert sp["mlp.shared_expert.gate_proj.weight"] == (2048, 7168)
    assert sp["mlp.experts.gate_up_proj"] == (32, 4096, 7168)


def test_uneven_experts_and_refusals() -> None:
    spec = load_preset("qwen3-30b-a3b").spec
    # 128 experts over EP 3 x ... : vLLM gives the first 128 mod 6 = 2 GPUs one more
    plan = serving_plan(tp=2, ep=6, dp_attention=3)
    held = {t.name: t.shape for t in rank_tensors(spec, plan, 0)}
    assert held["mlp.experts.down_proj"][0] == 22
    with pytest.raises(UsageError, match="product is 4, or --ep 8"):
        serving_plan(tp=8, ep=4)
    with pytest.raises(UsageError, match="DP-attention 1 x PP 2 x TP 4 = 8"):
        serving_plan(gpus=4, tp=4, pp=2)
    with pytest.raises(UsageError, match="divide"):
        rank_tensors(spec, serving_plan(tp=3), 0)
    with pytest.raises(UsageError, match="no mixture-of-experts"):
        rank_tensors(load_preset("llama-3.1-8b").spec, serving_plan(tp=2, ep=2), 0)


def test_memory_answers_per_gpu_with_the_latent_replicated() -> None:
    args = ["memory", "-p", "deepseek-v3", "-T", "32768", "--tp", "8", "--gpu", "h200"]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 1, result.output  # bf16 does not fit: 169.6 GB per GPU
    data = json.loads(result.stdout.split("\ndoes not fit")[0])
    assert data["parallel"]["tensor_parallel"] == 8 and data["parallel"]["per_gpu"]
    assert data["weights"]["elements"] == 84_780_342_272
    assert data["kv_cache"]["bytes"] == 61 * 32768 * 576 * 2
    table = runner.invoke(app, [*args, "--dtype", "fp8-block"])
    assert table.exit_code == 0, table.output
    words = " ".join(table.output.split())
    assert "whole on each of the 8 GPUs of a TP group, replicated, not split" in words
    assert "Memory per GPU of deepseek-v3" in words


def test_api_takes_the_serving_options() -> None:
    result = costcalc.count_memory("qwen3-30b-a3b", length=4096, tp=2, dp_attention=4, ep=8)
    assert result.serving is not None and result.serving.gpus == 8
    assert (
        result.report.params_total
        == GOLDEN["models"]["qwen3-30b-a3b"]["plans"][8]["stages"][0]["elements"]
    )
    with pytest.raises(UsageError, match="zero= applies to training; add train=True"):
        costcalc.count_memory("gpt2-small", gpus=2, zero=1)
    with pytest.raises(UsageError, match="dp_attention= lays out serving replicas"):
        costcalc.count_memory("gpt2-small", train=True, length=64, dp_attention=2)


def test_vllm_engine_blocks_per_gpu() -> None:
    spec = load_preset("llama-3.1-8b")
    setup = memory_setup(length=4096, engine=costcalc_engine())
    result = memory_result(spec, setup, None, None, serving_plan(tp=8))
    # a block: 32 layers x 16 tokens x 1 local KV head x 256 x 2 bytes
    assert result.report.engine is not None
    assert result.report.bytes_kv_cache == 256 * 32 * 16 * 256 * 2


def costcalc_engine() -> Any:
    from costcalc.engines.dispatch import engine_setup

    return engine_setup("vllm")


def test_plan_serves_mla_under_tp_ep_and_dp_attention() -> None:
    from costcalc.gpus import find_gpu
    from costcalc.plan import cache_fit, collective_bytes, decode_step

    spec = load_preset("deepseek-v3").spec
    h200 = find_gpu("h200")
    tp8 = serving_plan(tp=8)
    # 61 layers x 2 all-reduces over 8 GPUs of B x 7,168 x 2 bytes: 2 x 7 / 8 each
    assert collective_bytes(spec, tp8, 0, 4, 2) == 61 * 2 * 2 * 7 * 4 * 7168 * 2 // 8
    dp = serving_plan(tp=2, ep=8, dp_attention=4)
    # attention over TP 2; the 58 MoE layers gather 4 replicas' tokens over 8 GPUs; 3 dense
    per_moe = 2 * 1 * 4 * 7168 * 2 // 2 + 2 * 7 * 4 * 4 * 7168 * 2 // 8
    per_dense = 2 * (2 * 1 * 4 * 7168 * 2 // 2)
    assert collective_bytes(spec, dp, 0, 4, 2) == 58 * per_moe + 3 * per_dense
    step = decode_step(spec, h200, "fp8-block", "bf16", 4, 2048, dp)
    assert step.replicas == 4 and step.tokens_per_second == 16 / step.seconds
    # the cache of a DP replica's GPU: its own 4 sequences' latents, whole
    assert step.cache_bytes == 4 * 61 * 2048 * 576 * 2
    fit = cache_fit(spec, h200, Fraction(9, 10), "fp8-block", "bf16", 1, 4096, tp8)
    assert fit.weights == 85_140_071_456 and fit.largest_batch is not None


def test_plan_pipeline_takes_the_tightest_stage() -> None:
    from costcalc.gpus import find_gpu
    from costcalc.plan import cache_fit, decode_step

    spec = load_preset("llama-3.1-8b").spec
    l4 = find_gpu("l4")
    pp = serving_plan(tp=2, pp=2)
    fit = cache_fit(spec, l4, Fraction(9, 10), "bf16", "bf16", 1, 1024, pp)
    stage = GOLDEN["models"]["llama-3.1-8b"]["plans"][4]["stages"][fit.stage]
    assert fit.weights == 2 * stage["elements"]
    step = decode_step(spec, l4, "bf16", "bf16", 1, 1024, pp)
    assert step.pipeline == 2 and step.seconds > 2 * step.memory_seconds


def test_plan_cli_serves_deepseek_on_eight_gpus() -> None:
    args = ["plan", "-p", "deepseek-v3", "--gpu", "h200", "--prompt", "1000", "--tp", "8"]
    result = runner.invoke(app, [*args, "--dtype", "fp8-block", "--engine", "vllm", "-f", "json"])
    assert result.exit_code == 0, result.output
    inference = json.loads(result.stdout)["inference"]
    assert inference["parallel"]["tensor_parallel"] == 8
    assert inference["fit"]["weight_bytes"] == 85_140_071_456
    assert inference["fit"]["vllm"]["bytes_per_block"] == 61 * 16 * 576 * 2
    refused = runner.invoke(app, [*args, "--engine", "llamacpp"])
    assert refused.exit_code == 2 and "sizes inference on one GPU" in refused.output


def test_recurrent_mixers_split_by_heads() -> None:
    from costcalc.engines.vllm_shards import local_recurrent
    from costcalc.memory import state_elements
    from costcalc.tensors import block_tensors

    spec = load_file(ROOT / "tests/fixtures/hf/nemotron-h-56b.json").spec
    mamba = next(s for s in spec.stacks if s.recurrent_mixer == "mamba2")
    # 256 heads of 64 (I = 16,384), 8 groups of state 256: vLLM's MergedColumnParallelLinear
    # [I, I, G N, G N, H] and conv [I, G N, G N] each split 4 ways
    local = {t.name: t.shape for t in block_tensors(local_recurrent(mamba, 4))}
    assert local["mixer.in_proj.weight"] == ((2 * 16384 + 2 * 8 * 256 + 256) // 4, 8192)
    assert local["mixer.conv1d.weight"] == ((16384 + 2 * 8 * 256) // 4, 1, 4)
    assert local["mixer.out_proj.weight"] == (8192, 16384 // 4)
    # one group: replicated on every GPU (extra_groups_for_head_shards), the heads split
    one = mamba.model_copy(update={"mamba2": mamba.mamba2.model_copy(update={"groups": 1})})
    held = {t.name: t.shape for t in block_tensors(local_recurrent(one, 4))}
    assert held["mixer.in_proj.weight"] == (2 * 16384 // 4 + 2 * 256 + 256 // 4, 8192)
    assert held["mixer.conv1d.weight"] == (16384 // 4 + 2 * 256, 1, 4)
    # the state per GPU: its heads' SSM state and its conv channels
    assert state_elements(local_recurrent(mamba, 8), 1) * 8 == state_elements(mamba, 1)
    with pytest.raises(UsageError, match="groups"):
        local_recurrent(mamba, 16 * 3)
    whole = rank_tensors(spec, serving_plan(tp=8), 0)
    assert sum(t.elements for t in whole) == 7_041_396_800
    result = runner.invoke(
        app, ["memory", "-c", str(ROOT / "tests/fixtures/hf/tiny-qwen3-next.json"), "--tp", "2"]
    )
    assert result.exit_code == 0, result.output


def test_vllm_blocks_under_pipeline_keep_p_plus_one_batches_in_flight() -> None:
    from costcalc.engines.dispatch import engine_setup
    from costcalc.engines.vllm import VllmMemory

    setup = memory_setup(length=32768, engine=engine_setup("vllm", max_num_batched_tokens=2048))
    result = memory_result(load_preset("gemma-3-1b"), setup, None, None, serving_plan(pp=2))
    engine = result.report.engine
    assert isinstance(engine, VllmMemory) and engine.concurrent_batches == 3
    # a sliding group's request: cdiv(512 - 1 + 3 x 2,048, 16) + 1 blocks (vLLM 0.34.0:
    # max_concurrent_batches = P + 1 with async scheduling)
    sliding = [g for g in engine.groups if g.kind.kind == "sliding"]
    full = [g for g in engine.groups if g.kind.kind == "full"]
    assert engine.blocks_per_request == len(sliding) * 417 + len(full) * 2048
