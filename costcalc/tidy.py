"""Tidy data from JSON records: one row per model, table and quantity, the value an integer.

A command's JSON records (one per model, docs/json.md) are flattened: every integer in a record
becomes a row whose ``table`` is the JSON path of the object holding it (empty at the top level)
and whose ``quantity`` is its key, so ``parameters,total`` is ``record["parameters"]["total"]``.
Text, true/false, nulls and ratios are left out (ratios follow from the integers; JSON has them
exactly), and so is the model's resolved config (``model``), which is input, not a result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

COLUMNS = ("model", "table", "quantity", "value", "unit", "dtype")
"""The header of every CSV stream."""

_SKIPPED = frozenset({"model", "notes"})
_COUNTS = {
    "batch": "sequences",
    "length": "tokens",
    "prompt": "tokens",
    "generated": "tokens",
    "tokens": "tokens",
    "sliding_window": "tokens",
    "context": "tokens",
    "steps": "steps",
    "layers": "layers",
    "files": "files",
    "tensors": "tensors",
    "parameter_tensors": "tensors",
    "vocab": "tokens",
    "largest_batch": "sequences",
    "largest_context": "tokens",
    "positions": "tokens",
}
"""Units of integers that are neither parameters, bytes, elements nor MACs, by key."""


@dataclass(frozen=True)
class Fact:
    """One row of tidy output."""

    model: str
    table: str
    quantity: str
    value: int
    unit: str
    dtype: str = ""

    def row(self) -> tuple[str, str, str, int, str, str]:
        return (self.model, self.table, self.quantity, self.value, self.unit, self.dtype)


def facts(records: list[dict[str, Any]]) -> Iterator[Fact]:
    """Every integer of every record, a :class:`Fact` each, in the records' key order."""
    for record in records:
        name = record.get("name", record.get("model", ""))
        yield from _walk(name if isinstance(name, str) else "", "", record)


def _walk(model: str, path: str, data: Mapping[str, Any]) -> Iterator[Fact]:
    for key, value in data.items():
        if (key in _SKIPPED and not path) or _is_ratio(value):
            continue
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int):
            yield Fact(model, path, key, value, unit(path, key), _dtype(data, path, key))
        elif isinstance(value, Mapping):
            yield from _walk(model, _join(path, key), value)
        elif isinstance(value, list | tuple):
            for index, item in enumerate(value):
                where = f"{_join(path, key)}[{index}]"
                if isinstance(item, Mapping):
                    yield from _walk(model, where, item)
                elif isinstance(item, int) and not isinstance(item, bool):
                    yield Fact(model, _join(path, key), str(index), item, unit(path, key))


def unit(table: str, quantity: str) -> str:
    """The unit of the integer at ``table.quantity``: bytes, elements, parameters, MACs, FLOPs,
    or a count (tokens, sequences, layers...); empty for a plain size such as a width."""
    last = table.rsplit(".", 1)[-1].split("[", 1)[0]
    if "bytes" in quantity or last.startswith("bytes"):
        return "bytes"
    if "elements" in quantity:
        return "elements"
    if last == "macs" or table.startswith("macs"):
        return "MACs"
    if last == "flops" or quantity in ("flops", "flops_6n") or quantity.endswith("_flops"):
        return "FLOPs"
    if quantity in _COUNTS:
        return _COUNTS[quantity]
    if table.startswith(("parameters", "terms")) and "macs" not in quantity:
        return "parameters"
    if "macs" in quantity:
        return "MACs"
    if quantity.startswith("parameters") or quantity in ("active", "difference", "tying_saving"):
        return "parameters"
    return ""


def _dtype(data: Mapping[str, Any], path: str, key: str) -> str:
    """The dtype of bytes or elements: the quantity's own (``moment_dtype`` for
    ``moment_elements``), else its object's ``dtype``; tables keyed by dtype (``bytes``,
    ``bytes_by_dtype``) name it in the quantity."""
    if path.rsplit(".", 1)[-1] in ("bytes", "bytes_by_dtype", "parameters_by_dtype"):
        return key
    if unit(path, key) not in ("bytes", "elements"):
        return ""
    prefix = key.removesuffix("_elements")
    dtype = data.get(f"{prefix}_dtype" if prefix != key else "dtype")
    return dtype if isinstance(dtype, str) else ""


def _is_ratio(value: Any) -> bool:
    return isinstance(value, Mapping) and "numerator" in value and "denominator" in value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
