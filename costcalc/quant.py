"""Quantized weight formats, to the byte: packed values, their metadata, and what stays in floats.

A format is written ``NAME[:OPTION,...]`` (:func:`parse_format`); a plain dtype (fp32, bf16, fp16,
fp8, int8, int4) is the raw format: every parameter in that dtype, no scales (int4, int8, fp8
raw are what no toolkit stores). Each toolkit quantizes the matrices it converts and keeps the
rest (norms, biases, tables, the LM head where it does) in a float dtype:

- ``nf4``, ``fp4`` (bitsandbytes 0.50 ``functional.quantize_4bit``, ``Linear4bit``; loaded by
  transformers' ``BitsAndBytesConfig``): every linear layer but the LM head, per weight of n
  elements :func:`nf4_bytes` (blocks of 64, fp32 absmax; double quantization, the default, stores
  the absmax as uint8 with an fp32 scale per 256 blocks and an fp32 offset; option ``no-dq``).
  Stacked experts and bare router weights are no ``nn.Linear`` and stay in bf16, the rest too.
- ``llm-int8`` (bitsandbytes ``Int8Params``): every linear layer but the LM head, int8 values and
  an fp32 scale per output row (``SCB``); the rest in fp16.
- ``gptq-int4``, ``gptq-int8`` (AutoGPTQ 0.7 ``nn_modules/qlinear/qlinear_cuda_old.py``,
  GPTQModel's ``QuantLinear``): the linear layers of the blocks, each expert of a stacked MoE
  included; option ``gG`` (group size, default g128; ``g-1``: one group). Per (out, in) matrix:
  qweight int32 (in / 32 x bits, out), qzeros int32 (ceil(in / G), out / 32 x bits), scales fp16
  (ceil(in / G), out), g_idx int32 (in); biases, tables, norms, router and LM head in fp16.
- ``awq-int4`` (AutoAWQ 0.2 ``modules/linear/gemm.py`` ``WQLinear_GEMM``, 4-bit only): the same
  matrices; qweight int32 (in, out / 8), qzeros int32 (in / G, out / 8), scales fp16 (in / G,
  out); no g_idx; the rest in fp16.
- ``fp8-tensor``, ``fp8-channel``, ``fp8-block`` (transformers' ``FineGrainedFP8`` layers;
  DeepSeek-V3's checkpoint): the linear layers and stacked experts but the LM head and router,
  one fp8 byte per element plus fp32 scales: one per matrix, one per output row, or
  ``weight_scale_inv`` of ceil(out / 128) x ceil(in / 128) (option ``bB`` sets the block); the
  rest in bf16.
- ``mxfp4`` (OCP Microscaling Formats v1.0 MXFP4; compressed-tensors 0.20
  ``mxfp4-pack-quantized``, gpt-oss's ``*_blocks``/``*_scales``): the linear layers and stacked
  experts but the LM head and router, two e2m1 values per byte plus one e8m0 scale byte per
  32-element block of a row: out x in / 2 + out x ceil(in / 32); the rest in bf16.
- ``nvfp4`` (compressed-tensors 0.20 ``nvfp4-pack-quantized``): the same matrices, two e2m1
  values per byte, an fp8 e4m3 scale per 16-element block and an fp32 global scale per matrix:
  out x in / 2 + out x ceil(in / 16) + 4; option ``w4a4`` adds the fp32 ``input_global_scale``
  an NVFP4 (W4A4) checkpoint stores per matrix; the rest in bf16.
- ``gguf:TYPE`` (llama.cpp): a llama-quantize file type and its per-tensor mix, see
  :mod:`costcalc.gguf_mix`.

Options ``+NAME`` quantize tensors a toolkit keeps (``+lm_head``, ``+embed_tokens``, ``+router``),
``-NAME`` keep matrices it would quantize (``-down_proj``); NAME is a part of the generic
tensor names of :mod:`costcalc.tensors`, or a dotted run of parts (``-attn.q_proj``). Only
matrices (2-D and stacked 3-D tensors) quantize.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from math import prod

from costcalc.errors import UsageError, check_choice, shown
from costcalc.gguf_types import FILE_TYPE_ALIASES, GGUF_TYPES
from costcalc.spec import ModelSpec
from costcalc.tensors import Tensor, parameter_tensors
from costcalc.units import DTYPE_BITS, DTYPES, MAX_DIGITS, dtype_bytes

FP32_BYTES = 4
INT32_BYTES = 4
FP16_BYTES = 2
NF4_BLOCK = 64
NESTED_BLOCK = 256
FP8_BLOCK = 128
MXFP4_BLOCK = 32
NVFP4_BLOCK = 16
DEFAULT_GROUP = 128
LM_HEAD = "lm_head"

TOOLKITS: dict[str, str] = {
    "nf4": "bitsandbytes NF4",
    "fp4": "bitsandbytes FP4",
    "llm-int8": "bitsandbytes LLM.int8",
    "gptq-int4": "GPTQ 4-bit",
    "gptq-int8": "GPTQ 8-bit",
    "awq-int4": "AWQ 4-bit",
    "fp8-tensor": "FP8, one scale per tensor",
    "fp8-channel": "FP8, one scale per output row",
    "fp8-block": "FP8, block scales",
    "mxfp4": "MXFP4, an e8m0 scale per 32 values",
    "nvfp4": "NVFP4, an fp8 scale per 16 values and an fp32 scale per matrix",
    "gguf": "GGUF",
}
"""Each format name and what it is, in plain words."""

FLOAT_REST: dict[str, str] = {
    "nf4": "bf16",
    "fp4": "bf16",
    "llm-int8": "fp16",
    "gptq-int4": "fp16",
    "gptq-int8": "fp16",
    "awq-int4": "fp16",
    "fp8-tensor": "bf16",
    "fp8-channel": "bf16",
    "fp8-block": "bf16",
    "mxfp4": "bf16",
    "nvfp4": "bf16",
}
"""The dtype a toolkit keeps its unquantized tensors in (bitsandbytes' usual compute dtype bf16,
fp16 for LLM.int8; GPTQ and AWQ checkpoints fp16; DeepSeek-V3's FP8 checkpoint bf16)."""

FLAGS: dict[str, tuple[str, ...]] = {"gguf": ("pure", "imatrix"), "nvfp4": ("w4a4",)}
"""The on/off options each format takes."""


@dataclass(frozen=True)
class WeightFormat:
    """A parsed weight format: ``name`` (raw dtype or format), its group or block size,
    double quantization, a GGUF file type (``pure``: no mix; ``imatrix``: quantized with an
    importance matrix), NVFP4's input scales (``w4a4``), and the +/- tensor selections."""

    name: str
    group: int | None = None
    double_quant: bool = True
    gguf_type: str | None = None
    quantize: frozenset[str] = field(default_factory=frozenset)
    keep: frozenset[str] = field(default_factory=frozenset)
    pure: bool = False
    imatrix: bool = False
    w4a4: bool = False

    @property
    def raw(self) -> bool:
        """A plain dtype: every parameter in it, no scales."""
        return self.name in DTYPES

    @property
    def label(self) -> str:
        """The format as it is written back: ``gptq-int4:g128``, ``gguf:Q4_K_M``, ``nf4``."""
        options: list[str] = []
        if self.name in ("gptq-int4", "gptq-int8", "awq-int4"):
            options.append(f"g{self.group or -1}")
        if self.name == "fp8-block" and self.group != FP8_BLOCK:
            options.append(f"b{self.group}")
        if self.name in ("nf4", "fp4") and not self.double_quant:
            options.append("no-dq")
        if self.name == "nvfp4" and self.w4a4:
            options.append("w4a4")
        options += [name for name in ("pure", "imatrix") if getattr(self, name)]
        options += [f"+{n}" for n in sorted(self.quantize)]
        options += [f"-{n}" for n in sorted(self.keep)]
        head = f"gguf:{self.gguf_type}" if self.name == "gguf" else self.name
        joiner = "," if self.name == "gguf" else ":"
        return head + (joiner + ",".join(options) if options else "")

    @property
    def description(self) -> str:
        """Plain words: ``int4 (raw, no scales)``, ``GPTQ 4-bit, groups of 128``."""
        if self.raw:
            return f"{self.name} (raw, no scales)" if DTYPE_BITS[self.name] < 16 else self.name
        words = TOOLKITS[self.name]
        if self.name == "gguf":
            how = [w for w, on in (("pure", self.pure), ("importance matrix", self.imatrix)) if on]
            return f"{words} {self.gguf_type}" + (f" ({', '.join(how)})" if how else "")
        if self.name in ("gptq-int4", "gptq-int8", "awq-int4"):
            return f"{words}, groups of {self.group}" if self.group else f"{words}, one group"
        if self.name == "fp8-block":
            return f"{words} {self.group}x{self.group}"
        if self.name in ("nf4", "fp4"):
            return words + (", double-quantized absmax" if self.double_quant else "")
        if self.name == "nvfp4" and self.w4a4:
            return words + ", with input scales (W4A4)"
        return words


def weight_label(dtype: str) -> str:
    """How output names a weight dtype or format: sub-16-bit raw dtypes say they store no scales
    (``int4 (raw, no scales)``); formats as written (``gguf:Q4_K_M``)."""
    return parse_format(dtype).description if dtype in DTYPES else dtype


def describe_format(dtype: str) -> str:
    """Plain words for a weight dtype or format: ``GPTQ 4-bit, groups of 128``."""
    return parse_format(dtype).description


def parse_format(text: str) -> WeightFormat:
    """``NAME[:OPTION,...]``: a raw dtype, or a format with its options (see the module
    docstring); anything else is a UsageError naming what is accepted."""
    name, _, rest = text.strip().partition(":")
    if name in DTYPES and not rest:
        return WeightFormat(name)
    if name == "gguf":
        gguf_type, _, rest = rest.partition(",")
        check_choice(gguf_type, GGUF_TYPES, "GGUF type")
        gguf_type = FILE_TYPE_ALIASES.get(gguf_type, gguf_type)
        return _options(text, WeightFormat("gguf", gguf_type=gguf_type), rest)
    if name in DTYPES:
        raise UsageError(f"'{text}': a raw dtype takes no options ({name} stores no scales)")
    check_choice(name, (*DTYPES, *TOOLKITS), "dtype or format")
    if name in ("gptq-int4", "gptq-int8", "awq-int4"):
        start = WeightFormat(name, group=DEFAULT_GROUP)
    elif name == "fp8-block":
        start = WeightFormat(name, group=FP8_BLOCK)
    else:
        start = WeightFormat(name)
    return _options(text, start, rest)


def _options(text: str, fmt: WeightFormat, rest: str) -> WeightFormat:
    """Apply the comma-separated options of ``text`` to ``fmt``."""
    group, dq = fmt.group, fmt.double_quant
    quantize, keep = set(fmt.quantize), set(fmt.keep)
    flags = {name: bool(getattr(fmt, name)) for name in ("pure", "imatrix", "w4a4")}
    for option in filter(None, (o.strip() for o in rest.split(","))):
        if option[0] in "+-" and len(option) > 1:
            (quantize if option[0] == "+" else keep).add(option[1:])
        elif option == "no-dq" and fmt.name in ("nf4", "fp4"):
            dq = False
        elif option in FLAGS.get(fmt.name, ()):
            flags[option] = True
        elif option[0] == "g" and fmt.name in ("gptq-int4", "gptq-int8", "awq-int4"):
            group = _size(text, option[1:], "group size", allow_all=True)
        elif option[0] == "b" and fmt.name == "fp8-block":
            group = _size(text, option[1:], "block size")
        else:
            raise UsageError(f"'{shown(option)}' is no option of {fmt.name} in '{shown(text)}'")
    if quantize & keep:
        raise UsageError(f"'{text}' both quantizes and keeps {', '.join(sorted(quantize & keep))}")
    return replace(
        fmt,
        group=group,
        double_quant=dq,
        quantize=frozenset(quantize),
        keep=frozenset(keep),
        pure=flags["pure"],
        imatrix=flags["imatrix"],
        w4a4=flags["w4a4"],
    )


def _size(text: str, digits: str, what: str, allow_all: bool = False) -> int | None:
    """A positive size, or None for ``-1`` (one group over the whole row) where allowed."""
    if allow_all and digits == "-1":
        return None
    whole = digits.isdecimal() and len(digits) <= MAX_DIGITS
    if not whole or int(digits) == 0:
        raise UsageError(
            f"'{shown(text)}': the {what} must be a positive whole number of at most {MAX_DIGITS} "
            f"digits, not '{shown(digits)}'"
        )
    return int(digits)


# --------------------------------------------------------------------------- per-matrix bytes


def nf4_bytes(n: int, double_quant: bool) -> int:
    """One NF4 or FP4 weight of n elements (bitsandbytes ``quantize_4bit``, blocksize 64): packed
    values (n + 1) // 2 bytes and an fp32 absmax per block, 4 ceil(n / 64); with double
    quantization the absmax are uint8, ceil(n / 64) bytes, quantized in blocks of 256 with an fp32
    scale each (``state2.absmax``) plus the fp32 mean subtracted first (``offset``). The code
    tables (16 values, 256 values) are constants, not counted."""
    blocks = -(-n // NF4_BLOCK)
    packed = (n + 1) // 2
    if not double_quant:
        return packed + FP32_BYTES * blocks
    return packed + blocks + FP32_BYTES * -(-blocks // NESTED_BLOCK) + FP32_BYTES


def int8_bytes(out: int, inp: int) -> int:
    """One LLM.int8 weight: out x in int8 values + an fp32 scale per output row (``SCB``)."""
    return out * inp + FP32_BYTES * out


def gptq_bytes(out: int, inp: int, bits: int, group: int | None) -> int:
    """One GPTQ matrix: qweight int32 (in // 32 x bits, out), qzeros int32 (ceil(in / G),
    out // 32 x bits), scales fp16 (ceil(in / G), out), g_idx int32 (in); G = in for one group."""
    groups = 1 if group is None else -(-inp // group)
    qweight = INT32_BYTES * (inp // 32 * bits) * out
    qzeros = INT32_BYTES * groups * (out // 32 * bits)
    return qweight + qzeros + FP16_BYTES * groups * out + INT32_BYTES * inp


def awq_bytes(out: int, inp: int, group: int | None) -> int:
    """One AWQ GEMM matrix (4-bit): qweight int32 (in, out / 8), qzeros int32 (in / G, out / 8),
    scales fp16 (in / G, out)."""
    groups = 1 if group is None else inp // group
    return (
        INT32_BYTES * inp * (out // 8)
        + INT32_BYTES * groups * (out // 8)
        + FP16_BYTES * groups * out
    )


def mxfp4_bytes(out: int, inp: int) -> int:
    """One MXFP4 matrix (OCP MX v1.0; compressed-tensors ``weight_packed`` uint8 (out, in / 2)
    and ``weight_scale`` uint8 e8m0 (out, ceil(in / 32)); gpt-oss's ``*_blocks`` (out, in / 32,
    16) and ``*_scales`` (out, in / 32))."""
    return out * (inp // 2) + out * -(-inp // MXFP4_BLOCK)


def nvfp4_bytes(out: int, inp: int, w4a4: bool = False) -> int:
    """One NVFP4 matrix (compressed-tensors ``weight_packed`` uint8 (out, in / 2),
    ``weight_scale`` fp8 e4m3 (out, ceil(in / 16)), ``weight_global_scale`` fp32 (1,); W4A4
    checkpoints add ``input_global_scale`` fp32 (1,))."""
    scales = out * -(-inp // NVFP4_BLOCK)
    return out * (inp // 2) + scales + FP32_BYTES * (2 if w4a4 else 1)


def fp8_bytes(out: int, inp: int, scales: str, block: int = FP8_BLOCK) -> int:
    """One FP8 matrix: out x in bytes + fp32 scales: one (tensor), out (channel), or
    ceil(out / B) x ceil(in / B) (block, DeepSeek-V3's ``weight_scale_inv``)."""
    if scales == "tensor":
        count = 1
    elif scales == "channel":
        count = out
    else:
        count = -(-out // block) * -(-inp // block)
    return out * inp + FP32_BYTES * count


# --------------------------------------------------------------------------- whole models


@dataclass(frozen=True)
class TensorBytes:
    """One tensor (all its copies) as a format stores it: ``kind`` the stored type, e.g.
    ``Q6_K``, ``gptq-int4`` or ``bf16``; ``quantized`` whether it is quantized."""

    name: str
    shape: tuple[int, ...]
    copies: int
    kind: str
    quantized: bool
    bytes: int

    @property
    def elements(self) -> int:
        """Elements of all copies."""
        return self.copies * prod(self.shape)


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


def _parts(tensor: Tensor) -> list[str]:
    """The dotted parts of a tensor's name, without the trailing ``weight``."""
    parts = tensor.name.split(".")
    return parts[:-1] if parts[-1] == "weight" else parts


def names(tensor: Tensor, name: str) -> bool:
    """``name`` (``q_proj``, or dotted: ``attn.q_proj``) is a run of the tensor's name parts."""
    parts, wanted = _parts(tensor), name.split(".")
    return any(parts[i : i + len(wanted)] == wanted for i in range(len(parts) - len(wanted) + 1))


def default_quantized(fmt: WeightFormat, tensor: Tensor) -> bool:
    """Whether the toolkit quantizes this tensor by default (before +/- options)."""
    if tensor.use == "matmul":
        in_blocks = not tensor.name.startswith(("lm_head", "project_in", "project_out"))
        if fmt.name in ("gptq-int4", "gptq-int8", "awq-int4"):
            return in_blocks
        return not tensor.name.startswith(LM_HEAD)
    return tensor.use == "experts" and fmt.name not in ("nf4", "fp4", "llm-int8")


def check_options(fmt: WeightFormat, tensors: Iterable[Tensor]) -> None:
    """An option naming no tensor of the model, or naming only vectors, is a UsageError."""
    tensors = list(tensors)
    for name in sorted(fmt.quantize | fmt.keep):
        hits = [t for t in tensors if names(t, name)]
        if not hits:
            known = sorted({p for t in tensors if len(t.shape) >= 2 for p in _parts(t)})
            raise UsageError(f"'{name}' names no matrix of this model (known: {', '.join(known)})")
        if all(len(t.shape) < 2 for t in hits):
            raise UsageError(f"'{name}' names only vectors; only matrices are quantized")


def override(fmt: WeightFormat, tensor: Tensor) -> bool | None:
    """True if a ``+NAME`` option quantizes this matrix, False if a ``-NAME`` keeps it, None if
    no option names it (vectors are never quantized)."""
    if len(tensor.shape) < 2 or any(names(tensor, name) for name in fmt.keep):
        return False
    return True if any(names(tensor, name) for name in fmt.quantize) else None


def _matrix_bytes(fmt: WeightFormat, t: Tensor) -> int:
    """Bytes of one quantized tensor, all copies (a stack of X matrices: X matrices)."""
    *stack, out, inp = t.shape
    matrices = t.copies * prod(stack)
    if fmt.name in ("nf4", "fp4"):
        return matrices * nf4_bytes(out * inp, fmt.double_quant)
    if fmt.name == "llm-int8":
        return matrices * int8_bytes(out, inp)
    if fmt.name in ("gptq-int4", "gptq-int8"):
        if inp % 32 or out % 32:
            raise UsageError(
                f"GPTQ packs 32 bits at a time: {t.name} is {out} x {inp}, not a multiple of 32 "
                f"(keep it unquantized with -{t.name.split('.')[-2]})"
            )
        return matrices * gptq_bytes(out, inp, int(fmt.name[-1]), fmt.group)
    if fmt.name == "awq-int4":
        if out % 8 or (fmt.group is not None and inp % fmt.group):
            raise UsageError(
                f"AWQ needs out divisible by 8 and in by the group size {fmt.group}: {t.name} is "
                f"{out} x {inp} (keep it unquantized with -{t.name.split('.')[-2]})"
            )
        return matrices * awq_bytes(out, inp, fmt.group)
    if fmt.name in ("mxfp4", "nvfp4"):
        if inp % 2:
            raise UsageError(
                f"{fmt.name.upper()} packs two values per byte: {t.name} has rows of {inp} "
                f"elements, an odd number (keep it unquantized with -{t.name.split('.')[-2]})"
            )
        if fmt.name == "mxfp4":
            return matrices * mxfp4_bytes(out, inp)
        return matrices * nvfp4_bytes(out, inp, fmt.w4a4)
    return matrices * fp8_bytes(out, inp, fmt.name.removeprefix("fp8-"), fmt.group or FP8_BLOCK)


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
    check_options(fmt, tensors)
    if fmt.name == "gguf":
        from costcalc.gguf_mix import gguf_tensors

        return FormatBytes(fmt, gguf_tensors(spec, fmt, tensors))
    rest = FLOAT_REST[fmt.name]
    rows = []
    for t in tensors:
        chosen = override(fmt, t)
        if chosen if chosen is not None else default_quantized(fmt, t):
            rows.append(
                TensorBytes(t.name, t.shape, t.copies, fmt.name, True, _matrix_bytes(fmt, t))
            )
        else:
            rest_bytes = dtype_bytes(t.elements, rest)
            rows.append(TensorBytes(t.name, t.shape, t.copies, rest, False, rest_bytes))
    return FormatBytes(fmt, tuple(rows))


def weight_bytes(spec: ModelSpec, fmt: WeightFormat) -> int:
    """All weight bytes of ``spec`` in ``fmt``."""
    return format_bytes(spec, fmt).bytes
