"""Time and throughput: training FLOPs, wall time and GPU-hours at a stated MFU, compute-optimal
sizing, and inference rooflines.

Training FLOPs come from costcalc's exact MACs: one training step over a sequence of T tokens
(:func:`costcalc.macs.training_macs` over the forward at T), times the sequences in N tokens;
6 x parameters x tokens (Kaplan et al. 2020) is shown beside it as the rule of thumb it is. Wall
time = FLOPs / (GPUs x dense peak x MFU). Rooflines are ESTIMATES: prefill as compute-bound
(forward FLOPs / peak), decode as memory-bound (weight bytes + KV bytes read per step /
bandwidth) until the step's FLOPs / peak take longer (compute-bound).

What fits: a GPU's memory at a utilisation u (vLLM's ``gpu_memory_utilization``) gives
floor(u x (memory - reserve)) bytes (the memory the GPU reports, less what the driver and the
CUDA context keep: :func:`costcalc.gpus.default_reserve`); what the weights leave of it holds
the cache: the KV cache (:func:`costcalc.memory.kv_cache_bytes`, sliding windows, chunks and
MLA latents included) and the recurrent state of each sequence. The largest batch at a context
and the largest context at a batch are found by bisection over exact byte counts (the cache only
grows with either), so the work grows with the digits of the answer, not its size.

Serving on many GPUs (a :class:`~costcalc.engines.vllm_shards.ServingPlan`: TP, PP, EP,
data-parallel attention) lays the model out as vLLM shards it: each GPU holds and reads its
shards of the weights and the cache of its layers and key/value heads
(:mod:`costcalc.engines.vllm_shards`; MLA's latent whole on every TP GPU), does 1 / (T x P) of
its replica's FLOPs (rounded up; what it repeats on every GPU is not counted), and sends its
all-reduces over the catalogue's interconnect (an ESTIMATE: :func:`collective_bytes`). Under
P stages a token passes them in turn: a step takes P x the slowest stage's. Each GPU of a
stage must fit; the fit shown is the stage that holds the fewest sequences.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import TYPE_CHECKING

from costcalc.engines import EngineSetup
from costcalc.errors import UsageError
from costcalc.gpus import Gpu
from costcalc.macs import (
    attention_pair_macs,
    decode_token_macs,
    flops,
    forward_macs,
    training_macs,
)
from costcalc.memory import (
    kv_cache_bytes,
    kv_cache_elements,
    state_bytes,
    state_elements,
    weight_bytes,
)
from costcalc.params import total_params
from costcalc.routing import ExpertRead, expert_reads
from costcalc.spec import ModelSpec
from costcalc.tensors import Shape, parameter_tensors
from costcalc.units import DTYPES, MAX_DIGITS, dtype_bytes

if TYPE_CHECKING:
    from costcalc.engines.vllm import VllmMemory
    from costcalc.engines.vllm_shards import ServingPlan

KAPLAN_RULE = "6 x parameters x tokens (Kaplan et al. 2020, rule of thumb)"
CHINCHILLA_TOKENS_PER_PARAM = 20
"""Hoffmann et al. 2022: about 20 training tokens per parameter (rule of thumb)."""
CHINCHILLA_RULE = "C = 6 N D with D = 20 N (Hoffmann et al. 2022, rule of thumb)"


def _decimal(text: str) -> Decimal | None:
    """``text`` as a finite decimal between 10^-MAX_DIGITS and 10^MAX_DIGITS in size (so that
    turning it into an exact number is cheap: ``1e999999999`` is refused, not computed), else
    None."""
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        return None
    if not value.is_finite() or not -MAX_DIGITS <= value.adjusted() < MAX_DIGITS:
        return None
    return value


def parse_fraction(text: str, what: str) -> Fraction:
    """A share such as ``0.4`` or ``40%``, strictly between 0 and 1 (inclusive of 1)."""
    raw = text.strip()
    scale = Fraction(1, 100) if raw.endswith("%") else Fraction(1)
    number = _decimal(raw.removesuffix("%"))
    if number is None:
        raise UsageError(f"{what} '{text}': expected a share such as 0.4 or 40%")
    value = Fraction(number) * scale
    if not 0 < value <= 1:
        raise UsageError(f"{what} '{text}': expected a share above 0 and at most 1 (100%)")
    return value


def training_flops(spec: ModelSpec, tokens: int, length: int, kernel: str = "sdpa") -> int:
    """FLOPs to train on ``tokens`` tokens in sequences of ``length``: 2 x training MACs of one
    sequence x tokens / T, rounded up."""
    forward = forward_macs(spec, 1, length)
    step = flops(training_macs(forward, attention_pair_macs(spec, 1, length), "none", kernel))
    return -(-step * tokens // length)


def kaplan_flops(spec: ModelSpec, tokens: int) -> int:
    """6 x P x tokens."""
    return 6 * total_params(spec) * tokens


@dataclass(frozen=True)
class TrainingTime:
    """Wall time and GPU-hours of ``flops`` on ``gpus`` GPUs at ``mfu`` of the dense peak."""

    flops: int
    gpus: int
    peak: int
    mfu: Fraction

    @property
    def seconds(self) -> Fraction:
        """FLOPs / (GPUs x peak x MFU)."""
        return Fraction(self.flops) / (self.gpus * self.peak * self.mfu)

    @property
    def gpu_hours(self) -> Fraction:
        """GPUs x seconds / 3600."""
        return self.gpus * self.seconds / 3600


def compute_optimal(budget: int) -> tuple[int, int]:
    """N_opt and D_opt for a budget C under C = 6 N D, D = 20 N: N = sqrt(C / 120), D = 20 N
    (N rounded down to a whole parameter)."""
    n = math.isqrt(budget // (6 * CHINCHILLA_TOKENS_PER_PARAM))
    return n, CHINCHILLA_TOKENS_PER_PARAM * n


@dataclass(frozen=True)
class Compute:
    """The dtype a format's kernels compute in on a GPU, its dense peak, and why, in words;
    ``peak`` None where the catalogue gives none for that dtype, ``missing`` then says so."""

    dtype: str
    peak: int | None
    kernels: str
    missing: str | None = None


SIXTEEN_BIT_KERNELS: dict[str, str] = {
    "gptq-int4": "fp16",
    "gptq-int8": "fp16",
    "awq-int4": "fp16",
    "gguf": "fp16",
}
"""Weight-only formats whose kernels take fp16 activations (GPTQ's and AWQ's CUDA kernels,
llama.cpp's dequantize-then-GEMM path); the others (bitsandbytes NF4/FP4, raw int4, fp8 on a GPU
without an fp8 peak) take bf16, or fp16 where the GPU has no bf16 peak."""


def compute(dtype: str, gpu: Gpu) -> Compute:
    """What the kernels of weight dtype or format ``dtype`` compute in on ``gpu``: fp32, bf16,
    fp16 as themselves; fp8 (raw or with scales) W8A8 at the fp8 peak where the GPU has one,
    else dequantized to 16 bits (W8A16, as vLLM's FP8 Marlin kernel runs on GPUs without fp8
    tensor cores); int8 and LLM.int8 W8A8 at the int8 peak (bitsandbytes' int8 matmul);
    every other format weight-only: dequantized to 16 bits, activations in 16 bits (W4A16,
    W8A16). A peak the catalogue does not give leaves ``peak`` None, ``missing`` naming it and
    why: the decode is then bounded by memory alone, and prefill has no time."""
    from costcalc.weight_format import parse_format

    fmt = parse_format(dtype)
    fp8 = fmt.name in ("fp8", "fp8-tensor", "fp8-channel", "fp8-block")
    stored = f"weights stored as {fmt.description}"
    if fmt.name in ("fp32", "bf16", "fp16"):
        chosen, kernels = fmt.name, f"{fmt.name} weights and activations"
    elif fmt.name in ("int8", "llm-int8"):
        chosen, kernels = "int8", f"W8A8: {stored}, activations in int8"
    elif fp8 and "fp8" in gpu.peak_flops:
        chosen, kernels = "fp8", f"W8A8: {stored}, activations in fp8"
    else:
        chosen = SIXTEEN_BIT_KERNELS.get(fmt.name, "bf16")
        if chosen not in gpu.peak_flops and {"bf16", "fp16"} & gpu.peak_flops.keys():
            chosen = "fp16" if chosen == "bf16" else "bf16"
        bits = 8 if fp8 or fmt.name == "gptq-int8" else 4
        words = "weight-only" if fmt.name == "gguf" else f"W{bits}A16"
        why = f" ({gpu.key} has no fp8 peak)" if fp8 else ""
        kernels = f"{words}: {stored}, dequantized to {chosen} for the matmuls{why}"
    if chosen not in gpu.peak_flops:
        given = ", ".join(gpu.peak_flops) or "none"
        missing = (
            f"the catalogue gives no {chosen} peak for {gpu.key} ({gpu.source}; peaks given: "
            f"{given})"
        )
        return Compute(chosen, None, kernels, missing)
    return Compute(chosen, gpu.peak_flops[chosen], kernels)


@dataclass(frozen=True)
class DecodeStep:
    """One decode step of ``batch`` sequences, an ESTIMATE: it reads ``weight_bytes`` of the
    ``held_bytes`` weights (the experts its tokens are expected to run, :mod:`costcalc.routing`)
    and ``cache_bytes`` at the memory bandwidth, and does ``step_flops`` at the dense peak (None
    where the decoding FLOPs are not modelled: recurrent mixers; ``peak`` None where the
    catalogue gives none); the slower of the two bounds it, the memory time alone where the
    compute time is not known."""

    batch: int
    weight_bytes: int
    held_bytes: int
    cache_bytes: int
    bandwidth: int
    step_flops: int | None
    peak: int | None
    experts: tuple[ExpertRead, ...] = ()
    collective_bytes: int = 0
    """Bytes one GPU sends per step in its all-reduces, all-gathers and reduce-scatters."""
    link: int | None = None
    """The interconnect's bandwidth in bytes/s one way (None: none in the catalogue)."""
    pipeline: int = 1
    """Pipeline stages a token passes in turn (the step is of the slowest)."""
    replicas: int = 1
    """Data-parallel attention replicas, each decoding ``batch`` sequences."""

    @property
    def step_bytes(self) -> int:
        """Bytes read per step: the weights read and the cache."""
        return self.weight_bytes + self.cache_bytes

    @property
    def all_experts_bytes(self) -> int:
        """The bound: every weight and the cache read."""
        return self.held_bytes + self.cache_bytes

    @property
    def memory_seconds(self) -> Fraction:
        """Bytes read per step / bandwidth."""
        return Fraction(self.step_bytes, self.bandwidth)

    @property
    def compute_seconds(self) -> Fraction | None:
        """FLOPs per step / dense peak; None where either is not known."""
        if self.step_flops is None or self.peak is None:
            return None
        return Fraction(self.step_flops, self.peak)

    @property
    def bound(self) -> str:
        """``memory`` or ``compute``: whichever takes longer (memory on a tie)."""
        compute = self.compute_seconds
        return "compute" if compute is not None and compute > self.memory_seconds else "memory"

    @property
    def collective_seconds(self) -> Fraction:
        """Collective bytes / the link's one-way bandwidth (0 on one GPU or without a link)."""
        if not self.collective_bytes or self.link is None:
            return Fraction(0)
        return Fraction(self.collective_bytes, self.link)

    @property
    def seconds(self) -> Fraction:
        """P x (max(memory time, compute time) + collective time), the collectives not
        overlapped."""
        compute = self.compute_seconds
        stage = self.memory_seconds if compute is None else max(self.memory_seconds, compute)
        return self.pipeline * (stage + self.collective_seconds)

    @property
    def tokens_per_second_per_sequence(self) -> Fraction:
        return 1 / self.seconds

    @property
    def tokens_per_second(self) -> Fraction:
        """All sequences: D replicas x B / step time."""
        return self.replicas * self.batch / self.seconds


def _layout_default() -> ServingPlan:
    """One GPU holding the whole model."""
    from costcalc.engines.vllm_shards import ServingPlan

    return ServingPlan()


def _layout(layout: ServingPlan | None) -> ServingPlan:
    return _layout_default() if layout is None else layout


def gpu_weight_bytes(
    spec: ModelSpec, dtype: str, layout: ServingPlan | None = None, stage: int = 0
) -> int:
    """The weights one GPU of stage ``stage`` holds: all of them on one GPU (in any format),
    else its vLLM shards (:func:`costcalc.engines.vllm_shards.rank_weight_bytes`)."""
    plan = _layout(layout)
    if plan.gpus == 1:
        return weight_bytes(spec, dtype)
    from costcalc.engines.vllm_shards import rank_tensors, rank_weight_bytes

    return rank_weight_bytes(rank_tensors(spec, plan, stage), dtype)


def weight_rows(
    spec: ModelSpec, dtype: str, layout: ServingPlan | None = None, stage: int = 0
) -> list[tuple[str, Shape, int]]:
    """(name, shape, bytes of all copies) of every tensor one GPU holds: in a raw dtype
    elements x bits / 8 each, rounded up; in a format as :func:`costcalc.quant.format_bytes`
    stores it; on one GPU of many, its shards' bytes beside the whole shape."""
    plan = _layout(layout)
    if plan.gpus > 1:
        from costcalc.engines.vllm_shards import rank_rows

        return rank_rows(spec, plan, stage, dtype)
    if dtype in DTYPES:
        return [(t.name, t.shape, dtype_bytes(t.elements, dtype)) for t in parameter_tensors(spec)]
    from costcalc.quant import format_bytes
    from costcalc.weight_format import parse_format

    return [(t.name, t.shape, t.bytes) for t in format_bytes(spec, parse_format(dtype)).tensors]


def collective_bytes(
    spec: ModelSpec, layout: ServingPlan, stage: int, batch: int, activation: int
) -> int:
    """Bytes one GPU of stage ``stage`` sends per decode step, an ESTIMATE of NCCL's ring
    collectives (2 (N - 1) / N x S per GPU for an all-reduce of S bytes over N GPUs, the same
    for an all-gather plus a reduce-scatter): each layer's attention (or recurrent mixer's)
    output and dense FFN output all-reduced over the T GPUs of its TP group (S = B x D x
    ``activation`` bytes, after vLLM's row-parallel o_proj, out_proj and down_proj); an MoE
    layer's over T as well, or with data-parallel attention (vLLM's ``use_all2all``) the D
    replicas' tokens all-gathered and reduce-scattered over the T x D GPUs (S = D x B x D x
    bytes). Rounded up."""
    from costcalc.engines.vllm_shards import stage_blocks

    def ring(ranks: int, size: int) -> Fraction:
        return Fraction(2 * (ranks - 1) * size, ranks)

    t, d = layout.tp, layout.dp
    total = Fraction(0)
    for stack, count in stage_blocks(spec, layout.pp, stage):
        hidden = batch * stack.d_model * activation
        mixes = stack.has_attention or stack.recurrent
        per_layer = ring(t, hidden) if mixes else Fraction(0)
        if stack.moe_experts and d > 1:
            per_layer += ring(t * d, d * hidden)
        elif stack.ffn != "none" or stack.moe_experts:
            per_layer += ring(t, hidden)
        total += count * per_layer
    return math.ceil(total)


def decode_step(
    spec: ModelSpec,
    gpu: Gpu,
    dtype: str,
    kv_dtype: str,
    batch: int,
    context: int,
    layout: ServingPlan | None = None,
    engine: EngineSetup | None = None,
) -> DecodeStep:
    """The step that decodes the token at position ``context`` - 1 of B sequences (per
    data-parallel replica) on one GPU of the slowest pipeline stage: it reads the GPU's weights
    but the experts no token is expected to run (:func:`costcalc.routing.expert_reads`, over
    the D x B tokens of the replicas) and its cache at ``context`` tokens (the tokens each
    block attends to, in the engine's cache types), does 2 x its replica's decoding MACs /
    (T x P) at the peak its kernels compute at (:func:`compute`), and sends its collectives
    (:func:`collective_bytes`) over the link."""
    plan = _layout(layout)
    recurrent = any(stack.recurrent for stack in spec.stacks)
    macs = None if recurrent else decode_token_macs(spec, context - 1, batch)
    kernels = compute(dtype, gpu)
    activation = 4 if kernels.dtype == "fp32" else 2
    link = None if gpu.interconnect_bandwidth is None else gpu.interconnect_bandwidth // 2
    steps = []
    for stage in range(plan.pp):
        serving = Serving(spec, dtype, kv_dtype, engine or EngineSetup(), plan, stage)
        held = serving.weights()
        rows = weight_rows(spec, dtype, plan, stage)
        unread, experts = expert_reads(spec, rows, batch * plan.dp)
        steps.append(
            DecodeStep(
                batch=batch,
                weight_bytes=held - unread,
                held_bytes=held,
                cache_bytes=serving.cache_read(batch, context),
                bandwidth=gpu.memory_bandwidth(),
                step_flops=None if macs is None else -(-flops(macs) // (plan.tp * plan.pp)),
                peak=kernels.peak,
                experts=experts,
                collective_bytes=collective_bytes(spec, plan, stage, batch, activation)
                if plan.gpus > 1
                else 0,
                link=link,
                pipeline=plan.pp,
                replicas=plan.dp,
            )
        )
    return max(steps, key=lambda step: step.seconds)


def decode_batches(largest: int) -> list[int]:
    """1, 2, 4, ... up to ``largest``, and ``largest`` itself."""
    batches = [1 << k for k in range(largest.bit_length()) if 1 << k <= largest]
    return batches + ([largest] if largest and batches[-1] != largest else [])


@dataclass(frozen=True)
class Roofline:
    """Inference ESTIMATES on one GPU: prefill compute-bound (its ``prefill_flops``, through
    ``pipeline`` stages in turn), a decode step at the larger of its memory and compute
    times."""

    prefill_flops: int
    peak: int | None
    decode: DecodeStep
    pipeline: int = 1

    @property
    def prefill_seconds(self) -> Fraction | None:
        """P x one GPU's forward FLOPs of the prompts / peak; None where the peak is not
        known."""
        if self.peak is None:
            return None
        return Fraction(self.pipeline * self.prefill_flops, self.peak)


def roofline(
    spec: ModelSpec,
    gpu: Gpu,
    dtype: str,
    kv_dtype: str,
    batch: int,
    prompt: int,
    context: int,
    layout: ServingPlan | None = None,
    engine: EngineSetup | None = None,
) -> Roofline:
    """Prefill of B prompts of ``prompt`` tokens; decode steps at ``context`` cached tokens; on
    one GPU of T x P, 1 / (T x P) of the FLOPs (rounded up)."""
    plan = _layout(layout)
    decode = decode_step(spec, gpu, dtype, kv_dtype, batch, context, plan, engine)
    return Roofline(
        prefill_flops=-(-flops(forward_macs(spec, batch, prompt)) // (plan.tp * plan.pp)),
        peak=compute(dtype, gpu).peak,
        decode=decode,
        pipeline=plan.pp,
    )


# --------------------------------------------------------------------------- what fits


def cache_bytes(
    spec: ModelSpec,
    batch: int,
    context: int,
    kv_dtype: str,
    stacks: tuple[ModelSpec, ...] | None = None,
) -> int:
    """What B sequences of ``context`` tokens keep beside the weights: the KV cache and the
    recurrent state, both in ``kv_dtype``; of one GPU's ``stacks`` (its layers and key/value
    heads, :func:`costcalc.engines.vllm_shards.rank_stacks`) when given."""
    if stacks is None:
        return kv_cache_bytes(spec, batch, context, kv_dtype) + state_bytes(spec, batch, kv_dtype)
    kv = sum(kv_cache_elements(stack, batch, context) for stack in stacks)
    state = sum(state_elements(stack, batch) for stack in stacks)
    return dtype_bytes(kv, kv_dtype) + dtype_bytes(state, kv_dtype)


def _largest(fits: Callable[[int], bool], high: int) -> int:
    """The largest n in [0, high] with fits(n), for ``fits`` true at 0 and monotone (true up to
    some n, false after): bisection, about log2(high) calls."""
    low = 0
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class CacheFit:
    """The largest batch at ``context`` tokens and the largest context at ``batch`` sequences
    whose cache fits in ``budget`` - ``weights`` bytes (0: not even one; ``largest_batch`` None:
    the cache does not grow with the batch, so memory sets no bound)."""

    budget: int
    weights: int
    context: int
    batch: int
    positions: int
    largest_batch: int | None
    largest_context: int
    reserve: int = 0
    """Set aside before the utilisation share is taken (driver and CUDA context)."""
    stage: int = 0
    """The pipeline stage (0-based) whose GPUs hold the fewest sequences: the plan's bound."""

    @property
    def free(self) -> int:
        """Bytes the weights leave for the cache (negative: the weights alone do not fit)."""
        return self.budget - self.weights


def cache_fit(
    spec: ModelSpec,
    gpu: Gpu,
    utilisation: Fraction,
    dtype: str,
    kv_dtype: str,
    batch: int,
    context: int,
    layout: ServingPlan | None = None,
    reserve: int | None = None,
    engine: EngineSetup | None = None,
) -> CacheFit:
    """Budget floor(u x (memory - reserve)), the GPU's default reserve unless given (vLLM:
    ceil(u x memory), its ``request_memory``); the largest B with cache(B, context) <= budget -
    weights, and the largest T <= the model's context length with cache(batch, T) <= budget -
    weights (one GPU's weights and cache, as the engine allocates it; of the pipeline stage
    that holds the fewest sequences)."""
    plan = _layout(layout)
    fits = [
        _stage_fit(
            Serving(spec, dtype, kv_dtype, engine or EngineSetup(), plan, stage),
            gpu,
            utilisation,
            batch,
            context,
            reserve,
        )
        for stage in range(plan.pp)
    ]
    return min(
        fits,
        key=lambda f: (math.inf if f.largest_batch is None else f.largest_batch, f.largest_context),
    )


def _stage_fit(
    serving: Serving,
    gpu: Gpu,
    utilisation: Fraction,
    batch: int,
    context: int,
    reserve: int | None,
) -> CacheFit:
    """:func:`cache_fit` on one GPU of ``serving``'s stage."""
    from costcalc.gpus import usable_memory

    kept = gpu.reserve if reserve is None else reserve
    if serving.engine.name == "vllm":
        budget = math.ceil(utilisation * gpu.memory_bytes)
    else:
        budget = math.floor(utilisation * usable_memory(gpu, kept))
    weights = serving.weights()
    free = budget - weights
    positions = serving.spec.context_length
    per_sequence = serving.cache(1, context)
    largest_batch: int | None = None
    if free < 0:
        largest_batch = 0
    elif per_sequence:  # each adds at least one bit: 8 x free + 1 do not fit
        largest_batch = _largest(lambda b: serving.cache(b, context) <= free, 8 * free + 1)
    largest_context = (
        _largest(lambda t: serving.cache(batch, t) <= free, positions)
        if free >= 0 and serving.cache(batch, 0) <= free
        else 0
    )
    return CacheFit(
        budget,
        weights,
        context,
        batch,
        positions,
        largest_batch,
        largest_context,
        kept,
        serving.stage,
    )


@dataclass(frozen=True)
class Serving:
    """What the engine of a plan holds and reads (:mod:`costcalc.engines`): transformers the
    formula; llama.cpp its model buffer, its KV caches for ``-c B x T -np B`` and its output
    buffer; vLLM the weights and the blocks B requests of T tokens hold."""

    spec: ModelSpec
    dtype: str
    kv_dtype: str
    engine: EngineSetup
    layout: ServingPlan = field(default_factory=_layout_default)
    stage: int = 0

    @property
    def stacks(self) -> tuple[ModelSpec, ...] | None:
        """One GPU's layers and key/value heads on many GPUs, else None (the whole model)."""
        if self.layout.gpus == 1:
            return None
        from costcalc.engines.vllm_shards import rank_stacks

        return rank_stacks(self.spec, self.layout, self.stage)

    def weights(self) -> int:
        """The weights one GPU holds: llama.cpp's model buffer, else :func:`gpu_weight_bytes`."""
        if self.engine.name == "llamacpp":
            from costcalc.engines.llamacpp import model_buffer

            return model_buffer(self.spec, self.dtype)
        return gpu_weight_bytes(self.spec, self.dtype, self.layout, self.stage)

    def cache(self, batch: int, context: int) -> int:
        """What B sequences of ``context`` tokens hold beside the weights."""
        if self.engine.name == "llamacpp":
            from costcalc.engines.llamacpp import (
                context_cells,
                kv_caches,
                output_buffer,
            )

            if context == 0:
                return 0
            _, cells = context_cells(batch * context, batch)
            caches = kv_caches(
                self.spec,
                cells,
                batch,
                *self._cache_types(),
                ubatch=min(batch * context, 512),
                swa_full=self.engine.swa_full,
            )
            return sum(c.bytes for c in caches) + output_buffer(self.spec, batch)
        if self.engine.name == "vllm":
            return self._vllm(batch, context).kv_bytes
        return cache_bytes(self.spec, batch, context, self.kv_dtype, self.stacks)

    def cache_read(self, batch: int, context: int) -> int:
        """What a decode step reads of the cache: the tokens each block attends to (the
        formula), in llama.cpp's cache types or vLLM's cache dtype."""
        if self.engine.name == "llamacpp":
            from costcalc.engines.llamacpp import read_bytes

            return read_bytes(self.spec, batch, context, *self._cache_types())
        if self.engine.name == "vllm":
            from costcalc.engines.vllm import check_kv_dtype

            _, size = check_kv_dtype(self.kv_dtype, self.dtype)
            stacks = self.spec.stacks if self.stacks is None else self.stacks
            return size * sum(kv_cache_elements(stack, batch, context) for stack in stacks)
        return cache_bytes(self.spec, batch, context, self.kv_dtype, self.stacks)

    def _cache_types(self) -> tuple[str, str]:
        """llama.cpp's cache types: --cache-type-k / -v, else its f16."""
        return self.engine.cache_type_k or "f16", self.engine.cache_type_v or "f16"

    def _vllm(self, batch: int, context: int) -> VllmMemory:
        from costcalc.engines.vllm import BLOCK_SIZE, default_batched_tokens, vllm_memory

        batched = self.engine.max_num_batched_tokens or default_batched_tokens(
            self.engine.device_memory
        )
        return vllm_memory(
            self.spec,
            self.dtype,
            context or 1,
            batch,
            self.kv_dtype,
            self.engine.block_size or BLOCK_SIZE,
            batched,
            stacks=self.stacks,
            pipeline_stages=self.layout.pp,
        )
