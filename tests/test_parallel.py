"""Per-GPU training memory under data parallelism: DeepSpeed's own estimators reproduced
exactly beside costcalc's figure (tests/golden/deepspeed_zero.json, from
tests/reference/deepspeed_zero.py), and the FSDP plans.

DeepSpeed's GPU figure without offload is 2P + int(18P / N) for stage 2 and 4 x largest layer +
int(18P / N) for stage 3; costcalc counts what the engine allocates (tests/test_deepspeed_engine.py
checks it against the engine itself), and shows the estimator's figure and the difference in
its JSON (``deepspeed.estimator``) and notes.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from costcalc.cli.app import app
from costcalc.errors import UsageError
from costcalc.loaders import load_preset
from costcalc.memory import MemoryReport, memory_setup
from costcalc.memory_results import memory_result, model_state_bytes
from costcalc.parallel import largest_module, parallel_plan, shard
from costcalc.params import total_params
from costcalc.tensors import parameter_tensors
from costcalc.zero import deepspeed_estimate
from tests.conftest import ROOT

GOLDEN = json.loads((ROOT / "tests" / "golden" / "deepspeed_zero.json").read_text())["cases"]
SETUP = memory_setup(train=True, length=16)  # bf16, AdamW, fp32 masters: DeepSpeed's 18 bytes
runner = CliRunner()


def per_gpu(preset: str, gpus: int, **plan: object) -> MemoryReport:
    model = load_preset(preset)
    dp = parallel_plan(gpus, plan.get("zero"), plan.get("fsdp"), plan.get("node_gpus"))  # type: ignore[arg-type]
    return memory_result(model, SETUP, plan=dp).report


@pytest.mark.parametrize(
    "case", GOLDEN, ids=lambda c: f"{c['model']}-{c['num_gpus_per_node']}x{c['num_nodes']}"
)
def test_deepspeed_estimator_reproduced_beside_costcalc(case: dict) -> None:
    spec = load_preset(case["model"]).spec
    P, N = case["total_params"], case["num_gpus_per_node"] * case["num_nodes"]
    assert total_params(spec) == P
    assert largest_module(parameter_tensors(spec)) == case["largest_layer_params"]
    for stage in (2, 3):
        theirs = case[f"zero{stage}"]["gpu_bytes"]
        assert deepspeed_estimate(P, case["largest_layer_params"], N, stage) == theirs
        args = ["memory", "-p", case["model"], "--train", "-T", "16", "--gpus", str(N)]
        result = runner.invoke(app, [*args, "--zero", str(stage), "-f", "json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)["deepspeed"]
        report = per_gpu(case["model"], N, zero=stage)
        assert data["estimator"]["bytes"] == theirs
        assert data["model_states_bytes"] == model_state_bytes(report)
        assert data["estimator"]["difference_bytes"] == model_state_bytes(report) - theirs
    assert case["zero3"]["largest_layer_bytes"] == per_gpu(case["model"], N, zero=3).bytes_gathered


def test_zero_stages_hold_what_deepspeed_allocates() -> None:
    """GPT-2 small on 8 GPUs: one flat buffer of P padded to a multiple of 16 (P is), 1 / 8 of
    it for the fp32 masters and moments, one AdamW step per group; stage 3 per parameter."""
    P = 124_439_808
    p = P // 8
    z1, z2, z3 = (per_gpu("gpt2-small", 8, zero=s) for s in (1, 2, 3))
    for z in (z1, z2):
        assert (z.bytes_weights, z.bytes_master_weights) == (2 * P, 4 * p)
        assert z.bytes_optimizer == 8 * p + 4 and z.elements_optimizer_steps == 1
        assert z.bytes_step_buffer == 6 * p and (z.bytes_bucket, z.bucket_held) == (10**9, False)
        assert p <= z.elements_gradients < p + 50257 * 768  # whole parameters its share touches
    assert z1 == z2
    parts = sum(
        t.copies * -(-t.elements // t.copies // 8)
        for t in parameter_tensors(load_preset("gpt2-small").spec)
    )
    assert (z3.bytes_weights, z3.bytes_gradients, z3.bytes_master_weights) == (
        2 * parts,
        2 * parts,
        4 * parts,
    )
    assert z3.bucket_held and z3.bytes_gathered == 4 * 50257 * 768
    plain = per_gpu("gpt2-small", 8)
    assert (plain.bytes_weights, plain.bytes_gradients, plain.bytes_master_weights) == (
        2 * P,
        2 * P,
        4 * P,
    )
    assert plain.bytes_step_buffer == plain.bytes_bucket == 0


def test_the_step_and_the_backward_are_not_added() -> None:
    """The fp32 gradient partition exists in the step, the activations and bucket in the
    backward: the total is the held states plus the larger of the two."""
    z2 = per_gpu("gpt2-small", 8, zero=2)
    assert z2.bytes_total == z2.bytes_held + max(z2.bytes_backward, z2.bytes_step_buffer)
    assert z2.bytes_backward == (
        z2.bytes_activations + z2.bytes_logits + z2.bytes_logits_fp32 + z2.bytes_bucket
    )


def test_fsdp_modes_shard_as_fully_shard() -> None:
    """FSDP2 on 8 GPUs: each parameter's rows padded to a multiple of 8 (GPT-2's 50,257-row
    table to 6,283 per GPU), fp32 shards under mixed precision, no separate masters."""
    spec = load_preset("gpt2-small").spec
    c = sum(t.copies * -(-t.shape[0] // 8) * (t.elements // t.copies // t.shape[0])
            for t in parameter_tensors(spec))  # fmt: skip
    assert c > shard(124_439_808, 8)
    full, grad_op = per_gpu("gpt2-small", 8, fsdp="full"), per_gpu("gpt2-small", 8, fsdp="grad-op")
    assert (full.bytes_weights, full.bytes_gradients, full.bytes_master_weights) == (
        4 * c,
        4 * c,
        0,
    )
    assert full.bytes_optimizer == 8 * c + 4 * 148
    # unsharded in the backward: the root (tables padded to 6,283 x 8 rows, final norm), the
    # final norm's gradients (the tied head's only at the end), 2 layers and one's gradients
    root, layer = (50264 + 1024) * 768 + 2 * 768, 12 * 768**2 + 13 * 768
    assert full.bytes_gathered == 2 * (root + 2 * 768 + 2 * layer + layer)
    assert (grad_op.bytes_weights, grad_op.bytes_gradients) == (2 * 124_439_808, 4 * c)
    assert grad_op.bytes_master_weights == 4 * c  # the fp32 shards beside the whole 16-bit params
    assert full.bytes_step_buffer == full.bytes_bucket == 0
    # hybrid: full shard within a node of 4, replicated over the 4 nodes
    hybrid = per_gpu("gpt2-small", 16, fsdp="hybrid", node_gpus=4)
    assert hybrid == per_gpu("gpt2-small", 4, fsdp="full")


def test_zero_refuses_16_bit_training_without_masters() -> None:
    args = ["memory", "-p", "gpt2-small", "--train", "-T", "16", "--gpus", "2", "--zero", "1"]
    result = runner.invoke(app, [*args, "--no-mixed-precision"])
    assert result.exit_code == 2 and "fp32 master" in result.output
    fp32 = runner.invoke(app, [*args, "--dtype", "fp32", "-f", "json"])
    data = json.loads(fp32.stdout)
    p = -(-124_439_808 // 4) * 4 // 2
    assert data["master_weights"]["bytes"] == 4 * p  # DeepSpeed clones the fp32 partition
    assert data["deepspeed"]["gradient_partition_step"]["bytes"] == 4 * p  # flattened, no cast


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((6, None, "hybrid", 4), "6 GPUs do not divide into nodes of 4"),
        ((8, None, "hybrid", None), "give --node-gpus"),
        ((8, 2, "full", None), "give one"),
        ((8, 4, None, None), "unknown ZeRO stage 4"),
        ((0, 1, None, None), "at least 1"),
        ((8, None, "sharded", None), "unknown FSDP sharding"),
    ],
)
def test_plans_that_do_not_hold_are_errors(args: tuple, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parallel_plan(*args)


def test_cli_per_gpu_json_and_errors() -> None:
    args = ["memory", "-p", "gpt2-small", "--train", "-T", "64", "--gpus", "8", "--zero", "2"]
    result = runner.invoke(app, [*args, "-f", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["parallel"].pop("activation_formula") == data["activations"]["formula"]
    assert data["parallel"] == {
        "gpus": 8,
        "zero_stage": 2,
        "fsdp": None,
        "shard_gpus": 8,
        "data_parallel": 8,
        "tensor_parallel": 1,
        "pipeline_parallel": 1,
        "sequence_parallel": False,
        "expert_parallel": 1,
        "context_parallel": 1,
        "micro_batches": 1,
        "pipeline_stage": 0,
        "per_gpu": True,
    }
    assert data["gradients"]["bytes"] == data["gradients"]["elements"] * 2
    inference = runner.invoke(app, ["memory", "-p", "gpt2-small", "--gpus", "2", "--zero", "1"])
    assert inference.exit_code == 2 and "add --train" in inference.output
    factored = runner.invoke(app, [*args, "--optimizer", "adafactor"])
    assert factored.exit_code == 2 and "factored" in factored.output


@pytest.mark.parametrize(
    "fixture", ["doge-defaults", "dory-defaults", "llama-3.2-11b-vision-instruct"]
)
def test_tensors_owned_by_the_block_itself_shard(fixture: str) -> None:
    """Doge's and Dory's residual scales and Llama 3.2 Vision's cross-attention gates are named
    without a module; every parallel plan holds them whole on each rank."""
    path = str(ROOT / "tests" / "fixtures" / "hf" / f"{fixture}.json")
    held = {}
    for name, extra in (("ddp", []), ("zero3", ["--zero", "3"]), ("tp2", ["--tp", "2"])):
        args = ["memory", "-c", path, "--train", "-T", "16", "--gpus", "2", *extra, "-f", "json"]
        result = runner.invoke(app, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        held[name] = data["weights"]["elements"], data["parameters"], data["parameter_tensors"]
    weights, total, tensors = held["ddp"]
    assert weights == total  # every rank holds every parameter
    # ZeRO-3: half of each parameter, an odd one padded by one element
    assert total // 2 <= held["zero3"][0] <= total // 2 + tensors
    assert total // 2 < held["tp2"][0] < total  # norms, scales and gates whole on each rank
