"""The weights as the checkpoint stores them: where the format was read, and the checkpoint's
own byte count (its safetensors headers, or its index's ``total_size``) beside the formula's.

A saved checkpoint can hold bytes no loaded model does; those are named from the headers:
bitsandbytes' quant-state JSON (``*.quant_state.bitsandbytes__nf4``, the offset of double
quantization inside it rather than a tensor) and LLM.int8's one-byte ``weight_format``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from costcalc.checkpoint import Checkpoint
    from costcalc.loaders import LoadedModel

SAFETENSORS_DTYPES = {"BF16": "bf16", "F16": "fp16", "F32": "fp32"}
NF4_OFFSET_BYTES = 4
"""The fp32 offset of double quantization: a tensor of a loaded model, JSON in a saved one."""


@dataclass(frozen=True)
class StoredBytes:
    """A checkpoint's byte count beside the formula's: ``source`` names where it was read."""

    source: str
    bytes: int
    formula: int
    extras: tuple[tuple[str, int], ...] = ()
    """Bytes a saved checkpoint holds that a loaded model does not, by kind."""

    @property
    def difference(self) -> int:
        """checkpoint - formula."""
        return self.bytes - self.formula

    @property
    def explained(self) -> int:
        """The part of the difference the named extras account for."""
        return sum(size for _, size in self.extras)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "bytes": self.bytes,
            "formula": self.formula,
            "difference": self.difference,
            "saved_only": dict(self.extras),
        }

    def sentence(self) -> str:
        """``Its checkpoint holds N bytes (where): equal to the formula's`` or the difference,
        with what accounts for it."""
        head = f"Its checkpoint holds {self.bytes:,} bytes ({self.source})"
        if not self.difference:
            return f"{head}: equal to the formula's."
        more = "more" if self.difference > 0 else "fewer"
        text = f"{head}: {abs(self.difference):,} {more} than the formula's {self.formula:,}"
        if self.extras:
            named = ", ".join(f"{what} {size:,}" for what, size in self.extras)
            rest = self.difference - self.explained
            text += f"; saved with the weights, never loaded: {named}"
            text += "" if not rest else f"; {rest:+,} bytes unexplained"
        return text + "."


def stored_bytes(model: LoadedModel, dtype: str, formula: int) -> StoredBytes | None:
    """The checkpoint's bytes beside ``formula`` (the weights counted in ``dtype``), when the
    model has headers or an index total and ``dtype`` is what the checkpoint stores (its
    quantization_config's format, or the one float dtype of its tensors)."""
    checkpoint, index = model.checkpoint, model.checkpoint_index
    stored = model.weight_format
    if checkpoint is not None:
        if dtype != (stored or _float_dtype(checkpoint)):
            return None
        source = f"the safetensors headers of {checkpoint.source}"
        return StoredBytes(source, checkpoint.tensor_bytes_total, formula, _extras(checkpoint))
    if index is not None and index.total_size is not None and dtype == (stored or index.dtype):
        return StoredBytes(f"metadata.total_size of {index.path}", index.total_size, formula)
    return None


def _float_dtype(checkpoint: Checkpoint) -> str | None:
    dtypes = set(checkpoint.bytes_by_dtype)
    return SAFETENSORS_DTYPES.get(dtypes.pop()) if len(dtypes) == 1 else None


def _extras(checkpoint: Checkpoint) -> tuple[tuple[str, int], ...]:
    """What bitsandbytes saves beside the tensors it loads."""
    blobs = [t for t in checkpoint.tensors if ".quant_state.bitsandbytes__" in t.name]
    formats = [t for t in checkpoint.tensors if t.name.endswith(".weight_format")]
    extras: list[tuple[str, int]] = []
    if blobs:
        json_bytes = sum(t.nbytes for t in blobs)
        nested = sum(1 for t in checkpoint.tensors if t.name.endswith(".nested_absmax"))
        extras.append(("bitsandbytes quant-state JSON", json_bytes))
        if nested:
            extras.append(("less the offsets it holds", -NF4_OFFSET_BYTES * nested))
    if formats:
        extras.append(("LLM.int8 weight_format bytes", sum(t.nbytes for t in formats)))
    return tuple(extras)


def weights_note(model: LoadedModel, dtype: str) -> str | None:
    """Where the weights' format comes from, when the checkpoint names one."""
    from costcalc.weight_format import describe_format

    stored, source = model.weight_format, model.weight_format_source
    if stored is None:
        return None
    if dtype == stored:
        return (
            f"Weights as the checkpoint stores them ({source}): {stored}, "
            f"{describe_format(stored)}; --dtype counts them otherwise."
        )
    return f"The checkpoint stores its weights as {stored} ({source}); counted here as {dtype}."
