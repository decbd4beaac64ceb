"""ZeRO as DeepSpeed 0.19 allocates it: what one rank holds, term by term, at its defaults.

DeepSpeed's ZeRO optimizers (``deepspeed/runtime/zero/stage_1_and_2.py``,
``DeepSpeedZeroOptimizer``; ``stage3.py``, ``DeepSpeedZeroOptimizer_Stage3``; the defaults of
``config.py``'s ``DeepSpeedZeroConfig``), 16-bit training with fp32 masters and a per-element
optimizer (torch's AdamW), one parameter group (experts in a group of their own under EP), N
ranks sharing the states:

Stages 1 and 2 (``DeepSpeedZeroOptimizer.__init__``): the 16-bit parameters are copied into one
flat buffer padded to a multiple of 2N elements (``flatten_dense_tensors_aligned`` with
``nccl_start_alignment_factor`` 2 x the DP size), F = ceil(P / 2N) 2N, every parameter a view
of it; each rank owns p = F / N of it. Its fp32 master partition is a clone of that slice
(``single_partition_of_fp32_groups``), the base optimizer's state is on it (AdamW: two fp32
moments of p and one ``step``). Gradients (``copy_grads_in_partition``): each rank keeps the
16-bit gradients of the parameters its partition touches, whole, in ``grads_in_partition``;
while the backward runs, a 16-bit reduce bucket of ``reduce_bucket_size`` (5e8) elements
(``setup_buckets``; released by ``_release_ipg_buffers`` at the end of the backward). In the
step (``step``): the gradient partition is flattened (``self.flatten``, a 16-bit copy of p) and
cast to fp32 (``single_grad_partition``, 4p) before the 16-bit gradients are freed. Stage 1
differs from stage 2 only in when gradients are reduced: with one micro-batch a step both hold
the same tensors.

Stage 3 (``partition_parameters.py``, ``Init._partition_param``): each parameter of n elements
is padded to a multiple of N (``_aligned_size``) and a rank keeps ceil(n / N) of it, in one
contiguous buffer (``_create_fp16_partitions_with_defragmentation``); a parameter of at most
``stage3_param_persistence_threshold`` (1e5) elements is also kept whole on every rank
(``DeepSpeedZeRoOffload.mark_persistent_parameters``). ``_setup_for_real_optimizer`` allocates
the 16-bit gradient partitions (``grad_partitions_flat_buffer``, the same sizes) and the reduce
bucket (``reduce_bucket_size``, held for the whole run); ``_create_fp32_partitions`` the fp32
masters, split into sub-groups of ``sub_group_size`` (1e9) elements (``_create_fp16_sub_groups``:
parameters in order until a sub-group reaches it), one optimizer ``step`` each. In the step each
sub-group's gradients are flattened and cast to fp32 in turn (``_prepare_fp32_grad_for_sub_group``),
the largest sub-group's at most at once. While a layer runs, its parameters are gathered whole
(and their gradients made whole by autograd before the reduce-scatter): the largest module's,
as DeepSpeed's estimator counts ``4 x largest_layer_params``; up to
``stage3_prefetch_bucket_size`` (5e7) more parameters may be fetched ahead, a bound.

Parameters are laid out in the order transformers registers them (the token table, each layer's
mixer and FFN tensors then its norms, the final norm and the head), which decides the gradients
of the parameters a partition boundary cuts (a convention where a family orders them otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

REDUCE_BUCKET_SIZE = 500_000_000
"""``reduce_bucket_size`` (config.py, ``DeepSpeedZeroConfig``), elements."""
PREFETCH_BUCKET_SIZE = 50_000_000
"""``stage3_prefetch_bucket_size``, elements."""
PERSISTENCE_THRESHOLD = 100_000
"""``stage3_param_persistence_threshold``: parameters of at most this many elements stay whole."""
SUB_GROUP_SIZE = 1_000_000_000
"""``sub_group_size``: the fp32 partitions are stepped in sub-groups of this many elements."""
ALIGNMENT_FACTOR = 2
"""``nccl_start_alignment_factor``: the flat 16-bit buffer pads to a multiple of 2 x the DP size."""
ZERO_SOURCE = (
    "DeepSpeed 0.19.8's ZeRO optimizers at their defaults (deepspeed/runtime/zero/"
    "stage_1_and_2.py, stage3.py, partition_parameters.py, config.py)"
)
ESTIMATOR_SOURCE = {
    2: "estimate_zero2_model_states_mem_needs (stage_1_and_2.py): 2P + int(18P / N)",
    3: "estimate_zero3_model_states_mem_needs (stage3.py): 4 x largest layer + int(18P / N)",
}


@dataclass(frozen=True)
class ShardGroup:
    """One parameter group: its tensors' sizes in order, and the ranks that share it."""

    sizes: tuple[int, ...]
    ranks: int


def flat_elements(group: ShardGroup) -> int:
    """Stages 1-2: the flat 16-bit buffer, P padded to a multiple of 2N elements."""
    multiple = ALIGNMENT_FACTOR * group.ranks
    return -(-sum(group.sizes) // multiple) * multiple


def flat_partition(group: ShardGroup) -> int:
    """Stages 1-2: the elements one rank owns, F / N."""
    return flat_elements(group) // group.ranks


def touched_gradients(group: ShardGroup) -> int:
    """Stages 1-2: the most 16-bit gradient elements a rank keeps, the whole parameters its
    partition touches (``grads_in_partition``), over the ranks: a sweep over the tensors'
    spans of partitions, so it does not grow with N."""
    p = flat_partition(group)
    events: dict[int, int] = {}
    offset = 0
    for size in group.sizes:
        if size:
            first, last = offset // p, (offset + size - 1) // p
            events[first] = events.get(first, 0) + size
            events[last + 1] = events.get(last + 1, 0) - size
        offset += size
    best = running = 0
    for rank in sorted(events):
        running += events[rank]
        best = max(best, running)
    return best


def stage3_partition(group: ShardGroup) -> int:
    """Stage 3: sum of ceil(n / N) over the parameters (each padded to a multiple of N)."""
    return sum(-(-size // group.ranks) for size in group.sizes)


def persistent_elements(group: ShardGroup) -> int:
    """Stage 3: the parameters of at most 1e5 elements, kept whole on every rank."""
    return sum(size for size in group.sizes if size <= PERSISTENCE_THRESHOLD)


def sub_groups(group: ShardGroup) -> list[int]:
    """Stage 3: the partition elements of each sub-group (``_create_fp16_sub_groups``):
    parameters in order until the running sum reaches 1e9; one group when all fit."""
    sizes = [-(-size // group.ranks) for size in group.sizes]
    if sum(sizes) <= SUB_GROUP_SIZE:
        return [sum(sizes)]
    groups, running = [], 0
    for index, size in enumerate(sizes):
        running += size
        if running >= SUB_GROUP_SIZE or index == len(sizes) - 1:
            groups.append(running)
            running = 0
    return groups


@dataclass(frozen=True)
class ZeroShares:
    """What one rank holds under DeepSpeed's ZeRO, in elements: 16-bit ``weights`` (the flat
    buffer, or stage 3's partitions), 16-bit ``gradients``, fp32 ``masters`` (= the moments'
    width), ``steps`` (one per group or sub-group), ``step_buffer`` (the gradient partition the
    step flattens and casts at once), ``persistent`` (stage 3's whole small parameters)."""

    weights: int
    gradients: int
    masters: int
    steps: int
    step_buffer: int
    persistent: int


def zero_shares(groups: Sequence[ShardGroup], stage: int) -> ZeroShares:
    """One rank's elements under ZeRO ``stage`` (1-3) over ``groups``."""
    if stage == 3:
        parts = [stage3_partition(g) for g in groups]
        subs = [s for g in groups for s in sub_groups(g)]
        return ZeroShares(
            weights=sum(parts),
            gradients=sum(parts),
            masters=sum(parts),
            steps=len(subs),
            step_buffer=max(subs, default=0),
            persistent=sum(persistent_elements(g) for g in groups),
        )
    return ZeroShares(
        weights=sum(flat_elements(g) for g in groups),
        gradients=sum(touched_gradients(g) for g in groups),
        masters=sum(flat_partition(g) for g in groups),
        steps=len(groups),
        step_buffer=max((flat_partition(g) for g in groups), default=0),
        persistent=0,
    )


def deepspeed_estimate(params: int, largest_layer: int, gpus: int, stage: int) -> int | None:
    """DeepSpeed's own GPU figure for the model states without offload, reproduced with its
    float arithmetic: stage 2 ``2P + int(18P / N)``, stage 3 ``4 x largest + int(18P / N)``
    (``estimate_zero2_model_states_mem_needs``, ``estimate_zero3_model_states_mem_needs``);
    None for stage 1, which has no estimator."""
    if stage == 2:
        return 2 * params + int(18 * params / gpus)
    if stage == 3:
        return 4 * largest_layer + int(18 * params / gpus)
    return None
