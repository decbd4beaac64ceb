"""Under a parallel plan every element count is one GPU's, as its bytes are: each row's bytes are
its elements x the dtype's bytes, and the elements are the rank's shard sums
(tests/test_tensor_pipeline.py) partitioned as ZeRO / FSDP partition them, ceil(. / DP)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from costcalc.cli.app import app
from costcalc.loaders import load_preset
from costcalc.memory import memory_setup
from costcalc.memory_results import MemoryResult, memory_result
from costcalc.parallel import ParallelPlan, parallel_plan
from tests.test_tensor_pipeline import expected_rank_params

runner = CliRunner()
SIZE = {"bf16": 2, "fp16": 2, "fp32": 4, "bf16 + fp32": 6, "fp16 + fp32": 6}
"""Bytes of one element of each training dtype, written out here (the step's gradient partition
is a 16-bit copy and its fp32 cast)."""
SETUP = memory_setup(train=True, length=512)

PLANS: list[tuple[str, dict[str, object]]] = [
    ("gpt2-small", {"gpus": 8}),
    ("gpt2-small", {"gpus": 8, "zero": 1}),
    ("gpt2-small", {"gpus": 8, "zero": 2}),
    ("gpt2-small", {"gpus": 6, "zero": 3}),
    ("gpt2-small", {"gpus": 8, "fsdp": "full"}),
    ("gpt2-small", {"gpus": 8, "fsdp": "grad-op"}),
    ("gpt2-small", {"gpus": 16, "fsdp": "hybrid", "node_gpus": 4}),
    ("llama-3.1-8b", {"gpus": 64, "tp": 8, "pp": 4, "zero": 1}),
    ("llama-3.1-8b", {"gpus": 24, "tp": 2, "pp": 2, "zero": 3}),
    ("qwen2.5-0.5b", {"gpus": 36, "tp": 2, "pp": 6, "zero": 2}),
    ("mixtral-8x7b", {"gpus": 16, "tp": 2, "ep": 4, "zero": 3}),
    ("mixtral-8x7b", {"gpus": 16, "tp": 2, "ep": 4, "fsdp": "grad-op"}),
]


def plan_of(options: dict[str, object]) -> ParallelPlan:
    o: dict = options
    return parallel_plan(
        o["gpus"], o.get("zero"), o.get("fsdp"), o.get("node_gpus"), o.get("tp"), o.get("pp"),
        ep=o.get("ep"),
    )  # fmt: skip


def result_of(preset: str, options: dict[str, object]) -> MemoryResult:
    return memory_result(load_preset(preset), SETUP, plan=plan_of(options))


@pytest.mark.parametrize(("preset", "options"), PLANS)
def test_every_row_is_its_elements_times_its_dtype(preset: str, options: dict) -> None:
    result = result_of(preset, options)
    r = result.report
    for c in result.components():
        if c.key == "optimizer":  # moments in the state dtype, step scalars in fp32
            moments = r.elements_optimizer_moments * SIZE[r.setup.state_dtype]
            assert c.bytes == moments + 4 * r.elements_optimizer_steps
            assert c.elements == r.elements_optimizer_moments + r.elements_optimizer_steps
        elif c.elements is None:  # the activation estimate has bytes only
            assert c.key in ("activations", "attention_scores") and c.dtype is None
        else:
            assert c.dtype is not None
            assert c.bytes == c.elements * SIZE[c.dtype], c.key
    data = result.to_dict()
    for key in ("weights", "gradients", "master_weights", "logits", "gathered_layer"):
        dtype = data[key].get("dtype") or r.setup.dtype  # the gathered layer's: 16-bit
        if key == "master_weights":
            dtype = "fp32"
        assert data[key]["bytes"] == data[key]["elements"] * SIZE[dtype], key
    assert "elements" not in data["activations"] and data["total"]["bytes"] == r.bytes_total


def _partition(preset: str, plan: ParallelPlan, stage: int) -> tuple[int, int]:
    """(the rank's parameters from the tensor shapes, its ceil(. / DP) partition); no experts."""
    spec = load_preset(preset).spec
    P = expected_rank_params(spec, plan.tp, plan.pp, stage)
    return P, -(-P // plan.shard_gpus)


@pytest.mark.parametrize(
    ("preset", "options"), [p for p in PLANS if not {"ep", "zero", "fsdp"} & set(p[1])]
)
def test_elements_are_the_shard_sums_partitioned(preset: str, options: dict) -> None:
    result = result_of(preset, options)
    plan, r = result.plan, result.report
    assert plan is not None
    P, part = _partition(preset, plan, result.stage)
    stage = plan.stage
    assert r.params_total == P
    weights, gradients = (part if stage == 3 else P), (part if stage >= 2 else P)
    masters = part if stage else P
    assert (r.elements_weights, r.elements_gradients, r.elements_master_weights) == (
        weights,
        gradients,
        masters,
    )
    assert r.elements_optimizer_moments == 2 * masters  # AdamW: two moments per element held
    for report, number in zip(result.stages, range(plan.pp), strict=True):  # every stage's own
        own, own_part = _partition(preset, plan, number)
        assert report.elements_master_weights == (own_part if stage else own)


def test_mixtral_experts_partition_by_hand() -> None:
    """16 GPUs = DP 8 x TP 2, EP 4 (tests/test_expert_parallel.py): 803,475,456 parameters
    over 8 GPUs and 5,637,144,576 expert parameters over 2, per GPU."""
    part = -(-803_475_456 // 8) + -(-5_637_144_576 // 2)
    assert part == 2_919_006_720
    zero3 = result_of("mixtral-8x7b", {"gpus": 16, "tp": 2, "ep": 4, "zero": 3}).report
    assert (zero3.elements_weights, zero3.elements_gradients) == (part, part)
    assert zero3.elements_master_weights == part
    assert zero3.elements_optimizer_moments == 2 * part
    grad_op = result_of("mixtral-8x7b", {"gpus": 16, "tp": 2, "ep": 4, "fsdp": "grad-op"}).report
    assert (grad_op.elements_weights, grad_op.elements_gradients) == (6_440_620_032, part)


def test_gathered_layer_is_the_largest_module_twice() -> None:
    """GPT-2's largest module is its 50,257 x 768 token table: params and grads, whole."""
    report = result_of("gpt2-small", {"gpus": 8, "zero": 3}).report
    assert report.elements_gathered == 2 * 50257 * 768
    assert result_of("gpt2-small", {"gpus": 8, "zero": 2}).report.elements_gathered == 0


def test_cli_table_and_json_show_one_gpus_elements() -> None:
    """Llama-3.1-8B on 8 GPUs, ZeRO-3: 8,030,261,248 parameters, 1,003,782,656 per GPU."""
    args = ["memory", "-p", "llama-3.1-8b", "--train", "-T", "4096", "--gpus", "8", "--zero", "3"]
    table = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    rows: dict[str, str] = {}  # the first table's label and elements columns
    for line in table.stdout.splitlines():
        if line.startswith("│"):
            cells = [cell.strip() for cell in line.split("│")]
            rows.setdefault(cells[1], cells[2])
    assert rows["weights"] == rows["gradients"] == rows["master weights"] == "1,003,782,656"
    assert rows["optimizer (adamw)"] == f"{2 * 1_003_782_656 + 1:,}"  # + 1 step: one sub-group
    assert rows["gathered layer (params + grads)"] == f"{2 * 128_256 * 4096:,}"
    assert rows["activations"] == ""
    assert "8,030,261,248" not in table.stdout
    assert "activations, tensors of several dtypes, are shown in bytes only" in table.stdout
    data = json.loads(runner.invoke(app, [*args, "-f", "json"]).stdout)
    assert data["parameters"] == 8_030_261_248
    for key, size in (("weights", 2), ("gradients", 2), ("master_weights", 4)):
        assert data[key]["elements"] == 1_003_782_656
        assert data[key]["bytes"] == size * 1_003_782_656
    assert data["optimizer"]["moment_elements"] == 2 * 1_003_782_656
    assert data["gathered_layer"] == {"elements": 2 * 128_256 * 4096, "bytes": 4 * 128_256 * 4096}
