"""Per-GPU training memory under data parallelism: plain replicas (DDP), DeepSpeed ZeRO stages
1-3, and PyTorch FSDP (full shard, shard grad op, hybrid shard within a node).

Partitioning (Rajbhandari et al. 2020, ZeRO; DeepSpeed's stage_1_and_2.py and stage3.py):
stage 1 shards the optimizer state, stage 2 also the gradients, stage 3 also the parameters.
Mixed precision's fp32 master weights count as optimizer state, as in DeepSpeed, so stage 1
shards them. Each of N ranks holds ceil(X / N) elements of a sharded tensor of X elements (the
flat buffer padded to a multiple of N). Stage 3 also holds, while a layer runs, that layer's
whole 16-bit parameters and gradients: 2 + 2 bytes x the largest module's own parameters
(DeepSpeed's ``largest_layer_memory = 4 * largest_layer_params``).

FSDP shards the same states: ``full`` (FULL_SHARD) as stage 3, ``grad-op`` (SHARD_GRAD_OP) as
stage 2, ``hybrid`` (HYBRID_SHARD) as stage 3 within a node of G GPUs, replicated across nodes.

Against DeepSpeed's estimators without offload (2P + 18P/N for stage 2, 4 x largest layer +
18P/N for stage 3; tests/test_parallel.py): costcalc does not count the fp32 copy of the gradient
partition DeepSpeed makes for its optimizer step (stage 2: 4 bytes per sharded element; stage 3:
its 18 bytes against costcalc's 2 + 2 + 4 + 8 = 16), and counts the padded partition ceil(P/N)
where DeepSpeed truncates 18P/N. DeepSpeed's CPU figure (per node, times its
``additional_buffer_factor`` 1.5) is host memory and not reproduced. Communication buckets and
allocator fragmentation are not counted. Activations and logits
are per GPU already: ``--batch`` is the micro-batch each rank runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from costcalc.errors import UsageError, check_choice
from costcalc.memory import MASTER_DTYPE, MemoryReport, optimizer_moment_elements
from costcalc.spec import ModelSpec
from costcalc.tensors import elements, parameter_tensors
from costcalc.units import dtype_bytes

ZERO_STAGES: tuple[int, ...] = (0, 1, 2, 3)
FSDP_MODES: tuple[str, ...] = ("full", "grad-op", "hybrid")
FSDP_STAGE: dict[str, int] = {"full": 3, "grad-op": 2, "hybrid": 3}
"""The ZeRO stage whose partitioning each FSDP sharding strategy matches."""
SHARDABLE_OPTIMIZERS: tuple[str, ...] = ("adamw", "sgd", "sgd-momentum")
"""Optimizers whose state is per element, so a flat partition of it exists (Adafactor's
factored rows and columns have none)."""


@dataclass(frozen=True)
class DataParallel:
    """A data-parallel plan: ``gpus`` ranks, each running ``--batch`` sequences; states sharded
    by ZeRO ``stage`` over ``shard_gpus`` ranks (all of them, or a node's for hybrid)."""

    gpus: int = 1
    stage: int = 0
    fsdp: str | None = None
    shard_gpus: int = 1

    @property
    def label(self) -> str:
        """The plan in words: "8 GPUs, ZeRO-2", "16 GPUs, FSDP hybrid (shards of 8)"."""
        gpus = f"{self.gpus} GPU{'s' if self.gpus > 1 else ''}"
        if self.fsdp == "hybrid":
            return f"{gpus}, FSDP hybrid shard (shards of {self.shard_gpus})"
        if self.fsdp is not None:
            return f"{gpus}, FSDP {self.fsdp} shard"
        return f"{gpus}, ZeRO-{self.stage}" if self.stage else f"{gpus}, replicated (DDP)"


def data_parallel(
    gpus: int | None, zero: int | None, fsdp: str | None, node_gpus: int | None
) -> DataParallel:
    """A checked plan: ZeRO and FSDP exclude each other; hybrid needs a node size that divides
    the GPU count."""
    n = 1 if gpus is None else gpus
    if n < 1:
        raise UsageError(f"--gpus must be at least 1, got {n}")
    if zero is not None and fsdp is not None:
        raise UsageError("--zero and --fsdp are two ways to shard the same states: give one")
    if zero is not None and zero not in ZERO_STAGES:
        raise UsageError(f"unknown ZeRO stage {zero}; expected 0, 1, 2 or 3")
    if fsdp is not None:
        check_choice(fsdp, FSDP_MODES, "FSDP sharding")
    if node_gpus is not None and fsdp != "hybrid":
        raise UsageError("--node-gpus sets the shard group of --fsdp hybrid; add --fsdp hybrid")
    if fsdp == "hybrid":
        if node_gpus is None:
            raise UsageError("--fsdp hybrid shards within a node: give --node-gpus G")
        if node_gpus < 1:
            raise UsageError(f"--node-gpus must be at least 1, got {node_gpus}")
        if n % node_gpus:
            raise UsageError(
                f"--fsdp hybrid: {n} GPUs do not divide into nodes of {node_gpus} "
                f"({n} = nodes x GPUs per node)"
            )
        return DataParallel(n, 3, fsdp, node_gpus)
    stage = FSDP_STAGE[fsdp] if fsdp is not None else (zero or 0)
    return DataParallel(n, stage, fsdp, n)


def shard(count: int, ranks: int) -> int:
    """Elements one of ``ranks`` ranks holds of ``count``: ceil(count / ranks)."""
    return -(-count // ranks)


def largest_module_params(spec: ModelSpec) -> int:
    """The most parameters one module owns directly (its own tensors, one layer's copy): the
    embedding or head in a language model; DeepSpeed's ``largest_layer_params``."""
    modules: dict[str, int] = {}
    for tensor in parameter_tensors(spec):
        module = tensor.name.rsplit(".", 1)[0]
        modules[module] = modules.get(module, 0) + elements(tensor.shape)
    return max(modules.values(), default=0)


def per_gpu_report(spec: ModelSpec, report: MemoryReport, plan: DataParallel) -> MemoryReport:
    """``report`` (one whole model's training memory) as one rank of ``plan`` holds it: sharded
    states divided by ceil(. / N); the step scalars stay whole (one per tensor, a bound)."""
    setup = report.setup
    if not setup.train:
        raise UsageError("--gpus, --zero and --fsdp plan training: add --train")
    if plan.stage and setup.optimizer not in SHARDABLE_OPTIMIZERS:
        raise UsageError(
            f"ZeRO and FSDP partition per-element optimizer state; {setup.optimizer}'s factored "
            f"state has no such partition: use {', '.join(SHARDABLE_OPTIMIZERS)}"
        )
    if plan.stage == 0:
        return report
    P, n = report.params_total, plan.shard_gpus
    part = shard(P, n)
    moments = optimizer_moment_elements(spec, setup.optimizer) // P if P else 0
    moment_bytes = dtype_bytes(moments * part, setup.state_dtype)
    step_bytes = report.bytes_optimizer - dtype_bytes(moments * P, setup.state_dtype)
    return replace(
        report,
        bytes_weights=dtype_bytes(part if plan.stage == 3 else P, setup.dtype),
        bytes_gradients=dtype_bytes(part if plan.stage >= 2 else P, setup.dtype),
        bytes_master_weights=dtype_bytes(part, MASTER_DTYPE) if setup.mixed_precision else 0,
        bytes_optimizer=moment_bytes + step_bytes,
        bytes_gathered=(
            2 * dtype_bytes(largest_module_params(spec), setup.dtype) if plan.stage == 3 else 0
        ),
    )
