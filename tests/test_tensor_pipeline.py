"""Tensor and pipeline parallelism: one rank's parameters against sums written here from the
model's tensor shapes with Megatron-LM's rules (ColumnParallelLinear splits the output rows,
RowParallelLinear the input columns and keeps its bias whole, VocabParallelEmbedding the padded
vocabulary rows), hand-worked Llama-3.1-8B figures, the activation divisions of Korthikanti et
al. 2022 (Table 2), the 1F1B micro-batches in flight, the plans that do not divide, and TP = PP
= 1 equal to the plain figures."""

from __future__ import annotations

import json
from dataclasses import replace
from math import prod

import pytest
from typer.testing import CliRunner

from costcalc.cli.app import app
from costcalc.errors import UsageError
from costcalc.loaders import load_preset
from costcalc.memory import MemoryReport, MemorySetup, layer_activation_bytes, memory_setup
from costcalc.memory_results import memory_result
from costcalc.parallel import ParallelPlan, parallel_plan, rank_tensors
from costcalc.params import total_params
from costcalc.spec import ModelSpec
from costcalc.tensors import Tensor, block_tensors, model_tensors

runner = CliRunner()
SETUP = memory_setup(train=True, length=2048)
COLUMN = (".q_proj.", ".k_proj.", ".v_proj.", ".qkv_proj.", ".gate_proj.", ".up_proj.")


def megatron_vocab(rows: int, tp: int) -> int:
    """Megatron's _vocab_size_with_padding: up to a multiple of 128 x TP (costcalc keeps the
    model's rows at TP 1)."""
    multiple = 128 * tp
    return rows if tp == 1 else (rows + multiple - 1) // multiple * multiple


def held(tensor: Tensor, tp: int, vocab: int) -> int:
    """Elements one of ``tp`` ranks holds of one copy of ``tensor``."""
    name, n = tensor.name, prod(tensor.shape)
    if name in ("embed_tokens.weight", "lm_head.weight"):
        return vocab // tp * tensor.shape[1]
    column = any(key in f"{name}." for key in (*COLUMN, ".gate_up_proj."))
    column = column or name.startswith("mlp.experts.gate_up_proj") or name == "attn.sinks"
    row = name in ("attn.o_proj.weight", "mlp.down_proj.weight", "mlp.experts.down_proj")
    row = row or name.startswith("mlp.shared_expert.down_proj.weight")
    if column or row:
        assert n % tp == 0
        return n // tp
    return n


def expected_rank_params(spec: ModelSpec, tp: int, pp: int, stage: int) -> int:
    """The stage's model-level tensors (embeddings first, final norm and head last, the tied
    table on both ends) plus L / P blocks, each as one TP rank holds it."""
    vocab = megatron_vocab(spec.vocab_rows, tp)
    first = ("embed_tokens.", "embed_positions.", "project_in.", "embed_norm.")
    last = ("norm.", "project_out.", "lm_head.")
    if spec.tie_embeddings:
        last += ("embed_tokens.",)
    names = (first if stage == 0 else ()) + (last if stage == pp - 1 else ())
    outer = sum(
        held(t, tp, vocab) for t in model_tensors(spec) if t.name.startswith(tuple(set(names)))
    )
    blocks = sum(
        t.copies * stack.n_layers * held(t, tp, vocab)
        for stack in spec.stacks
        for t in block_tensors(stack)
    )
    assert blocks % pp == 0
    return outer + blocks // pp


def per_gpu(preset: str, plan: ParallelPlan, setup: MemorySetup = SETUP) -> MemoryReport:
    """One GPU's report of the largest stage."""
    return memory_result(load_preset(preset), setup, plan=plan).report


GRID = [
    ("gpt2-small", 1, 1),
    ("gpt2-small", 4, 1),
    ("gpt2-small", 2, 3),
    ("llama-3.1-8b", 8, 4),
    ("llama-3.1-8b", 2, 2),
    ("mixtral-8x7b", 4, 8),
    ("qwen2.5-0.5b", 2, 6),
    ("gpt-oss-20b", 8, 2),
]


@pytest.mark.parametrize(("preset", "tp", "pp"), GRID)
def test_rank_parameters_equal_the_megatron_shards_of_the_tensor_shapes(
    preset: str, tp: int, pp: int
) -> None:
    spec = load_preset(preset).spec
    plan = parallel_plan(None, None, None, None, tp, pp)
    for stage in range(pp):
        tensors = rank_tensors(spec, plan, stage)
        assert sum(t.elements for t in tensors) == expected_rank_params(spec, tp, pp, stage)


def test_llama_3_1_8b_by_hand() -> None:
    """TP 8, PP 4: V = 128,256 pads to 129,024 (126 x 1,024); a layer holds its two RMSNorms
    whole and an eighth of q, k, v, o and the SwiGLU FFN; 32 / 4 = 8 layers a stage."""
    embed = 129_024 // 8 * 4096
    layer = 2 * 4096 + (2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 14336 * 4096) // 8
    assert (embed, layer) == (66_060_288, 27_271_168)
    report = per_gpu("llama-3.1-8b", ParallelPlan(32, tp=8, pp=4, shard_gpus=1))
    assert report.params_total == 8 * layer + embed  # the first stage: 4 micro-batches in flight
    spec = load_preset("llama-3.1-8b").spec
    plan = ParallelPlan(32, tp=8, pp=4, shard_gpus=1)
    assert [sum(t.elements for t in rank_tensors(spec, plan, s)) for s in range(4)] == [
        8 * layer + embed,
        8 * layer,
        8 * layer,
        8 * layer + 4096 + embed,
    ]


@pytest.mark.parametrize("preset", ["gpt2-small", "llama-3.1-8b", "gpt-oss-20b"])
def test_stages_without_tp_add_up_to_the_model(preset: str) -> None:
    """Without TP, the stages hold every tensor once, and a tied table twice."""
    spec = load_preset(preset).spec
    plan = parallel_plan(None, None, None, None, 1, 2)
    stages = sum(t.elements for s in range(2) for t in rank_tensors(spec, plan, s))
    tied = spec.vocab_rows * spec.embed_width if spec.tie_embeddings else 0
    assert stages == total_params(spec) + tied


@pytest.mark.parametrize("preset", ["gpt2-small", "qwen2.5-0.5b", "gemma-3-1b", "mixtral-8x7b"])
@pytest.mark.parametrize("optimizer", ["adamw", "adafactor", "sgd-momentum"])
def test_tp_pp_one_equal_the_plain_figures(preset: str, optimizer: str) -> None:
    setup = memory_setup(train=True, length=256, optimizer=optimizer, attention="eager")
    plain = memory_result(load_preset(preset), setup).report
    one = per_gpu(preset, parallel_plan(None, None, None, None, 1, 1), setup)
    held = (one.held_weights, one.held_gradients, one.held_master_weights)
    assert held == (plain.params_total,) * 3  # the plan states what the plain report implies
    assert replace(one, held_weights=None, held_gradients=None, held_master_weights=None) == plain


def test_activations_divide_as_korthikanti_table_2() -> None:
    """Llama-3.1-8B, s = 2,048, b = 1, h = 4,096, L = 32, a = 32."""
    sbh, L = 2048 * 4096, 32
    plain = per_gpu("llama-3.1-8b", parallel_plan(4, None, None, None, 4, 1))
    assert plain.bytes_activations == L * (10 + 24 // 4) * sbh
    sp = per_gpu("llama-3.1-8b", parallel_plan(4, None, None, None, 4, 1, sp=True))
    assert sp.bytes_activations == L * 34 * sbh // 4
    full = memory_setup(train=True, length=2048, recompute="full")
    assert (
        per_gpu("llama-3.1-8b", parallel_plan(4, None, None, None, 4, 1), full).bytes_activations
        == L * 2 * sbh
    )
    eager = memory_setup(train=True, length=2048, attention="eager")
    scores = per_gpu("llama-3.1-8b", parallel_plan(4, None, None, None, 4, 1), eager)
    assert scores.bytes_attention_scores == L * 5 * 32 * 2048 * 2048 // 4


def test_first_stage_holds_p_micro_batches_under_1f1b() -> None:
    """PP 4: stage s holds min(M, 4 - s) micro-batches of 8 layers; the first is the largest.
    Without TP a layer saves what it saves on one GPU."""
    spec = load_preset("llama-3.1-8b")
    layer = layer_activation_bytes(spec.spec, 1, 2048, "none", "sdpa", "bf16")
    result = memory_result(spec, SETUP, plan=parallel_plan(None, None, None, None, 1, 4))
    assert result.stage == 0
    assert result.report.bytes_activations == 4 * 8 * layer
    assert result.report.elements_logits == 0  # the logits live on the last stage
    two = per_gpu("llama-3.1-8b", parallel_plan(None, None, None, None, 1, 4, micro_batches=2))
    assert two.bytes_activations == 2 * 8 * layer


def test_zero_shards_over_data_parallel_ranks_only() -> None:
    """16 GPUs = DP 2 x TP 4 x PP 2: ZeRO-3 splits each rank's parameters in 2."""
    alone = per_gpu("llama-3.1-8b", parallel_plan(8, None, None, None, 4, 2))
    zero3 = per_gpu("llama-3.1-8b", parallel_plan(16, 3, None, None, 4, 2))
    P = alone.params_total
    assert zero3.bytes_weights == 2 * -(-P // 2)
    assert zero3.bytes_master_weights == 4 * -(-P // 2)
    hybrid = parallel_plan(32, None, "hybrid", 16, 4, 2)
    assert (hybrid.dp, hybrid.shard_gpus) == (4, 2)


def test_vocab_parallel_logits_and_padding() -> None:
    """GPT-2's 50,257 rows pad to 50,432 over TP 2 (Megatron: 175 dummy tokens), 51,200 over
    TP 8; each rank keeps its V / T columns of the logits."""
    args = ["memory", "-p", "gpt2-small", "--train", "-T", "64", "--tp", "2", "-f", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["logits"]["elements"] == 64 * 50_432 // 2
    assert data["parallel"]["tensor_parallel"] == 2 and data["parallel"]["gpus"] == 2
    assert megatron_vocab(50_257, 8) == 51_200


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "llama-3.1-8b", "--tp", "3"], "the 32 attention heads do not divide over 3"),
        (["-p", "qwen2.5-0.5b", "--tp", "7"], "the 2 key/value heads do not divide over 7"),
        (["-p", "llama-3.1-8b", "--pp", "5"], "the 32 layers do not divide over 5"),
        (["-p", "llama-3.1-8b", "--gpus", "12", "--tp", "8"], "--gpus 12 does not divide"),
        (["-p", "llama-3.1-8b", "--sp"], "add --tp"),
        (["-p", "llama-3.1-8b", "--micro-batches", "4"], "add --pp"),
        (["-p", "llama-3.1-8b", "--tp", "0"], "--tp: '0' is not a positive count"),
        (["-p", "deepseek-v3", "--tp", "2"], "mla blocks is not modelled"),
        (["-p", "deepseek-v3", "--pp", "61"], "blocks hold different tensors"),
        (
            [
                "-p",
                "llama-3.1-8b",
                "--gpus",
                "16",
                "--tp",
                "4",
                "--fsdp",
                "hybrid",
                "--node-gpus",
                "2",
            ],
            "does not hold whole groups",
        ),
    ],
)
def test_plans_that_do_not_divide_are_errors(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["memory", *args, "--train", "-T", "64"])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_tp_without_train_serves_and_training_options_need_train() -> None:
    result = runner.invoke(app, ["memory", "-p", "gpt2-small", "--tp", "2"])
    assert result.exit_code == 0 and "as vLLM shards" in result.output
    zero = runner.invoke(app, ["memory", "-p", "gpt2-small", "--tp", "2", "--sp"])
    assert zero.exit_code == 2 and "--sp applies to training; add --train" in zero.output
    with pytest.raises(UsageError, match="--pp must be at least 1"):
        parallel_plan(None, None, None, None, 1, 0)
