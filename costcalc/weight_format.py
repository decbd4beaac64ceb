"""Weight formats as costcalc writes them, parsed; and which tensors a format's options name.

A format is written ``NAME[:OPTION,...]``: a plain dtype (fp32, bf16, fp16, fp8, int8, int4) or a
toolkit's format with its options; :mod:`costcalc.quant` says what each stores, to the byte, and
:mod:`costcalc.gguf_mix` the per-tensor types of a GGUF file. Options ``+NAME`` quantize tensors
a toolkit keeps, ``-NAME`` keep matrices it would quantize; NAME is a part of the generic tensor
names of :mod:`costcalc.tensors`, or a dotted run of parts (``-attn.q_proj``), and ``NAME@I`` or
``NAME@I..J`` limits it to layer I, or layers I to J (from 0, both included).

It sits below both byte counters and above :mod:`costcalc.units`: reading a ``--dtype`` needs
neither the model spec nor the anatomy.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod

from costcalc.anatomy.tensor import Tensor
from costcalc.errors import UsageError, check_choice, shown
from costcalc.gguf_types import FILE_TYPE_ALIASES, GGUF_TYPES
from costcalc.quant_layouts import FP8_BLOCK
from costcalc.units import DTYPE_BITS, DTYPES, MAX_DIGITS

DEFAULT_GROUP = 128
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


def check_weight_dtype(text: str) -> str:
    """A weight dtype, or a quantized weight format (:func:`parse_format`) as costcalc writes it
    (``gptq-int4`` -> ``gptq-int4:g128``); else a UsageError listing both."""
    if text in DTYPE_BITS:
        return text
    return parse_format(text).label


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


def name_parts(tensor: Tensor) -> list[str]:
    """The dotted parts of a tensor's name, without the trailing ``weight``."""
    parts = tensor.name.split(".")
    return parts[:-1] if parts[-1] == "weight" else parts


def names(tensor: Tensor, name: str) -> bool:
    """``name`` (``q_proj``, or dotted: ``attn.q_proj``) is a run of the tensor's name parts."""
    parts, wanted = name_parts(tensor), name.split(".")
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


def override(fmt: WeightFormat, tensor: Tensor, layer: int | None = None) -> bool | None:
    """True if a ``+NAME`` option quantizes this matrix (in ``layer``), False if a ``-NAME``
    keeps it, None if no option names it (vectors are never quantized)."""
    if len(tensor.shape) < 2 or any(_applies(s, tensor, layer) for s in fmt.keep):
        return False
    return True if any(_applies(s, tensor, layer) for s in fmt.quantize) else None
