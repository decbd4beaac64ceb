"""Each memory row's formula with the numbers put in, like ``costcalc params --explain``:
``B x T x V x 2 (bf16) = 8 x 1,024 x 151,936 x 2 = 2,489,319,424``.

The substituted expression uses only integers, ``x``, ``+`` and parentheses (``ceil(... / 2)``
for int4, two values per byte), so a test can evaluate it and compare with the bytes reported.
"""

from __future__ import annotations

from costcalc.activations import layer_terms, outside_terms
from costcalc.anatomy.attention import cached_heads, value_width
from costcalc.memory import (
    LOSS_DTYPE,
    MASTER_DTYPE,
    STEP_DTYPE,
    MemoryReport,
    attention_score_bytes,
    cached_layers,
    compressor_cache_elements,
    conv_state_width,
    kv_width,
    recurrent_state_width,
    state_layers,
    stored_tokens,
)
from costcalc.spec import ModelSpec
from costcalc.units import DTYPE_BITS


def _n(value: int) -> str:
    return f"{value:,}"


def _in_bytes(symbols: str, numbers: str, dtype: str) -> tuple[str, str]:
    """Elements times bytes per element of ``dtype``, in symbols and in numbers."""
    bits = DTYPE_BITS[dtype]
    if bits % 8:
        per_byte = 8 // bits
        return f"ceil({symbols} / {per_byte}) ({dtype})", f"ceil({numbers} / {per_byte})"
    grouped = f"({numbers})" if " + " in numbers else numbers
    return f"{symbols} x {bits // 8} ({dtype})", f"{grouped} x {bits // 8}"


def _row(symbols: str, numbers: str, dtype: str, value: int) -> str:
    left, right = _in_bytes(symbols, numbers, dtype)
    return f"{left} = {right} = {_n(value)}"


def _sum(terms: list[str]) -> str:
    return " + ".join(terms) or "0"


def _layers(
    spec: ModelSpec,
    batch: int,
    length: int,
    recompute: str,
    attention: str,
    dtype: str,
    scores: bool,
) -> list[str]:
    """Each stack: its layers x (the bytes of each of its terms), the s x s terms or the rest."""
    parts = []
    for stack in spec.stacks:
        terms = layer_terms(stack, batch, length, recompute, attention, dtype)
        numbers = [_n(t.bytes) for t in terms if t.scores == scores and t.bytes]
        if numbers:
            parts.append(f"{stack.n_layers} x ({' + '.join(numbers)})")
    return parts


def scores_row(spec: ModelSpec, batch: int, length: int, dtype: str) -> str:
    """The s x s tensors eager attention without recomputation keeps in every layer, whether
    stored or not."""
    symbols = {
        t.symbols
        for stack in spec.stacks
        for t in layer_terms(stack, 1, 1, "none", "eager", dtype)
        if t.scores and t.bytes
    }
    total = attention_score_bytes(spec, batch, length, "none", "eager", dtype)
    terms = _layers(spec, batch, length, "none", "eager", dtype, True)
    return f"L x ({' + '.join(sorted(symbols)) or '0'}) = {_sum(terms)} = {_n(total)}"


def _activations_row(spec: ModelSpec, report: MemoryReport) -> str:
    """Each stack's layers x its terms but the scores, + the terms outside the layers."""
    setup, B, T = report.setup, report.setup.batch, report.length
    terms = _layers(spec, B, T, setup.recompute, setup.attention, setup.dtype, False)
    outside = [_n(t.bytes) for t in outside_terms(spec, B, T, setup.dtype)]
    terms.append(f"({' + '.join(outside)})")
    value = report.bytes_activations - report.bytes_attention_scores
    return f"L x layer terms + outside the layers = {_sum(terms)} = {_n(value)}"


def _optimizer_row(report: MemoryReport) -> str:
    setup = report.setup
    moments, steps = report.elements_optimizer_moments, report.elements_optimizer_steps
    if not moments and not steps:
        return f"{setup.optimizer} keeps no state = 0"
    P, state = report.params_total, setup.state_dtype
    symbols, numbers = {
        "adamw": ("2P", f"2 x {_n(P)}"),
        "sgd-momentum": ("P", _n(P)),
        "adafactor": ("factored moments", _n(moments)),
    }[setup.optimizer]
    moment_symbols, moment_numbers = _in_bytes(symbols, numbers, state)
    left, right = [f"{moment_symbols} moments"], [moment_numbers]
    if steps:
        step_symbols, step_numbers = _in_bytes("N", _n(steps), STEP_DTYPE)
        left.append(f"{step_symbols} steps")
        right.append(step_numbers)
    return f"{' + '.join(left)} = {' + '.join(right)} = {_n(report.bytes_optimizer)}"


def _kv_row(spec: ModelSpec, report: MemoryReport) -> str:
    """Each kind of attention block: layers x B x cached tokens x elements per token."""
    B, T = report.setup.batch, report.length
    terms, widths, capped = [], set(), False
    for stack in spec.stacks:
        compressor = compressor_cache_elements(stack, T)
        if stack.kv_compress_rate is not None:
            widths.add("(K x d + what the key compressor keeps)")
            width = f"{_n(kv_width(stack))}"
        elif stack.mixer == "mla" and stack.indexer_heads is not None:
            widths.add("(kv rank + r + indexer key)")
            sizes = (stack.kv_lora_rank, stack.qk_rope_head_dim, stack.indexer_head_dim)
            width = f"({' + '.join(_n(size or 0) for size in sizes)})"
        elif stack.mixer == "mla":
            widths.add("(kv rank + r)")
            width = f"({_n(stack.kv_lora_rank or 0)} + {_n(stack.qk_rope_head_dim or 0)})"
        elif stack.mixer == "attention" and (
            stack.v_head_dim is not None or stack.key_width != stack.head_width
        ):
            widths.add("K x (d + dv)")
            dv = f"{_n(stack.key_width)} + {_n(value_width(stack))}"
            width = f"{cached_heads(stack)} x ({dv})"
        elif stack.mixer == "attention":
            widths.add("2 x K x d")
            width = f"2 x {cached_heads(stack)} x {_n(stack.head_width)}"
        else:
            continue
        tokens = stored_tokens(stack, T)
        capped = capped or tokens < T
        kept = f"{_n(tokens)} x {width}" + (f" + {_n(compressor)}" if compressor else "")
        terms.append(f"{cached_layers(stack)} x {B} x " + (f"({kept})" if compressor else kept))
    if not terms:
        return "no block caches keys and values = 0"
    symbols = "L x B x " + ("min(T, window)" if capped else "T") + " x "
    symbols += widths.pop() if len(widths) == 1 else "elements per token"
    return _row(symbols, _sum(terms), report.kv_dtype, report.bytes_kv_cache)


def _state_row(spec: ModelSpec, report: MemoryReport) -> str:
    terms = [
        f"{state_layers(stack)} x ({_n(conv_state_width(stack))} + "
        f"{_n(recurrent_state_width(stack))})"
        for stack in spec.stacks
        if stack.recurrent
    ]
    numbers = f"{report.setup.batch} x ({_sum(terms)})"
    return _row("B x L x (conv + recurrent state)", numbers, report.kv_dtype, report.bytes_state)


def _weights_row(spec: ModelSpec, report: MemoryReport) -> str:
    """P x bytes of a dtype, or a format's quantized tensors (values and metadata) + the rest."""
    dtype = report.setup.dtype
    if dtype in DTYPE_BITS:
        return _row("P", _n(report.params_total), dtype, report.bytes_weights)
    from costcalc.quant import format_bytes
    from costcalc.weight_format import parse_format

    stored = format_bytes(spec, parse_format(dtype))
    numbers = f"{_n(stored.bytes_quantized)} + {_n(stored.bytes_unquantized)}"
    return f"quantized ({dtype}, values and scales) + kept tensors = {numbers} = {_n(stored.bytes)}"


def memory_explain(spec: ModelSpec, report: MemoryReport) -> dict[str, str]:
    """Formula and substituted numbers for each component of the memory report, and the total;
    keys are the component keys of :meth:`MemoryResult.components`."""
    setup, P = report.setup, report.params_total
    B, T = setup.batch, report.length
    rows = {"weights": _weights_row(spec, report)}
    if setup.train:
        rows["gradients"] = _row("P", _n(P), setup.dtype, report.bytes_gradients)
        if setup.mixed_precision:
            rows["master_weights"] = _row("P", _n(P), MASTER_DTYPE, report.bytes_master_weights)
        rows["optimizer"] = _optimizer_row(report)
        rows["activations"] = _activations_row(spec, report)
        if report.bytes_attention_scores:
            rows["attention_scores"] = scores_row(spec, B, T, setup.dtype)
        logits = f"{B} x {_n(T)} x {_n(spec.output_rows)}"
        rows["logits"] = _row("B x T x V", logits, setup.dtype, report.bytes_logits)
        if report.bytes_logits_fp32:
            rows["logits_fp32"] = _row("B x T x V", logits, LOSS_DTYPE, report.bytes_logits_fp32)
    else:
        rows["kv_cache"] = _kv_row(spec, report)
        if report.elements_state:
            rows["state"] = _state_row(spec, report)
    parts = [
        report.bytes_weights,
        report.bytes_gradients,
        report.bytes_master_weights,
        report.bytes_optimizer,
        report.bytes_activations - report.bytes_attention_scores,
        report.bytes_attention_scores,
        report.bytes_logits,
        report.bytes_logits_fp32,
        report.bytes_kv_cache,
        report.bytes_state,
    ]
    terms = " + ".join(_n(part) for part in parts if part) or "0"
    rows["total"] = f"sum of the rows above = {terms} = {_n(report.bytes_total)}"
    return rows
