"""Memory of LoRA and QLoRA training: frozen base weights, the trainable part and its state.

The frozen base is held in a float dtype, or with its linear layers quantized by bitsandbytes as
transformers' ``BitsAndBytesConfig`` loads it: every ``nn.Linear`` (and GPT-2's ``Conv1D``) but
the output head; the rest (tables, norms, biases, the head, stacked experts, bare router weights)
stays in 16 bits (bf16, the usual ``bnb_4bit_compute_dtype``).

- ``nf4`` (QLoRA, bitsandbytes ``functional.quantize_4bit``): a weight of n elements packs two
  values per byte, ``(n + 1) // 2`` bytes, with one fp32 absmax per block of 64: 4 ceil(n / 64)
  bytes. Double quantization (``compress_statistics``, QLoRA's default) stores those absmax as
  uint8 (ceil(n / 64) bytes) quantized in blocks of 256 (``quantize_blockwise(absmax,
  blocksize=256)``) with one fp32 scale per block, 4 ceil(ceil(n / 64) / 256) bytes, plus the fp32
  mean subtracted first (``offset``), 4 bytes. The constant code tables (16 NF4 values, 256
  dynamic-map values) are lookup tables, not counted.
- ``int8`` (LLM.int8, bitsandbytes ``Int8Params``): out x in int8 values and one fp32 scale per
  output row (``SCB``): out x in + 4 out bytes.

Trainable: LoRA's A, B and DoRA's magnitudes in the adapter dtype (fp32 by default, as peft's
``autocast_adapter_dtype`` upcasts them); saved copies and trainable biases in the base's float
dtype (they are base modules). Gradients and optimizer moments follow each parameter's dtype (torch
keeps ``p.grad`` and AdamW's ``exp_avg``/``exp_avg_sq`` like ``p``), plus one fp32 ``step`` per
trainable tensor for AdamW. Activations, attention scores and logits are counted as
``costcalc memory --train`` counts them, by the same functions of :mod:`costcalc.memory`:
activations an ESTIMATE: the layout full training saves (backpropagation still runs through
every layer; frozen norm weights spare their normalized inputs, and the adapters' own r-wide
intermediates are not added), the T x T scores only under eager attention without recomputation,
the B x T x V logits in the float dtype of the frozen weights and the fp32 log-probabilities the
loss saves. T is required (:func:`costcalc.memory.training_length`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from costcalc.activations import activation_formula, activation_source
from costcalc.compute import check_count
from costcalc.errors import UsageError, check_choice
from costcalc.formats.peft_names import FamilyNames
from costcalc.lora import LoraReport, sites
from costcalc.macs import check_attention, check_recompute
from costcalc.memory import (
    DEFAULT_ATTENTION,
    LOGITS_SOURCE,
    LOSS_DTYPE,
    STEP_DTYPE,
    activation_bytes,
    attention_score_bytes,
    log_prob_bytes,
    logit_elements,
    training_length,
)
from costcalc.parallel import ParallelPlan
from costcalc.quant import int8_bytes, nf4_bytes
from costcalc.spec import ModelSpec
from costcalc.units import dtype_bytes

FLOAT_DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16")
BASE_DTYPES: tuple[str, ...] = (*FLOAT_DTYPES, "int8", "nf4")
QUANTIZED_REST_DTYPE = "bf16"
LORA_OPTIMIZERS: dict[str, int] = {"adamw": 2, "sgd": 0, "sgd-momentum": 1}
"""Moments per trainable element: AdamW exp_avg and exp_avg_sq; SGD none; with momentum one."""
NF4_SOURCE = (
    "bitsandbytes functional.quantize_4bit: (n + 1) // 2 packed bytes, fp32 absmax per 64; "
    "double quantization: uint8 absmax in blocks of 256 with fp32 scales, and an fp32 offset"
)
INT8_SOURCE = "bitsandbytes LLM.int8 (Int8Params): int8 values and an fp32 scale per output row"


@dataclass(frozen=True)
class LoraTraining:
    """How LoRA trains: the base's dtype, the adapters', the optimizer, batch, length (None:
    not given, refused by :func:`lora_memory`), recomputation and attention kernel."""

    base_dtype: str = "bf16"
    double_quant: bool = True
    adapter_dtype: str = "fp32"
    optimizer: str = "adamw"
    batch: int = 1
    length: int | None = None
    recompute: str = "none"
    attention: str = DEFAULT_ATTENTION

    @property
    def float_dtype(self) -> str:
        """The dtype of what is not quantized: the base dtype, or bf16 under quantization."""
        return self.base_dtype if self.base_dtype in FLOAT_DTYPES else QUANTIZED_REST_DTYPE


def lora_training(
    base_dtype: str = "bf16",
    double_quant: bool | None = None,
    adapter_dtype: str = "fp32",
    optimizer: str = "adamw",
    batch: int = 1,
    length: int | None = None,
    recompute: str = "none",
    attention: str = DEFAULT_ATTENTION,
) -> LoraTraining:
    """A checked :class:`LoraTraining`; double quantization applies to nf4 only (default on)."""
    check_choice(base_dtype, BASE_DTYPES, "base dtype")
    check_choice(adapter_dtype, FLOAT_DTYPES, "adapter dtype")
    check_choice(optimizer, tuple(LORA_OPTIMIZERS), "optimizer")
    check_recompute(recompute)
    check_attention(attention)
    check_count("batch", batch)
    if length is not None:
        check_count("length", length)
    if double_quant is not None and base_dtype != "nf4":
        raise UsageError("--double-quant applies to --base-dtype nf4")
    return LoraTraining(
        base_dtype,
        double_quant is not False,
        adapter_dtype,
        optimizer,
        batch,
        length,
        recompute,
        attention,
    )


@dataclass(frozen=True)
class LoraMemory:
    """Bytes of LoRA training, by component (elements where they are counted)."""

    training: LoraTraining
    length: int
    elements_quantized: int
    bytes_quantized: int
    elements_frozen_float: int
    bytes_frozen_float: int
    elements_adapters: int
    bytes_adapters: int
    elements_saved: int
    bytes_saved: int
    elements_trainable: int
    bytes_gradients: int
    elements_optimizer: int
    bytes_optimizer: int
    bytes_activations: int
    bytes_attention_scores: int
    activation_formula: str
    activation_source: str
    elements_logits: int
    bytes_logits: int
    bytes_logits_fp32: int
    plan: ParallelPlan | None = None
    """A parallel plan (:mod:`costcalc.lora_parallel`): then every figure is one GPU's."""
    elements_masters: int = 0
    bytes_masters: int = 0
    """DeepSpeed's ZeRO: the fp32 masters of the trainable partition."""
    elements_step_buffer: int = 0
    bytes_step_buffer: int = 0
    elements_bucket: int = 0
    bytes_bucket: int = 0
    bucket_held: bool = False
    elements_gathered: int = 0
    bytes_gathered: int = 0
    elements_persistent: int = 0
    bytes_persistent: int = 0
    elements_prefetch: int = 0
    bytes_prefetch: int = 0
    """As :class:`costcalc.memory.MemoryReport`'s: the step's gradient partition, the reduce
    bucket, the parameters held whole while layers run, ZeRO-3's small whole and prefetched
    parameters."""

    @property
    def bytes_held(self) -> int:
        """What every phase of a step holds: weights, trainable state, a held bucket."""
        return (
            self.bytes_quantized
            + self.bytes_frozen_float
            + self.bytes_adapters
            + self.bytes_saved
            + self.bytes_gradients
            + self.bytes_masters
            + self.bytes_optimizer
            + (self.bytes_bucket if self.bucket_held else 0)
        )

    @property
    def bytes_backward(self) -> int:
        """What exists only while the forward and backward run."""
        return (
            self.bytes_activations
            + self.bytes_logits
            + self.bytes_logits_fp32
            + self.bytes_gathered
            + self.bytes_persistent
            + self.bytes_prefetch
            + (0 if self.bucket_held else self.bytes_bucket)
        )

    @property
    def bytes_total(self) -> int:
        """The most held at once during a training step (activations an ESTIMATE; they include
        the attention scores): what every phase holds plus the larger of the backward's and the
        optimizer step's own."""
        return self.bytes_held + max(self.bytes_backward, self.bytes_step_buffer)


def default_adapter_dtype(base_dtype: str, plan: ParallelPlan | None) -> str:
    """fp32, as peft upcasts the adapters; under DeepSpeed's ZeRO the base's float dtype, as
    its engine casts every float parameter (with fp32 masters)."""
    if plan is not None and plan.fsdp is None and plan.stage:
        return base_dtype if base_dtype in FLOAT_DTYPES else QUANTIZED_REST_DTYPE
    return "fp32"


def lora_memory(
    spec: ModelSpec, names: FamilyNames, report: LoraReport, training: LoraTraining
) -> LoraMemory:
    """The memory of training ``report``'s adapters on ``spec`` under ``training`` (one GPU;
    :func:`costcalc.lora_parallel.lora_rank_memory` gives one GPU's share of a plan)."""
    T = training_length(spec, training.length)
    B, recompute, attention = training.batch, training.recompute, training.attention
    base, rest = training.base_dtype, training.float_dtype
    linears = [] if base in FLOAT_DTYPES else [s for s in sites(spec, names) if s.kind == "linear"]
    quantized = sum(s.copies * s.shape[0] * s.shape[1] for s in linears)
    if base == "nf4":
        quantized_bytes = sum(
            s.copies * nf4_bytes(s.shape[0] * s.shape[1], training.double_quant) for s in linears
        )
    else:
        quantized_bytes = sum(s.copies * int8_bytes(*s.shape) for s in linears)
    frozen = report.base_total - quantized
    base_trainable = report.saved_params + report.bias_elements
    adapters = report.adapter_params
    moments = LORA_OPTIMIZERS[training.optimizer]
    steps = (
        report.adapter_tensors + report.saved_tensors + report.bias_tensors
        if training.optimizer == "adamw"
        else 0
    )
    trainable_bytes = dtype_bytes(adapters, training.adapter_dtype) + dtype_bytes(
        base_trainable, rest
    )
    return LoraMemory(
        training=training,
        length=T,
        elements_quantized=quantized,
        bytes_quantized=quantized_bytes,
        elements_frozen_float=frozen,
        bytes_frozen_float=dtype_bytes(frozen, rest),
        elements_adapters=adapters,
        bytes_adapters=dtype_bytes(adapters, training.adapter_dtype),
        elements_saved=report.saved_params,
        bytes_saved=dtype_bytes(report.saved_params, rest),
        elements_trainable=report.trainable,
        bytes_gradients=trainable_bytes,
        elements_optimizer=moments * report.trainable + steps,
        bytes_optimizer=moments * trainable_bytes + dtype_bytes(steps, STEP_DTYPE),
        bytes_activations=activation_bytes(spec, B, T, recompute, attention, rest),
        bytes_attention_scores=attention_score_bytes(spec, B, T, recompute, attention, rest),
        activation_formula=activation_formula(spec, recompute, attention, rest),
        activation_source=activation_source(spec),
        elements_logits=logit_elements(spec, B, T),
        bytes_logits=dtype_bytes(logit_elements(spec, B, T), rest),
        bytes_logits_fp32=log_prob_bytes(spec, B, T),
    )


def quantization_dtype(training: LoraTraining) -> str:
    """The quantized linears' format: nf4 (with double-quantized absmax: dq), or int8."""
    if training.base_dtype == "nf4":
        return "nf4, dq" if training.double_quant else "nf4"
    return "int8"


def memory_dict(memory: LoraMemory) -> dict[str, Any]:
    """The JSON form: each component's elements, dtype and bytes, and the setup."""
    t = memory.training
    quantized = t.base_dtype not in FLOAT_DTYPES
    return {
        "setup": {
            "base_dtype": t.base_dtype,
            "double_quant": t.double_quant if t.base_dtype == "nf4" else None,
            "adapter_dtype": t.adapter_dtype,
            "optimizer": t.optimizer,
            "batch": t.batch,
            "length": memory.length,
            "recompute": t.recompute,
            "attention": t.attention,
        },
        "quantized_weights": {
            "elements": memory.elements_quantized,
            "dtype": quantization_dtype(t) if quantized else None,
            "bytes": memory.bytes_quantized,
            "source": (NF4_SOURCE if t.base_dtype == "nf4" else INT8_SOURCE) if quantized else None,
        },
        "frozen_weights": {
            "elements": memory.elements_frozen_float,
            "dtype": t.float_dtype,
            "bytes": memory.bytes_frozen_float,
        },
        "adapters": {
            "elements": memory.elements_adapters,
            "dtype": t.adapter_dtype,
            "bytes": memory.bytes_adapters,
        },
        "saved_copies": {
            "elements": memory.elements_saved,
            "dtype": t.float_dtype,
            "bytes": memory.bytes_saved,
        },
        "gradients": {"elements": memory.elements_trainable, "bytes": memory.bytes_gradients},
        "optimizer": {"elements": memory.elements_optimizer, "bytes": memory.bytes_optimizer},
        "activations": {
            "bytes": memory.bytes_activations,
            "attention_scores_bytes": memory.bytes_attention_scores,
            "estimate": True,
            "formula": memory.activation_formula,
            "source": memory.activation_source,
        },
        "logits": {
            "elements": memory.elements_logits,
            "dtype": t.float_dtype,
            "bytes": memory.bytes_logits,
            "upcast_dtype": LOSS_DTYPE if memory.bytes_logits_fp32 else None,
            "upcast_bytes": memory.bytes_logits_fp32,
            "source": LOGITS_SOURCE,
        },
        "total": {"bytes": memory.bytes_total, "includes_estimate": True},
        "parallel": None if memory.plan is None else parallel_memory_dict(memory),
    }


def parallel_memory_dict(memory: LoraMemory) -> dict[str, Any]:
    """The plan and the terms it adds, one GPU's (:mod:`costcalc.lora_parallel`)."""
    plan = memory.plan
    assert plan is not None
    return {
        "gpus": plan.gpus,
        "zero_stage": plan.stage,
        "fsdp": plan.fsdp,
        "shard_gpus": plan.shard_gpus,
        "label": plan.label,
        "per_gpu": True,
        "master_weights": {"elements": memory.elements_masters, "bytes": memory.bytes_masters},
        "gradient_partition_step": {
            "elements": memory.elements_step_buffer,
            "bytes": memory.bytes_step_buffer,
        },
        "reduce_bucket": {
            "elements": memory.elements_bucket,
            "bytes": memory.bytes_bucket,
            "held": memory.bucket_held,
        },
        "gathered": {"elements": memory.elements_gathered, "bytes": memory.bytes_gathered},
        "persistent_params": {
            "elements": memory.elements_persistent,
            "bytes": memory.bytes_persistent,
        },
        "prefetch_bound": {"elements": memory.elements_prefetch, "bytes": memory.bytes_prefetch},
    }
