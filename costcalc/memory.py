"""Memory, one pure integer function per quantity: weights, training state, activations, KV cache.

Exact quantities (weights, gradients, master weights, optimizer state, logits, KV cache) count
what PyTorch allocates for them, checked against golden data from torch and transformers.
Activations are the tensors transformers' modeling code saves for backward, term by term, for
the block kinds that were measured (:mod:`costcalc.activations`); other blocks keep the
Korthikanti et al. 2022 ESTIMATE, labelled as such wherever it is shown.

Symbols: P parameters, N parameter tensors, L layers, B (or b) batch, T (or s) tokens,
K key/value heads, d head width, h = D the width, a = H attention heads, V vocabulary rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from costcalc.activations import layer_terms, outside_terms
from costcalc.anatomy.mixer import token_mixer
from costcalc.anatomy.recurrent import recurrent_mixer
from costcalc.compute import check_count, check_positions
from costcalc.engines import DEFAULT_ENGINE, EngineSetup
from costcalc.errors import UsageError, check_choice
from costcalc.macs import cached_keys, check_attention, check_recompute, stores_scores
from costcalc.option_names import in_api, option
from costcalc.params import total_params
from costcalc.spec import ModelSpec
from costcalc.tensors import (
    Shape,
    Tensor,
    elements,
    parameter_tensors,
    tensor_count,
    weight_sets,
)
from costcalc.units import DTYPES, dtype_bytes
from costcalc.weight_format import check_weight_dtype

if TYPE_CHECKING:
    from costcalc.engines import EngineMemory

OPTIMIZERS: tuple[str, ...] = ("adamw", "sgd", "sgd-momentum", "adafactor")
TRAINING_DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16")
MASTER_DTYPE = "fp32"
STEP_DTYPE = "fp32"
"""torch keeps each ``step`` as a float32 scalar tensor (``_get_scalar_dtype()``)."""
LOSS_DTYPE = "fp32"
"""transformers computes the causal-LM loss on logits upcast to float32."""
DEFAULT_ATTENTION = "sdpa"
"""transformers' default ``attn_implementation`` when PyTorch provides SDPA."""

LOGITS_SOURCE = (
    "transformers' ForCausalLM forward computes lm_head(hidden_states) for all T positions "
    "(logits in the model's dtype, held by the output); ForCausalLMLoss "
    "(transformers/loss/loss_utils.py) runs cross_entropy on logits.float(), whose "
    "log_softmax keeps fp32 log-probabilities, 4 B T V, for the backward"
)
OPTIMIZER_SOURCES: dict[str, str] = {
    "adamw": "torch.optim.AdamW: exp_avg and exp_avg_sq per parameter, one step per tensor",
    "sgd": "torch.optim.SGD without momentum: no state",
    "sgd-momentum": "torch.optim.SGD with momentum: one momentum_buffer per parameter",
    "adafactor": (
        "Shazeer & Stern 2018 (factored second moments, no momentum) as torch.optim.Adafactor: "
        "rows + columns per matrix, a full variance per vector, one step per tensor"
    ),
}


# --------------------------------------------------------------------------- weights and training


def _lora_base() -> str:
    """Where frozen quantized weights are trained: LoRA's base dtype, as the caller names it."""
    return "count_lora(base_dtype=...)" if in_api() else "costcalc lora --base-dtype"


def weight_bytes(spec: ModelSpec, dtype: str) -> int:
    """Weights: P x bytes of ``dtype`` (int4 packs two per byte, raw: no scales), or the bytes of
    a quantized format with its metadata (:mod:`costcalc.quant`)."""
    if dtype in DTYPES:
        return dtype_bytes(total_params(spec), dtype)
    from costcalc.quant import weight_bytes as format_weight_bytes
    from costcalc.weight_format import parse_format

    return format_weight_bytes(spec, parse_format(dtype))


def gradient_bytes(spec: ModelSpec, dtype: str) -> int:
    """Gradients: one per parameter, in the training dtype (``p.grad`` has ``p``'s dtype)."""
    return dtype_bytes(total_params(spec), dtype)


def master_weight_bytes(spec: ModelSpec) -> int:
    """Mixed precision keeps an fp32 copy of every parameter: 4 P (Micikevicius et al. 2018)."""
    return dtype_bytes(total_params(spec), MASTER_DTYPE)


def adafactor_state_elements(shape: Shape) -> int:
    """Adafactor's second moment for one tensor: rows + columns of a matrix (a stack of X
    matrices: X (rows + columns)); the full vector for a 1-D tensor."""
    if len(shape) == 1:
        return shape[0]
    *stack, rows, columns = shape
    return elements(tuple(stack)) * (rows + columns)


def moment_elements(tensors: list[Tensor], optimizer: str) -> int:
    """Per-parameter state of ``tensors``: AdamW 2 P; SGD 0; SGD with momentum P; Adafactor
    factored."""
    if optimizer == "adafactor":
        return sum(t.copies * adafactor_state_elements(t.shape) for t in tensors)
    P = sum(t.elements for t in tensors)
    return {"adamw": 2 * P, "sgd-momentum": P}.get(optimizer, 0)  # x2: exp_avg, exp_avg_sq


def step_elements(tensors: list[Tensor], optimizer: str) -> int:
    """Step counters: one scalar per tensor for AdamW and Adafactor; SGD none."""
    return sum(t.copies for t in tensors) if optimizer in ("adamw", "adafactor") else 0


def optimizer_moment_elements(spec: ModelSpec, optimizer: str) -> int:
    """Per-parameter state of the whole model (:func:`moment_elements`)."""
    return moment_elements(parameter_tensors(spec), optimizer)


def optimizer_step_elements(spec: ModelSpec, optimizer: str) -> int:
    """Step counters: one scalar per parameter tensor for AdamW and Adafactor (N); SGD none."""
    return step_elements(parameter_tensors(spec), optimizer)


def optimizer_state_elements(spec: ModelSpec, optimizer: str) -> int:
    """Every element of the optimizer state: moments + step scalars."""
    return optimizer_moment_elements(spec, optimizer) + optimizer_step_elements(spec, optimizer)


def optimizer_state_bytes(spec: ModelSpec, optimizer: str, state_dtype: str) -> int:
    """Moments in ``state_dtype`` (that of the parameters the optimizer updates) + 4 N bytes of
    fp32 step scalars (torch keeps these on the host unless fused or capturable)."""
    moments = dtype_bytes(optimizer_moment_elements(spec, optimizer), state_dtype)
    return moments + dtype_bytes(optimizer_step_elements(spec, optimizer), STEP_DTYPE)


# --------------------------------------------------------------------------- activations


def layer_activation_bytes(
    spec: ModelSpec, batch: int, length: int, recompute: str, attention: str, dtype: str
) -> int:
    """One layer of ``spec`` (one stack's block): the bytes it saves for backward, the s x s
    scores included (:func:`costcalc.activations.layer_terms`)."""
    return sum(t.bytes for t in layer_terms(spec, batch, length, recompute, attention, dtype))


def layer_score_bytes(
    spec: ModelSpec, batch: int, length: int, recompute: str, attention: str, dtype: str
) -> int:
    """The s x s tensors among them: eager attention's softmax output and probabilities, kept
    only without recomputation (:func:`keeps_scores`)."""
    terms = layer_terms(spec, batch, length, recompute, attention, dtype)
    return sum(t.bytes for t in terms if t.scores)


def keeps_scores(recompute: str, attention: str) -> bool:
    """The scores are stored only by eager attention without recomputation: selective and full
    recomputation run the attention core again, fused kernels never materialize it."""
    return recompute == "none" and stores_scores(attention)


def attention_score_bytes(
    spec: ModelSpec, batch: int, length: int, recompute: str, attention: str, dtype: str
) -> int:
    """The stored s x s tensors of all layers, 0 when they are not kept."""
    return sum(
        stack.n_layers * layer_score_bytes(stack, batch, length, recompute, attention, dtype)
        for stack in spec.stacks
    )


def layers_activation_bytes(
    spec: ModelSpec, batch: int, length: int, recompute: str, attention: str, dtype: str
) -> int:
    """Every layer's saved tensors: the sum over stacks of layers x one layer's bytes."""
    return sum(
        stack.n_layers * layer_activation_bytes(stack, batch, length, recompute, attention, dtype)
        for stack in spec.stacks
    )


def outside_activation_bytes(spec: ModelSpec, batch: int, length: int, dtype: str) -> int:
    """Saved outside the layers but the logits (final norm, token ids, targets, positions;
    :func:`costcalc.activations.outside_terms`)."""
    return sum(t.bytes for t in outside_terms(spec, batch, length, dtype))


def activation_bytes(
    spec: ModelSpec, batch: int, length: int, recompute: str, attention: str, dtype: str
) -> int:
    """All saved activations: the layers (scores included) + what is saved outside them; the
    logits and log-probabilities are the logits rows."""
    layers = layers_activation_bytes(spec, batch, length, recompute, attention, dtype)
    return layers + outside_activation_bytes(spec, batch, length, dtype)


def training_length(spec: ModelSpec, length: int | None) -> int:
    """T of a training step: required (activations grow with T, as T^2 under eager attention,
    so the whole context is never assumed; the UsageError names it) and within the positions."""
    if length is None:
        raise UsageError(
            f"training memory needs a length: give -T LENGTH (tokens per sequence; "
            f"the model's context is {spec.context_length:,} tokens)"
        )
    check_positions(spec, "length", length, length)
    return length


# --------------------------------------------------------------------------- logits


def logit_elements(spec: ModelSpec, batch: int, length: int) -> int:
    """Logits of a training forward: B x T x V' (every position, as the loss needs; V' the
    LM head's rows)."""
    return batch * length * spec.output_rows


def log_prob_bytes(spec: ModelSpec, batch: int, length: int) -> int:
    """The fp32 log-probabilities ``cross_entropy`` saves for backward, 4 B T V in every dtype
    (``log_softmax`` of ``logits.float()``; the upcast itself is freed once the loss is
    computed; measured: tests/golden/activation_reference.json)."""
    return dtype_bytes(logit_elements(spec, batch, length), LOSS_DTYPE)


# --------------------------------------------------------------------------- KV cache


def kv_cache_tokens(spec: ModelSpec, length: int) -> int:
    """Tokens the cache of a block of ``spec`` keeps after T tokens: the keys the last one
    attends to, T capped by the sliding window (the convention of the decoding MACs); a
    chunked block keeps one chunk; every token with ``kv_cache_all_tokens``."""
    if spec.kv_cache_all_tokens:
        return length
    if spec.attention_chunk is not None:
        return min(length, spec.attention_chunk)
    return cached_keys(spec, length - 1)


def stored_tokens(spec: ModelSpec, length: int) -> int:
    """Tokens transformers' cache of a block stores after T tokens: :func:`kv_cache_tokens`,
    except under a window of 1, which ``DynamicSlidingWindowLayer`` slices as
    ``states[:, :, -(W - 1):]``, that is ``[-0:]``: every token (a token still attends to one
    key, so what a decode step reads stays :func:`kv_cache_tokens`)."""
    return length if spec.sliding_window == 1 else kv_cache_tokens(spec, length)


def longest_cache(spec: ModelSpec, length: int) -> int:
    """The most tokens any attention block keeps (0 when no block caches keys)."""
    return max(
        (stored_tokens(stack, length) for stack in spec.stacks if stack.has_attention),
        default=0,
    )


def kv_width(spec: ModelSpec) -> int:
    """Cached elements per token in one block, its token mixer's
    (:meth:`costcalc.anatomy.mixer.TokenMixer.cache_width`): keys and values 2 K d for
    attention (K key/value heads, not H, or ``kv_cache_heads``; K (d + dv) when values have a
    width dv of their own); MLA's compressed latent and shared rotary key; either plus a
    sparse-attention indexer's key; 0 without attention, for a block that reads an earlier
    block's keys and values and for a gated cross-attention block, which text-only input
    skips."""
    return token_mixer(spec.mixer).cache_width(spec)


def cached_layers(spec: ModelSpec) -> int:
    """Layers of a kind of block that keep a cache: every layer (every use of a reused block),
    or one per weight set when its uses share it (``cache_per_weight_set``)."""
    return weight_sets(spec) if spec.cache_per_weight_set else spec.n_layers


def kv_cache_elements(spec: ModelSpec, batch: int, length: int) -> int:
    """Keys and values of every layer: 2 x L x B x T x K x d, summed over the stacks (L the
    layers that keep a cache, :func:`cached_layers`); plus what a key compressor keeps
    (:func:`compressor_cache_elements`)."""
    return batch * sum(
        cached_layers(stack)
        * (
            stored_tokens(stack, length) * kv_width(stack)
            + compressor_cache_elements(stack, length)
        )
        for stack in spec.stacks
    )


def compressor_cache_elements(spec: ModelSpec, length: int) -> int:
    """What a block's key compressor keeps in its cache layer after T tokens (one sequence), its
    token mixer's (:meth:`costcalc.anatomy.mixer.TokenMixer.pooled_cache`): DeepSeek-V4's
    compressed keys and the window not yet closed; 0 without a compressor."""
    return token_mixer(spec.mixer).pooled_cache(spec, length)


def kv_cache_bytes(spec: ModelSpec, batch: int, length: int, kv_dtype: str) -> int:
    """KV-cache elements x bytes of ``kv_dtype``."""
    return dtype_bytes(kv_cache_elements(spec, batch, length), kv_dtype)


# --------------------------------------------------------------------------- recurrent state


def conv_state_width(spec: ModelSpec) -> int:
    """One block's cached conv inputs per sequence (C channels x k positions; RecurrentGemma's
    block keeps k - 1); 0 for attention blocks and lightning attention (no conv)."""
    kind = spec.recurrent_mixer
    return 0 if kind is None else recurrent_mixer(kind).conv_state_width(spec)


def recurrent_state_width(spec: ModelSpec) -> int:
    """One block's SSM / linear-attention state per sequence, each recurrent mixer's own
    (:meth:`costcalc.anatomy.recurrent.RecurrentMixer.state_width`: Mamba-2 H P N, Mamba I N,
    Gated DeltaNet Hv dk dv, Kimi Delta Attention and lightning attention H d^2, RG-LRU W, RWKV
    2 D + 3 A, mLSTM H (dk dv + dk + 1)); 0 for a short convolution (its conv state is all it
    keeps) and attention."""
    kind = spec.recurrent_mixer
    return 0 if kind is None else recurrent_mixer(kind).state_width(spec)


def state_layers(spec: ModelSpec) -> int:
    """Layers of state a kind of block keeps: one per block, or ``state_layers``."""
    return spec.n_layers if spec.state_layers is None else spec.state_layers


def state_elements(spec: ModelSpec, batch: int) -> int:
    """Fixed-size state of every recurrent block (conv state + recurrent state), B sequences:
    it does not grow with T and is not part of the KV cache (:func:`kv_cache_elements`)."""
    return batch * sum(
        state_layers(stack) * (conv_state_width(stack) + recurrent_state_width(stack))
        for stack in spec.stacks
    )


def state_bytes(spec: ModelSpec, batch: int, dtype: str) -> int:
    """Recurrent-state elements x bytes of ``dtype``."""
    return dtype_bytes(state_elements(spec, batch), dtype)


# --------------------------------------------------------------------------- what is counted


@dataclass(frozen=True)
class MemorySetup:
    """What the memory is for: inference, or training with an optimizer, at a batch and length.

    ``length`` None means the model's context length (inference only: training needs a length);
    ``kv_dtype`` None means the weights' dtype, or bf16 when the weights are quantized (fp8, int8,
    int4, or a format such as ``gguf:Q4_K_M``), since the cache holds activations. ``attention``
    is the attention kernel of training.
    """

    dtype: str = "bf16"
    train: bool = False
    optimizer: str = "adamw"
    dtype_given: bool = True
    """False: no ``--dtype``; inference counts each model's weights as its checkpoint stores
    them (:meth:`~costcalc.loaders.LoadedModel.weights_dtype`), training in bf16."""
    mixed_precision: bool = False
    batch: int = 1
    length: int | None = None
    kv_dtype: str | None = None
    recompute: str = "none"
    attention: str = DEFAULT_ATTENTION
    engine: EngineSetup = field(default_factory=EngineSetup)
    """The engine whose allocations are counted (:mod:`costcalc.engines`; inference only)."""

    @property
    def state_dtype(self) -> str:
        """The dtype of the parameters the optimizer updates: fp32 masters, or the weights."""
        return MASTER_DTYPE if self.mixed_precision else self.dtype


def memory_setup(
    dtype: str | None = None,
    train: bool = False,
    optimizer: str | None = None,
    mixed_precision: bool | None = None,
    batch: int = 1,
    length: int | None = None,
    kv_dtype: str | None = None,
    recompute: str | None = None,
    attention: str | None = None,
    engine: EngineSetup | None = None,
) -> MemorySetup:
    """A checked :class:`MemorySetup`; training options without ``train`` are errors, and so
    is an engine other than transformers with ``train`` (engines serve).

    Mixed precision defaults to on when training in bf16 or fp16 (16-bit weights and gradients,
    fp32 masters and optimizer state), off for fp32. Without ``dtype``, inference counts each
    model's weights as its checkpoint stores them, training in bf16 (``dtype_given`` False).
    """
    dtype_given = dtype is not None
    dtype = check_weight_dtype(dtype or "bf16")
    if kv_dtype is not None:
        check_choice(kv_dtype, DTYPES, "KV-cache dtype")
    check_count("batch", batch)
    if length is not None:
        check_count("length", length)
    training_only = {
        "--optimizer": optimizer,
        "--mixed-precision": mixed_precision,
        "--recompute": recompute,
        "--attention": attention,
    }
    if not train:
        given = [option(name) for name, value in training_only.items() if value is not None]
        if given:
            raise UsageError(f"{', '.join(given)} applies to training; add {option('--train')}")
        return MemorySetup(
            dtype=dtype,
            batch=batch,
            length=length,
            kv_dtype=kv_dtype,
            engine=engine or EngineSetup(),
            dtype_given=dtype_given,
        )
    if engine is not None and engine.name != DEFAULT_ENGINE:
        raise UsageError(
            f"{option('--engine', engine.name)} counts what it allocates to serve: "
            f"drop {option('--train')}"
        )
    if dtype not in TRAINING_DTYPES:
        raise UsageError(
            f"training keeps weights and gradients in {', '.join(TRAINING_DTYPES)}, not {dtype}"
            + ("" if dtype in DTYPES else f" (frozen quantized weights: {_lora_base()})")
        )
    mixed = dtype != "fp32" if mixed_precision is None else mixed_precision
    if mixed and dtype == "fp32":
        raise UsageError(
            f"mixed precision trains 16-bit weights: use {option('--dtype', 'bf16')} or "
            f"{option('--dtype', 'fp16')}"
        )
    return MemorySetup(
        dtype=dtype,
        dtype_given=dtype_given,
        train=True,
        optimizer=check_choice(optimizer or "adamw", OPTIMIZERS, "optimizer"),
        mixed_precision=mixed,
        batch=batch,
        length=length,
        kv_dtype=kv_dtype,
        recompute=check_recompute(recompute or "none"),
        attention=check_attention(attention or DEFAULT_ATTENTION),
    )


@dataclass(frozen=True)
class MemoryReport:
    """Every memory quantity of one model under one setup; bytes unless named elements."""

    setup: MemorySetup
    length: int
    kv_dtype: str
    params_total: int
    parameter_tensors: int
    bytes_weights: int
    bytes_gradients: int
    bytes_master_weights: int
    elements_optimizer_moments: int
    elements_optimizer_steps: int
    bytes_optimizer: int
    bytes_activations: int
    bytes_attention_scores: int
    elements_logits: int
    bytes_logits: int
    bytes_logits_fp32: int
    kv_cache_tokens: int
    elements_kv_cache: int
    bytes_kv_cache: int
    elements_state: int
    bytes_state: int
    bytes_gathered: int = 0
    """ZeRO-3 / FSDP full shard: the running layer's whole parameters and gradients
    (:mod:`costcalc.parallel`); 0 otherwise."""
    elements_gathered: int = 0
    """The elements of ``bytes_gathered``: 2 x the largest module's parameters (params + grads)."""
    elements_step_buffer: int = 0
    bytes_step_buffer: int = 0
    """DeepSpeed's ZeRO: the gradient partition its step flattens and casts to fp32 at once
    (:mod:`costcalc.zero`), held during the optimizer step only; 0 otherwise."""
    elements_bucket: int = 0
    bytes_bucket: int = 0
    bucket_held: bool = False
    """DeepSpeed's reduce bucket (``reduce_bucket_size`` 16-bit elements): during the backward
    under stages 1-2, for the whole run under stage 3 (``bucket_held``)."""
    elements_persistent: int = 0
    bytes_persistent: int = 0
    """DeepSpeed's ZeRO-3: the small parameters every rank keeps whole (16-bit) outside the
    optimizer step."""
    elements_prefetch: int = 0
    bytes_prefetch: int = 0
    """DeepSpeed's ZeRO-3: parameters fetched ahead of the running layer, a bound."""
    weight_dtype: str | None = None
    gradient_dtype: str | None = None
    """The dtypes the weights and the gradients are held in, when not the training dtype
    (FSDP2's fp32 sharded parameters and gradients under mixed precision)."""
    held_weights: int | None = None
    held_gradients: int | None = None
    held_master_weights: int | None = None
    """Under a parallel plan (:mod:`costcalc.parallel`): the weight, gradient and fp32 master
    elements one GPU holds, its ZeRO / FSDP partition of ``params_total`` where they are sharded;
    None: ``params_total``."""
    bytes_output: int = 0
    """An engine's output buffer (llama.cpp's logits); 0 otherwise."""
    engine: EngineMemory | None = None
    """What the engine of the setup allocates, when it is not transformers
    (:func:`costcalc.engines.dispatch.engine_report`)."""

    @property
    def elements_weights(self) -> int:
        return self.params_total if self.held_weights is None else self.held_weights

    @property
    def elements_gradients(self) -> int:
        """Gradient elements held: 0 for inference."""
        if not self.setup.train:
            return 0
        return self.params_total if self.held_gradients is None else self.held_gradients

    @property
    def elements_master_weights(self) -> int:
        """fp32 master elements held: 0 without mixed precision (DeepSpeed's ZeRO keeps them
        in every dtype: ``held_master_weights``)."""
        if self.held_master_weights is not None:
            return self.held_master_weights
        return self.params_total if self.setup.mixed_precision else 0

    @property
    def elements_optimizer(self) -> int:
        return self.elements_optimizer_moments + self.elements_optimizer_steps

    @property
    def bytes_backward(self) -> int:
        """What exists only while the forward and backward run: activations, logits, the
        gathered layer, prefetched and small whole parameters (ZeRO-3 partitions them again for
        the step), and a reduce bucket that is not held."""
        bucket = 0 if self.bucket_held else self.bytes_bucket
        return (
            self.bytes_activations
            + self.bytes_logits
            + self.bytes_logits_fp32
            + self.bytes_gathered
            + self.bytes_prefetch
            + self.bytes_persistent
            + bucket
        )

    @property
    def bytes_held(self) -> int:
        """What every phase of a step holds: weights and training state (or the KV cache)."""
        bucket = self.bytes_bucket if self.bucket_held else 0
        return (
            self.bytes_weights
            + self.bytes_gradients
            + self.bytes_master_weights
            + self.bytes_optimizer
            + self.bytes_kv_cache
            + self.bytes_state
            + self.bytes_output
            + bucket
        )

    @property
    def bytes_total(self) -> int:
        """The most held at once: training state (or weights and KV cache) plus the larger of
        what the backward holds (activations, logits, buckets) and what the optimizer step
        holds (DeepSpeed's gradient partition in fp32)."""
        return self.bytes_held + max(self.bytes_backward, self.bytes_step_buffer)


def report_length(spec: ModelSpec, setup: MemorySetup) -> int:
    """T of ``setup``: training's length (required: :func:`training_length`), inference's or
    the model's context, checked against its positions."""
    if setup.train:
        return training_length(spec, setup.length)
    T = spec.context_length if setup.length is None else setup.length
    check_positions(spec, "length", T, T)
    return T


def memory_report(spec: ModelSpec, setup: MemorySetup) -> MemoryReport:
    """The formula, transformers' allocations: weights plus, for training, gradients, masters,
    optimizer state, activations and logits; for inference, the KV cache of ``batch`` sequences
    of ``length`` tokens. Training without a length is a UsageError naming the model's context
    (:func:`training_length`). The engine of ``setup`` is not read here: an engine's own
    allocations are :func:`costcalc.engines.dispatch.engine_report`'s."""
    T = report_length(spec, setup)
    kv_dtype = setup.kv_dtype or (setup.dtype if setup.dtype in TRAINING_DTYPES else "bf16")
    train, optimizer, B = setup.train, setup.optimizer, setup.batch
    recompute, attention = setup.recompute, setup.attention
    return MemoryReport(
        setup=setup,
        length=T,
        kv_dtype=kv_dtype,
        params_total=total_params(spec),
        parameter_tensors=tensor_count(spec),
        bytes_weights=weight_bytes(spec, setup.dtype),
        bytes_gradients=gradient_bytes(spec, setup.dtype) if train else 0,
        bytes_master_weights=master_weight_bytes(spec) if setup.mixed_precision else 0,
        elements_optimizer_moments=optimizer_moment_elements(spec, optimizer) if train else 0,
        elements_optimizer_steps=optimizer_step_elements(spec, optimizer) if train else 0,
        bytes_optimizer=optimizer_state_bytes(spec, optimizer, setup.state_dtype) if train else 0,
        bytes_activations=(
            activation_bytes(spec, B, T, recompute, attention, setup.dtype) if train else 0
        ),
        bytes_attention_scores=(
            attention_score_bytes(spec, B, T, recompute, attention, setup.dtype) if train else 0
        ),
        elements_logits=logit_elements(spec, B, T) if train else 0,
        bytes_logits=dtype_bytes(logit_elements(spec, B, T), setup.dtype) if train else 0,
        bytes_logits_fp32=log_prob_bytes(spec, B, T) if train else 0,
        kv_cache_tokens=0 if train else longest_cache(spec, T),
        elements_kv_cache=0 if train else kv_cache_elements(spec, B, T),
        bytes_kv_cache=0 if train else kv_cache_bytes(spec, B, T, kv_dtype),
        elements_state=0 if train else state_elements(spec, B),
        bytes_state=0 if train else state_bytes(spec, B, kv_dtype),
    )
