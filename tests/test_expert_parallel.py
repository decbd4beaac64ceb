"""Expert parallelism: one rank's parameters against a sum written here from the model's tensor
shapes (the tensor-parallel shards of tests/test_tensor_pipeline.py, with each MoE layer's
stacked experts dealt out E ways), Mixtral-8x7B by hand, and the plans that do not divide."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from costcalc.cli.app import app
from costcalc.errors import UsageError
from costcalc.loaders import load_preset
from costcalc.memory import memory_setup
from costcalc.memory_results import memory_result
from costcalc.parallel import parallel_plan, rank_tensors
from costcalc.params import total_params
from costcalc.spec import ModelSpec
from costcalc.tensors import block_tensors
from tests.test_tensor_pipeline import expected_rank_params, held, megatron_vocab

runner = CliRunner()


def expected_with_experts(spec: ModelSpec, tp: int, pp: int, ep: int, stage: int) -> int:
    """The TP x PP rank's parameters with 1 / E of every stacked-expert tensor of its L / P
    layers instead of all of it."""
    vocab = megatron_vocab(spec.vocab_rows, tp)
    experts = sum(
        t.copies * stack.n_layers * held(t, tp, vocab)
        for stack in spec.stacks
        for t in block_tensors(stack)
        if t.name.startswith("mlp.experts.")
    )
    assert experts % (pp * ep) == 0
    return expected_rank_params(spec, tp, pp, stage) - experts // pp + experts // (pp * ep)


GRID = [
    ("mixtral-8x7b", 1, 1, 2),
    ("mixtral-8x7b", 2, 1, 4),
    ("mixtral-8x7b", 4, 8, 8),
    ("mixtral-8x7b", 2, 2, 2),
    ("qwen3-30b-a3b", 4, 2, 8),
    ("qwen3-30b-a3b", 1, 1, 128),
    ("gpt-oss-20b", 8, 2, 4),
    ("gpt-oss-120b", 2, 1, 16),
]


@pytest.mark.parametrize(("preset", "tp", "pp", "ep"), GRID)
def test_rank_parameters_equal_the_expert_shards(preset: str, tp: int, pp: int, ep: int) -> None:
    spec = load_preset(preset).spec
    plan = parallel_plan(None, None, None, None, tp, pp, ep=ep)
    assert plan.gpus == tp * pp * ep and plan.dp == ep
    for stage in range(pp):
        tensors = rank_tensors(spec, plan, stage)
        assert sum(t.elements for t in tensors) == expected_with_experts(spec, tp, pp, ep, stage)


def test_expert_ranks_add_up_to_the_model() -> None:
    """EP alone: the E ranks together hold every expert once and the rest E times."""
    spec = load_preset("qwen3-30b-a3b").spec
    plan = parallel_plan(None, None, None, None, ep=8)
    one = sum(t.elements for t in rank_tensors(spec, plan, 0))
    experts = sum(
        t.elements * stack.n_layers
        for stack in spec.stacks
        for t in block_tensors(stack)
        if t.name.startswith("mlp.experts.")
    )
    assert 8 * one == 8 * total_params(spec) - 7 * experts


def test_mixtral_by_hand() -> None:
    """TP 2, EP 4 on 8 GPUs: a layer holds its two norms and router (8 x 4,096) whole, half of
    q, k, v, o, and 8 / 4 = 2 experts of 3 x 14,336 x 4,096, each halved; the table and head
    (32,000 rows, a multiple of 256 already) halved, the final norm whole."""
    layer = 2 * 4096 + (2 * 4096 * 4096 + 2 * 1024 * 4096) // 2 + 8 * 4096
    layer += 2 * 3 * 14336 * 4096 // 2
    assert layer == 197_173_248
    total = 32 * layer + 2 * 32_000 // 2 * 4096 + 4096
    assert total == 6_440_620_032
    args = ["memory", "-p", "mixtral-8x7b", "--train", "-T", "1024", "--tp", "2", "--ep", "4"]
    result = runner.invoke(app, [*args, "-f", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["parameters"] == total
    assert data["weights"]["bytes"] == 2 * total
    assert data["parallel"]["expert_parallel"] == 4 and data["parallel"]["gpus"] == 8
    assert data["parallel"]["data_parallel"] == 4
    table = runner.invoke(app, args, env={"COLUMNS": "120"}).stdout
    assert "6,440,620,032" in table and "experts over EP 4" in table
    assert "2 experts of each MoE layer per GPU" in table


def test_ep_one_changes_nothing() -> None:
    setup = memory_setup(train=True, length=256)
    plain = memory_result(
        load_preset("mixtral-8x7b"), setup, plan=parallel_plan(2, None, None, None, 2)
    )
    same = memory_result(
        load_preset("mixtral-8x7b"), setup, plan=parallel_plan(2, None, None, None, 2, ep=1)
    )
    assert plain.report == same.report


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-p", "mixtral-8x7b", "--ep", "3"],
            "the 8 experts of each MoE layer do not divide over 3",
        ),
        (["-p", "mixtral-8x7b", "--gpus", "6", "--ep", "4"], "the 6 data-parallel replicas"),
        (["-p", "mixtral-8x7b", "--gpus", "8", "--tp", "2", "--ep", "8"], "the 4 data-parallel"),
        (["-p", "llama-3.1-8b", "--ep", "2"], "has no mixture-of-experts layers"),
        (
            [
                "-p",
                "mixtral-8x7b",
                "--gpus",
                "8",
                "--ep",
                "2",
                "--fsdp",
                "hybrid",
                "--node-gpus",
                "4",
            ],
            "--ep with --fsdp hybrid",
        ),
        (["-p", "mixtral-8x7b", "--ep", "0"], "--ep: '0' is not a positive count"),
    ],
)
def test_plans_that_do_not_divide(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["memory", "--train", "-T", "64", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_serving_ep_spans_tp_and_dp_attention() -> None:
    result = runner.invoke(app, ["memory", "-p", "mixtral-8x7b", "--ep", "2"])
    assert result.exit_code == 2 and "TP x DP-attention GPUs of a stage" in result.output
    served = runner.invoke(app, ["memory", "-p", "mixtral-8x7b", "--ep", "2", "--tp", "2"])
    assert served.exit_code == 0 and "experts over EP 2" in served.output
    with pytest.raises(UsageError):
        parallel_plan(4, None, None, None, ep=3)


def test_zero_shards_experts_over_their_own_replicas() -> None:
    """16 GPUs = DP 8 x TP 2, EP 4, ZeRO-1: the rest of the model's states over 8 GPUs, each
    expert shard's over the 8 / 4 = 2 GPUs that hold it. Per GPU: 32 layers x 2 experts x
    3 x 14,336 x 4,096 / 2 = 5,637,144,576 expert parameters, 803,475,456 others."""
    experts = 32 * 2 * 3 * 14336 * 4096 // 2
    rest = 6_440_620_032 - experts
    assert (experts, rest) == (5_637_144_576, 803_475_456)
    part = -(-rest // 8) + -(-experts // 2)
    setup = memory_setup(train=True, length=1024)
    # one AdamW step per group; ZeRO-3 steps the experts' 2.8e9-element partition in three
    # sub-groups of about 1e9 (sub_group_size)
    for zero, weights, steps in ((1, 2 * 6_440_620_032, 2), (3, 2 * part, 4)):
        plan = parallel_plan(16, zero, None, None, 2, ep=4)
        report = memory_result(load_preset("mixtral-8x7b"), setup, plan=plan).report
        assert report.bytes_master_weights == 4 * part == 11_676_026_880
        assert report.bytes_optimizer == 8 * part + 4 * steps
        assert report.bytes_weights == weights
        # ZeRO-1 keeps the 16-bit gradients of the whole parameters a share touches
        gradients = (part, part + 2 * 32 * 14336 * 4096) if zero == 1 else (part, part)
        assert gradients[0] <= report.elements_gradients <= gradients[1]
    fsdp = parallel_plan(16, None, "grad-op", None, 2, ep=4)
    report = memory_result(load_preset("mixtral-8x7b"), setup, plan=fsdp).report
    assert report.bytes_gradients == 4 * part  # FSDP2: fp32 gradients of the fp32 shards
    table = runner.invoke(
        app,
        [
            "memory",
            "-p",
            "mixtral-8x7b",
            "--train",
            "-T",
            "1024",
            "--gpus",
            "16",
            "--tp",
            "2",
            "--ep",
            "4",
            "--zero",
            "1",
        ],
        env={"COLUMNS": "200"},
    ).stdout
    assert "11,676,026,880" in table and "over the 2 GPUs holding the same ones" in table
