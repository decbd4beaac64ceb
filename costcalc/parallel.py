"""Per-GPU training memory under parallelism: data parallel (plain replicas, DeepSpeed ZeRO
stages 1-3, PyTorch FSDP), tensor, pipeline and context parallel, combined on a grid of
N = DP x TP x PP x CP GPUs.

Data parallelism (Rajbhandari et al. 2020, ZeRO): stage 1 shards the optimizer state, stage 2
also the gradients, stage 3 also the parameters. ``--zero`` is DeepSpeed's ZeRO as its engine
allocates it (:mod:`costcalc.zero`: the flat buffer and its alignment, the gradients of whole
touched parameters, per-parameter partitions, the reduce bucket, the step's fp32 gradient
partition, stage 3's whole small parameters and gathered layer). FSDP is FSDP2 (torch's
``fully_shard``, :func:`fsdp_report`): each parameter's rows padded to a multiple of N,
ceil(d0 / N) rows per rank, fp32 shards under mixed precision: ``full`` (FULL_SHARD) its parameters,
gradients and optimizer state, holding unsharded in the backward the root unit's 16-bit
parameters, its head's gradients, two layers' parameters and one's gradients
(:func:`fsdp_unsharded`); ``grad-op`` (SHARD_GRAD_OP) the
gradients and optimizer state; ``hybrid`` (HYBRID_SHARD) as ``full`` within a node of G GPUs,
replicated across nodes. Mixed precision's fp32 master weights count as optimizer state, as in
DeepSpeed. Under TP and PP, ZeRO shards each rank's own parameters over the DP ranks only.
Allocator fragmentation and host memory are not counted. ``--batch`` is the micro-batch each
rank runs.

Tensor parallelism, Megatron-LM's layout (Shoeybi et al. 2019): column-parallel q/k/v (fused or
not) and FFN gate/up split their output rows T ways, weights and biases; row-parallel o_proj and
FFN down split their input columns, their biases replicate; stacked MoE experts split each
expert's matrices T ways like a dense FFN (``--ep`` deals the experts out); attention sinks
split with the heads; norms, q/k norms, routers and position tables replicate. The token table
and LM head are vocab-parallel: V rows padded up to a multiple of 128 x T (Megatron's
``make_vocab_size_divisible_by`` 128 times the TP size; with T = 1 the model's own rows), V / T
per rank, and the logits stay split for the vocab-parallel cross-entropy.

Expert parallelism (``--ep E``, Megatron-Core's MoE layout with the expert tensor-parallel size
equal to T): each MoE layer's X stacked experts are dealt out E ways, X / E to a rank, each
expert still split T ways; routers and shared experts are held as without it. The E expert ranks
are data-parallel replicas of the rest of the model, so E divides DP; ZeRO and FSDP shard the
expert states over the DP / E ranks that hold the same experts (Megatron's expert data-parallel
group, DeepSpeed-MoE's), the rest over all DP ranks; hybrid sharding with EP is not modelled.

Pipeline parallelism: L / P consecutive layers per stage; the first stage also holds the token
and position tables (and an input projection or embedding norm), the last the final norm and LM
head, and with tied embeddings the token table too (Megatron keeps a copy on both ends). Under
1F1B (Narayanan et al. 2021, PipeDream-Flush) stage s (0-based) holds the activations of
min(M, P - s) micro-batches, the first stage P; the logits live on the last stage, one
micro-batch at a time. The report is the stage whose total is largest.

Context parallelism (``--cp C``, Megatron-Core's ``context_parallel_size``): each sequence's
T tokens are cut into 2C chunks and rank i of C keeps chunks i and 2C - 1 - i
(``get_batch_on_this_cp_rank``, which balances causal attention's work), so T must divide by
2C. Attention runs as ring attention in Transformer Engine's fused kernels (Megatron-Core's own
``DotProductAttention`` asserts ``context_parallel_size == 1``): each rank keeps the queries,
keys, values, output and log-sum-exp of its own T / C tokens and no T x T scores, so eager
attention is refused. Every other saved tensor is per token, so a rank's activations and logits
are those of sequences of T / C tokens. Weights, gradients and optimizer state are replicated
over the CP ranks as over DP replicas; ZeRO and the distributed optimizer shard them over the
DP x CP ranks (``get_megatron_optimizer`` builds it on ``intra_dp_cp_group``), and EP draws its
expert ranks from DP x CP (Megatron-Core's expert grid: world / (TP x EP x PP) expert
data-parallel ranks). Recurrent mixers are refused under CP.

Activations under TP (Korthikanti et al. 2022, Sec. 4.2, Table 2), per layer:
s b h (10 + 24 / t) without sequence parallelism (the layer-norm and dropout inputs, 10 s b h,
are not split), 34 s b h / t with it; eager attention's scores 5 a s^2 b / t; full
recomputation keeps 2 s b h (Table 2 states it undivided). Without TP a rank's layers save what
they save on one GPU (:mod:`costcalc.activations`), so TP = 1 gives the single-GPU figure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from costcalc.activations import activation_formula, korthikanti_score_bytes
from costcalc.errors import UsageError, check_choice
from costcalc.memory import (
    LOSS_DTYPE,
    MASTER_DTYPE,
    STEP_DTYPE,
    MemoryReport,
    keeps_scores,
    layer_activation_bytes,
    layer_score_bytes,
    moment_elements,
    outside_activation_bytes,
    step_elements,
)
from costcalc.option_names import option
from costcalc.spec import ModelSpec
from costcalc.tensors import (
    Shape,
    Tensor,
    block_norm_tensors,
    block_tensors,
    elements,
    model_tensors,
    stack_tensors,
)
from costcalc.units import dtype_bytes
from costcalc.zero import (
    PREFETCH_BUCKET_SIZE,
    REDUCE_BUCKET_SIZE,
    ShardGroup,
    ZeroShares,
    zero_shares,
)

ZERO_STAGES: tuple[int, ...] = (0, 1, 2, 3)
FSDP_MODES: tuple[str, ...] = ("full", "grad-op", "hybrid")
FSDP_STAGE: dict[str, int] = {"full": 3, "grad-op": 2, "hybrid": 3}
"""The ZeRO stage whose partitioning each FSDP sharding strategy matches."""
SHARDABLE_OPTIMIZERS: tuple[str, ...] = ("adamw", "sgd", "sgd-momentum")
"""Optimizers whose state is per element, so a flat partition of it exists (Adafactor's
factored rows and columns have none)."""
VOCAB_MULTIPLE = 128
"""Megatron-LM's default ``make_vocab_size_divisible_by``; the table pads to it times T."""
COLUMN_PARALLEL: tuple[str, ...] = (
    "q_proj",
    "k_proj",
    "v_proj",
    "qkv_proj",
    "kv_proj",
    "gate_proj",
    "up_proj",
    "gate_up_proj",
)
ROW_PARALLEL: tuple[str, ...] = ("o_proj", "down_proj")
VOCAB_PARALLEL: tuple[str, ...] = ("embed_tokens", "lm_head")
FIRST_STAGE: tuple[str, ...] = ("embed_tokens", "embed_positions", "project_in", "embed_norm")
LAST_STAGE: tuple[str, ...] = ("norm", "project_out", "lm_head")
TP_MIXERS: tuple[str, ...] = ("attention", "none")
"""Token mixers whose Megatron tensor-parallel layout is modelled."""


@dataclass(frozen=True)
class ParallelPlan:
    """A plan of ``gpus`` = DP x ``tp`` x ``pp`` x ``cp`` ranks, each running ``--batch``
    sequences per micro-batch; states sharded by ZeRO ``stage`` over ``shard_gpus`` ranks that
    hold the same states (all DP x CP of them, or a node's for hybrid); ``sp`` sequence
    parallelism; ``micro_batches`` per step (None: as many as stages); ``ep`` expert-parallel
    ranks among the DP x CP ranks; ``cp`` context-parallel ranks, T / C tokens each."""

    gpus: int = 1
    stage: int = 0
    fsdp: str | None = None
    shard_gpus: int = 1
    tp: int = 1
    pp: int = 1
    sp: bool = False
    micro_batches: int | None = None
    ep: int = 1
    cp: int = 1

    @property
    def dp(self) -> int:
        """Data-parallel replicas: N / (TP x PP x CP)."""
        return self.gpus // (self.tp * self.pp * self.cp)

    def tokens(self, length: int) -> int:
        """Tokens of each sequence one rank runs: T / C."""
        return length // self.cp

    def in_flight(self, stage: int) -> int:
        """Micro-batches whose activations pipeline stage ``stage`` (0-based) holds under 1F1B:
        min(M, P - stage)."""
        return min(self.micro_batches or self.pp, self.pp - stage)

    @property
    def label(self) -> str:
        """The plan in words: "8 GPUs, ZeRO-2", "16 GPUs (DP 2 x TP 4 x PP 2), ZeRO-1",
        "16 GPUs (DP 2 x TP 4 x PP 1 x CP 2), ZeRO-1"."""
        gpus = f"{self.gpus} GPU{'s' if self.gpus > 1 else ''}"
        if self.tp > 1 or self.pp > 1 or self.cp > 1:
            cp = f" x CP {self.cp}" if self.cp > 1 else ""
            gpus += f" (DP {self.dp} x TP {self.tp} x PP {self.pp}{cp})"
            gpus += ", sequence parallel" if self.sp else ""
        gpus += f", experts over EP {self.ep}" if self.ep > 1 else ""
        if self.fsdp == "hybrid":
            return f"{gpus}, FSDP hybrid shard (shards of {self.shard_gpus})"
        if self.fsdp is not None:
            return f"{gpus}, FSDP {self.fsdp} shard"
        return f"{gpus}, ZeRO-{self.stage}" if self.stage else f"{gpus}, replicated (DDP)"


def optional_plan(
    gpus: int | None,
    zero: int | None,
    fsdp: str | None,
    node_gpus: int | None,
    tp: int | None,
    pp: int | None,
    sp: bool,
    micro_batches: int | None,
    ep: int | None,
    cp: int | None,
) -> ParallelPlan | None:
    """The plan the options give (:func:`parallel_plan`), or None when none of them is given."""
    given = (gpus, zero, fsdp, node_gpus, tp, pp, sp or None, micro_batches, ep, cp)
    if all(value is None for value in given):
        return None
    return parallel_plan(gpus, zero, fsdp, node_gpus, tp, pp, sp, micro_batches, ep, cp)


def parallel_plan(
    gpus: int | None,
    zero: int | None,
    fsdp: str | None,
    node_gpus: int | None,
    tp: int | None = None,
    pp: int | None = None,
    sp: bool = False,
    micro_batches: int | None = None,
    ep: int | None = None,
    cp: int | None = None,
) -> ParallelPlan:
    """A checked plan: ZeRO and FSDP exclude each other; the GPUs divide into TP x PP x CP
    groups (``gpus`` defaults to TP x PP x CP x EP); hybrid needs a node size that divides the
    GPU count and holds whole TP x PP groups; ``sp`` needs TP and ``micro_batches`` PP; EP
    divides the DP x CP ranks and takes no hybrid sharding."""
    t, p, e = 1 if tp is None else tp, 1 if pp is None else pp, 1 if ep is None else ep
    c = 1 if cp is None else cp
    checks = (("--tp", t), ("--pp", p), ("--micro-batches", micro_batches), ("--ep", e))
    for flag, value in (*checks, ("--cp", c)):
        if value is not None and value < 1:
            raise UsageError(f"{option(flag)} must be at least 1, got {value}")
    group = t * p  # the ranks that split one copy of the states; DP x CP copies of them
    n = group * c * e if gpus is None else gpus
    if n < 1:
        raise UsageError(f"{option('--gpus')} must be at least 1, got {n}")
    if n % (group * c):
        cp_factor, cp_term = (f" x CP {c}", " x CP") if c > 1 else ("", "")
        raise UsageError(
            f"{option('--gpus', n)} does not divide into groups of TP {t} x PP "
            f"{p}{cp_factor} = {group * c} GPUs ({option('--gpus')} is the total: "
            f"data-parallel replicas x TP x PP{cp_term})"
        )
    if sp and t == 1:
        raise UsageError(
            f"{option('--sp')} splits activations over the tensor-parallel ranks: add "
            f"{option('--tp')}"
        )
    if micro_batches is not None and p == 1:
        raise UsageError(
            f"{option('--micro-batches')} sets the pipeline's micro-batches: add {option('--pp')}"
        )
    if zero is not None and fsdp is not None:
        raise UsageError(
            f"{option('--zero')} and {option('--fsdp')} are two ways to shard the same "
            "states: give one"
        )
    if (n // group) % e:
        ranks = "data- and context-parallel ranks" if c > 1 else "data-parallel replicas"
        raise UsageError(
            f"{option('--ep', e)}: the {n // group} {ranks} ({option('--gpus', n)} / "
            f"TP {t} x PP {p}) "
            f"do not divide into groups of {e} expert-parallel ranks"
        )
    if e > 1 and fsdp == "hybrid":
        raise UsageError(
            f"{option('--ep')} with {option('--fsdp', 'hybrid')}: sharding expert "
            f"states within a node is not modelled; use {option('--zero')} or "
            f"{option('--fsdp', 'full')} or 'grad-op'"
        )
    if zero is not None and zero not in ZERO_STAGES:
        raise UsageError(f"unknown ZeRO stage {zero}; expected 0, 1, 2 or 3")
    if fsdp is not None:
        check_choice(fsdp, FSDP_MODES, "FSDP sharding")
    if node_gpus is not None and fsdp != "hybrid":
        hybrid = option("--fsdp", "hybrid")
        raise UsageError(f"{option('--node-gpus')} sets the shard group of {hybrid}; add {hybrid}")
    grid = ParallelPlan(n, 0, None, n // group, t, p, sp, micro_batches, e, c)
    if fsdp == "hybrid":
        if node_gpus is None:
            raise UsageError(
                f"{option('--fsdp', 'hybrid')} shards within a node: give "
                f"{option('--node-gpus', metavar='G')}"
            )
        if node_gpus < 1:
            raise UsageError(f"{option('--node-gpus')} must be at least 1, got {node_gpus}")
        if n % node_gpus:
            raise UsageError(
                f"{option('--fsdp', 'hybrid')}: {n} GPUs do not divide into nodes of "
                f"{node_gpus} "
                f"({n} = nodes x GPUs per node)"
            )
        if node_gpus % group:
            raise UsageError(
                f"{option('--fsdp', 'hybrid')}: a node of {node_gpus} GPUs does not hold "
                "whole groups of "
                f"TP {t} x PP {p} = {group} GPUs"
            )
        return replace(grid, stage=3, fsdp=fsdp, shard_gpus=node_gpus // group)
    stage = FSDP_STAGE[fsdp] if fsdp is not None else (zero or 0)
    return replace(grid, stage=stage, fsdp=fsdp)


def shard(count: int, ranks: int) -> int:
    """Elements one of ``ranks`` ranks holds of ``count``: ceil(count / ranks)."""
    return -(-count // ranks)


# --------------------------------------------------------------------------- what a rank holds


def padded_vocab(spec: ModelSpec, tp: int, head: bool = False) -> int:
    """Rows of the vocab-parallel table (or, with ``head``, of the LM head and the logits):
    V padded up to a multiple of 128 x T (Megatron's ``_vocab_size_with_padding``); the
    model's own rows without tensor parallelism."""
    rows = spec.output_rows if head else spec.vocab_rows
    if tp == 1:
        return rows
    return shard(rows, VOCAB_MULTIPLE * tp) * VOCAB_MULTIPLE * tp


def check_tensor_parallel(spec: ModelSpec, tp: int) -> None:
    """Attention heads and key/value heads divide over T ranks, and every block is one whose
    layout is modelled (attention without attention experts, or none as the mixer)."""
    if tp == 1:
        return
    for stack in spec.stacks:
        if stack.mixer not in TP_MIXERS or stack.recurrent:
            raise UsageError(
                f"{option('--tp')}: tensor parallelism of "
                f"{stack.recurrent_mixer or stack.mixer} blocks is not "
                "modelled (Megatron's layout covers attention and FFN blocks)"
            )
        if stack.attention_experts is not None:
            raise UsageError(
                f"{option('--tp')}: tensor parallelism of a mixture of attention heads "
                "(attention_experts) "
                "is not modelled"
            )
        if not stack.has_attention:
            continue
        for what, count in (
            ("attention heads", stack.n_heads or 0),
            ("key/value heads", stack.kv_heads),
        ):
            if count % tp:
                raise UsageError(
                    f"{option('--tp', tp)}: the {count} {what} do not divide over {tp} "
                    "tensor-parallel ranks"
                )


def check_expert_parallel(spec: ModelSpec, ep: int) -> None:
    """The experts of every MoE layer divide over E ranks; a model without them refuses E > 1."""
    if ep == 1:
        return
    counts = {stack.moe_experts for stack in spec.stacks if stack.moe_experts is not None}
    if not counts:
        raise UsageError(
            f"{option('--ep', ep)}: the model has no mixture-of-experts layers to split"
        )
    for count in sorted(counts):
        if count % ep:
            raise UsageError(
                f"{option('--ep', ep)}: the {count} experts of each MoE layer do not "
                f"divide over {ep} "
                "expert-parallel ranks"
            )


def check_context_parallel(spec: ModelSpec, cp: int, length: int, attention: str) -> None:
    """T divides into 2C chunks (Megatron-Core's load-balanced causal split: chunks i and
    2C - 1 - i on rank i), attention is a fused kernel (ring attention; eager attention's T x T
    scores have no context-parallel form) and no block is recurrent."""
    if cp == 1:
        return
    if length % (2 * cp):
        raise UsageError(
            f"{option('--cp', cp)}: the length {length:,} does not divide into 2 x CP = "
            f"{2 * cp} chunks "
            f"(Megatron-Core gives each context-parallel rank two chunks of T / {2 * cp} tokens, "
            "i and 2C - 1 - i, to balance causal attention)"
        )
    if attention == "eager":
        raise UsageError(
            f"{option('--cp')} with {option('--attention', 'eager')}: context "
            "parallelism runs ring attention in fused kernels (Megatron-Core refuses its unfused "
            f"attention with CP), which keep no T x T scores: use "
            f"{option('--attention', 'sdpa')} or 'flash'"
        )
    for stack in spec.stacks:
        if stack.recurrent:
            raise UsageError(
                f"{option('--cp')}: context parallelism of "
                f"{stack.recurrent_mixer or stack.mixer} blocks is "
                "not modelled (ring attention splits attention blocks)"
            )


def expert_parallel_shape(tensor: Tensor, ep: int) -> Shape:
    """A stacked expert tensor (``mlp.experts.*``, experts first) as one of E ranks holds it:
    X / E experts; any other tensor whole."""
    if ep == 1 or not tensor.name.startswith("mlp.experts."):
        return tensor.shape
    return (tensor.shape[0] // ep, *tensor.shape[1:])


def _split(tensor: Tensor, dim: int, tp: int) -> Shape:
    """``tensor``'s shape with dimension ``dim`` divided by T (a UsageError when it does not)."""
    size = tensor.shape[dim]
    if size % tp:
        raise UsageError(
            f"{option('--tp', tp)}: {tensor.name} has {size:,} along a split dimension, "
            "which does not "
            f"divide over {tp} tensor-parallel ranks"
        )
    return (*tensor.shape[:dim], size // tp, *tensor.shape[dim + 1 :])


def tensor_parallel_shape(tensor: Tensor, tp: int, vocab: int) -> Shape:
    """The shape one of T ranks holds: column-parallel rows, row-parallel columns, a stacked
    expert's gate/up rows and down columns, vocab-parallel rows of ``vocab`` / T, sinks and
    gate biases per head; the rest (norms, row-parallel biases, routers, position tables) whole."""
    module, _, kind = tensor.name.rpartition(".")
    leaf = module.rpartition(".")[2]
    if module in VOCAB_PARALLEL:
        return (vocab // tp, *tensor.shape[1:])
    if tp == 1:
        return tensor.shape
    if module == "mlp.experts":
        if kind in ("gate_up_proj", "gate_up_proj_bias"):
            return _split(tensor, 1, tp)
        return _split(tensor, 2, tp) if kind == "down_proj" else tensor.shape
    if leaf in COLUMN_PARALLEL or tensor.name in ("attn.sinks", "attn.gate_bias"):
        return _split(tensor, 0, tp)
    if leaf in ROW_PARALLEL and kind == "weight":
        return _split(tensor, 1, tp)
    return tensor.shape


def stage_modules(spec: ModelSpec, pp: int, stage: int) -> tuple[str, ...]:
    """The model-level modules pipeline stage ``stage`` of P holds: the embeddings on the first,
    the final norm and head on the last, and the token table on both ends when tied."""
    modules: tuple[str, ...] = ()
    if stage == 0:
        modules += FIRST_STAGE
    if stage == pp - 1:
        modules += LAST_STAGE + (("embed_tokens",) if spec.tie_embeddings else ())
    return modules


def pipeline_stacks(spec: ModelSpec, pp: int) -> tuple[ModelSpec, ...]:
    """The stacks of blocks whose L / P layers each stage holds: the model's own without
    pipeline stages; under P stages one stack of L layers, when every kind of block holds the
    same tensors and activations (gpt-oss's sliding and full layers do; the order of blocks
    that differ is not modelled), and L divides over P."""
    if pp == 1:
        return spec.stacks
    if any(stack.shared_weight_sets is not None for stack in spec.stacks):
        raise UsageError(
            f"{option('--pp')}: pipeline stages of a model whose blocks reuse weight sets "
            "are not modelled"
        )
    first = spec.stacks[0]
    for stack in spec.stacks[1:]:
        if block_tensors(stack) != block_tensors(first) or (stack.d_model, stack.n_heads) != (
            first.d_model,
            first.n_heads,
        ):
            raise UsageError(
                f"{option('--pp')}: pipeline stages of a model whose blocks hold different "
                "tensors are not "
                "modelled"
            )
    if spec.n_layers % pp:
        raise UsageError(
            f"{option('--pp', pp)}: the {spec.n_layers} layers do not divide over {pp} "
            "pipeline stages"
        )
    return (first.model_copy(update={"n_layers": spec.n_layers}),)


def rank_tensors(spec: ModelSpec, plan: ParallelPlan, stage: int) -> list[Tensor]:
    """The tensors one tensor-parallel rank of pipeline stage ``stage`` holds, with their shard
    shapes: the stage's model-level modules and L / P layers of blocks, X / E experts of each
    MoE layer."""
    check_tensor_parallel(spec, plan.tp)
    check_expert_parallel(spec, plan.ep)
    stacks = pipeline_stacks(spec, plan.pp)
    modules = stage_modules(spec, plan.pp, stage)
    held = [t for t in model_tensors(spec) if t.name.rpartition(".")[0] in modules]
    held += (
        [t.times(stack.n_layers // plan.pp) for stack in stacks for t in block_tensors(stack)]
        if plan.pp > 1
        else [t for stack in stacks for t in stack_tensors(stack)]
    )
    vocab, head = padded_vocab(spec, plan.tp), padded_vocab(spec, plan.tp, head=True)
    held = [replace(t, shape=expert_parallel_shape(t, plan.ep)) for t in held]
    return [
        replace(
            t,
            shape=tensor_parallel_shape(
                t, plan.tp, head if t.name.startswith("lm_head") else vocab
            ),
        )
        for t in held
    ]


def _rank_shape(tensor: Tensor, plan: ParallelPlan, spec: ModelSpec) -> Tensor:
    """``tensor`` as one rank holds it: X / E experts, then its tensor-parallel shard."""
    vocab = padded_vocab(spec, plan.tp, head=tensor.name.startswith("lm_head"))
    held = replace(tensor, shape=expert_parallel_shape(tensor, plan.ep))
    return replace(held, shape=tensor_parallel_shape(held, plan.tp, vocab))


MAX_ZERO_TENSORS = 1_000_000
"""ZeRO partitions a rank's parameters one by one, in order: a rank holding more parameter
tensors than this (a checkpoint's limit, :data:`costcalc.checkpoint.MAX_TENSORS`) is refused
rather than listed (2^31 layers of GPT-2 would be 25 billion entries)."""


def check_zero_tensors(count: int) -> None:
    """A UsageError when one rank would hold ``count`` > :data:`MAX_ZERO_TENSORS` parameter
    tensors for ZeRO to partition."""
    if count > MAX_ZERO_TENSORS:
        raise UsageError(
            f"{option('--zero')} partitions parameter by parameter: one rank would hold "
            f"{count:,} parameter tensors, and at most {MAX_ZERO_TENSORS:,} are listed (fewer "
            f"layers, or {option('--fsdp')})"
        )


def ordered_sizes(spec: ModelSpec, plan: ParallelPlan, stage: int) -> list[Tensor]:
    """The tensors one rank of pipeline stage ``stage`` holds, one per ``model.parameters()``
    entry in the order transformers registers them: the stage's first-stage modules, each
    layer's mixer and FFN tensors then its norms, the rest of the model-level modules (a stack
    whose blocks reuse weight sets keeps its tensors whole, in costcalc's order). Each kind of
    tensor is shaped once; a UsageError past :data:`MAX_ZERO_TENSORS`."""
    modules = stage_modules(spec, plan.pp, stage)
    held = [t for t in model_tensors(spec) if t.name.rpartition(".")[0] in modules]
    first = [t for t in held if t.name.rpartition(".")[0] in FIRST_STAGE]
    runs: list[tuple[list[Tensor], int]] = [(first, 1)]
    for stack in pipeline_stacks(spec, plan.pp):
        if stack.shared_weight_sets is not None:
            runs.append((stack_tensors(stack), 1))
            continue
        block = block_tensors(stack)
        norms = len(block_norm_tensors(stack))
        runs.append((block[norms:] + block[:norms], stack.n_layers // plan.pp))
    runs.append(([t for t in held if t not in first], 1))
    check_zero_tensors(sum(times * sum(t.copies for t in tensors) for tensors, times in runs))
    ordered: list[Tensor] = []
    for tensors, times in runs:
        shaped = [replace(_rank_shape(t, plan, spec), copies=1) for t in tensors]
        ordered += [
            t for t, kind in zip(shaped, tensors, strict=True) for _ in range(kind.copies)
        ] * times
    return ordered


def zero_groups(spec: ModelSpec, plan: ParallelPlan, stage: int) -> list[ShardGroup]:
    """The parameter groups DeepSpeed's ZeRO partitions on one rank: the stacked experts over
    the S / E ranks holding the same ones (DeepSpeed-MoE's expert group), the rest over S."""
    tensors = ordered_sizes(spec, plan, stage)
    experts = tuple(t.elements for t in tensors if t.name.startswith("mlp.experts."))
    rest = tuple(t.elements for t in tensors if not t.name.startswith("mlp.experts."))
    groups = [ShardGroup(rest, plan.shard_gpus)]
    return groups + ([ShardGroup(experts, plan.shard_gpus // plan.ep)] if experts else [])


def largest_module(tensors: list[Tensor]) -> int:
    """The most parameters one module owns directly (its own tensors, one layer's copy): the
    embedding or head in a language model; DeepSpeed's ``largest_layer_params``."""
    modules: dict[str, int] = {}
    for tensor in tensors:
        module = tensor.name.rpartition(".")[0]
        modules[module] = modules.get(module, 0) + elements(tensor.shape)
    return max(modules.values(), default=0)


# --------------------------------------------------------------------------- activations


TENSOR_PARALLEL_SOURCE = (
    "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, "
    "Sec. 4.2, Table 2 (an estimate: 16-bit activations of a GPT block under tensor and "
    "sequence parallelism)"
)


def tensor_parallel_layer_bytes(
    spec: ModelSpec, batch: int, length: int, recompute: str, plan: ParallelPlan
) -> int:
    """ESTIMATE of one layer's activations on one tensor-parallel rank but the scores
    (Korthikanti et al. 2022, Table 2): 2 s b h with full recomputation; 34 s b h / t with
    sequence parallelism; s b h (10 + 24 / t) without (each rounded up)."""
    sbh = length * batch * spec.d_model
    if recompute == "full":
        return 2 * sbh
    if plan.sp:
        return shard(34 * sbh, plan.tp)
    return 10 * sbh + shard(24 * sbh, plan.tp)


def parallel_activation_formula(
    spec: ModelSpec, plan: ParallelPlan, recompute: str, attention: str, dtype: str
) -> str:
    """The activations of one rank in symbols: without TP the single-GPU terms (of the stage's
    L / P layers under PP); with TP Korthikanti et al. 2022, Table 2; under CP with T (s) the
    T / C tokens of each sequence one rank runs."""
    per_rank = (
        f", T the T / C tokens of a sequence on one GPU, C = {plan.cp}" if plan.cp > 1 else ""
    )
    if plan.tp == 1:
        single = activation_formula(spec, recompute, attention, dtype)
        if plan.pp == 1:
            return single + per_rank
        return (
            f"micro-batches in flight x the stage's L / P layers of {single}, P = {plan.pp}"
            + per_rank
        )
    if recompute == "full":
        layer = "2 s b h"
    else:
        layer = "34 s b h / t" if plan.sp else "s b h (10 + 24 / t)"
    if keeps_scores(recompute, attention):
        layer += " + 5 a s^2 b / t"
    tokens = f", s = T / C, C = {plan.cp}" if plan.cp > 1 else ""
    return (
        f"micro-batches in flight x L / P x ({layer}) bytes, t = {plan.tp}, P = {plan.pp}{tokens}"
    )


def stage_activation_bytes(
    spec: ModelSpec, report: MemoryReport, plan: ParallelPlan, stage: int
) -> tuple[int, int]:
    """(activations with the scores, the scores) of one rank of ``stage``: the micro-batches in
    flight x the stage's L / P layers, without TP as on one GPU (:mod:`costcalc.activations`),
    with TP the estimate (eager attention's scores 5 a s^2 b / t per layer); without TP the
    last stage also holds what is saved outside the layers (one micro-batch in flight there);
    T is the T / C tokens of each sequence the rank runs."""
    setup, T, B = report.setup, plan.tokens(report.length), report.setup.batch
    scores = keeps_scores(setup.recompute, setup.attention)
    layers = score_bytes = 0
    for stack in pipeline_stacks(spec, plan.pp):
        n = stack.n_layers // plan.pp
        if plan.tp == 1:
            args = (stack, B, T, setup.recompute, setup.attention, setup.dtype)
            score = layer_score_bytes(*args)
            layers += n * (layer_activation_bytes(*args) - score)
            score_bytes += n * score
            continue
        layers += n * tensor_parallel_layer_bytes(stack, B, T, setup.recompute, plan)
        if scores:
            score_bytes += n * korthikanti_score_bytes(stack, B, T) // plan.tp
    if plan.tp == 1 and stage == plan.pp - 1:
        layers += outside_activation_bytes(spec, B, T, setup.dtype)
    flight = plan.in_flight(stage)
    return flight * (layers + score_bytes), flight * score_bytes


# --------------------------------------------------------------------------- one rank's report


def zero_partition(tensors: list[Tensor], plan: ParallelPlan) -> int:
    """Elements of ``tensors`` one rank keeps under ZeRO: ceil(. / S) of the rest over the S
    sharding ranks, ceil(. / (S / E)) of the stacked experts, whose E-way shards each repeat on
    S / E ranks only."""
    experts = sum(t.elements for t in tensors if t.name.startswith("mlp.experts."))
    rest = sum(t.elements for t in tensors) - experts
    return shard(rest, plan.shard_gpus) + shard(experts, plan.shard_gpus // plan.ep)


def fsdp_shard(tensors: list[Tensor], plan: ParallelPlan) -> int:
    """Elements one rank holds under FSDP2 (``fully_shard``; torch's ``FSDPParam.
    _init_sharded_param``): each parameter split on dim 0 as ``torch.chunk`` splits it over the
    S sharding ranks, its shard padded to the first chunk's ceil(d0 / S) rows (the stacked
    experts' over S / E ranks); rank 0 holds that many of every parameter."""
    held = 0
    for t in tensors:
        ranks = plan.shard_gpus // (plan.ep if t.name.startswith("mlp.experts.") else 1)
        rows, rest = t.shape[0], elements(t.shape[1:])
        held += t.copies * -(-rows // ranks) * rest
    return held


def rank_report(
    spec: ModelSpec, report: MemoryReport, plan: ParallelPlan, stage: int
) -> MemoryReport:
    """``report`` (one whole model's training memory) as one rank of pipeline stage ``stage``
    holds it: its tensors' shards (``params_total``), then ZeRO's partition of them over the DP
    ranks (sharded states ceil(. / N); the step scalars stay whole, one per tensor, a bound);
    every element count is the rank's, as its bytes are."""
    setup = report.setup
    tensors = rank_tensors(spec, plan, stage)
    P = sum(t.elements for t in tensors)
    moments = moment_elements(tensors, setup.optimizer)
    steps = step_elements(tensors, setup.optimizer)
    activations, scores = stage_activation_bytes(spec, report, plan, stage)
    last = stage == plan.pp - 1
    logits = (
        setup.batch * plan.tokens(report.length) * padded_vocab(spec, plan.tp, head=True) // plan.tp
        if last
        else 0
    )
    if plan.stage and plan.fsdp is None:
        shares = zero_shares(zero_groups(spec, plan, stage), plan.stage)
        report = deepspeed_report(report, shares, plan)
    if plan.fsdp is not None:
        return fsdp_report(spec, stage, report, tensors, plan, activations, scores, logits)
    part = zero_partition(tensors, plan) if plan.stage else P
    weights, gradients = part if plan.stage == 3 else P, part if plan.stage >= 2 else P
    # ZeRO partitions per-element state (SHARDABLE_OPTIMIZERS): moments // P per parameter
    sharded_moments = moments // P * part if plan.stage and P else moments
    gathered = 2 * largest_module(tensors) if plan.stage == 3 else 0
    common = replace(
        report,
        params_total=P,
        parameter_tensors=sum(t.copies for t in tensors),
        bytes_activations=activations,
        bytes_attention_scores=scores,
        elements_logits=logits,
        bytes_logits=dtype_bytes(logits, setup.dtype),
        bytes_logits_fp32=dtype_bytes(logits, LOSS_DTYPE),
        elements_gathered=gathered,
        bytes_gathered=dtype_bytes(gathered, setup.dtype),
    )
    if plan.stage and plan.fsdp is None:
        return common
    return replace(
        common,
        held_weights=weights,
        held_gradients=gradients,
        held_master_weights=part if setup.mixed_precision else 0,
        bytes_weights=dtype_bytes(weights, setup.dtype),
        bytes_gradients=dtype_bytes(gradients, setup.dtype),
        bytes_master_weights=dtype_bytes(part, MASTER_DTYPE) if setup.mixed_precision else 0,
        elements_optimizer_moments=sharded_moments,
        elements_optimizer_steps=steps,
        bytes_optimizer=dtype_bytes(sharded_moments, setup.state_dtype)
        + dtype_bytes(steps, STEP_DTYPE),
    )


@dataclass(frozen=True)
class Unsharded:
    """What FSDP2 holds unsharded on one rank while a layer's backward runs, in elements of
    the parameter dtype: the root unit's parameters (``root``, padded: ceil(d0 / S) S rows each,
    the all-gather output), the gradients of the root's last-stage tensors (``root_grads``,
    produced first by the backward: final norm, head; a tied table's only at the end, when its
    two uses' gradients are summed), the largest layer's padded parameters (``layer``), held for
    ``layers`` layers (the running one and the one the backward prefetches), and that layer's
    gradients (``layer_grads``, all of them before its reduce-scatter)."""

    root: int
    root_grads: int
    layer: int
    layer_grads: int
    layers: int

    @property
    def elements(self) -> int:
        return self.root + self.root_grads + self.layers * self.layer + self.layer_grads


def fsdp_unsharded(spec: ModelSpec, plan: ParallelPlan, stage: int) -> Unsharded:
    """FSDP2 with every layer a unit and the root a unit of the rest (torch 2.13's
    ``fully_shard``): the root is not resharded after its forward (``_lazy_init``: the root's
    ``post_forward_mesh_info = None``), each layer is, and the backward prefetches the next
    layer to run (``FSDPParamGroup._backward_prefetch``); measured in
    tests/golden/fsdp2_shards.json (``in_backward``)."""

    def padded(t: Tensor) -> int:
        ranks = plan.shard_gpus // (plan.ep if t.name.startswith("mlp.experts.") else 1)
        return t.copies * -(-t.shape[0] // ranks) * ranks * elements(t.shape[1:])

    modules = stage_modules(spec, plan.pp, stage)
    root = [
        _rank_shape(t, plan, spec)
        for t in model_tensors(spec)
        if t.name.rpartition(".")[0] in modules
    ]
    last = [t for t in root if t.name.rpartition(".")[0] in LAST_STAGE]
    layers = [
        [_rank_shape(t, plan, spec) for t in block_tensors(stack)]
        for stack in pipeline_stacks(spec, plan.pp)
    ]
    largest = max(layers, key=lambda ts: sum(padded(t) for t in ts), default=[])
    count = sum(stack.n_layers for stack in pipeline_stacks(spec, plan.pp)) // plan.pp
    return Unsharded(
        root=sum(padded(t) for t in root),
        root_grads=sum(t.elements for t in last),
        layer=sum(padded(t) for t in largest),
        layer_grads=sum(t.elements for t in largest),
        layers=min(2, count),
    )


def fsdp_report(
    spec: ModelSpec,
    stage: int,
    report: MemoryReport,
    tensors: list[Tensor],
    plan: ParallelPlan,
    activations: int,
    scores: int,
    logits: int,
) -> MemoryReport:
    """One rank under FSDP2 (torch 2.13 ``fully_shard``, each layer a unit, then the root):
    the sharded parameters (:func:`fsdp_shard`; under ``grad-op`` whole, as
    ``reshard_after_forward=False`` keeps them), their gradients (views of each unit's padded
    reduce-scatter output, sharded) and the optimizer state (``zeros_like`` the rank's chunk;
    rank 0's is the padded shard), one step per tensor. With mixed precision the sharded
    parameters are fp32 (``MixedPrecisionPolicy(param_dtype=bf16)`` casts them for the
    all-gather), so no separate masters exist; under ``full`` and ``hybrid`` the backward holds
    the unsharded parameters of :func:`fsdp_unsharded` in the 16-bit dtype."""
    setup = report.setup
    shard_ = fsdp_shard(tensors, plan)
    P = sum(t.elements for t in tensors)
    dtype = MASTER_DTYPE if setup.mixed_precision else setup.dtype
    weights = P if plan.fsdp == "grad-op" else shard_
    weight_dtype = setup.dtype if plan.fsdp == "grad-op" else dtype
    moments = MOMENTS[setup.optimizer] * shard_
    steps = step_elements(tensors, setup.optimizer)
    gathered = fsdp_unsharded(spec, plan, stage).elements if plan.stage == 3 else 0
    master = shard_ if setup.mixed_precision and plan.fsdp == "grad-op" else 0
    return replace(
        report,
        params_total=P,
        parameter_tensors=sum(t.copies for t in tensors),
        weight_dtype=None if weight_dtype == setup.dtype else weight_dtype,
        gradient_dtype=None if dtype == setup.dtype else dtype,
        held_weights=weights,
        held_gradients=shard_,
        held_master_weights=master,
        bytes_weights=dtype_bytes(weights, weight_dtype),
        bytes_gradients=dtype_bytes(shard_, dtype),
        bytes_master_weights=dtype_bytes(master, MASTER_DTYPE),
        elements_optimizer_moments=moments,
        elements_optimizer_steps=steps,
        bytes_optimizer=dtype_bytes(moments, dtype) + dtype_bytes(steps, STEP_DTYPE),
        bytes_activations=activations,
        bytes_attention_scores=scores,
        elements_logits=logits,
        bytes_logits=dtype_bytes(logits, setup.dtype),
        bytes_logits_fp32=dtype_bytes(logits, LOSS_DTYPE),
        elements_gathered=gathered,
        bytes_gathered=dtype_bytes(gathered, setup.dtype),
    )


MOMENTS: dict[str, int] = {"adamw": 2, "sgd": 0, "sgd-momentum": 1}
"""Per-element optimizer state: AdamW's two moments, SGD's momentum buffer."""


def deepspeed_report(report: MemoryReport, shares: ZeroShares, plan: ParallelPlan) -> MemoryReport:
    """``report`` with DeepSpeed's ZeRO allocations (:mod:`costcalc.zero`): 16-bit weights
    (flat buffer or partitions) and gradients, fp32 masters and the base optimizer's state on
    them (one step per group), the step's gradient partition (16-bit flat copy + fp32; one fp32
    copy in fp32 training), the reduce bucket, and under stage 3 the whole small parameters,
    the gathered layer's params and grads and up to 5e7 prefetched parameters."""
    setup = report.setup
    moments = MOMENTS[setup.optimizer] * shares.masters
    steps = shares.steps if setup.optimizer == "adamw" else 0
    cast = 0 if setup.dtype == MASTER_DTYPE else dtype_bytes(shares.step_buffer, MASTER_DTYPE)
    prefetch = PREFETCH_BUCKET_SIZE if plan.stage == 3 else 0
    return replace(
        report,
        held_weights=shares.weights,
        held_gradients=shares.gradients,
        held_master_weights=shares.masters,
        bytes_weights=dtype_bytes(shares.weights, setup.dtype),
        bytes_gradients=dtype_bytes(shares.gradients, setup.dtype),
        bytes_master_weights=dtype_bytes(shares.masters, MASTER_DTYPE),
        elements_optimizer_moments=moments,
        elements_optimizer_steps=steps,
        bytes_optimizer=dtype_bytes(moments, MASTER_DTYPE) + dtype_bytes(steps, STEP_DTYPE),
        elements_step_buffer=shares.step_buffer,
        bytes_step_buffer=dtype_bytes(shares.step_buffer, setup.dtype) + cast,
        elements_bucket=REDUCE_BUCKET_SIZE,
        bytes_bucket=dtype_bytes(REDUCE_BUCKET_SIZE, setup.dtype),
        bucket_held=plan.stage == 3,
        elements_persistent=shares.persistent,
        bytes_persistent=dtype_bytes(shares.persistent, setup.dtype),
        elements_prefetch=prefetch,
        bytes_prefetch=dtype_bytes(prefetch, setup.dtype),
    )


def stage_reports(spec: ModelSpec, report: MemoryReport, plan: ParallelPlan) -> list[MemoryReport]:
    """One rank's report of every pipeline stage, first to last. Errors: training not asked
    for, a factored optimizer under ZeRO, or a context-parallel split that does not hold."""
    setup = report.setup
    if not setup.train:
        named = ", ".join(option(o) for o in ("--gpus", "--zero", "--fsdp", "--tp", "--pp"))
        raise UsageError(
            f"{named}, {option('--ep')} and {option('--cp')} plan training: add {option('--train')}"
        )
    check_context_parallel(spec, plan.cp, report.length, setup.attention)
    if plan.stage and setup.optimizer not in SHARDABLE_OPTIMIZERS:
        raise UsageError(
            f"ZeRO and FSDP partition per-element optimizer state; {setup.optimizer}'s factored "
            f"state has no such partition: use {', '.join(SHARDABLE_OPTIMIZERS)}"
        )
    if (
        plan.stage
        and plan.fsdp is None
        and setup.dtype != MASTER_DTYPE
        and not setup.mixed_precision
    ):
        raise UsageError(
            f"{option('--zero')}: DeepSpeed's ZeRO optimizers train 16-bit weights with "
            f"fp32 master weights; drop {option('--no-mixed-precision')}"
        )
    return [rank_report(spec, report, plan, stage) for stage in range(plan.pp)]
