"""Time and throughput arithmetic against hand-worked examples and published figures."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from costcalc.engines.vllm_shards import serving_plan
from costcalc.errors import UsageError
from costcalc.gpus import Gpu, find_gpu
from costcalc.loaders import load_file, load_preset
from costcalc.macs import attention_pair_macs, decode_token_macs, forward_macs
from costcalc.plan import (
    TrainingTime,
    cache_fit,
    compute_optimal,
    decode_batches,
    decode_step,
    kaplan_flops,
    parse_fraction,
    roofline,
    training_flops,
)
from costcalc.spec import ModelSpec
from costcalc.units import parse_count
from tests.conftest import ROOT, Invoke

GPT2 = load_preset("gpt2-small").spec
P = 124_439_808


def test_training_flops_from_exact_macs() -> None:
    # one sequence of 1,024: forward F MACs, pairs A; sdpa backward recomputes QK^T (A / 2)
    F, A = forward_macs(GPT2, 1, 1024), attention_pair_macs(GPT2, 1, 1024)
    step = 2 * (3 * F + A // 2)
    assert training_flops(GPT2, 10 * 1024, 1024) == 10 * step
    assert training_flops(GPT2, 1, 1024) == -(-step // 1024)  # a part sequence, rounded up
    assert kaplan_flops(GPT2, 10**9) == 6 * P * 10**9


def test_wall_time_and_gpu_hours_by_hand() -> None:
    # 1e21 FLOPs on 8 GPUs of 1e15 FLOP/s at 50%: 1e21 / 4e15 = 250,000 s; 8 x 250,000 / 3600
    t = TrainingTime(10**21, 8, 10**15, Fraction(1, 2))
    assert t.seconds == 250_000
    assert t.gpu_hours == Fraction(8 * 250_000, 3600)


def test_chinchilla_table() -> None:
    # Hoffmann et al. 2022, Table 3: 70B parameters, 1.4T tokens at 5.76e23 FLOPs
    n, d = compute_optimal(parse_count("5.76e23"))
    assert abs(n - 70 * 10**9) / (70 * 10**9) < 0.015
    assert d == 20 * n
    assert 6 * n * d <= 576 * 10**21 < 6 * (n + 1) * 20 * (n + 1)


def test_roofline_by_hand() -> None:
    h100 = find_gpu("h100-sxm")
    r = roofline(GPT2, h100, "bf16", "bf16", batch=4, prompt=512, context=1024)
    assert r.prefill_seconds == Fraction(2 * forward_macs(GPT2, 4, 512), 989_500 * 10**9)
    # weights 2P bytes + KV 2 x L x B x T x D x 2 bytes, over 3.35e12 B/s
    step = 2 * P + 2 * 12 * 4 * 1024 * 768 * 2
    assert r.decode.step_bytes == step
    assert r.decode.bound == "memory"
    assert r.decode.tokens_per_second_per_sequence == Fraction(3_350 * 10**9, step)
    assert r.decode.tokens_per_second == 4 * Fraction(3_350 * 10**9, step)


def _gpu(memory: int, bandwidth: int = 10**12, peak: int = 10**14) -> Gpu:
    return Gpu("hand", "hand", memory, bandwidth, {"bf16": peak}, "worked by hand")


H100 = find_gpu("h100-sxm")
NINE_TENTHS = Fraction(9, 10)


def test_largest_batch_and_context_llama_by_hand() -> None:
    # nvidia-smi's 81,559 MiB = 85,520,809,984 bytes; less the reserve (85,520,809,984 - the
    # CUDA-visible 85,045,477,376 + 512 MiB = 1,012,203,520): 84,508,606,464; 0.9 x that,
    # rounded down, 76,057,745,817 bytes; weights 2 x 8,030,261,248; KV per token
    # 2 x 32 x 8 x 128 x 2
    spec = load_preset("llama-3.1-8b").spec
    fit = cache_fit(spec, H100, NINE_TENTHS, "bf16", "bf16", batch=8, context=1024)
    assert fit.reserve == 1_012_203_520
    assert (fit.budget, fit.weights) == (76_057_745_817, 16_060_522_496)
    assert fit.free == 59_997_223_321
    per_token = 2 * 32 * 8 * 128 * 2  # 131,072 bytes
    # 447 x 134,217,728 = 59,995,324,416 fits; 448 x = 60,129,542,144 does not
    assert fit.largest_batch == 447 == fit.free // (1024 * per_token)
    # batch 8: 59,997,223,321 / (8 x 131,072) = 57,217.8 tokens
    assert fit.largest_context == 57_217
    assert cache_fit(spec, H100, NINE_TENTHS, "bf16", "bf16", 8, 1024, reserve=0).budget == (
        85_520_809_984 * 9 // 10
    )
    one = cache_fit(spec, H100, NINE_TENTHS, "bf16", "bf16", batch=1, context=1024)
    assert one.largest_context == one.positions == 131_072  # 17.2e9 bytes fit: the positions bound


def test_sliding_window_caps_the_cache() -> None:
    # Mistral-7B: every layer keeps the last 4,096 tokens; weights 2 x 7,241,732,096
    spec = load_preset("mistral-7b-v0.1").spec
    fit = cache_fit(spec, H100, NINE_TENTHS, "bf16", "bf16", batch=114, context=32_768)
    assert fit.free == 76_057_745_817 - 14_483_464_192 == 61_574_281_625
    # a sequence of any length past 4,096 keeps 4,096 x 131,072 = 536,870,912 bytes
    assert fit.largest_batch == 114  # 114 x 536,870,912 = 61,203,283,968
    assert fit.largest_context == 32_768  # the window plateau fits: the positions bound
    # batch 115: 115 x T x 131,072 <= 61,574,281,625 gives T <= 4,084.9
    assert cache_fit(spec, H100, NINE_TENTHS, "bf16", "bf16", 115, 32_768).largest_context == 4084


def test_mla_latent_cache_by_hand() -> None:
    # DeepSeek-V3 caches the latent (512) and the rotary key (64) per layer: 61 x 576 x 2 bytes
    spec = load_preset("deepseek-v3").spec
    fit = cache_fit(spec, _gpu(2 * 10**12), Fraction(1), "bf16", "bf16", 1, 4096, reserve=0)
    assert fit.weights == 2 * 671_026_404_352
    free = 2 * 10**12 - 1_342_052_808_704  # 657,947,191,296
    assert fit.largest_batch == free // (61 * 576 * 2 * 4096) == 2285
    assert fit.largest_context == 163_840  # 11.5e9 bytes at the positions bound: fits


def test_recurrent_state_counts_per_sequence() -> None:
    # tiny-jamba: 734,672 parameters; per sequence 9,216 state elements that do not grow with T
    # and 2 attention layers x 64 elements per token; 2 bytes each; a device of 10^7 bytes
    spec = load_file(ROOT / "tests/fixtures/hf/tiny-jamba.json").spec
    gpu = _gpu(10**7)
    fit = cache_fit(spec, gpu, Fraction(1), "bf16", "bf16", 300, 100, reserve=0)
    assert fit.free == 10**7 - 2 * 734_672 == 8_530_656
    # per sequence at T = 100: 2 x (9,216 + 128 x 100) = 44,032 bytes; 193 x 44,032 = 8,498,176
    assert fit.largest_batch == 193
    # batch 300: 300 x 2 x (9,216 + 128 T) <= 8,530,656 gives T <= 39.07
    assert fit.largest_context == 39
    # batch 500: the state alone, 500 x 2 x 9,216 = 9,216,000 bytes, does not fit
    assert (
        cache_fit(spec, gpu, Fraction(1), "bf16", "bf16", 500, 100, reserve=0).largest_context == 0
    )
    with pytest.raises(UsageError, match="leaves nothing of hand's 10,000,000 bytes"):
        cache_fit(spec, gpu, Fraction(1), "bf16", "bf16", 500, 100)  # the default 1 GiB
    step = decode_step(spec, gpu, "bf16", "bf16", 2, 100)
    assert step.step_flops is None and step.bound == "memory"  # recurrent decoding: bytes only
    # its MoE layers route each token to 2 of 4 experts (786,432 bytes of them): at B = 2 a
    # quarter of them, (1 - 2 / 4)^2, is expected to be left unread
    (read,) = step.experts
    assert (read.experts, read.routed, read.bytes) == (4, 2, 786_432)
    assert step.step_bytes == 2 * 734_672 - 786_432 // 4 + 2 * 44_032


def test_weights_that_do_not_fit_leave_nothing() -> None:
    fit = cache_fit(load_preset("deepseek-v3").spec, H100, NINE_TENTHS, "bf16", "bf16", 1, 1024)
    assert fit.free < 0 and fit.largest_batch == 0 and fit.largest_context == 0


def test_huge_memory_is_bisected_exactly() -> None:
    # 10^60 bytes: GPT-2 keeps 2 x 12 x 1,024 x 768 x 2 = 37,748,736 bytes per sequence
    fit = cache_fit(GPT2, _gpu(10**60), Fraction(1), "bf16", "bf16", batch=1, context=1024)
    assert fit.largest_batch == (10**60 - 2**30 - 2 * P) // 37_748_736  # a 1 GiB reserve
    assert fit.largest_context == 1024


def test_decode_batches() -> None:
    assert decode_batches(1) == [1]
    assert decode_batches(8) == [1, 2, 4, 8]
    assert decode_batches(416) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 416]
    assert decode_batches(0) == []


def test_decode_bound_by_hand() -> None:
    # GPT-2 decoding its 1,024th token: linear MACs 12 x 12 x 768^2 + 768 x 50,257 =
    # 123,532,032; attention 12 layers x 2 x 768 x 1,024 keys = 18,874,368; 2 FLOPs per MAC
    assert decode_token_macs(GPT2, 1023) == 142_406_400
    gpu = _gpu(10**11, bandwidth=10**13, peak=10**13)
    one, two = (decode_step(GPT2, gpu, "bf16", "bf16", b, 1024) for b in (1, 2))
    # B = 1: reads 2P + 37,748,736 = 286,628,352 bytes, does 284,812,800 FLOPs: memory-bound
    assert (one.step_bytes, one.step_flops, one.bound) == (286_628_352, 284_812_800, "memory")
    assert one.seconds == Fraction(286_628_352, 10**13)
    # B = 2: reads 324,377,088 bytes, does 569,625,600 FLOPs: compute-bound
    assert (two.step_bytes, two.step_flops, two.bound) == (324_377_088, 569_625_600, "compute")
    assert two.tokens_per_second == 2 * Fraction(10**13, 569_625_600)
    assert two.tokens_per_second_per_sequence == Fraction(10**13, 569_625_600)


@pytest.mark.parametrize("text", ["0", "1.5", "abc", "150%"])
def test_bad_mfu(text: str) -> None:
    with pytest.raises(UsageError):
        parse_fraction(text, "MFU")


def test_mfu_forms() -> None:
    assert parse_fraction("40%", "MFU") == parse_fraction("0.4", "MFU") == Fraction(2, 5)


def test_plan_command_json_and_errors() -> None:
    import json

    from typer.testing import CliRunner

    from costcalc.cli.app import app

    runner = CliRunner()
    args = ["plan", "-p", "gpt2-small", "--gpu", "a100-80gb", "--gpus", "8", "--tokens", "10B"]
    result = runner.invoke(app, [*args, "-T", "1024", "--mfu", "50%", "-f", "json"])
    assert result.exit_code == 0, result.output
    training = json.loads(result.stdout)["training"]
    assert training["flops"] == training_flops(GPT2, 10**10, 1024)
    assert training["seconds"] == float(Fraction(training["flops"], 8 * 312 * 10**12 // 2))
    missing = runner.invoke(
        app, ["plan", "-p", "gpt2-small", "--gpu", "a10g", "--tokens", "1B", "-T", "64"]
    )
    assert missing.exit_code == 2 and "no bf16 peak for a10g" in missing.output
    nothing = runner.invoke(app, ["plan", "-p", "gpt2-small", "--gpu", "l4"])
    assert nothing.exit_code == 2 and "nothing to plan" in nothing.output


def test_plan_inference_json_and_table() -> None:
    import json

    from typer.testing import CliRunner

    from costcalc.cli.app import app

    runner = CliRunner()
    args = ["plan", "-p", "llama-3.1-8b", "--gpu", "h100-sxm", "--prompt", "100"]
    args += ["--generate", "28", "-B", "8", "--memory-utilisation", "90%"]
    result = runner.invoke(app, [*args, "-f", "json"])
    assert result.exit_code == 0, result.output
    inference = json.loads(result.stdout)["inference"]
    fit = inference["fit"]
    assert fit["memory_utilisation"]["numerator"] == 9
    assert (fit["budget_bytes"], fit["weight_bytes"]) == (76_057_745_817, 16_060_522_496)
    assert (fit["memory_bytes"], fit["reserve_bytes"]) == (85_520_809_984, 1_012_203_520)
    assert fit["cache_bytes_free"] == 59_997_223_321
    # 59,997,223,321 // (128 x 131,072) = 3,576; the context at batch 8 as by hand above
    assert (fit["largest_batch"], fit["largest_context"]) == (3576, 57_217)
    steps = inference["decode_by_batch"]
    assert [s["batch"] for s in steps] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3576]
    weights, kv = 16_060_522_496, 128 * 131_072
    for step in steps:
        b = step["batch"]
        assert step["step_bytes"] == weights + b * kv
        assert step["memory_seconds"] == float(Fraction(weights + b * kv, 3_350 * 10**9))
        flops = 2 * decode_token_macs(load_preset("llama-3.1-8b").spec, 127, b)
        assert step["step_flops"] == flops
        slower = max(Fraction(weights + b * kv, 3_350 * 10**9), Fraction(flops, 989_500 * 10**9))
        assert step["tokens_per_second"] == float(b / slower)
        assert step["bound"] == (
            "memory" if slower * 3_350 * 10**9 == weights + b * kv else "compute"
        )
    assert [s["bound"] for s in steps][8:10] == ["memory", "compute"]
    assert inference["decode_tokens_per_second"] == steps[3]["tokens_per_second"]
    table = runner.invoke(app, args, env={"COLUMNS": "120"}).stdout
    for figure in ["76,057,745,817", "16,060,522,496", "59,997,223,321", "3,576", "57,217"]:
        assert figure in table
    for step in steps:
        rate = step["tokens_per_second"]
        assert f"{rate:,.1f}" in table and f"{rate:,.0f}" in table
        assert f"{step['tokens_per_second_per_sequence']:,.1f}" in table
        assert f"{step['memory_seconds'] * 1000:,.2f} ms" in table or step["bound"] == "compute"
    assert "▓" in table and "█" in table
    assert "90.0% of what h100-sxm's 85,520,809,984 bytes" in " ".join(table.split())
    assert "the model's 131,072 positions" in " ".join(table.split())
    assert "at 128 tokens" in table and "largest context at batch 8" in table
    bad = runner.invoke(app, [*args, "--memory-utilisation", "1.2"])
    assert bad.exit_code == 2 and "memory utilisation '1.2'" in bad.output


def test_tensor_parallel_roofline_by_hand() -> None:
    """Llama-3.1-8B over 4 L4s as vLLM shards it: V = 128,256 is already a multiple of 64
    (2,004 x 64), 32,064 rows a GPU; a layer holds its two norms and a quarter of q, o and the
    FFN, 2 of the 8 key/value heads; 1 / 4 of the cache; two all-reduces a layer."""
    spec = load_preset("llama-3.1-8b").spec
    l4 = find_gpu("l4")
    tp4 = serving_plan(tp=4)
    layer = 2 * 4096 + (2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 14336 * 4096) // 4
    params = 32 * layer + 2 * 32_064 * 4096 + 4096
    assert 2 * params == 4_015_529_984
    fit = cache_fit(spec, l4, NINE_TENTHS, "bf16", "bf16", batch=1, context=1024, layout=tp4)
    assert fit.weights == 4_015_529_984
    # 0.9 x (24,152,899,584 - a reserve of 1,119,551,488), rounded down: 20,730,013,286
    assert fit.free == 20_730_013_286 - 4_015_529_984 == 16_714_483_302
    per_sequence = 1024 * 131_072 // 4  # 33,554,432 bytes of each sequence's cache a GPU
    assert fit.largest_batch == 16_714_483_302 // per_sequence == 498
    step = decode_step(spec, l4, "bf16", "bf16", 1, 1024, tp4)
    assert step.step_bytes == 4_015_529_984 + per_sequence == 4_049_084_416
    assert step.step_flops == -(-2 * decode_token_macs(spec, 1023) // 4)
    # 32 layers x 2 all-reduces x 2 (4 - 1) / 4 x 4,096 x 2 bytes, over 32 GB/s one way
    assert step.collective_bytes == 32 * 2 * 3 * 4096 * 2 * 2 // 4 == 786_432
    assert step.seconds == Fraction(4_049_084_416, 300 * 10**9) + Fraction(786_432, 32 * 10**9)
    r = roofline(spec, l4, "bf16", "bf16", 1, 1000, 1024, tp4)
    assert r.prefill_flops == -(-2 * forward_macs(spec, 1, 1000) // 4)
    with pytest.raises(UsageError, match=r"attention heads \(32\) over 3 GPUs"):
        cache_fit(spec, l4, NINE_TENTHS, "bf16", "bf16", 1, 1024, serving_plan(tp=3))


def test_plan_tp_cli() -> None:
    import json

    from typer.testing import CliRunner

    from costcalc.cli.app import app

    runner = CliRunner()
    args = ["plan", "-p", "llama-3.1-8b", "--gpu", "l4", "--prompt", "1000", "--generate", "24"]
    result = runner.invoke(app, [*args, "--tp", "4", "-f", "json"])
    assert result.exit_code == 0, result.output
    inference = json.loads(result.stdout)["inference"]
    assert inference["tensor_parallel"] == 4
    assert inference["decode_step_bytes"] == 4_049_084_416
    assert inference["decode_collective_bytes_per_gpu"] == 786_432
    # at the default 0.92: floor(0.92 x (24,152,899,584 - 1,119,551,488)) = 21,190,680,248,
    # less the weights 17,175,150,264, over 33,554,432 bytes a sequence: 511
    assert inference["fit"]["largest_batch"] == 511
    assert inference["parallel"]["layout"] == "vLLM 0.34.0"
    table = runner.invoke(app, [*args, "--tp", "4"], env={"COLUMNS": "120"}).stdout
    assert "4 x l4" in table and "4,049,084,416" in table and "4,015,529,984" in table
    bad = runner.invoke(app, [*args, "--tp", "3"])
    assert bad.exit_code == 2 and "does not divide by 3" in bad.output


def test_a_model_without_a_cache_has_no_batch_bound(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from costcalc.cli.app import app

    config = {"vocab_size": 256, "d_model": 64, "n_layers": 2, "context_length": 256}
    config |= {"position": "learned", "mixer": "none", "norm": "rmsnorm"}
    spec = ModelSpec(**config)
    fit = cache_fit(spec, find_gpu("l4"), Fraction(1), "bf16", "bf16", 4, 100)
    assert fit.largest_batch is None and fit.largest_context == 256  # nothing grows: positions
    path = tmp_path / "mlp.json"
    path.write_text(json.dumps(config))
    runner = CliRunner()
    args = ["plan", "-c", str(path), "--gpu", "l4", "--prompt", "64", "--generate", "64", "-B", "4"]
    data = json.loads(runner.invoke(app, [*args, "-f", "json"]).stdout)["inference"]
    assert data["fit"]["largest_batch"] is None
    assert [s["batch"] for s in data["decode_by_batch"]] == [1, 2, 4]  # up to --batch
    assert "no bound" in runner.invoke(app, args).stdout
    training = ["plan", "-p", "gpt2-small", "--gpu", "l4", "--tokens", "1B", "-T", "64"]
    assert runner.invoke(app, training).exit_code == 0
    tp = runner.invoke(app, [*training, "--tp", "2"])
    assert tp.exit_code == 2 and "give a prompt (--prompt)" in tp.output


def test_a_budget_shows_each_model_beside_the_rule(cli: Invoke) -> None:
    """The compute-optimal size does not depend on the model: each model named stands beside
    it with its own N and the tokens C / (6 N) the budget trains it on (GPT-2 small: 124,439,808
    parameters; 10^21 // (6 x 124,439,808) = 1,339,335,614,104 tokens)."""
    args = ["plan", "-p", "gpt2-small", "-p", "qwen3-0.6b", "--gpu", "a10", "--budget", "1e21"]
    table = cli(*args)
    assert table.exit_code == 0, table.stderr
    head = table.stdout.splitlines()[2]
    assert "gpt2-small" in head and "qwen3-0.6b" in head
    assert "1,339,335,614,104" in table.stdout
    first, second = json.loads(cli(*args, "-f", "json").stdout)
    assert first["compute_optimal"]["model_parameters"] == 124_439_808
    assert first["compute_optimal"]["model_tokens"] == 1_339_335_614_104
    assert second["compute_optimal"]["tokens"] == first["compute_optimal"]["tokens"]
