"""Quantized weight formats, to the byte: packed values, their metadata, and what stays in floats.

A format is written ``NAME[:OPTION,...]`` (:func:`costcalc.weight_format.parse_format`); a plain
dtype (fp32, bf16, fp16, fp8, int8, int4) is the raw format: every parameter in that dtype, no
scales (int4, int8, fp8 raw are what no toolkit stores). Each toolkit quantizes the matrices it
converts and keeps the rest (norms, biases, tables, the LM head where it does) in a float dtype
(option ``rest=DTYPE`` sets it: fp32, bf16 or fp16). The bytes of one matrix are
:mod:`costcalc.quant_layouts`.

- ``nf4``, ``fp4`` (bitsandbytes 0.50 ``functional.quantize_4bit``, ``Linear4bit``; loaded by
  transformers' ``BitsAndBytesConfig``): every linear layer but the LM head, per weight of n
  elements :func:`nf4_bytes` (blocks of 64, fp32 absmax; double quantization, the default, stores
  the absmax as uint8 with an fp32 scale per 256 blocks and an fp32 offset; option ``no-dq``)
  and its code tables (:func:`nf4_code_bytes`). Stacked experts and bare router weights are no
  ``nn.Linear`` and stay in bf16, the rest too.
- ``llm-int8`` (bitsandbytes ``Int8Params``): every linear layer but the LM head, int8 values and
  an fp32 scale per output row (``SCB``); the rest in fp16.
- ``gptq-int4``, ``gptq-int8`` (AutoGPTQ 0.7 ``nn_modules/qlinear/qlinear_cuda_old.py``,
  GPTQModel's ``QuantLinear``): the linear layers inside the decoder layers, each expert of a
  stacked MoE included, none of the model's own (:func:`default_quantized`); option ``gG``
  (group size, default g128; ``g-1``: one group); the rest in fp16.
- ``awq-int4`` (AutoAWQ 0.2 ``WQLinear_GEMM``, 4-bit only): the same matrices; the rest in fp16.
- ``fp8-tensor``, ``fp8-channel``, ``fp8-block`` (transformers' ``FineGrainedFP8`` layers;
  DeepSeek-V3's checkpoint; compressed-tensors ``float-quantized``): the linear layers and
  stacked experts but the LM head and router, one fp8 byte per element plus scales: one per
  matrix, one per output row, or ceil(out / B) x ceil(in / B) (option ``bB``, default b128);
  scales fp32 (``scale=bf16``, ``fp16``, ``e8m0`` otherwise); ``static`` adds the input scale of
  static activation quantization; the rest in bf16.
- ``mxfp4`` (OCP MX v1.0; compressed-tensors ``mxfp4-pack-quantized``, gpt-oss's
  ``*_blocks``/``*_scales``) and ``nvfp4`` (compressed-tensors ``nvfp4-pack-quantized``; option
  ``w4a4``: its input scales): the same matrices; the rest in bf16.
- ``w4a16``, ``w8a16`` (compressed-tensors ``pack-quantized`` integers, weights only) and
  ``w8a8`` (``int-quantized``, int8 with a scale per row): the same matrices; options ``gG``
  (w4a16/w8a16; default g128, ``g-1`` a scale per row), ``asym`` (zero points), ``actorder``
  (``g_idx``), ``static`` (w8a8's input scale), ``scale=DTYPE`` (default bf16); the rest in bf16.
- ``gguf:TYPE`` (llama.cpp): a llama-quantize file type and its per-tensor mix, see
  :mod:`costcalc.gguf_mix`.

Options ``+NAME`` quantize tensors a toolkit keeps (``+lm_head``, ``+embed_tokens``, ``+router``),
``-NAME`` keep matrices it would quantize (``-down_proj``); NAME is a part of the generic
tensor names of :mod:`costcalc.tensors`, or a dotted run of parts (``-attn.q_proj``), and
``NAME@I`` or ``NAME@I..J`` limits it to layer I, or layers I to J (from 0, both included). Only
matrices (2-D and stacked 3-D tensors) quantize.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from math import prod

from costcalc.errors import UsageError
from costcalc.quant_layouts import (
    FP8_BLOCK,
    awq_bytes,
    fp8_bytes,
    gptq_bytes,
    int8_bytes,
    int8_channel_bytes,
    mxfp4_bytes,
    nf4_bytes,
    nf4_code_bytes,
    nvfp4_bytes,
    packed_int_bytes,
)
from costcalc.spec import ModelSpec
from costcalc.tensors import Tensor, block_tensors, model_tensors, parameter_tensors
from costcalc.units import dtype_bytes
from costcalc.weight_format import TensorBytes, WeightFormat, name_parts, names, override

__all__ = [
    "awq_bytes",
    "fp8_bytes",
    "gptq_bytes",
    "int8_bytes",
    "mxfp4_bytes",
    "nf4_bytes",
    "nvfp4_bytes",
]

LM_HEAD = "lm_head"

# --------------------------------------------------------------------------- whole models


@dataclass(frozen=True)
class FormatBytes:
    """The weights of a model in a format: every tensor, and the totals."""

    format: WeightFormat
    tensors: tuple[TensorBytes, ...]

    @property
    def bytes(self) -> int:
        """All weight bytes: quantized values with their metadata, and the rest."""
        return sum(t.bytes for t in self.tensors)

    @property
    def elements_quantized(self) -> int:
        """Elements stored quantized."""
        return sum(t.elements for t in self.tensors if t.quantized)

    @property
    def bytes_quantized(self) -> int:
        """Bytes of the quantized tensors, values and metadata."""
        return sum(t.bytes for t in self.tensors if t.quantized)

    @property
    def elements_unquantized(self) -> int:
        """Elements kept in a float dtype."""
        return sum(t.elements for t in self.tensors if not t.quantized)

    @property
    def bytes_unquantized(self) -> int:
        """Bytes of the tensors kept in a float dtype."""
        return sum(t.bytes for t in self.tensors if not t.quantized)


_LAYER_TOOLKITS = ("gptq-int4", "gptq-int8", "awq-int4")
"""Formats whose toolkits quantize decoder layers one at a time, and only their linear layers."""

_OUTSIDE_GPTQMODEL_TREES = ("altup.", "laurel.")
"""Block matrices no GPTQModel ``module_tree`` lists: Gemma 3n's AltUp and LAuReL
(``models/definitions/gemma3n.py``: attention, MLP, per-layer input gate and projection)."""


def default_quantized(fmt: WeightFormat, tensor: Tensor) -> bool:
    """Whether the toolkit quantizes this tensor by default (before +/- options).

    GPTQ and AWQ quantize the linear layers inside the decoder layers, ``model.layers.N``, and
    nothing outside them: GPTQModel 7.7 the modules its ``module_tree`` lists under
    ``model.layers.#`` (``looper/module_looper.py``, ``create_named_modules``; for its AWQ too),
    AutoGPTQ 0.7 its ``inside_layer_modules``, AutoAWQ 0.2.9 the ``nn.Linear`` of each layer
    of ``get_model_layers`` (``quantize/quantizer.py``). So every model-level matrix stays in
    floats: the LM head, OPT's ``project_in``/``project_out``, Gemma 3n's and 4's
    ``per_layer_model_projection``, Gemma 3n's AltUp projections, the collapse of several
    residual streams; and so do the block matrices of :data:`_OUTSIDE_GPTQMODEL_TREES`.
    The other formats quantize every matrix but the LM head (and, but bitsandbytes', the
    stacked experts)."""
    if fmt.name in _LAYER_TOOLKITS:
        if tensor.part == "model" or tensor.name.startswith(_OUTSIDE_GPTQMODEL_TREES):
            return False
        return tensor.use in ("matmul", "experts")
    if tensor.use == "matmul":
        return not tensor.name.startswith(LM_HEAD)
    return tensor.use == "experts" and fmt.name not in ("nf4", "fp4", "llm-int8")


def check_options(fmt: WeightFormat, tensors: Iterable[Tensor], n_layers: int) -> None:
    """An option naming no tensor of the model, only vectors, or a layer past the last is a
    UsageError."""
    tensors = list(tensors)
    for selection in sorted(fmt.quantize | fmt.keep):
        name, _, layers = selection.partition("@")
        hits = [t for t in tensors if names(t, name)]
        if not hits:
            known = sorted({p for t in tensors if len(t.shape) >= 2 for p in name_parts(t)})
            raise UsageError(f"'{name}' names no matrix of this model (known: {', '.join(known)})")
        if all(len(t.shape) < 2 for t in hits):
            raise UsageError(f"'{name}' names only vectors; only matrices are quantized")
        if layers and int(layers.rpartition(".")[2]) >= n_layers:
            raise UsageError(
                f"'{selection}' names a layer past the last: the model's layers are 0 to "
                f"{n_layers - 1}"
            )


def _check_packing(fmt: WeightFormat, t: Tensor, out: int, inp: int) -> None:
    """Shapes the toolkit cannot pack are an error naming the tensor."""
    keep = f"(keep it unquantized with -{'.'.join(name_parts(t))})"
    if fmt.name in ("gptq-int4", "gptq-int8") and (inp % 32 or out % 32):
        raise UsageError(
            f"GPTQ packs 32 bits at a time: {t.name} is {out} x {inp}, not a multiple of 32 {keep}"
        )
    if fmt.name == "awq-int4" and (out % 8 or (fmt.group is not None and inp % fmt.group)):
        raise UsageError(
            f"AWQ needs out divisible by 8 and in by the group size {fmt.group}: {t.name} is "
            f"{out} x {inp} {keep}"
        )
    if fmt.name in ("mxfp4", "nvfp4") and inp % 2:
        raise UsageError(
            f"{fmt.name.upper()} packs two values per byte: {t.name} has rows of {inp} "
            f"elements, an odd number {keep}"
        )


def matrix_bytes(fmt: WeightFormat, out: int, inp: int) -> int:
    """Bytes of one (out, in) matrix in ``fmt`` (its scales and metadata included)."""
    name, flags, scale = fmt.name, fmt.flags, fmt.scale_dtype
    if name in ("nf4", "fp4"):
        return nf4_bytes(out * inp, fmt.double_quant) + nf4_code_bytes(fmt.double_quant)
    if name == "llm-int8":
        return int8_bytes(out, inp)
    if name in ("gptq-int4", "gptq-int8"):
        return gptq_bytes(out, inp, int(name[-1]), fmt.group)
    if name == "awq-int4":
        return awq_bytes(out, inp, fmt.group)
    if name == "mxfp4":
        return mxfp4_bytes(out, inp)
    if name == "nvfp4":
        return nvfp4_bytes(out, inp, "w4a4" in flags)
    if name in ("w4a16", "w8a16"):
        bits = 4 if name == "w4a16" else 8
        return packed_int_bytes(
            out, inp, bits, fmt.group, scale, "asym" in flags, "actorder" in flags
        )
    if name == "w8a8":
        return int8_channel_bytes(out, inp, scale, "static" in flags)
    block = fmt.group or FP8_BLOCK
    return fp8_bytes(out, inp, name.removeprefix("fp8-"), block, scale, "static" in flags)


def _row(fmt: WeightFormat, t: Tensor, copies: int, chosen: bool | None) -> TensorBytes:
    """``copies`` copies of ``t``, quantized or kept in the rest dtype."""
    if chosen if chosen is not None else default_quantized(fmt, t):
        *stack, out, inp = t.shape
        _check_packing(fmt, t, out, inp)
        size = copies * prod(stack) * matrix_bytes(fmt, out, inp)
        return TensorBytes(t.name, t.shape, copies, fmt.name, True, size)
    rest = fmt.rest_dtype
    return TensorBytes(
        t.name, t.shape, copies, rest, False, dtype_bytes(copies * prod(t.shape), rest)
    )


def _layered_rows(spec: ModelSpec, fmt: WeightFormat) -> list[TensorBytes]:
    """Rows of a format whose options name layers: each block tensor split by the decision
    its layers get, the tensors of the same decision and stack merged."""
    from costcalc.layer_order import layer_stacks

    rows = [_row(fmt, t, t.copies, override(fmt, t)) for t in model_tensors(spec)]
    layers: dict[int, list[int]] = {}
    for layer, stack in enumerate(layer_stacks(spec, "Per-layer quantization options")):
        layers.setdefault(id(stack), []).append(layer)
    for stack in spec.stacks:
        for t in block_tensors(stack):
            decisions: dict[bool | None, int] = {}
            for layer in layers[id(stack)]:
                chosen = override(fmt, t, layer)
                decisions[chosen] = decisions.get(chosen, 0) + t.copies
            rows += [_row(fmt, t, copies, chosen) for chosen, copies in decisions.items()]
    return rows


def format_bytes(spec: ModelSpec, fmt: WeightFormat) -> FormatBytes:
    """Every tensor of ``spec`` as ``fmt`` stores it. A raw dtype is one row, all parameters,
    rounded up once as :func:`costcalc.units.dtype_bytes` rounds the raw total."""
    tensors = parameter_tensors(spec)
    if fmt.raw:
        total = sum(t.elements for t in tensors)
        row = TensorBytes(
            "all parameters", (total,), 1, fmt.name, False, dtype_bytes(total, fmt.name)
        )
        return FormatBytes(fmt, (row,))
    check_options(fmt, tensors, spec.n_layers)
    if fmt.name == "gguf":
        from costcalc.gguf_mix import gguf_tensors

        return FormatBytes(fmt, gguf_tensors(spec, fmt, tensors))
    if fmt.by_layer:
        return FormatBytes(fmt, tuple(_layered_rows(spec, fmt)))
    return FormatBytes(fmt, tuple(_row(fmt, t, t.copies, override(fmt, t)) for t in tensors))


def tensors_bytes(fmt: WeightFormat, tensors: Iterable[Tensor]) -> int:
    """Bytes of ``tensors`` (a GPU's shards included, each quantized as its own matrix, its
    scales with it) as ``fmt`` stores them, by the toolkit's defaults and the + / - options."""
    return sum(_row(fmt, t, t.copies, override(fmt, t)).bytes for t in tensors)


def weight_bytes(spec: ModelSpec, fmt: WeightFormat) -> int:
    """All weight bytes of ``spec`` in ``fmt``."""
    return format_bytes(spec, fmt).bytes
