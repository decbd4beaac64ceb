"""FSDP2 against torch's ``fully_shard`` itself: each rank's sharded parameters, gradients and
AdamW state after one real step on the CPU (tests/golden/fsdp2_shards.json, from
tests/reference/fsdp2_shards.py; torch 2.13, gloo, 2 and 4 ranks, tiny Llama and Qwen2)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import costcalc
from costcalc.memory import MemoryReport
from costcalc.parallel import fsdp_unsharded, parallel_plan
from tests.conftest import ROOT

GOLDEN = json.loads((ROOT / "tests" / "golden" / "fsdp2_shards.json").read_text())


def report(model: str, world: int) -> MemoryReport:
    config = GOLDEN["configs"][model]
    return costcalc.count_memory(config, train=True, length=16, gpus=world, fsdp="full").report


def padded(model: str, world: int) -> int:
    """ceil(d0 / N) rows of every parameter, from the shapes torch reported."""
    total = 0
    for _, shape in GOLDEN["tensors"][model]:
        rest = 1
        for size in shape[1:]:
            rest *= size
        total += -(-shape[0] // world) * rest
    return total


@pytest.mark.parametrize(
    "record",
    GOLDEN["records"],
    ids=lambda r: f"{r['model']}-{r['world_size']}gpus-rank{r['rank']}",
)
def test_each_rank_holds_what_fully_shard_allocates(record: dict[str, Any]) -> None:
    ours = report(record["model"], record["world_size"])
    assert record["padded_shard_elements"] == padded(record["model"], record["world_size"])
    assert ours.elements_weights == ours.elements_gradients == record["padded_shard_elements"]
    assert record["param_dtype"] == "float32" and ours.bytes_master_weights == 0
    assert (ours.bytes_weights, ours.bytes_gradients) == (
        record["param_bytes"],
        record["grad_bytes"],
    )
    moments = ours.bytes_optimizer - 4 * ours.elements_optimizer_steps
    assert ours.elements_optimizer_steps == record["step_tensors"]
    if record["rank"] == 0:  # the first chunk is always whole: rank 0 holds the most
        assert moments == record["moment_bytes"]
    else:
        assert record["moment_bytes"] <= moments


def test_the_padding_is_per_parameter_not_of_the_whole() -> None:
    """Tiny Llama on 4 ranks: the table's 2,003 rows pad to 501 per rank; a flat ceil(P / 4)
    would be smaller."""
    spec_total = costcalc.count(GOLDEN["configs"]["tiny-llama"]).parameters.total
    assert report("tiny-llama", 4).elements_weights > -(-spec_total // 4)


@pytest.mark.parametrize(
    "record",
    [r for r in GOLDEN["records"] if r["rank"] == 0],
    ids=lambda r: f"{r['model']}-{r['world_size']}gpus",
)
def test_the_backward_holds_what_fully_shard_unshards(record: dict[str, Any]) -> None:
    """In each layer's backward: the root's padded parameters and its last tensors'
    gradients, the running layer's and the prefetched layer's padded parameters, part of the
    running layer's gradients (costcalc counts all of them, held before its reduce-scatter)."""
    spec = costcalc.load(GOLDEN["configs"][record["model"]]).spec
    u = fsdp_unsharded(spec, parallel_plan(record["world_size"], None, "full", None), 0)
    for moment in record["in_backward"]:
        root, *layers = moment["units"]
        assert root["unit"] == 0 and (root["params"], root["grads"]) == (
            2 * u.root,
            2 * u.root_grads,
        )
        assert all(layer["params"] == 2 * u.layer for layer in layers)
        assert len(layers) == (u.layers if moment["layer"] > 0 else 1)  # nothing before layer 0
        assert 0 < sum(layer["grads"] for layer in layers) <= 2 * u.layer_grads
    gathered = report(record["model"], record["world_size"]).bytes_gathered
    assert gathered == 2 * u.elements
