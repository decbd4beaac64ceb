"""LoRA and QLoRA training on many GPUs: one GPU's share under DDP, DeepSpeed's ZeRO or FSDP2.

Each engine shards the frozen base and the trainable part as it shards any parameter:

- DDP (``--gpus N`` alone): every GPU holds what one GPU holds, for its ``--batch``.
- DeepSpeed's ZeRO 1-2 (:mod:`costcalc.zero`): the optimizer sees only the trainable
  parameters (``is_optimized_parameter``), so the frozen base stays whole on every GPU; the
  engine casts every float parameter to the 16-bit dtype (``_cast_module_mixed_precision``), so
  the adapters, saved copies and trained biases are 16-bit in one flat buffer padded to 2N, with
  fp32 masters and moments of 1 / N of it, the 16-bit gradients of the whole tensors a share
  touches, the reduce bucket (5e8 elements) during the backward and the step's gradient
  partition (16-bit flat copy + fp32). ZeRO-3 (a float base): every parameter, frozen or not,
  is partitioned ceil(n / N) (``Init._partition_param``) and the small ones (at most 1e5
  elements) also kept whole; the trainable ones have gradient partitions, masters and moments;
  the reduce bucket is held; the running layer's parameters are gathered whole (the largest
  module's, frozen: no gradient). ZeRO-3 of a quantized base is not modelled.
- FSDP2 (``fully_shard``, :func:`costcalc.parallel.fsdp_shard`): every parameter's rows padded
  to a multiple of the S sharding GPUs, ceil(d0 / S) per GPU, frozen or not; the gradients and
  AdamW state of the trainable shards. QLoRA under FSDP stores the 4-bit weights in
  ``bnb_4bit_quant_storage=bfloat16`` (so they shard like the bf16 tensors beside them): a
  weight of n values is ``(n + 1) // 2`` bytes viewed as ceil(((n + 1) // 2) / 2) bf16 rows of
  one column (bitsandbytes' ``quantize_4bit``), ceil(rows / S) per GPU; its quantization state
  (absmax, nested scales, offset) is not a parameter and stays whole on every GPU. ``full``
  also holds unsharded, in the backward, the root unit's parameters, the largest layer's twice
  (the running one and the one prefetched) and that layer's adapter gradients;
  ``grad-op`` (``reshard_after_forward=False``) the whole base beside its shards through the
  forward and backward. LLM.int8 under FSDP is refused (FSDP does not shard ``Int8Params``).

Activations, scores and logits are one GPU's at its ``--batch``, as on one GPU.
"""

from __future__ import annotations

from dataclasses import replace

from costcalc.errors import UsageError
from costcalc.formats.peft_names import FamilyNames
from costcalc.lora import LoraReport, Site, sites
from costcalc.lora_memory import FLOAT_DTYPES, LORA_OPTIMIZERS, LoraMemory, LoraTraining
from costcalc.memory import MASTER_DTYPE, STEP_DTYPE
from costcalc.option_names import option
from costcalc.parallel import ParallelPlan, check_zero_tensors
from costcalc.quant import nf4_bytes
from costcalc.spec import ModelSpec
from costcalc.tensors import Shape, block_tensors, elements, model_tensors, parameter_tensors
from costcalc.units import dtype_bytes
from costcalc.zero import (
    PREFETCH_BUCKET_SIZE,
    REDUCE_BUCKET_SIZE,
    ShardGroup,
    persistent_elements,
    stage3_partition,
    zero_shares,
)

LORA_PARALLEL_SOURCE = (
    "torch 2.13's fully_shard (FSDPParam._init_sharded_param), DeepSpeed 0.19.8's ZeRO "
    "optimizers, bitsandbytes 0.50's quantize_4bit with quant_storage (costcalc/lora_parallel.py)"
)
BF16_STORAGE = 2
"""``bnb_4bit_quant_storage=torch.bfloat16``: the packed 4-bit bytes viewed two to an element."""


def padded_rows(shape: Shape, ranks: int) -> int:
    """Elements one of ``ranks`` FSDP2 ranks holds of a tensor: ceil(d0 / N) x the rest."""
    return -(-shape[0] // ranks) * elements(shape[1:])


def packed_rows(n: int) -> int:
    """bf16 rows of a 4-bit weight of n values stored as bf16: ceil(((n + 1) // 2) / 2)."""
    return -(-((n + 1) // 2) // BF16_STORAGE)


def check_lora_plan(plan: ParallelPlan, training: LoraTraining) -> None:
    """What the engines shard: no pipeline, expert or context parallelism here; no LLM.int8
    under FSDP; no quantized base under ZeRO-3; DeepSpeed's 16-bit adapters."""
    if plan.pp > 1 or plan.ep > 1 or plan.cp > 1 or plan.tp > 1:
        raise UsageError(
            f"LoRA training: {option('--gpus')} with {option('--zero')} or {option('--fsdp')} "
            "shards data-parallel replicas; tensor, pipeline, expert and context parallelism of "
            "LoRA are not modelled"
        )
    base = training.base_dtype
    if plan.fsdp is not None and base == "int8":
        raise UsageError(
            f"{option('--fsdp')} with {option('--base-dtype', 'int8')}: FSDP shards "
            "bitsandbytes' 4-bit weights stored as bf16 (bnb_4bit_quant_storage), not LLM.int8's "
            "Int8Params: use nf4 or a float base"
        )
    if plan.fsdp is None and plan.stage == 3 and base not in FLOAT_DTYPES:
        raise UsageError(
            f"{option('--zero', 3)} with {option('--base-dtype', base)}: partitioning quantized "
            f"weights under ZeRO-3 is not modelled; use {option('--zero', 1)} or "
            f"{option('--zero', 2)}, or "
            f"{option('--fsdp', 'full')}"
        )
    if plan.fsdp is None and plan.stage and training.adapter_dtype != training.float_dtype:
        raise UsageError(
            f"{option('--zero')}: DeepSpeed casts every float parameter to "
            f"{training.float_dtype}, the adapters too (with fp32 masters); drop "
            f"{option('--adapter-dtype', training.adapter_dtype)}"
        )


def trainable_shapes(report: LoraReport, spec: ModelSpec) -> list[tuple[Shape, int, str]]:
    """Every trainable tensor: (shape, copies, kind) in order: the adapters (``adapter``, in
    peft's order of the targets), the saved copies (``saved``), the trained biases (``bias``:
    every bias under ``--bias all``; ``lora_only`` is refused, its biases are not found by
    shape)."""
    shapes = [(s, c, "adapter") for s, c in report.adapter_shapes]
    shapes += [(s, c, "saved") for s, c in report.saved_shapes]
    if report.config.bias == "lora_only" and report.bias_elements:
        raise UsageError(
            f"{option('--bias', 'lora_only')} with {option('--zero')} or {option('--fsdp')}: "
            "sharding the biases of the adapted modules alone is not modelled; use "
            f"{option('--bias', 'none')} or {option('--bias', 'all')}"
        )
    if report.bias_elements:
        biases = [t for t in parameter_tensors(spec) if t.name.endswith(".bias")]
        shapes += [(t.shape, t.copies, "bias") for t in biases]
    return shapes


def lora_rank_memory(
    spec: ModelSpec,
    names: FamilyNames,
    report: LoraReport,
    memory: LoraMemory,
    plan: ParallelPlan,
) -> LoraMemory:
    """``memory`` (LoRA training on one GPU) as one GPU of ``plan`` holds it."""
    training = memory.training
    check_lora_plan(plan, training)
    if plan.fsdp is not None:
        return _fsdp(spec, names, report, memory, plan)
    if plan.stage:
        return _zero(spec, report, memory, plan)
    return replace(memory, plan=plan)


def _moments_and_steps(training: LoraTraining, tensors: int) -> tuple[int, int]:
    """Per-element moments of the optimizer, and its step scalars over ``tensors`` tensors."""
    return LORA_OPTIMIZERS[training.optimizer], tensors if training.optimizer == "adamw" else 0


def _fsdp(
    spec: ModelSpec,
    names: FamilyNames,
    report: LoraReport,
    memory: LoraMemory,
    plan: ParallelPlan,
) -> LoraMemory:
    """FSDP2: every parameter's rows padded to a multiple of S, ceil(d0 / S) per GPU; 4-bit
    weights as bf16 rows of one column with their quantization state whole."""
    t, S = memory.training, plan.shard_gpus
    quantized = t.base_dtype == "nf4"
    linears = [s for s in sites(spec, names) if s.kind == "linear"] if quantized else []
    packed = sum(s.copies * -(-packed_rows(s.shape[0] * s.shape[1]) // S) for s in linears)
    stats = sum(
        s.copies
        * (nf4_bytes(s.shape[0] * s.shape[1], t.double_quant) - (s.shape[0] * s.shape[1] + 1) // 2)
        for s in linears
    )
    skipped = {f"{s.generic}.weight" for s in linears}
    frozen = [x for x in parameter_tensors(spec) if x.name not in skipped]
    frozen_float = sum(x.copies * padded_rows(x.shape, S) for x in frozen)
    trainable = trainable_shapes(report, spec)
    held = {
        kind: sum(c * padded_rows(shape, S) for shape, c, k in trainable if k == kind)
        for kind in ("adapter", "saved", "bias")
    }
    adapters, saved_only = held["adapter"], held["saved"]
    saved = saved_only + held["bias"]
    rest = t.float_dtype
    grads = dtype_bytes(adapters, t.adapter_dtype) + dtype_bytes(saved, rest)
    moments, steps = _moments_and_steps(t, sum(c for _, c, _ in trainable))
    gathered_elements, gathered = _fsdp_gathered(memory, plan, spec, report, linears, stats)
    return replace(
        memory,
        plan=plan,
        elements_quantized=BF16_STORAGE * 2 * packed if quantized else 0,
        bytes_quantized=BF16_STORAGE * packed + stats,
        elements_frozen_float=frozen_float,
        bytes_frozen_float=dtype_bytes(frozen_float, rest),
        elements_adapters=adapters,
        bytes_adapters=dtype_bytes(adapters, t.adapter_dtype),
        elements_saved=saved_only,
        bytes_saved=dtype_bytes(saved_only, rest),
        elements_trainable=adapters + saved,
        bytes_gradients=grads,
        elements_optimizer=moments * (adapters + saved) + steps,
        bytes_optimizer=moments * grads + dtype_bytes(steps, STEP_DTYPE),
        elements_gathered=gathered_elements,
        bytes_gathered=gathered,
    )


def _fsdp_gathered(
    memory: LoraMemory,
    plan: ParallelPlan,
    spec: ModelSpec,
    report: LoraReport,
    linears: list[Site],
    stats: int,
) -> tuple[int, int]:
    """What FSDP2 holds unsharded while the layers run, (elements, bytes): under ``grad-op`` the
    whole base and trainable part (kept unsharded from the forward to the backward; the 4-bit
    weights' packed bytes, their quantization state being whole already); under ``full`` (as
    :func:`costcalc.parallel.fsdp_unsharded`, in each tensor's stored form, padded to S rows):
    the root unit's parameters, its saved copies and their gradients, the largest layer's
    parameters and adapters twice (the running layer and the prefetched one), and that layer's
    adapter gradients."""
    t, S = memory.training, plan.shard_gpus
    if plan.fsdp == "grad-op":
        whole = (
            memory.bytes_quantized
            - stats
            + memory.bytes_frozen_float
            + memory.bytes_adapters
            + memory.bytes_saved
        )
        return memory.elements_quantized + memory.elements_frozen_float, whole
    quantized = {f"{s.generic}.weight" for s in linears}

    def stored(name: str, shape: Shape, copies: int) -> tuple[int, int]:
        if name in quantized:
            rows = -(-packed_rows(elements(shape)) // S) * S
            return copies * rows * BF16_STORAGE, copies * rows * BF16_STORAGE
        count = copies * -(-shape[0] // S) * S * elements(shape[1:])
        return count, dtype_bytes(count, t.float_dtype)

    root = [stored(x.name, x.shape, x.copies) for x in model_tensors(spec)]
    layer_adapters = [(shape, c) for shape, c in report.adapter_shapes if c > 1]
    per_layer: list[tuple[int, int, int]] = []  # elements, bytes, adapter gradient bytes
    for stack in spec.stacks:
        held = [stored(x.name, x.shape, x.copies) for x in block_tensors(stack)]
        adapters = [
            (c // stack.n_layers) * padded_rows(shape, S) * S
            for shape, c in layer_adapters
            if c % stack.n_layers == 0
        ]
        grads = [
            (c // stack.n_layers) * elements(shape)
            for shape, c in layer_adapters
            if c % stack.n_layers == 0
        ]
        per_layer.append(
            (
                sum(e for e, _ in held) + sum(adapters),
                sum(b for _, b in held) + dtype_bytes(sum(adapters), t.adapter_dtype),
                dtype_bytes(sum(grads), t.adapter_dtype),
            )
        )
    largest = max(per_layer, key=lambda layer: layer[1], default=(0, 0, 0))
    layers = min(2, spec.n_layers)
    saved = sum(c * elements(shape) for shape, c in report.saved_shapes)
    saved += sum(c * padded_rows(shape, S) * S for shape, c in report.saved_shapes)
    count = sum(e for e, _ in root) + layers * largest[0] + saved
    size = sum(b for _, b in root) + layers * largest[1] + largest[2]
    return count, size + dtype_bytes(saved, t.float_dtype)


def _zero(
    spec: ModelSpec, report: LoraReport, memory: LoraMemory, plan: ParallelPlan
) -> LoraMemory:
    """DeepSpeed's ZeRO over the trainable tensors (16-bit, fp32 masters); the frozen base whole
    under stages 1-2, partitioned (and its small tensors whole) under stage 3."""
    t = memory.training
    trainable = trainable_shapes(report, spec)
    base = parameter_tensors(spec)
    frozen_count = sum(x.copies for x in base) if plan.stage == 3 else 0
    check_zero_tensors(sum(c for _, c, _ in trainable) + frozen_count)
    sizes = tuple(elements(s) for s, c, _ in trainable for _ in range(c))
    group = ShardGroup(sizes, plan.shard_gpus)
    shares = zero_shares([group], plan.stage)
    moments, steps = _moments_and_steps(t, shares.steps)
    cast = 0 if t.float_dtype == MASTER_DTYPE else dtype_bytes(shares.step_buffer, MASTER_DTYPE)
    common = replace(
        memory,
        plan=plan,
        elements_adapters=shares.weights,
        bytes_adapters=dtype_bytes(shares.weights, t.float_dtype),
        elements_saved=0,
        bytes_saved=0,
        elements_trainable=shares.gradients,
        bytes_gradients=dtype_bytes(shares.gradients, t.float_dtype),
        elements_masters=shares.masters,
        bytes_masters=dtype_bytes(shares.masters, MASTER_DTYPE),
        elements_optimizer=moments * shares.masters + steps,
        bytes_optimizer=dtype_bytes(moments * shares.masters, MASTER_DTYPE)
        + dtype_bytes(steps, STEP_DTYPE),
        elements_step_buffer=shares.step_buffer,
        bytes_step_buffer=dtype_bytes(shares.step_buffer, t.float_dtype) + cast,
        elements_bucket=REDUCE_BUCKET_SIZE,
        bytes_bucket=dtype_bytes(REDUCE_BUCKET_SIZE, t.float_dtype),
        bucket_held=plan.stage == 3,
    )
    if plan.stage < 3:
        return common
    frozen = ShardGroup(
        tuple(elements(x.shape) for x in base for _ in range(x.copies)), plan.shard_gpus
    )
    modules: dict[str, int] = {}
    for x in base:
        module = x.name.rpartition(".")[0]
        modules[module] = modules.get(module, 0) + elements(x.shape)
    largest = max(modules.values(), default=0)
    whole = persistent_elements(frozen) + persistent_elements(group)
    return replace(
        common,
        elements_frozen_float=stage3_partition(frozen),
        bytes_frozen_float=dtype_bytes(stage3_partition(frozen), t.float_dtype),
        elements_gathered=largest,
        bytes_gathered=dtype_bytes(largest, t.float_dtype),
        elements_persistent=whole,
        bytes_persistent=dtype_bytes(whole, t.float_dtype),
        elements_prefetch=PREFETCH_BUCKET_SIZE,
        bytes_prefetch=dtype_bytes(PREFETCH_BUCKET_SIZE, t.float_dtype),
    )
