"""ZeRO as DeepSpeed's engine allocates it, against the engine itself: each rank's tensors after a
real backward and inside a real step of DeepSpeed 0.19.8 on the CPU (tests/golden/
deepspeed_engine.json, from tests/reference/deepspeed_engine.py; a tiny Llama, 2 and 4 ranks,
stages 1-3 at DeepSpeed's defaults)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import costcalc
from costcalc.memory import MemoryReport
from costcalc.parallel import ordered_sizes, parallel_plan
from costcalc.zero import ShardGroup, flat_partition
from tests.conftest import ROOT

GOLDEN = json.loads((ROOT / "tests" / "golden" / "deepspeed_engine.json").read_text())
RECORDS = [r for r in GOLDEN["records"] if not r["lora"]]
SCALARS = 100
"""DeepSpeed's own fp32 scalars (loss scale, norms) that no model term holds: under 100 bytes."""


def report(stage: int, world: int) -> MemoryReport:
    result = costcalc.count_memory(GOLDEN["config"], train=True, length=16, gpus=world, zero=stage)
    return result.report


def test_the_parameters_are_laid_out_as_transformers_registers_them() -> None:
    spec = costcalc.load(GOLDEN["config"]).spec
    ours = [t.elements for t in ordered_sizes(spec, parallel_plan(2, 2, None, None), 0)]
    assert ours == [size for _, size in GOLDEN["tensors"]]


def phases(record: dict[str, Any]) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    return record["after_backward"], record["in_step"], record["after_step"]


@pytest.mark.parametrize(
    "record",
    [r for r in RECORDS if r["stage"] < 3],
    ids=lambda r: f"zero{r['stage']}-{r['world_size']}gpus-rank{r['rank']}",
)
def test_stages_1_and_2_per_rank(record: dict[str, Any]) -> None:
    ours = report(record["stage"], record["world_size"])
    backward, step, after = phases(record)
    for phase in (backward, step, after):
        assert phase["param:bfloat16"] == ours.bytes_weights
        assert phase["single_partition_of_fp32_groups[]:float32"] == ours.bytes_master_weights
        moments = [v for k, v in phase.items() if k.startswith("base_optimizer.state[]")]
        assert sum(moments) == ours.bytes_optimizer
    assert backward["averaged_gradients[][]:bfloat16"] <= ours.bytes_gradients
    assert "averaged_gradients[][]:bfloat16" not in step  # freed before the base step
    assert step["single_partition_of_fp32_groups[].grad:float32"] == 4 * ours.elements_step_buffer
    for phase in (backward, step, after):
        rest = {k: v for k, v in phase.items() if k.startswith(("other:", "_global"))}
        assert sum(rest.values()) < SCALARS, rest


@pytest.mark.parametrize("stage", [1, 2])
@pytest.mark.parametrize("world", [2, 4])
def test_the_rank_holding_most_gradients_is_the_one_shown(stage: int, world: int) -> None:
    held = [
        r["after_backward"]["averaged_gradients[][]:bfloat16"]
        for r in RECORDS
        if (r["stage"], r["world_size"]) == (stage, world)
    ]
    assert len(held) == world and max(held) == report(stage, world).bytes_gradients
    sizes = tuple(size for _, size in GOLDEN["tensors"])
    p = flat_partition(ShardGroup(sizes, world))
    assert report(stage, world).elements_master_weights == p
    assert sum(sizes) == costcalc.count(GOLDEN["config"]).parameters.total


@pytest.mark.parametrize(
    "record",
    [r for r in RECORDS if r["stage"] == 3],
    ids=lambda r: f"zero3-{r['world_size']}gpus-rank{r['rank']}",
)
def test_stage_3_per_rank(record: dict[str, Any]) -> None:
    ours = report(3, record["world_size"])
    backward, step, after = phases(record)
    for phase in (backward, step, after):
        assert phase["param.ds_tensor:bfloat16"] == ours.bytes_weights
        assert phase["grad_partitions_flat_buffer:bfloat16"] == ours.bytes_gradients
        assert phase["fp32_partitioned_groups_flat[]:float32"] == ours.bytes_master_weights
        assert phase["ipg_buckets[].buffer:bfloat16"] == ours.bytes_bucket and ours.bucket_held
        moments = [v for k, v in phase.items() if k.startswith("base_optimizer.state[]")]
        assert sum(moments) == ours.bytes_optimizer
    for phase in (backward, after):
        assert phase["param:bfloat16"] == ours.bytes_persistent > 0
    assert "param:bfloat16" not in step  # the small whole parameters are partitioned for it
    assert step["fp32_partitioned_groups_flat[].grad:float32"] == 4 * ours.elements_step_buffer
