"""Time and throughput arithmetic against hand-worked examples and published figures."""

from __future__ import annotations

from fractions import Fraction

import pytest

from costcalc.errors import UsageError
from costcalc.gpus import find_gpu
from costcalc.loaders import load_preset
from costcalc.macs import attention_pair_macs, forward_macs
from costcalc.plan import (
    TrainingTime,
    compute_optimal,
    kaplan_flops,
    parse_flops,
    parse_fraction,
    roofline,
    training_flops,
)

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
    n, d = compute_optimal(parse_flops("5.76e23"))
    assert abs(n - 70 * 10**9) / (70 * 10**9) < 0.015
    assert d == 20 * n
    assert 6 * n * d <= 576 * 10**21 < 6 * (n + 1) * 20 * (n + 1)


def test_roofline_by_hand() -> None:
    h100 = find_gpu("h100-sxm")
    r = roofline(GPT2, h100, "bf16", "bf16", batch=4, prompt=512, context=1024)
    assert r.prefill_seconds == Fraction(2 * forward_macs(GPT2, 4, 512), 989_500 * 10**9)
    # weights 2P bytes + KV 2 x L x B x T x D x 2 bytes, over 3.35e12 B/s
    step = 2 * P + 2 * 12 * 4 * 1024 * 768 * 2
    assert r.step_bytes == step
    assert r.tokens_per_second_per_sequence == Fraction(3_350 * 10**9, step)
    assert r.tokens_per_second == 4 * Fraction(3_350 * 10**9, step)


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
