"""Serving on many GPUs as vLLM shards a model: what one GPU holds under tensor (``--tp``),
pipeline (``--pp``), expert (``--ep``) and data-parallel attention (``--dp-attention``)
parallelism. Read from vLLM 0.34.0's parallel layers; each rule names its file and line.

- Tensor parallel over T GPUs: column-parallel layers (``ColumnParallelLinear``, q/k/v,
  FFN gate/up) hold ``divide(out, T)`` rows of their weight and bias (linear.py:500, :550);
  row-parallel ones (o_proj, FFN down) ``divide(in, T)`` columns and the whole bias
  (linear.py:1741, :1790); ``QKVParallelLinear`` gives each GPU H / T query heads and K / T
  key/value heads, or one, replicated T / K times, when T >= K (linear.py:1113-1119; T must
  divide K or K divide T). Norms, q/k norms and routers (``GateLinear``, a ``ReplicatedLinear``)
  are whole on every GPU. The token table and the LM head (``VocabParallelEmbedding``,
  ``ParallelLMHead``) pad V to a multiple of 64 (``pad_vocab_size``,
  vocab_parallel_embedding.py:39, :100, :291) and hold ``divide(padded, T)`` rows
  (vocab_parallel_embedding.py:309): 64 x T is not required, T must divide the padded rows.
- Multi-head latent attention (deepseek_v2.py ``DeepseekV2MLAAttention``): the down
  projections ``q_a_proj`` + ``kv_a_proj_with_mqa`` (one ``fused_qkv_a_proj``, disable_tp,
  :966, :1052; ``ReplicatedLinear`` without a query rank, :1059) and their norms (:1082,
  :1098) whole; ``q_b_proj`` / ``q_proj`` and ``kv_b_proj`` column-parallel (:1084, :1099),
  ``o_proj`` row-parallel (:1106). The latent cache is one head: every GPU of a TP group
  holds all of it (``MLAAttention``), unless attention is data-parallel.
- Experts (``FusedMoE``, fused_moe/config.py ``FusedMoEParallelConfig.make``, :1235-1283):
  they form one group over the T x D GPUs of a stage (``flatten_tp_across_dp_and_pcp``);
  without ``--enable-expert-parallel`` each expert's intermediate width splits over them
  (config.py:1398, asserted divisible), with it each GPU holds whole experts, X // (T x D),
  the first X mod (T x D) GPUs one more (expert_map_manager.py:66-69). Shapes as
  ``UnquantizedFusedMoEMethod.create_weights`` allocates them (w13: experts x 2I x D, w2:
  experts x D x I), with the default Triton backend (no rounding up).
- Recurrent mixers, as a block with 1 / T of its heads: Mamba-2 (layers/mamba/mamba_mixer2.py)
  splits in_proj, conv1d, A, D, dt_bias and the gated norm by heads and groups (:347-372,
  :482-489; the groups G / T, or the one group of G = 1 replicated on every GPU, :318-343,
  mamba_utils.py:269-277) and out_proj by columns; Gated DeltaNet
  (layers/mamba/gdn/qwen_gdn_linear_attn.py:740-830) its projections, conv1d, A_log and dt_bias by
  key and value heads, its norm (one head's width) whole. Their state per GPU follows.
- Shared experts (DeepSeek's ``DeepseekV2MLP``, deepseek_v2.py:359-370) split like a dense
  FFN over the T GPUs, whole when the MoE runs sequence parallel (expert parallel with T > 1
  and D > 1 under the default all2all backend, config/parallel.py:859-877).
- Data-parallel attention over D (vLLM's ``--data-parallel-size``; SGLang's
  ``--enable-dp-attention`` takes D inside its TP size instead: vLLM is followed): D engine
  replicas each with its own TP group of T GPUs, their attention, dense FFNs, norms and tables
  replicated, their experts shared as above; each replica serves its own requests, so a GPU's
  cache is its replica's (``--batch`` sequences per replica).
- Pipeline parallel over P stages: ``get_pp_indices`` (distributed/utils.py:211-256) gives
  each stage L // P layers, the remainder one each to the stages before the last; the token
  table on the first stage (and on the last when tied, llama.py:378), the final norm and the
  LM head on the last (llama.py:394, :503).

Left out: DeepSeek's ``e_score_correction_bias`` (an fp32 parameter of X per MoE layer in vLLM,
deepseek_v2.py:328; a buffer in transformers, which costcalc does not count), the redundant
experts of EPLB, model files that build their table or norm on every stage (qwen3_moe.py does),
and the rounding up of quantized experts' widths some kernels ask for (a block-FP8 shard not a
multiple of the block, fused_moe/oracle/fp8.py:330-358; MXFP4 backends to 128 or 256,
oracle/mxfp4.py:825-900; the unquantized default rounds nothing).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from costcalc.errors import UsageError
from costcalc.layer_order import layer_stacks
from costcalc.option_names import option
from costcalc.parallel import stage_modules
from costcalc.spec import ModelSpec
from costcalc.tensors import Shape, Tensor, block_tensors, model_tensors
from costcalc.units import DTYPES, dtype_bytes

if TYPE_CHECKING:
    from costcalc.memory import MemoryReport, MemorySetup

VERSION = "vLLM 0.34.0"
VOCAB_PADDING = 64
"""``DEFAULT_VOCAB_PADDING_SIZE`` (vocab_parallel_embedding.py:39)."""
SHARDED_MIXERS: tuple[str, ...] = ("attention", "mla", "none")
"""Token mixers whose vLLM tensor-parallel layout is modelled."""
SHARDED_RECURRENT: tuple[str, ...] = ("mamba2", "gated_deltanet")
"""Recurrent mixers whose vLLM tensor-parallel layout is modelled: Mamba-2 (``MambaMixer2``)
and Gated DeltaNet (Qwen3-Next's ``Qwen3NextGatedDeltaNet``)."""
COLUMN: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "qkv_proj", "q_b_proj", "kv_b_proj")
FFN_COLUMN: tuple[str, ...] = ("gate_proj", "up_proj", "gate_up_proj")
ROW: tuple[str, ...] = ("o_proj", "down_proj")


@dataclass(frozen=True)
class ServingPlan:
    """``dp`` data-parallel attention replicas, each ``pp`` pipeline stages of ``tp`` GPUs;
    ``ep``: the experts dealt out over the T x D GPUs of a stage (``--enable-expert-parallel``),
    else split over them."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: bool = False

    @property
    def gpus(self) -> int:
        """D x P x T."""
        return self.dp * self.pp * self.tp

    @property
    def moe_ranks(self) -> int:
        """The GPUs of a stage the experts are spread over: T x D."""
        return self.tp * self.dp

    @property
    def sequence_parallel_moe(self) -> bool:
        """``use_sequence_parallel_moe``: expert parallel, T > 1 and D > 1."""
        return self.ep and self.tp > 1 and self.dp > 1

    @property
    def label(self) -> str:
        """ "8 GPUs (TP 8)", "16 GPUs (DP-attention 2 x PP 1 x TP 8), experts over EP 16"."""
        gpus = f"{self.gpus} GPU{'s' if self.gpus > 1 else ''}"
        parts = [f"DP-attention {self.dp}"] if self.dp > 1 else []
        parts += [f"PP {self.pp}"] if self.pp > 1 else []
        parts.append(f"TP {self.tp}")
        ep = f", experts over EP {self.moe_ranks}" if self.ep else ""
        return f"{gpus} ({' x '.join(parts)}){ep}"


def serving_plan(
    gpus: int | None = None,
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    dp_attention: int | None = None,
) -> ServingPlan:
    """A checked plan: ``gpus`` (if given) is D x P x T; ``ep`` (if given, above 1) is the
    T x D GPUs vLLM's expert parallelism spans, the only size it takes."""
    t, p, d = (1 if v is None else v for v in (tp, pp, dp_attention))
    for flag, value in (("--tp", t), ("--pp", p), ("--dp-attention", d), ("--ep", ep)):
        if value is not None and value < 1:
            raise UsageError(f"{option(flag)} must be at least 1, got {value}")
    if gpus is not None and gpus != t * p * d:
        raise UsageError(
            f"{option('--gpus', gpus)}: serving runs DP-attention {d} x PP {p} x TP {t} = "
            f"{t * p * d} GPUs; give {option('--gpus')} that product or leave it out"
        )
    if ep is not None and ep > 1 and ep != t * d:
        raise UsageError(
            f"{option('--ep', ep)}: vLLM's expert parallelism (--enable-expert-parallel) deals "
            f"the experts over the TP x DP-attention GPUs of a stage, {t} x {d} = {t * d} here: "
            f"give {option('--tp')} and {option('--dp-attention')} whose product is {ep}"
            + (f", or {option('--ep', t * d)}" if t * d > 1 else "")
        )
    return ServingPlan(t, p, d, ep is not None and ep > 1)


# --------------------------------------------------------------------------- layers per stage


def pp_partitions(layers: int, pp: int) -> list[int]:
    """``get_pp_indices``'s layers per stage: L // P each, the remainder r one each to the r
    stages before the last (distributed/utils.py:240-245)."""
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    return parts


def stage_blocks(spec: ModelSpec, pp: int, stage: int) -> list[tuple[ModelSpec, int]]:
    """The kinds of block pipeline stage ``stage`` holds and how many of each, in first-use
    order: the layers ``get_pp_indices`` gives it."""
    if pp == 1:
        return [(stack, stack.n_layers) for stack in spec.stacks]
    if pp > spec.n_layers:
        raise UsageError(f"--pp {pp}: the model has {spec.n_layers} layers, fewer than stages")
    parts = pp_partitions(spec.n_layers, pp)
    start = sum(parts[:stage])
    order = layer_stacks(spec, "Pipeline stages")[start : start + parts[stage]]
    counts = Counter(id(stack) for stack in order)
    seen = {id(stack): stack for stack in order}
    return [(seen[key], count) for key, count in counts.items()]


# --------------------------------------------------------------------------- one GPU's shards


def divide(size: int, ranks: int, what: str) -> int:
    """``divide`` (vllm/distributed/utils.py:143): an exact split, else vLLM's assertion as a
    UsageError naming the tensor."""
    if size % ranks:
        raise UsageError(
            f"vLLM splits {what} ({size:,}) over {ranks} GPUs exactly (divide() asserts it): "
            f"{size:,} does not divide by {ranks}"
        )
    return size // ranks


def local_kv_heads(stack: ModelSpec, tp: int) -> int:
    """Key/value heads one GPU holds: K / T, or 1 when T >= K (replicated T / K times;
    QKVParallelLinear, linear.py:1113-1119)."""
    k = stack.kv_heads
    if tp >= k:
        divide(tp, k, "the GPUs of a TP group over the key/value heads")
        return 1
    return divide(k, tp, "the key/value heads")


def padded_vocab(rows: int, tp: int) -> int:
    """The rows of the padded table: V up to a multiple of 64, which T must divide."""
    padded = -(-rows // VOCAB_PADDING) * VOCAB_PADDING
    divide(padded, tp, f"the {padded:,} vocabulary rows (V padded to a multiple of 64)")
    return padded


def local_experts(experts: int, plan: ServingPlan) -> int:
    """Experts the first GPU of the expert group holds: X // E, one more when E does not
    divide X (expert_map_manager.py:66-69); all X without expert parallelism."""
    if not plan.ep:
        return experts
    return -(-experts // plan.moe_ranks)


def _attention_rows(tensor: Tensor, stack: ModelSpec, tp: int) -> int:
    """Rows of one GPU's q, k, v or fused qkv weight (or bias): H / T query heads, the
    local key/value heads (:func:`local_kv_heads`)."""
    rows, leaf = tensor.shape[0], tensor.name.split(".")[1]
    heads, kv = stack.n_heads or 0, stack.kv_heads
    if leaf == "q_proj" or stack.mixer == "mla":
        return divide(rows, tp, tensor.name)
    local = local_kv_heads(stack, tp)
    if leaf == "qkv_proj":
        width = rows // (heads + 2 * kv)
        return (divide(heads, tp, "the attention heads") + 2 * local) * width
    return rows // kv * local


def shard_shape(tensor: Tensor, stack: ModelSpec | None, plan: ServingPlan) -> Shape:
    """The shape one GPU holds of ``tensor`` (of a block of ``stack``, None for model-level
    tensors)."""
    t, shape = plan.tp, tensor.shape
    module, _, kind = tensor.name.rpartition(".")
    if module in ("embed_tokens", "lm_head"):
        return (padded_vocab(shape[0], t) // t, *shape[1:])
    if stack is None:
        return shape
    parts = module.split(".")
    leaf = parts[-1]
    if module == "mlp.experts":
        held = (local_experts(shape[0], plan), *shape[1:])
        if plan.ep:
            return held
        ranks = plan.moe_ranks
        what = "each expert's intermediate width (FusedMoE over TP x DP)"
        if kind.startswith("gate_up_proj"):
            return (held[0], 2 * divide(shape[1] // 2, ranks, what), *shape[2:])
        if kind == "down_proj":
            return (held[0], shape[1], divide(shape[2], ranks, what))
        return held
    if t == 1 or parts[0] not in ("attn", "mlp"):
        return shape
    if module.startswith("mlp.shared_expert") and plan.sequence_parallel_moe:
        return shape
    if parts[0] == "attn" and leaf in COLUMN:
        return (_attention_rows(tensor, stack, t), *shape[1:])
    if parts[0] == "mlp" and leaf in FFN_COLUMN:
        return (divide(shape[0], t, tensor.name), *shape[1:])
    if leaf in ROW and kind == "weight":
        return (shape[0], divide(shape[1], t, tensor.name))
    if tensor.name == "attn.sinks":
        return (divide(shape[0], t, "the attention heads"),)
    return shape


def check_mixers(spec: ModelSpec, plan: ServingPlan) -> None:
    """Tensor parallelism is modelled for attention and MLA blocks (and blocks without a
    mixer): a recurrent or other mixer under T > 1 is a UsageError."""
    if plan.tp == 1:
        return
    for stack in spec.stacks:
        mixer = stack.recurrent_mixer or stack.mixer
        if stack.recurrent_mixer in SHARDED_RECURRENT:
            local_recurrent(stack, plan.tp)
        elif stack.recurrent or stack.mixer not in SHARDED_MIXERS:
            raise UsageError(
                f"--tp: vLLM's tensor-parallel layout of {mixer} blocks is not modelled "
                "(attention, MLA, Mamba-2, Gated DeltaNet and FFN blocks are)"
            )
        if stack.attention_experts is not None:
            raise UsageError(
                "--tp: a mixture of attention heads (attention_experts) is not modelled"
            )
        if stack.mixer == "attention" and stack.has_attention:
            divide(stack.n_heads or 0, plan.tp, "the attention heads")
            local_kv_heads(stack, plan.tp)
        if stack.mixer == "mla":
            divide(stack.n_heads or 0, plan.tp, "the attention heads")


def local_recurrent(stack: ModelSpec, tp: int) -> ModelSpec:
    """A recurrent block as one of T GPUs holds it: Mamba-2 with H / T heads and G / T groups
    (G = 1 stays one, replicated; vLLM asserts G % T == 0 or G == 1, mamba_mixer2.py:318);
    Gated DeltaNet with K / T key and V / T value heads; the block unchanged at T = 1."""
    kind = stack.recurrent_mixer
    if tp == 1 or kind is None:
        return stack
    sizes = getattr(stack, kind)
    if kind == "mamba2":
        groups = sizes.groups
        if groups % tp and groups != 1:
            raise UsageError(
                f"--tp {tp}: vLLM shards Mamba-2's {groups} groups over the GPUs, or replicates "
                f"one group; they do not divide by {tp} (mamba_mixer2.py asserts it)"
            )
        update = {
            "heads": divide(sizes.heads, tp, "the Mamba-2 heads"),
            "groups": groups // tp if groups % tp == 0 else 1,
        }
    else:
        update = {
            "key_heads": divide(sizes.key_heads, tp, "the Gated DeltaNet key heads"),
            "value_heads": divide(sizes.value_heads, tp, "the Gated DeltaNet value heads"),
        }
    return stack.model_copy(update={kind: sizes.model_copy(update=update)})


def check_experts(spec: ModelSpec, plan: ServingPlan) -> None:
    """Expert parallelism needs experts to deal out."""
    if plan.ep and not any(stack.moe_experts for stack in spec.stacks):
        raise UsageError("--ep: the model has no mixture-of-experts layers to deal out")


def rank_pairs(spec: ModelSpec, plan: ServingPlan, stage: int) -> list[tuple[Tensor, Tensor]]:
    """Each tensor the first GPU of pipeline stage ``stage`` holds, whole and as its shard
    (``copies`` the layers of the stage that hold it)."""
    check_mixers(spec, plan)
    check_experts(spec, plan)
    modules = stage_modules(spec, plan.pp, stage)  # as llama.py:378-395, :502-510 place them
    held = [
        (t, replace(t, shape=shard_shape(t, None, plan)))
        for t in model_tensors(spec)
        if t.name.rpartition(".")[0] in modules
    ]
    for stack, count in stage_blocks(spec, plan.pp, stage):
        local = {t.name: t.shape for t in block_tensors(local_recurrent(stack, plan.tp))}
        for t in block_tensors(stack):
            whole = t.times(count)
            shape = local[t.name] if local[t.name] != t.shape else shard_shape(t, stack, plan)
            held.append((whole, replace(whole, shape=shape)))
    return held


def rank_tensors(spec: ModelSpec, plan: ServingPlan, stage: int) -> list[Tensor]:
    """The tensors the first GPU of pipeline stage ``stage`` holds, with their shard shapes."""
    return [shard for _, shard in rank_pairs(spec, plan, stage)]


def rank_rows(
    spec: ModelSpec, plan: ServingPlan, stage: int, dtype: str
) -> list[tuple[str, Shape, int]]:
    """(name, whole shape, bytes of the GPU's shards of all copies) of each tensor one GPU of
    stage ``stage`` holds: the rows :func:`costcalc.routing.expert_reads` reads (an expert's
    share of the bytes is the same whole or sharded)."""
    return [
        (whole.name, whole.shape, rank_weight_bytes([shard], dtype))
        for whole, shard in rank_pairs(spec, plan, stage)
    ]


def rank_stacks(spec: ModelSpec, plan: ServingPlan, stage: int) -> tuple[ModelSpec, ...]:
    """The kinds of block of stage ``stage`` as one GPU caches them: its layers of each, its
    key/value heads (:func:`local_kv_heads`); an MLA latent is whole on every GPU."""
    check_mixers(spec, plan)
    stacks = []
    for block, count in stage_blocks(spec, plan.pp, stage):
        stack = local_recurrent(block, plan.tp)
        # a stage keeps the state of its own blocks (no spare layers of state_layers)
        update: dict[str, object] = {"n_layers": count, "state_layers": None}
        if stack.mixer == "attention" and stack.has_attention and plan.tp > 1:
            update["n_kv_heads"] = local_kv_heads(stack, plan.tp)
            update["head_dim"] = stack.head_width
            if stack.kv_cache_heads is not None:
                update["kv_cache_heads"] = max(1, stack.kv_cache_heads // plan.tp)
        stacks.append(stack.model_copy(update=update))
    return tuple(stacks)


def rank_weight_bytes(tensors: list[Tensor], dtype: str) -> int:
    """One GPU's weight bytes: its elements in a raw dtype (rounded up once), or each shard as
    a quantized format stores it, scales of the shard included (:mod:`costcalc.quant`)."""
    if dtype in DTYPES:
        return dtype_bytes(sum(t.elements for t in tensors), dtype)
    from costcalc.quant import tensors_bytes
    from costcalc.weight_format import parse_format

    fmt = parse_format(dtype)
    if fmt.name == "gguf" or fmt.by_layer:
        raise UsageError(
            f"{dtype} under vLLM's parallel layout: GGUF mixes and per-layer selections are "
            "not modelled per GPU; give the format without layer options"
        )
    return tensors_bytes(fmt, tensors)


# --------------------------------------------------------------------------- one GPU's memory


def serving_report(
    spec: ModelSpec, setup: MemorySetup, plan: ServingPlan, stage: int
) -> MemoryReport:
    """The inference memory one GPU of pipeline stage ``stage`` holds: its shards' weights
    (:func:`rank_tensors`) and the cache of its layers and key/value heads
    (:func:`rank_stacks`) for ``--batch`` sequences of its replica, as transformers' formula
    counts the cache or as vLLM's blocks hold it (``--engine vllm``)."""
    from costcalc.memory import (
        kv_cache_elements,
        longest_cache,
        memory_report,
        report_length,
        state_elements,
    )

    if setup.engine.name == "llamacpp":
        raise UsageError(
            "--engine llamacpp: it serves on one device; the parallel options lay the model "
            "out as vLLM shards it: use --engine vllm (its blocks) or the default (the "
            "formula's cache)"
        )
    tensors = rank_tensors(spec, plan, stage)
    stacks = rank_stacks(spec, plan, stage)
    held = rank_weight_bytes(tensors, setup.dtype)
    if setup.engine.name == "vllm":
        from costcalc.engines.vllm import vllm_report

        report = vllm_report(spec, setup, report_length(spec, setup), stacks, held, plan.pp)
    else:
        report = memory_report(spec, setup)
        B, T = setup.batch, report.length
        kv = sum(kv_cache_elements(stack, B, T) for stack in stacks)
        state = sum(state_elements(stack, B) for stack in stacks)
        report = replace(
            report,
            kv_cache_tokens=max((longest_cache(stack, T) for stack in stacks), default=0),
            elements_kv_cache=kv,
            bytes_kv_cache=dtype_bytes(kv, report.kv_dtype),
            elements_state=state,
            bytes_state=dtype_bytes(state, report.kv_dtype),
        )
    return replace(
        report,
        params_total=sum(t.elements for t in tensors),
        parameter_tensors=sum(t.copies for t in tensors),
        bytes_weights=held,
    )


def serving_reports(spec: ModelSpec, setup: MemorySetup, plan: ServingPlan) -> list[MemoryReport]:
    """One GPU's report of every pipeline stage, first to last."""
    return [serving_report(spec, setup, plan, stage) for stage in range(plan.pp)]


def shard_notes(spec: ModelSpec, plan: ServingPlan, stage: int) -> list[str]:
    """How one GPU's figures were counted, in words: the layout, the cache, what is left out."""
    t = plan.tp
    layers = pp_partitions(spec.n_layers, plan.pp)
    first = sum(layers[:stage])
    where = (
        f"pipeline stage {stage + 1} of {plan.pp} (the largest; layers {first} to "
        f"{first + layers[stage] - 1}, get_pp_indices), "
        if plan.pp > 1
        else ""
    )
    vocab = padded_vocab(spec.vocab_rows, t)
    layout = (
        f"{VERSION}'s layout, one GPU of {plan.label}: {where}"
        f"column-parallel q/k/v, FFN gate/up (and MLA's q_b_proj, kv_b_proj) split by rows, "
        "row-parallel o_proj and FFN down by columns (their biases whole), norms, routers and "
        f"MLA's down projections whole; the vocabulary padded to {vocab:,} rows (a multiple "
        f"of 64), {vocab // t:,} per GPU."
    )
    experts = sorted({s.moe_experts for s in spec.stacks if s.moe_experts})
    if experts:
        counts = " or ".join(f"{local_experts(x, plan):,} of {x:,}" for x in experts)
        layout += (
            f" Experts (FusedMoE over the {plan.moe_ranks} GPUs of TP x DP-attention): "
            + (
                f"{counts} whole experts per GPU (expert parallel; the first GPUs one more "
                "when they do not divide)"
                if plan.ep
                else f"every expert, its intermediate width split {plan.moe_ranks} ways"
            )
            + (
                (
                    "; shared experts whole (the MoE runs sequence parallel)"
                    if plan.sequence_parallel_moe
                    else "; shared experts split as a dense FFN over the TP GPUs"
                )
                if any(s.moe_shared_ffn_hidden for s in spec.stacks)
                else ""
            )
            + "."
        )
    bias = (
        "routers' buffers vLLM keeps as parameters (DeepSeek-V3's fp32 "
        "e_score_correction_bias, one per expert and MoE layer), "
        if experts
        else ""
    )
    not_counted = (
        f"Not counted: {bias}activations, CUDA graphs and the NCCL buffers (vLLM's profile "
        "run measures them)."
    )
    return [layout, _cache_note(spec, plan), not_counted]


def _cache_note(spec: ModelSpec, plan: ServingPlan) -> str:
    """Where the cache is split and where replicated."""
    t, parts = plan.tp, []
    for stack in spec.stacks:
        if stack.mixer == "mla":
            parts.append(
                f"MLA's latent cache ({stack.kv_lora_rank or 0} + {stack.qk_rope_head_dim or 0} "
                f"per token, one head) is whole on each of the {t} GPUs of a TP group, "
                + ("replicated, not split" if t > 1 else "one GPU")
            )
        elif stack.mixer == "attention" and stack.has_attention and t > 1:
            k = stack.kv_heads
            local = local_kv_heads(stack, t)
            parts.append(
                f"{local} of {k} key/value heads per GPU"
                + (f" (each held by {t // k} GPUs: fewer heads than GPUs)" if t > k else "")
            )
    cache = "; ".join(dict.fromkeys(parts)) or "no split of the cache"
    replicas = (
        f"; each of the {plan.dp} data-parallel attention replicas (vLLM's "
        "--data-parallel-size, followed here; SGLang's --dp-size counts them inside its TP "
        "size) caches its own --batch sequences"
        if plan.dp > 1
        else ""
    )
    return f"KV cache per GPU: {cache}{replicas}."
