"""A model folder's safetensors headers judged against its config, for ``costcalc check``.

The headers are what the checkpoint holds; the config's formula is what it claims. They must
agree:

- **Unquantized weights**: the header tensors transformers loads (all but those its class drops
  on load without a word: the family's ``_keys_to_ignore_on_load_unexpected``, such as GPT-2's
  saved causal masks, and the old ``rotary_emb.inv_freq`` and ``position_ids`` buffers) must
  hold as many elements as the formula counts. Where the count covers part of the model (a
  multimodal config counted as its text decoder), the headers may hold more, but never less.
- **Quantized weights** (a ``quantization_config``): elements are packed, so the bytes are
  compared: the headers' tensor bytes against the formula's in the stored format, less what a
  saved checkpoint holds beside the tensors a model loads (bitsandbytes' quant-state JSON).

Budgets then judge the headers: their count of loaded elements (unquantized) and their bytes.
The patterns per family are transformers 5.24's (:mod:`costcalc.transformers_types`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from costcalc.errors import Problem

if TYPE_CHECKING:
    from costcalc.checkpoint import Checkpoint, TensorInfo
    from costcalc.loaders import LoadedModel

ALWAYS_IGNORED = (r"rotary_emb\.inv_freq", r"(^|\.)position_ids$")
"""Buffers old checkpoints saved that transformers drops from any model that has them now as
non-persistent buffers (``_adjust_missing_and_unexpected_keys``)."""

SHOWN = 5
"""Tensors a finding names; the rest are counted."""


@dataclass(frozen=True)
class HeaderCount:
    """What the headers hold, for the budgets: loaded elements (None for quantized weights,
    whose elements are packed) and tensor bytes (with the format they are in)."""

    parameters: int | None
    bytes: int
    dtype: str | None
    source: str


def ignored_on_load(family: str | None) -> re.Pattern[str]:
    """The keys transformers' class for ``family`` drops on load without a warning."""
    from costcalc.transformers_types import ignored_on_load as patterns_of

    patterns = [*ALWAYS_IGNORED, *(patterns_of(family) if family else ())]
    return re.compile("|".join(f"({pattern})" for pattern in patterns))


UNJUDGED = (
    "its headers are not judged against the config: costcalc does not size the layout of its "
    "quantization_config, so neither their elements nor their bytes are the formula's"
)


def judge_headers(
    model: LoadedModel, quantized: bool = False
) -> tuple[list[Problem], HeaderCount | None]:
    """The findings of a model whose folder holds safetensors, and what the headers count;
    ``quantized``: its config has a ``quantization_config`` (which, without a
    ``model.weight_format``, is one costcalc does not size: a warning, no judgement)."""
    checkpoint = model.checkpoint
    if checkpoint is None:
        return [], None
    source = f"the safetensors headers of {checkpoint.source}"
    if model.weight_format is not None:
        return _quantized(model, checkpoint, source)
    if quantized:
        return [], None
    from costcalc.checkpoint_report import formula_comparison

    comparison = formula_comparison(checkpoint.tensors, model.spec)
    ignored = ignored_on_load(model.family)
    dropped = {t.name for t in comparison.unexplained if ignored.search(t.name)}
    loaded = [t for t in checkpoint.tensors if t.name not in dropped]
    header_total = sum(t.numel for t in loaded)
    difference = header_total - comparison.predicted_total
    partial = any("not counted" in note for note in model.notes)
    if not difference or (partial and not comparison.missing and difference > 0):
        return [], HeaderCount(header_total, _bytes(loaded), _float_dtype(loaded), source)
    # a contradiction: every tensor counts (a pattern may match a tensor of the blocks too)
    tensors = list(checkpoint.tensors)
    count = HeaderCount(comparison.header_total, _bytes(tensors), _float_dtype(tensors), source)
    message = (
        f"{source} hold {comparison.header_total:,} parameters, the config's formula "
        f"{comparison.predicted_total:,} ({comparison.difference:+,}): the config does not "
        "describe this checkpoint"
    )
    message += _tensors("; header tensors it does not explain: ", comparison.unexplained)
    if comparison.missing:
        shapes = [f"{list(shape)} x{copies}" for _, shape, copies in comparison.missing]
        message += "; shapes it predicts that the headers lack: " + _listed(shapes)
    return [Problem("", message)], count


def _quantized(
    model: LoadedModel, checkpoint: Checkpoint, source: str
) -> tuple[list[Problem], HeaderCount]:
    """Bytes against bytes: a quantized checkpoint's elements are packed."""
    from costcalc.memory import weight_bytes
    from costcalc.stored_weights import stored_bytes

    stored = model.weight_format
    assert stored is not None
    count = HeaderCount(None, checkpoint.tensor_bytes_total, stored, source)
    found = stored_bytes(model, stored, weight_bytes(model.spec, stored))
    if found is None or found.difference == found.explained:
        return [], count
    message = (
        f"{source} hold {found.bytes:,} bytes of tensors, the config's formula "
        f"{found.formula:,} as {stored} ({found.difference - found.explained:+,} unexplained): "
        "the config does not describe this checkpoint"
    )
    return [Problem("", message)], count


def _bytes(tensors: list[TensorInfo]) -> int:
    return sum(t.nbytes for t in tensors)


def _float_dtype(tensors: list[TensorInfo]) -> str | None:
    from costcalc.stored_weights import SAFETENSORS_DTYPES

    dtypes = {t.dtype for t in tensors}
    return SAFETENSORS_DTYPES.get(dtypes.pop()) if len(dtypes) == 1 else None


def _tensors(head: str, tensors: tuple[TensorInfo, ...]) -> str:
    return head + _listed([f"{t.name} {list(t.shape)}" for t in tensors]) if tensors else ""


def _listed(items: list[str]) -> str:
    more = len(items) - SHOWN
    return ", ".join(items[:SHOWN]) + (f" and {more:,} more" if more > 0 else "")
