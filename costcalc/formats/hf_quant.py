"""The weight format a Hugging Face checkpoint stores, from its ``quantization_config``.

The config sits at the top level of ``config.json``, or under ``text_config``. Each
``quant_method`` becomes a format costcalc sizes (:mod:`costcalc.quant`), written as ``--dtype``
takes it:

- ``fp8`` (transformers' ``FineGrainedFP8Config``): ``weight_block_size`` [B, B] gives
  ``fp8-block:bB``, none ``fp8-tensor``; ``scale_fmt: ue8m0`` 1-byte scales; ``activation_scheme:
  static`` an fp32 input scale per matrix. ``modules_to_not_convert`` (or MiniMax's
  ``ignored_layers``) are kept, ``modules_to_convert`` quantized.
- ``mxfp4`` (transformers' ``Mxfp4Config``, gpt-oss): the stacked experts only, less
  ``modules_to_not_convert``.
- ``gptq``: ``bits`` 4 or 8, ``group_size`` (-1: one group), ``lm_head``; ``desc_act`` and ``sym``
  change no tensor of the layout (``g_idx`` and ``qzeros`` are stored either way);
  ``modules_to_not_convert`` and GPTQModel's ``dynamic`` skips (``-:`` patterns) are kept.
- ``awq``: 4 bits, ``group_size``, the GEMM layout (``version`` gemm), ``modules_to_not_convert``.
- ``bitsandbytes``: ``load_in_4bit`` with ``bnb_4bit_quant_type`` and
  ``bnb_4bit_use_double_quant``, or ``load_in_8bit``; ``llm_int8_skip_modules`` kept.
- ``compressed-tensors``: one weight scheme of ``config_groups`` (NVFP4, MXFP4, FP8 by tensor,
  channel or block, int4/int8 weight-only, int8 W8A8), its ``targets`` (``Linear``, names,
  ``re:`` regular expressions) and ``ignore`` list; scales in ``scale_dtype`` or the model's
  dtype.

Module patterns are matched as each toolkit matches them (transformers' ``should_convert_module``:
from the start of a name up to a module boundary, or as its suffix, a pattern being a regular
expression; compressed-tensors' ``match_name``: ``re:`` patterns from the start, others the
whole name) against the Hugging Face module names of costcalc's tensors in every layer
(``model.layers.{i}.self_attn.q_proj``, ``model.layers.{i}.mlp.experts``, ...; also with
``model.language_model.`` or ``language_model.model.`` for a multimodal model's text decoder).
Those names are transformers' usual ones; a pattern that names no module costcalc counts (a
vision tower, a family's own module name) is listed in a note. Routers are counted as the bare
parameters transformers 5 makes of them, unquantized unless a pattern names them.

Anything else (another ``quant_method``, several weight schemes, settings no layout here
stores) is no error: the model is counted, and a note says the stored format is not modelled.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from costcalc.errors import ConfigError, Problem, UsageError
from costcalc.files import Document
from costcalc.quant import default_quantized
from costcalc.spec import ModelSpec
from costcalc.tensors import Tensor, block_tensors, model_tensors
from costcalc.weight_format import WeightFormat, parse_format

MAX_PATTERNS = 100_000
"""Most module patterns read from one config."""
MAX_PATTERN_LENGTH = 1_000
"""Longest module pattern read."""
NESTED_REPEAT = re.compile(r"\((?:[^()\\]|\\.)*[*+}](?:[^()\\]|\\.)*\)\s*[*+{]")
"""A repeated group that itself repeats: refused, as it can take exponential time to match."""
REGEX_CHARS = frozenset("*+?[](){}|^$\\")
LAYER_PREFIXES = ("model.layers.", "model.language_model.layers.", "language_model.model.layers.")
MODEL_PREFIXES = ("model.", "model.language_model.", "language_model.model.")
HEADS = ("lm_head", "language_model.lm_head")
DTYPE_NAMES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
KIND_WORDS = {
    str: "a string",
    int: "a whole number",
    bool: "true or false",
    list: "a list",
    dict: "an object",
}

Matcher = Callable[[str], bool]


@dataclass(frozen=True)
class StoredFormat:
    """A checkpoint's ``quantization_config``: the format it stores (None: not modelled), its
    ``quant_method`` as written, where it was read, and what to tell the user."""

    label: str | None
    method: str
    key: str
    notes: tuple[str, ...] = ()


class _Config:
    """Reads one ``quantization_config``, collecting problems with its values."""

    def __init__(self, doc: Document, prefix: tuple[str, ...], data: Mapping[str, Any]) -> None:
        self.doc, self.prefix, self.data = doc, prefix, data
        self.problems: list[Problem] = []
        self.notes: list[str] = []

    @property
    def key(self) -> str:
        return ".".join(self.prefix)

    def fail(self, key: str, message: str) -> None:
        path = (*self.prefix, *key.split("."))
        self.problems.append(Problem(".".join(path), message, self.doc.line_of(path)))

    def get(
        self,
        key: str,
        kinds: tuple[type, ...],
        default: Any = None,
        data: Any = None,
        within: str = "",
    ) -> Any:
        """``key``'s value (in ``data`` at path ``within``, else the config) when it has one of
        ``kinds`` (null: ``default``); else a problem."""
        source = self.data if data is None else data
        value = source.get(key) if isinstance(source, Mapping) else None
        if value is None:
            return default
        wrong = isinstance(value, bool) and bool not in kinds
        if wrong or not isinstance(value, kinds):
            names = " or ".join(KIND_WORDS[kind] for kind in kinds)
            self.fail(f"{within}.{key}" if within else key, f"expected {names} (got {value!r:.60})")
            return default
        return value

    def patterns(self, key: str, within: str = "", data: Any = None) -> list[str]:
        """A list of module patterns (a single string counts as one) at ``key`` of ``data``
        (the config, or its part at path ``within``)."""
        value = self.get(key, (list, str), [], data, within)
        key = f"{within}.{key}" if within else key
        items = [value] if isinstance(value, str) else value
        if len(items) > MAX_PATTERNS:
            self.fail(key, f"lists {len(items):,} patterns; at most {MAX_PATTERNS:,} are read")
            return []
        kept: list[str] = []
        for i, item in enumerate(items):
            if not isinstance(item, str) or not item or len(item) > MAX_PATTERN_LENGTH:
                self.fail(
                    f"{key}.{i}",
                    f"expected a module name of 1 to {MAX_PATTERN_LENGTH:,} characters "
                    f"(got {item!r:.60})",
                )
            else:
                kept.append(item)
        return kept


def find_quantization_config(doc: Document) -> tuple[tuple[str, ...], Any] | None:
    """Where the config's ``quantization_config`` is (top level, else ``text_config``)."""
    data = doc.data
    if data.get("quantization_config") is not None:
        return ("quantization_config",), data["quantization_config"]
    text = data.get("text_config")
    if isinstance(text, Mapping) and text.get("quantization_config") is not None:
        return ("text_config", "quantization_config"), text["quantization_config"]
    return None


def stored_format(doc: Document, spec: ModelSpec) -> StoredFormat | None:
    """The format the config says its checkpoint stores, or None when it has no
    ``quantization_config``. A value of the wrong kind is a ConfigError naming the key."""
    found = find_quantization_config(doc)
    if found is None:
        return None
    prefix, data = found
    if not isinstance(data, Mapping):
        raise ConfigError(
            doc.path,
            [
                Problem(
                    ".".join(prefix), f"expected an object (got {data!r:.60})", doc.line_of(prefix)
                )
            ],
        )
    config = _Config(doc, prefix, data)
    method = config.get("quant_method", (str,), "")
    if not method and ("load_in_4bit" in data or "load_in_8bit" in data):
        method = "bitsandbytes"
    reader = READERS.get(method.lower() if isinstance(method, str) else "")
    label: str | None = None
    if reader is None:
        config.notes.append(
            f"{config.key} says quant_method {method!r}, a format costcalc does not size: "
            "weights are counted in bf16 unless --dtype says otherwise"
        )
    else:
        made = reader(config, spec)
        if made is not None:
            fmt, selection = made
            label = _with_options(config, spec, fmt, selection)
    if config.problems:
        raise ConfigError(doc.path, config.problems)
    if label is not None:
        rest = declared_dtype(doc)
        fmt = parse_format(label)
        if rest is not None and rest != fmt.rest_dtype and fmt.name != "gguf":
            label = parse_format(f"{label}{':' if ':' not in label else ','}rest={rest}").label
    return StoredFormat(label, str(method), config.key, tuple(config.notes))


def declared_dtype(doc: Document) -> str | None:
    """The model's own dtype (``torch_dtype`` or ``dtype``), as costcalc names it."""
    for data in (doc.data, doc.data.get("text_config")):
        if isinstance(data, Mapping):
            for key in ("torch_dtype", "dtype"):
                value = data.get(key)
                if isinstance(value, str) and value in DTYPE_NAMES:
                    return DTYPE_NAMES[value]
    return None


# --------------------------------------------------------------------------- which tensors


@dataclass(frozen=True)
class _Selection:
    """Which matrices a checkpoint quantizes: those ``converted`` names (None: the format's own
    choice; ``experts_only``: the stacked experts), less those ``skipped``, plus those
    ``added``, each a (pattern, matcher of module names) pair."""

    converted: Matcher | None
    skipped: list[tuple[str, Matcher]]
    added: list[tuple[str, Matcher]]
    experts_only: bool = False
    linear: bool = False
    """Every linear layer is a target (compressed-tensors' ``Linear``): the LM head too."""


def hf_module_names(tensor: Tensor, layer: int | None) -> tuple[str, ...]:
    """The Hugging Face module names a costcalc tensor goes by (transformers' usual names)."""
    module = tensor.name.removesuffix(".weight")
    if layer is None:
        if module == "lm_head":
            return HEADS
        return tuple(prefix + module for prefix in MODEL_PREFIXES)
    first, _, rest = module.partition(".")
    if first == "attn":
        tails = [f"self_attn.{rest}", module]
    elif module.endswith("router"):
        gate = module.removesuffix("router") + "gate"
        tails = [module, gate, "block_sparse_moe." + gate.partition(".")[2]]
    elif first == "mlp":
        tails = [module, f"block_sparse_moe.{rest}"]
        if rest.startswith("experts."):
            tails += ["mlp.experts", "block_sparse_moe.experts"]
            if rest == "experts.gate_up_proj":
                tails += ["mlp.experts.gate_proj", "mlp.experts.up_proj"]
        if rest.startswith("shared_expert."):
            tails.append("mlp.shared_experts." + rest.removeprefix("shared_expert."))
    else:
        tails = [module]
    return tuple(f"{prefix}{layer}.{tail}" for prefix in LAYER_PREFIXES for tail in tails)


def _regex(config: _Config, key: str, pattern: str) -> re.Pattern[str] | None:
    if NESTED_REPEAT.search(pattern):
        config.fail(
            key, f"{pattern!r:.80}: a repeated group that repeats can take too long to match"
        )
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        config.fail(key, f"{pattern!r:.80} is no regular expression ({exc})")
        return None


def transformers_matcher(config: _Config, key: str, pattern: str) -> Matcher:
    """``should_convert_module``: the pattern from the start up to a module boundary, or as a
    suffix; a pattern of plain dotted names is matched literally."""
    if not REGEX_CHARS & set(pattern):
        dotted = pattern.endswith(".")
        return lambda name: (
            name == pattern
            or name.startswith(pattern if dotted else pattern + ".")
            or name.endswith(pattern)
        )
    compiled = _regex(config, key, rf"(?:{pattern})(?:(?<=\.)|(?=\.|$))")
    if compiled is None:
        return lambda name: False
    return lambda name: compiled.match(name) is not None or name.endswith(pattern)


def compressed_matcher(config: _Config, key: str, pattern: str) -> Matcher:
    """compressed-tensors' ``match_name``: ``re:`` from the start of the name, else equal."""
    if not pattern.startswith("re:"):
        return lambda name: name == pattern
    compiled = _regex(config, key, pattern.removeprefix("re:"))
    if compiled is None:
        return lambda name: False
    return lambda name: compiled.match(name) is not None


def _listed(
    config: _Config, key: str, make: Callable[[_Config, str, str], Matcher]
) -> list[tuple[str, Matcher]]:
    return [(p, make(config, key, p)) for p in config.patterns(key)]


def _wanted(fmt: WeightFormat, selection: _Selection, tensor: Tensor, layer: int | None) -> bool:
    """Whether the checkpoint stores this tensor (in this layer) quantized."""
    if len(tensor.shape) < 2:
        return False
    named = selection.added or selection.skipped or selection.converted is not None
    hf = hf_module_names(tensor, layer) if named else ()
    if any(match(name) for _, match in selection.added for name in hf):
        return True
    if any(match(name) for _, match in selection.skipped for name in hf):
        return False
    if selection.experts_only:
        return tensor.use == "experts"
    if selection.linear:
        return tensor.use in ("matmul", "experts")
    if selection.converted is not None:
        matcher = selection.converted
        return default_quantized(fmt, tensor) and any(matcher(name) for name in hf)
    return default_quantized(fmt, tensor)


def _with_options(config: _Config, spec: ModelSpec, fmt: WeightFormat, sel: _Selection) -> str:
    """``fmt`` with the +/- options that make it quantize what the checkpoint does."""
    from costcalc.layer_order import layer_stacks

    used: set[str] = set()

    patterns = (*sel.skipped, *sel.added)

    def mark(tensor: Tensor, layer: int | None) -> None:
        if len(used) == len(patterns):
            return
        hf = hf_module_names(tensor, layer)
        for pattern, match in patterns:
            if pattern not in used and any(match(name) for name in hf):
                used.add(pattern)

    options: list[str] = []
    for tensor in model_tensors(spec):
        mark(tensor, None)
        if len(tensor.shape) >= 2 and _wanted(fmt, sel, tensor, None) != default_quantized(
            fmt, tensor
        ):
            options.append(_option(tensor, _wanted(fmt, sel, tensor, None)))
    try:
        order = layer_stacks(spec, "A checkpoint's quantized modules")
    except UsageError as exc:
        config.notes.append(f"{config.key}: {exc}; the format's own choice of tensors is used")
        return fmt.label
    differ: dict[tuple[str, bool], list[int]] = {}
    every: dict[str, int] = {}
    for layer, stack in enumerate(order):
        for tensor in block_tensors(stack):
            if len(tensor.shape) < 2:
                continue
            mark(tensor, layer)
            every[tensor.name] = every.get(tensor.name, 0) + 1
            want = _wanted(fmt, sel, tensor, layer)
            if want != default_quantized(fmt, tensor):
                differ.setdefault((tensor.name, want), []).append(layer)
    options += _layer_options(differ, every, order, fmt)
    unmatched = [p for p, _ in patterns if p not in used]
    if unmatched:
        shown = ", ".join(unmatched[:8]) + (
            f" and {len(unmatched) - 8:,} more" if len(unmatched) > 8 else ""
        )
        config.notes.append(
            f"{config.key}: patterns that name no module costcalc counts (a vision tower, or a "
            f"family's own module names): {shown}"
        )
    if not options:
        return fmt.label
    text = fmt.label + ("," if ":" in fmt.label else ":") + ",".join(options)
    return parse_format(text).label


def _option(tensor: Tensor, quantize: bool) -> str:
    return ("+" if quantize else "-") + tensor.name.removesuffix(".weight")


def _layer_options(
    differ: dict[tuple[str, bool], list[int]],
    every: dict[str, int],
    order: list[ModelSpec],
    fmt: WeightFormat,
) -> list[str]:
    """Options for the block tensors the checkpoint treats otherwise than the format: ``-part``
    when it keeps, in every layer, every matrix of a part (``attn``) the format quantizes and
    nothing else of the part differs; else one per tensor when every layer holding it differs,
    else one per run of layers."""
    options: list[str] = []
    collapsed: set[str] = set()
    by_part: dict[str, list[str]] = {}
    for name in every:
        by_part.setdefault(name.split(".")[0], []).append(name)
    defaults = {
        t.name for stack in order for t in block_tensors(stack) if default_quantized(fmt, t)
    }
    for part, members in by_part.items():
        quantized = [m for m in members if m in defaults]
        kept = [m for m in quantized if len(differ.get((m, False), ())) == every[m]]
        others = [
            m for m in members if (m, True) in differ or ((m, False) in differ and m not in kept)
        ]
        if quantized and kept == quantized and not others:
            options.append(f"-{part}")
            collapsed.update(kept)
    options += _part_layers(differ, collapsed, order, fmt)
    for (name, want), layers in sorted(differ.items()):
        if name in collapsed or not layers:
            continue
        option = ("+" if want else "-") + name.removesuffix(".weight")
        if len(layers) == every[name]:
            options.append(option)
            continue
        for first, last in _runs(layers):
            options.append(option + (f"@{first}" if first == last else f"@{first}..{last}"))
    return options


def _part_layers(
    differ: dict[tuple[str, bool], list[int]],
    collapsed: set[str],
    order: list[ModelSpec],
    fmt: WeightFormat,
) -> list[str]:
    """``-part@I..J`` for the layers in which the checkpoint keeps every matrix of a part the
    format quantizes (``model.layers.0.mlp``); those layers leave ``differ``."""
    kept: dict[int, set[str]] = {}
    for (name, want), layers in differ.items():
        if not want and name not in collapsed:
            for layer in layers:
                kept.setdefault(layer, set()).add(name)
    whole: dict[str, list[int]] = {}
    for layer, names in kept.items():
        quantized = [t.name for t in block_tensors(order[layer]) if default_quantized(fmt, t)]
        for part in {name.split(".")[0] for name in names}:
            members = {name for name in quantized if name.split(".")[0] == part}
            if len(members) > 1 and members <= names:
                whole.setdefault(part, []).append(layer)
    options = []
    for part, layers in sorted(whole.items()):
        for first, last in _runs(layers):
            options.append(f"-{part}" + (f"@{first}" if first == last else f"@{first}..{last}"))
        for (name, want), listed in differ.items():
            if not want and name.split(".")[0] == part:
                listed[:] = [layer for layer in listed if layer not in layers]
    return options


def _runs(layers: Iterable[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for layer in sorted(layers):
        if runs and layer == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], layer)
        else:
            runs.append((layer, layer))
    return runs


# --------------------------------------------------------------------------- each quant_method

Made = tuple[WeightFormat, _Selection] | None


def _not_modelled(config: _Config, why: str) -> None:
    config.notes.append(
        f"{config.key}: {why}; the stored format is not modelled, so weights are counted in "
        "bf16 unless --dtype says otherwise"
    )


def _fp8(config: _Config, spec: ModelSpec) -> Made:
    block = config.get("weight_block_size", (list,), [128, 128])
    if "weight_block_size" in config.data and config.data["weight_block_size"] is None:
        block = None  # per tensor; absent, FineGrainedFP8Config's (128, 128)
    options: list[str] = []
    if block is None:
        name = "fp8-tensor"
    elif len(block) == 2 and all(
        isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block
    ):
        if block[0] != block[1]:
            _not_modelled(config, f"weight_block_size {block} is not square")
            return None
        name = "fp8-block"
        options.append(f"b{block[0]}")
    else:
        config.fail("weight_block_size", f"expected two positive whole numbers (got {block!r})")
        return None
    if config.get("scale_fmt", (str,), "float") == "ue8m0":
        options.append("scale=e8m0")
    if config.get("activation_scheme", (str,), "dynamic").lower() == "static":
        options.append("static")
    if config.get("expert_dtype", (str,), "fp8") != "fp8":
        _not_modelled(config, f"expert_dtype {config.data.get('expert_dtype')!r}")
        return None
    fmt = parse_format(name + (":" + ",".join(options) if options else ""))
    skipped = _listed(config, "modules_to_not_convert", transformers_matcher)
    skipped += _listed(config, "ignored_layers", transformers_matcher)
    added = _listed(config, "modules_to_convert", transformers_matcher)
    return fmt, _Selection(None, skipped, added)


def _mxfp4(config: _Config, spec: ModelSpec) -> Made:
    skipped = _listed(config, "modules_to_not_convert", transformers_matcher)
    return parse_format("mxfp4"), _Selection(None, skipped, [], experts_only=True)


def _gptq(config: _Config, spec: ModelSpec) -> Made:
    bits = config.get("bits", (int,), 4)
    group = config.get("group_size", (int,), 128)
    if bits not in (4, 8):
        _not_modelled(config, f"GPTQ with {bits} bits (costcalc sizes 4 and 8)")
        return None
    checkpoint = config.get("checkpoint_format", (str,), "gptq")
    if checkpoint not in ("gptq", "gptq_v2"):
        _not_modelled(config, f"checkpoint_format {checkpoint!r}")
        return None
    options = [f"g{group if group > 0 else -1}"]
    if config.get("lm_head", (bool,), False):
        options.append("+lm_head")
    skipped = _listed(config, "modules_to_not_convert", transformers_matcher)
    dynamic = config.get("dynamic", (dict,), {})
    for pattern, value in dynamic.items():
        if isinstance(pattern, str) and pattern.startswith("-:"):
            skipped.append((pattern, _gptq_regex(config, pattern.removeprefix("-:"))))
        elif value:
            _not_modelled(config, f"dynamic overrides per module ({pattern!r})")
            return None
    fmt = parse_format(f"gptq-int{bits}:" + ",".join(options))
    return fmt, _Selection(None, skipped, [])


def _gptq_regex(config: _Config, pattern: str) -> Matcher:
    """GPTQModel's ``dynamic`` patterns: regular expressions searched in the module name."""
    compiled = _regex(config, "dynamic", pattern)
    if compiled is None:
        return lambda name: False
    return lambda name: compiled.search(name) is not None


def _awq(config: _Config, spec: ModelSpec) -> Made:
    bits = config.get("bits", (int,), config.get("w_bit", (int,), 4))
    group = config.get("group_size", (int,), config.get("q_group_size", (int,), 128))
    version = config.get("version", (str,), "gemm").lower()
    if bits != 4:
        _not_modelled(config, f"AWQ with {bits} bits")
        return None
    if version != "gemm":
        _not_modelled(config, f"AWQ version {version!r} (costcalc sizes the GEMM layout)")
        return None
    if config.get("zero_point", (bool,), True) is False:
        _not_modelled(config, "AWQ without zero points")
        return None
    skipped = _listed(config, "modules_to_not_convert", transformers_matcher)
    return parse_format(f"awq-int4:g{group if group > 0 else -1}"), _Selection(None, skipped, [])


def _bitsandbytes(config: _Config, spec: ModelSpec) -> Made:
    skipped = _listed(config, "llm_int8_skip_modules", transformers_matcher)
    if config.get("load_in_4bit", (bool,), False):
        kind = config.get("bnb_4bit_quant_type", (str,), "fp4")
        if kind not in ("nf4", "fp4"):
            config.fail("bnb_4bit_quant_type", f"expected nf4 or fp4 (got {kind!r})")
            return None
        dq = config.get("bnb_4bit_use_double_quant", (bool,), False)
        return parse_format(kind + ("" if dq else ":no-dq")), _Selection(None, skipped, [])
    if config.get("load_in_8bit", (bool,), False):
        return parse_format("llm-int8"), _Selection(None, skipped, [])
    _not_modelled(config, "neither load_in_4bit nor load_in_8bit is set")
    return None


def _compressed(config: _Config, spec: ModelSpec) -> Made:
    groups = config.get("config_groups", (dict,), {})
    schemes: list[tuple[str, dict[str, Any], Any, list[str]]] = []
    for name, group in groups.items():
        if not isinstance(group, Mapping):
            config.fail(f"config_groups.{name}", f"expected an object (got {group!r:.60})")
            continue
        weights = group.get("weights")
        if weights is None:
            continue
        if not isinstance(weights, Mapping):
            config.fail(
                f"config_groups.{name}.weights", f"expected an object (got {weights!r:.60})"
            )
            continue
        targets = config.patterns("targets", f"config_groups.{name}", group) or ["Linear"]
        form = group.get("format") or config.data.get("format") or ""
        schemes.append((str(form), dict(weights), group.get("input_activations"), targets))
    if config.problems:
        return None
    if not schemes:
        _not_modelled(config, "config_groups quantize no weights")
        return None
    kinds = {(form, repr(sorted(w.items())), repr(a)) for form, w, a, _ in schemes}
    if len(kinds) > 1:
        _not_modelled(config, "several weight schemes (config_groups) in one model")
        return None
    form, weights, activations, _ = schemes[0]
    rest = declared_dtype(config.doc) or "bf16"
    label = compressed_tensors_format(weights, activations, form, rest)
    if label is None:
        _not_modelled(config, f"the weight scheme {weights} ({form or 'no format'})")
        return None
    targets = [t for _, _, _, ts in schemes for t in ts]
    named = [t for t in targets if t != "Linear"]
    converted: Matcher | None = None
    if "Linear" not in targets:
        matchers = [compressed_matcher(config, "targets", t) for t in named]

        def converted(name: str) -> bool:
            return any(match(name) for match in matchers)

    skipped = _listed(config, "ignore", compressed_matcher)
    linear = "Linear" in targets
    return parse_format(label), _Selection(converted, skipped, [], linear=linear)


def compressed_tensors_format(
    weights: Mapping[str, Any], activations: Any, form: str, scale_dtype: str = "bf16"
) -> str | None:
    """The costcalc format of one compressed-tensors weight scheme (its ``weights`` and
    ``input_activations`` arguments and ``format``), or None when no layout here fits."""
    bits, kind = weights.get("num_bits", 8), weights.get("type", "int")
    strategy = str(weights.get("strategy") or "tensor").lower()
    group = weights.get("group_size")
    scale = _scale_name(weights.get("scale_dtype")) or scale_dtype
    static = isinstance(activations, Mapping) and activations.get("dynamic") is False
    asym = weights.get("symmetric", True) is False
    if kind == "float" and bits == 4:
        if strategy == "tensor_group" and group == 16 and not asym:
            return "nvfp4:w4a4" if isinstance(activations, Mapping) else "nvfp4"
        if strategy == "group" and group == 32 and not asym:
            return "mxfp4"
        return None
    if kind == "float" and bits == 8 and not asym:
        options = [f"scale={scale}"]
        if static and activations.get("strategy", "tensor") == "tensor":
            options.append("static")
        if strategy == "tensor":
            return "fp8-tensor:" + ",".join(options)
        if strategy == "channel":
            return "fp8-channel:" + ",".join(options)
        block = weights.get("block_structure")
        if (
            strategy == "block"
            and isinstance(block, list)
            and len(block) == 2
            and block[0] == block[1]
        ):
            return f"fp8-block:b{block[0]}," + ",".join(options)
        return None
    if kind == "int" and bits in (4, 8) and form in ("pack-quantized", "int-quantized", ""):
        if form == "int-quantized" or (bits == 8 and activations is not None):
            if bits != 8 or strategy != "channel" or asym:
                return None
            return f"w8a8:scale={scale}" + (",static" if static else "")
        if strategy not in ("group", "channel") or activations is not None:
            return None
        options = [f"g{group}" if strategy == "group" and group else "g-1", f"scale={scale}"]
        if asym:
            options.append("asym")
        if str(weights.get("actorder")).lower() == "group":
            options.append("actorder")
        return f"w{bits}a16:" + ",".join(options)
    return None


def _scale_name(value: Any) -> str | None:
    """A scale dtype as compressed-tensors writes it (``torch.bfloat16``), costcalc's name."""
    if not isinstance(value, str):
        return None
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(
        value.removeprefix("torch.")
    )


READERS: dict[str, Callable[[_Config, ModelSpec], Made]] = {
    "fp8": _fp8,
    "mxfp4": _mxfp4,
    "gptq": _gptq,
    "awq": _awq,
    "bitsandbytes": _bitsandbytes,
    "compressed-tensors": _compressed,
}
"""The ``quant_method`` names read, and their readers."""
