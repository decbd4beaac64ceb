"""LoRA and QLoRA on many GPUs: FSDP2 against torch's ``fully_shard`` with peft and
bitsandbytes run on the CPU (tests/golden/fsdp2_lora.json, tests/reference/fsdp2_lora.py);
DeepSpeed's ZeRO against its engine (tests/golden/deepspeed_engine.json, the LoRA runs); the
CLI's per-GPU table and its refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

import costcalc
from costcalc.cli.app import app
from costcalc.errors import UsageError
from costcalc.lora import family_names, lora_config, lora_report
from costcalc.lora_memory import LoraMemory, lora_memory, lora_training
from costcalc.lora_parallel import lora_rank_memory, packed_rows
from costcalc.parallel import parallel_plan
from costcalc.quant import nf4_bytes
from tests.conftest import ROOT

FSDP = json.loads((ROOT / "tests" / "golden" / "fsdp2_lora.json").read_text())
ENGINE = json.loads((ROOT / "tests" / "golden" / "deepspeed_engine.json").read_text())
runner = CliRunner()


def per_gpu(
    config: dict[str, Any],
    targets: list[str],
    rank: int,
    base: str,
    plan: tuple[int, int | None, str | None],
    adapter_dtype: str = "fp32",
) -> LoraMemory:
    model = costcalc.load(config)
    names = family_names(model.family)
    report = lora_report(
        model.spec, model.family, lora_config(rank, targets, [], "none", [], False)
    )
    training = lora_training(base, None, adapter_dtype, "adamw", 1, 16, "none", "sdpa")
    memory = lora_memory(model.spec, names, report, training)
    return lora_rank_memory(model.spec, names, report, memory, parallel_plan(*plan, None))


@pytest.mark.parametrize(
    "record", FSDP["records"], ids=lambda r: f"{r['case']}-{r['world_size']}gpus-rank{r['rank']}"
)
def test_fsdp_shards_as_fully_shard_with_peft_and_bitsandbytes(record: dict[str, Any]) -> None:
    case = FSDP["cases"][record["case"]]
    targets = case["targets"] if isinstance(case["targets"], list) else [case["targets"]]
    ours = per_gpu(
        FSDP["config"],
        targets,
        case["rank"],
        case["base_dtype"],
        (record["world_size"], None, "full"),
    )
    assert record["frozen_bytes"] + record["quant_state_bytes"] == (
        ours.bytes_quantized + ours.bytes_frozen_float
    )
    assert record["trainable_dtype"] == "float32"
    assert (record["trainable_bytes"], record["grad_bytes"]) == (
        ours.bytes_adapters,
        ours.bytes_gradients,
    )
    steps = ours.elements_optimizer - 2 * ours.elements_trainable
    assert steps == record["step_tensors"]
    moments = ours.bytes_optimizer - 4 * steps
    assert (
        moments == record["moment_bytes"]
        if record["rank"] == 0
        else moments >= record["moment_bytes"]
    )


def test_the_quantization_state_stays_whole_on_every_gpu() -> None:
    """A 72 x 72 q_proj: 5,184 values, 2,592 packed bytes, 1,296 bf16 rows; its absmax,
    nested scale and offset (89 bytes) on both GPUs."""
    assert packed_rows(72 * 72) == 1296
    assert nf4_bytes(72 * 72, True) - 2592 == 81 + 4 + 4
    qlora = [r for r in FSDP["records"] if r["case"] == "qlora"]
    assert len({r["quant_state_bytes"] for r in qlora}) == 1


LORA_ENGINE = [r for r in ENGINE["records"] if r.get("lora")]


@pytest.mark.parametrize(
    "record", LORA_ENGINE, ids=lambda r: f"zero{r['stage']}-{r['world_size']}gpus-rank{r['rank']}"
)
def test_zero_over_the_adapters_as_deepspeed_allocates(record: dict[str, Any]) -> None:
    lora = ENGINE["lora"]
    ours = per_gpu(
        ENGINE["config"], lora["target_modules"], lora["r"], "bf16",
        (record["world_size"], record["stage"], None), adapter_dtype="bf16",
    )  # fmt: skip
    backward, step = record["after_backward"], record["in_step"]
    if record["stage"] < 3:
        assert backward["frozen_param:bfloat16"] == ours.bytes_frozen_float
        assert backward["param:bfloat16"] == ours.bytes_adapters
        assert backward["single_partition_of_fp32_groups[]:float32"] == ours.bytes_masters
        fp32_grad = step["single_partition_of_fp32_groups[].grad:float32"]
    else:
        assert backward["frozen_param:bfloat16"] + backward.get("param:bfloat16", 0) == (
            ours.bytes_persistent
        )
        assert backward["param.ds_tensor:bfloat16"] == ours.bytes_frozen_float + ours.bytes_adapters
        assert backward["grad_partitions_flat_buffer:bfloat16"] == ours.bytes_gradients
        assert backward["fp32_partitioned_groups_flat[]:float32"] == ours.bytes_masters
        assert backward["ipg_buckets[].buffer:bfloat16"] == ours.bytes_bucket
        fp32_grad = step["fp32_partitioned_groups_flat[].grad:float32"]
    moments = sum(v for k, v in backward.items() if k.startswith("base_optimizer.state[]"))
    assert moments == ours.bytes_optimizer
    assert fp32_grad == 4 * ours.elements_step_buffer


def test_qlora_of_llama_70b_on_two_a100s_answers_per_gpu() -> None:
    args = [
        "lora", "-p", "llama-3.1-70b", "-t", "all-linear", "-r", "16", "--train",
        "--base-dtype", "nf4", "-T", "2048", "--recompute", "full", "--fsdp", "full",
        "--gpus", "2", "--gpu", "a100-80gb",
    ]  # fmt: skip
    table = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    words = " ".join(table.stdout.split())
    assert "Memory per GPU of LoRA training on llama-3.1-70b" in words
    assert "2 GPUs, FSDP full shard" in words and "(bnb_4bit_quant_storage)" in words
    data = json.loads(runner.invoke(app, [*args, "-f", "json"]).stdout)["memory"]
    assert data["parallel"]["per_gpu"] and data["parallel"]["shard_gpus"] == 2
    one = json.loads(runner.invoke(app, [*args[:-6], "-f", "json"]).stdout)["memory"]
    assert data["quantized_weights"]["bytes"] < one["quantized_weights"]["bytes"]
    assert data["total"]["bytes"] == data["fits"]["capacity_bytes"] - data["fits"]["headroom_bytes"]


def test_llama_70b_preset_counts_the_published_parameters() -> None:
    """meta-llama/Llama-3.1-70B's model.safetensors.index.json: total_size 141,107,412,992
    bytes of bf16, 70,553,706,496 parameters."""
    assert costcalc.count("llama-3.1-70b").parameters.total == 141_107_412_992 // 2


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--base-dtype", "int8", "--fsdp", "full"], "LLM.int8"),
        (["--base-dtype", "nf4", "--zero", "3"], "ZeRO-3"),
        (["--zero", "2", "--adapter-dtype", "fp32"], "casts every float parameter"),
        (["--fsdp", "full", "--bias", "lora_only"], "lora_only"),
        (["--zero", "2", "--fsdp", "full"], "give one"),
    ],
)
def test_plans_that_are_not_modelled_are_refused(extra: list[str], message: str) -> None:
    args = ["lora", "-p", "qwen2.5-0.5b", "-t", "q_proj", "--train", "-T", "64", "--gpus", "2"]
    result = runner.invoke(app, [*args, *extra])
    assert result.exit_code == 2 and message in result.output, result.output


def test_parallel_options_need_train() -> None:
    result = runner.invoke(app, ["lora", "-p", "gpt2-small", "-t", "c_attn", "--gpus", "2"])
    assert result.exit_code == 2 and "add --train" in result.output


def test_ddp_is_one_gpus_memory_on_each() -> None:
    config = FSDP["config"]
    ddp = per_gpu(config, ["q_proj"], 8, "bf16", (4, None, None))
    model = costcalc.load(config)
    report = lora_report(
        model.spec, model.family, lora_config(8, ["q_proj"], [], "none", [], False)
    )
    training = lora_training("bf16", None, "fp32", "adamw", 1, 16, "none", "sdpa")
    one = lora_memory(model.spec, family_names(model.family), report, training)
    assert ddp.bytes_total == one.bytes_total and ddp.plan is not None


def test_grad_op_holds_the_whole_base_beside_its_shards() -> None:
    deep = {**FSDP["config"], "num_hidden_layers": 8}  # more layers than FSDP holds at once
    full = per_gpu(deep, ["q_proj"], 8, "nf4", (2, None, "full"))
    grad_op = per_gpu(deep, ["q_proj"], 8, "nf4", (2, None, "grad-op"))
    assert grad_op.bytes_gathered > full.bytes_gathered
    assert grad_op.bytes_quantized == full.bytes_quantized


def test_tensor_parallel_lora_is_refused() -> None:
    model = costcalc.load(FSDP["config"])
    names = family_names(model.family)
    report = lora_report(
        model.spec, model.family, lora_config(8, ["q_proj"], [], "none", [], False)
    )
    training = lora_training("bf16", None, "fp32", "adamw", 1, 16, "none", "sdpa")
    memory = lora_memory(model.spec, names, report, training)
    with pytest.raises(UsageError, match="not modelled"):
        lora_rank_memory(model.spec, names, report, memory, parallel_plan(4, None, None, None, 2))


@pytest.mark.parametrize(
    "record",
    [r for r in FSDP["records"] if r["rank"] == 0],
    ids=lambda r: f"{r['case']}-{r['world_size']}gpus",
)
def test_the_backward_holds_what_fully_shard_unshards(record: dict[str, Any]) -> None:
    """In a layer's backward: the root's and two layers' unsharded parameters as stored (the
    running one and the prefetched one: 4-bit weights as padded bf16 rows, fp32 adapters),
    and, by the end of that layer's backward, all of its adapters' gradients."""
    case = FSDP["cases"][record["case"]]
    targets = case["targets"] if isinstance(case["targets"], list) else [case["targets"]]
    args = (FSDP["config"], targets, case["rank"], case["base_dtype"])
    ours = per_gpu(*args, (record["world_size"], None, "full"))
    one = per_gpu(*args, (1, None, None))
    units = next(m["units"] for m in record["in_backward"] if m["layer"] > 0)
    layer_grads = one.bytes_adapters // FSDP["config"]["num_hidden_layers"]
    assert ours.bytes_gathered == sum(u["params"] for u in units) + layer_grads
    assert sum(u["grads"] for u in units) <= layer_grads
