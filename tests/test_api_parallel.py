"""count_memory with a parallel plan and gpu=: the same figures as `costcalc memory`."""

from __future__ import annotations

import json

import pytest

import costcalc
from costcalc.errors import UsageError
from tests.conftest import Invoke


def test_parallel_plan_equals_the_cli(cli: Invoke) -> None:
    result = costcalc.count_memory(
        "llama-3.1-8b", train=True, length=4096, gpus=16, tp=2, pp=4, zero=1, gpu="h100-sxm"
    )
    args = ["memory", "-p", "llama-3.1-8b", "--train", "-T", "4096", "--gpus", "16"]
    args += ["--tp", "2", "--pp", "4", "--zero", "1", "--gpu", "h100-sxm", "-f", "json"]
    assert result.to_dict() == json.loads(cli(*args).stdout)
    assert result.capacity == 85_045_477_376 - 512 * 2**20 and result.plan is not None
    assert (result.plan.dp, result.plan.tp, result.plan.pp, result.plan.stage) == (2, 2, 4, 1)
    assert len(result.stages) == 4


def test_expert_parallel_and_fsdp() -> None:
    moe = costcalc.count_memory("mixtral-8x7b", train=True, length=1024, tp=2, ep=4)
    assert moe.report.params_total == 6_440_620_032  # as tests/test_expert_parallel.py by hand
    hybrid = costcalc.count_memory(
        "gpt2-small", train=True, length=64, gpus=8, fsdp="hybrid", node_gpus=4
    )
    assert hybrid.plan is not None and hybrid.plan.shard_gpus == 4


def test_bad_plans_raise_the_cli_errors() -> None:
    """The CLI's errors, naming the API's parameters (``train=True`` for ``--train``)."""
    with pytest.raises(UsageError, match="add train=True"):
        costcalc.count_memory("gpt2-small", gpus=2, zero=1)
    with pytest.raises(UsageError, match=r"^tp=5: the 12 attention heads do not divide"):
        costcalc.count_memory("gpt2-small", train=True, length=8, tp=5)
    with pytest.raises(UsageError, match=r"^zero= and fsdp= are two ways"):
        costcalc.count_memory("gpt2-small", train=True, length=8, gpus=2, zero=1, fsdp="full")
    with pytest.raises(UsageError, match="not both"):
        costcalc.count_memory("gpt2-small", fits=10**9, gpu="l4")
    with pytest.raises(UsageError, match="not both"):
        costcalc.count_memory("gpt2-small", fits="1GB", gpu="l4")
    with pytest.raises(UsageError, match="unknown GPU"):
        costcalc.count_memory("gpt2-small", gpu="h1000")
    # nvidia-smi's 23,034 MiB for an L4, less CUDA's view of it (23,570,219,008) + 512 MiB
    assert costcalc.count_memory("gpt2-small", gpu="l4").capacity == 23_570_219_008 - 2**29
    assert costcalc.count_memory("gpt2-small", gpu="l4", reserve=0).capacity == 23_034 * 2**20
