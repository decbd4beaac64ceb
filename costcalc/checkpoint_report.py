"""A checkpoint's header counts beside the formula's, for people and for machines.

When a model has both a formula and safetensors headers, the two totals are shown together and
any difference is flagged, naming the header tensors the formula does not explain (buffers saved
with the weights, a vision tower, quantization scales, a multi-token-prediction head).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from costcalc.checkpoint import Checkpoint, TensorInfo
from costcalc.checkpoint_compare import Comparison, compare_tensors
from costcalc.tensors import parameter_tensors

if TYPE_CHECKING:
    from costcalc.render import Grid
    from costcalc.spec import ModelSpec

SHOWN_UNEXPLAINED = 12
"""Tensors named in a table; JSON lists every one."""


@dataclass(frozen=True)
class CheckpointView:
    """One checkpoint, and how the formula's tensors compare with it (None: no formula)."""

    name: str
    checkpoint: Checkpoint
    comparison: Comparison | None = None

    def to_dict(self) -> dict[str, Any]:
        cp = self.checkpoint
        data: dict[str, Any] = {
            "source": cp.source,
            "files": len(cp.files),
            "tensors": len(cp.tensors),
            "parameters_total": cp.parameters_total,
            "parameters_by_dtype": dict(cp.parameters_by_dtype),
            "bytes_by_dtype": dict(cp.bytes_by_dtype),
            "bytes_tensors": cp.tensor_bytes_total,
            "bytes_files": cp.file_bytes_total,
        }
        c = self.comparison
        if c is not None:
            data["formula"] = {
                "parameters_total": c.predicted_total,
                "equal": c.totals_equal,
                "difference": c.difference,
                "unexplained": [t.name for t in c.unexplained],
            }
        return data


def checkpoint_view(name: str, checkpoint: Checkpoint, spec: ModelSpec | None) -> CheckpointView:
    """The checkpoint of ``name``, compared with ``spec``'s tensors when there is a formula: each
    kind of tensor with its copies, however many (a formula may hold more than any checkpoint)."""
    if spec is None:
        return CheckpointView(name, checkpoint)
    return CheckpointView(name, checkpoint, formula_comparison(checkpoint.tensors, spec))


def formula_comparison(tensors: Iterable[TensorInfo], spec: ModelSpec) -> Comparison:
    """Header ``tensors`` against ``spec``'s, each kind of tensor with its copies."""
    # GPT-2's Conv1D stores (in, out) where nn.Linear stores (out, in): shapes match as sorted.
    predicted = [(None, _sorted(t.shape), t.copies) for t in parameter_tensors(spec)]
    return compare_tensors(tensors, predicted, lambda t: _sorted(t.shape))


def _sorted(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(shape))


def checkpoint_grid(view: CheckpointView) -> Grid:
    """Header totals per dtype, and the formula's total beside them."""
    from costcalc.render import Grid
    from costcalc.units import format_bytes

    cp = view.checkpoint
    rows = [["parameters (header)", f"{cp.parameters_total:,}", ""]]
    rows += [
        [f"  {dtype}", f"{cp.parameters_by_dtype[dtype]:,}", format_bytes(size, "iec")]
        for dtype, size in sorted(cp.bytes_by_dtype.items())
    ]
    rows.append(
        ["bytes on disk", f"{cp.file_bytes_total:,}", format_bytes(cp.file_bytes_total, "iec")]
    )
    notes = [
        f"Read from the safetensors headers of {cp.source} ({len(cp.files):,} file(s), "
        f"{len(cp.tensors):,} tensors), never the weights; elements counted as stored.",
    ]
    c = view.comparison
    if c is not None:
        rows.append(["parameters (formula)", f"{c.predicted_total:,}", ""])
        verdict = "equal" if c.totals_equal else f"{c.difference:+,}"
        rows.append(["header - formula", verdict, ""])
        if not c.totals_equal and c.unexplained:
            names = [t.name for t in c.unexplained]
            more = len(names) - SHOWN_UNEXPLAINED
            shown = ", ".join(names[:SHOWN_UNEXPLAINED]) + (
                f" and {more:,} more" if more > 0 else ""
            )
            notes.append(f"Header tensors the formula does not explain: {shown}.")
    return Grid(f"Checkpoint of {view.name}", ["", "parameters", "bytes"], rows, notes)
