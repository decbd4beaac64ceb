"""Quantized weight formats, to the byte: packed values, their metadata, and what stays in floats.

A format is written ``NAME[:OPTION,...]`` (:func:`parse_format`); a plain dtype (fp32, bf16, fp16,
fp8, int8, int4) is the raw format: every parameter in that dtype, no scales (int4, int8, fp8
raw are what no toolkit stores). Each toolkit quantizes the matrices it converts and keeps the
rest (norms, biases, tables, the LM head where it does) in a float dtype (option ``rest=DTYPE``
sets it: fp32, bf16 or fp16). The bytes of one matrix are :mod:`costcalc.quant_layouts`.

- ``nf4``, ``fp4`` (bitsandbytes 0.50 ``functional.quantize_4bit``, ``Linear4bit``; loaded by
  transformers' ``BitsAndBytesConfig``): every linear layer but the LM head, per weight of n
  elements :func:`nf4_bytes` (blocks of 64, fp32 absmax; double quantization, the default, stores
  the absmax as uint8 with an fp32 scale per 256 blocks and an fp32 offset; option ``no-dq``)
  and its code tables (:func:`nf4_code_bytes`). Stacked experts and bare router weights are no
  ``nn.Linear`` and stay in bf16, the rest too.
- ``llm-int8`` (bitsandbytes ``Int8Params``): every linear layer but the LM head, int8 values and
  an fp32 scale per output row (``SCB``); the rest in fp16.
- ``gptq-int4``, ``gptq-int8`` (AutoGPTQ 0.7 ``nn_modules/qlinear/qlinear_cuda_old.py``,
  GPTQModel's ``QuantLinear``): the linear layers of the blocks, each expert of a stacked MoE
  included; option ``gG`` (group size, default g128; ``g-1``: one group); the rest in fp16.
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
from dataclasses import dataclass, field, replace
from math import prod

from costcalc.errors import UsageError, check_choice, shown
from costcalc.gguf_types import FILE_TYPE_ALIASES, GGUF_TYPES
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
from costcalc.units import DTYPE_BITS, DTYPES, MAX_DIGITS, dtype_bytes

__all__ = [
    "awq_bytes",
    "fp8_bytes",
    "gptq_bytes",
    "int8_bytes",
    "mxfp4_bytes",
    "nf4_bytes",
    "nvfp4_bytes",
]

DEFAULT_GROUP = 128
LM_HEAD = "lm_head"
MAX_OPTIONS = 100_000
"""Most options one format may carry (a checkpoint's per-layer exceptions included)."""

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
    "w4a16": "compressed-tensors int4, weights only",
    "w8a16": "compressed-tensors int8, weights only",
    "w8a8": "compressed-tensors int8, a scale per row",
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
    "w4a16": "bf16",
    "w8a16": "bf16",
    "w8a8": "bf16",
}
"""The dtype a toolkit keeps its unquantized tensors in (bitsandbytes' usual compute dtype bf16,
fp16 for LLM.int8; GPTQ and AWQ checkpoints fp16; DeepSeek-V3's FP8 checkpoint bf16)."""

GROUPED = ("gptq-int4", "gptq-int8", "awq-int4", "w4a16", "w8a16")
"""Formats with a group size (option ``gG``)."""
SCALES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("fp8-tensor", "fp8-channel", "fp8-block"), ("fp32", "bf16", "fp16", "e8m0")),
    **dict.fromkeys(("w4a16", "w8a16", "w8a8"), ("bf16", "fp16", "fp32")),
}
"""The scale dtypes a format may store its scales in (option ``scale=``), its default first."""
FLAGS: dict[str, tuple[str, ...]] = {
    "gguf": ("pure", "imatrix"),
    "nvfp4": ("w4a4",),
    "fp8-tensor": ("static",),
    "fp8-channel": ("static",),
    "fp8-block": ("static",),
    "w4a16": ("asym", "actorder"),
    "w8a16": ("asym", "actorder"),
    "w8a8": ("static",),
}
"""The on/off options each format takes."""
FLAG_WORDS = {
    "pure": "pure",
    "imatrix": "importance matrix",
    "w4a4": "with input scales (W4A4)",
    "static": "static input scale",
    "asym": "zero points",
    "actorder": "activation order (g_idx)",
}


@dataclass(frozen=True)
class WeightFormat:
    """A parsed weight format: ``name`` (raw dtype or format), its group or block size,
    double quantization, a GGUF file type, its on/off ``flags`` (``pure``, ``imatrix``,
    ``w4a4``, ``static``, ``asym``, ``actorder``), the dtype of its scales and of what it keeps
    unquantized (None: the format's own), and the +/- tensor selections (``NAME`` or
    ``NAME@I..J``)."""

    name: str
    group: int | None = None
    double_quant: bool = True
    gguf_type: str | None = None
    quantize: frozenset[str] = field(default_factory=frozenset)
    keep: frozenset[str] = field(default_factory=frozenset)
    flags: frozenset[str] = field(default_factory=frozenset)
    scale: str | None = None
    rest: str | None = None

    @property
    def raw(self) -> bool:
        """A plain dtype: every parameter in it, no scales."""
        return self.name in DTYPES

    @property
    def pure(self) -> bool:
        return "pure" in self.flags

    @property
    def imatrix(self) -> bool:
        return "imatrix" in self.flags

    @property
    def scale_dtype(self) -> str:
        """The dtype its scales are stored in."""
        return self.scale or SCALES.get(self.name, ("fp32",))[0]

    @property
    def rest_dtype(self) -> str:
        """The dtype of the tensors it keeps unquantized."""
        return self.rest or FLOAT_REST[self.name]

    @property
    def by_layer(self) -> bool:
        """Some +/- option names layers."""
        return any("@" in name for name in self.quantize | self.keep)

    @property
    def label(self) -> str:
        """The format as it is written back: ``gptq-int4:g128``, ``gguf:Q4_K_M``, ``nf4``."""
        options: list[str] = []
        if self.name in GROUPED:
            options.append(f"g{self.group or -1}")
        if self.name == "fp8-block" and self.group != FP8_BLOCK:
            options.append(f"b{self.group}")
        if self.name in ("nf4", "fp4") and not self.double_quant:
            options.append("no-dq")
        options += [flag for flag in FLAGS.get(self.name, ()) if flag in self.flags]
        if self.scale is not None and self.scale != self.scale_dtype_default:
            options.append(f"scale={self.scale}")
        if self.rest is not None and self.rest != FLOAT_REST.get(self.name):
            options.append(f"rest={self.rest}")
        options += [f"+{n}" for n in sorted(self.quantize, key=_selection_key)]
        options += [f"-{n}" for n in sorted(self.keep, key=_selection_key)]
        head = f"gguf:{self.gguf_type}" if self.name == "gguf" else self.name
        joiner = "," if self.name == "gguf" else ":"
        return head + (joiner + ",".join(options) if options else "")

    @property
    def scale_dtype_default(self) -> str:
        return SCALES.get(self.name, ("fp32",))[0]

    @property
    def description(self) -> str:
        """Plain words: ``int4 (raw, no scales)``, ``GPTQ 4-bit, groups of 128``."""
        if self.raw:
            return f"{self.name} (raw, no scales)" if DTYPE_BITS[self.name] < 16 else self.name
        words = TOOLKITS[self.name]
        how = [FLAG_WORDS[flag] for flag in FLAGS.get(self.name, ()) if flag in self.flags]
        if self.name == "gguf":
            return f"{words} {self.gguf_type}" + (f" ({', '.join(how)})" if how else "")
        if self.name in GROUPED:
            words += f", groups of {self.group}" if self.group else ", one group"
        if self.name == "fp8-block":
            words += f" {self.group}x{self.group}"
        if self.name in ("nf4", "fp4") and self.double_quant:
            words += ", double-quantized absmax"
        if self.scale is not None and self.scale != self.scale_dtype_default:
            how.append(f"{self.scale} scales")
        if self.keep:
            how.append(
                f"{', '.join(sorted(self.keep, key=_selection_key))} kept in {self.rest_dtype}"
            )
        if self.quantize:
            how.append(f"{', '.join(sorted(self.quantize, key=_selection_key))} quantized too")
        return words + "".join(f", {word}" for word in how)


def _selection_key(text: str) -> tuple[str, int]:
    name, _, layers = text.partition("@")
    return name, int(layers.partition("..")[0]) if layers else -1


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
    known = (*DTYPES, *TOOLKITS)
    meant = {t.casefold(): t for t in GGUF_TYPES}.get(name.casefold())
    if meant is not None and not rest and name.casefold() not in map(str.casefold, known):
        raise UsageError(
            f"unknown dtype or format '{shown(name)}' (did you mean 'gguf:{meant}'?); a "
            "llama.cpp type is written gguf:TYPE"
        )
    check_choice(name, known, "dtype or format")
    if name in GROUPED:
        start = WeightFormat(name, group=DEFAULT_GROUP)
    elif name == "fp8-block":
        start = WeightFormat(name, group=FP8_BLOCK)
    else:
        start = WeightFormat(name)
    return _options(text, start, rest)


def _options(text: str, fmt: WeightFormat, rest: str) -> WeightFormat:
    """Apply the comma-separated options of ``text`` to ``fmt``."""
    group, dq, scale, kept = fmt.group, fmt.double_quant, fmt.scale, fmt.rest
    quantize, keep, flags = set(fmt.quantize), set(fmt.keep), set(fmt.flags)
    options = [o.strip() for o in rest.split(",", MAX_OPTIONS)]
    if len(options) > MAX_OPTIONS:
        raise UsageError(f"'{shown(text)}': at most {MAX_OPTIONS:,} options")
    for option in filter(None, options):
        key, equals, value = option.partition("=")
        if option[0] in "+-" and len(option) > 1:
            (quantize if option[0] == "+" else keep).add(_selection(text, option[1:]))
        elif option == "no-dq" and fmt.name in ("nf4", "fp4"):
            dq = False
        elif option in FLAGS.get(fmt.name, ()):
            flags.add(option)
        elif equals and key == "scale" and fmt.name in SCALES:
            scale = check_choice(value, SCALES[fmt.name], f"scale dtype of {fmt.name}")
        elif equals and key == "rest" and fmt.name in FLOAT_REST:
            kept = check_choice(value, ("fp32", "bf16", "fp16"), "dtype of the unquantized rest")
        elif option[0] == "g" and fmt.name in GROUPED:
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
        flags=frozenset(flags),
        scale=scale,
        rest=kept,
    )


def _selection(text: str, option: str) -> str:
    """``NAME``, ``NAME@I`` or ``NAME@I..J`` as written back (``NAME@I`` for I..I)."""
    name, at, layers = option.partition("@")
    if not at:
        return name
    first, dots, last = layers.partition("..")
    i = _layer(text, first)
    j = _layer(text, last) if dots else i
    if not name or j < i:
        raise UsageError(
            f"'{shown(option)}' in '{shown(text)}': expected NAME@I or NAME@I..J with I <= J"
        )
    return f"{name}@{i}" if i == j else f"{name}@{i}..{j}"


def _layer(text: str, digits: str) -> int:
    if not digits.isdecimal() or len(digits) > MAX_DIGITS:
        raise UsageError(
            f"'{shown(text)}': a layer is a whole number from 0, not '{shown(digits)}'"
        )
    return int(digits)


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


def _applies(selection: str, tensor: Tensor, layer: int | None) -> bool:
    """A selection names this tensor, in this layer (``layer`` None: every layer, which a
    layer-limited selection does not name)."""
    name, at, layers = selection.partition("@")
    if not names(tensor, name):
        return False
    if not at:
        return True
    first, _, last = layers.partition("..")
    return layer is not None and int(first) <= layer <= int(last or first)


def default_quantized(fmt: WeightFormat, tensor: Tensor) -> bool:
    """Whether the toolkit quantizes this tensor by default (before +/- options)."""
    if tensor.use == "matmul":
        in_blocks = not tensor.name.startswith(("lm_head", "project_in", "project_out"))
        if fmt.name in ("gptq-int4", "gptq-int8", "awq-int4"):
            return in_blocks
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
            known = sorted({p for t in tensors if len(t.shape) >= 2 for p in _parts(t)})
            raise UsageError(f"'{name}' names no matrix of this model (known: {', '.join(known)})")
        if all(len(t.shape) < 2 for t in hits):
            raise UsageError(f"'{name}' names only vectors; only matrices are quantized")
        if layers and int(layers.rpartition(".")[2]) >= n_layers:
            raise UsageError(
                f"'{selection}' names a layer past the last: the model's layers are 0 to "
                f"{n_layers - 1}"
            )


def override(fmt: WeightFormat, tensor: Tensor, layer: int | None = None) -> bool | None:
    """True if a ``+NAME`` option quantizes this matrix (in ``layer``), False if a ``-NAME``
    keeps it, None if no option names it (vectors are never quantized)."""
    if len(tensor.shape) < 2 or any(_applies(s, tensor, layer) for s in fmt.keep):
        return False
    return True if any(_applies(s, tensor, layer) for s in fmt.quantize) else None


def _check_packing(fmt: WeightFormat, t: Tensor, out: int, inp: int) -> None:
    """Shapes the toolkit cannot pack are an error naming the tensor."""
    keep = f"(keep it unquantized with -{'.'.join(_parts(t))})"
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


def weight_bytes(spec: ModelSpec, fmt: WeightFormat) -> int:
    """All weight bytes of ``spec`` in ``fmt``."""
    return format_bytes(spec, fmt).bytes
