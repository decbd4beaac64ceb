"""Compare a checkpoint's header tensors with the tensors a formula predicts.

The prediction is a plain list of ``(name, shape)`` pairs, or ``(name, shape, copies)`` for
``copies`` tensors alike; ``name`` may be ``None`` (or empty) when the formula does not know the
family's names. Matching is exact and in two passes:

1. **By name**: a header tensor and a predicted tensor with the same name and the same shape are
   a match.
2. **By shape**: what is left on both sides is matched as multisets of shapes. Among header
   tensors of one shape, those first by name are matched first, so the ones reported as
   unexplained are the last by name.

Shapes must be equal as written: a transposed matrix (``[768, 2304]`` against ``[2304, 768]``)
or a fused projection against separate ones is not a match, though the totals may still agree.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter

from costcalc.checkpoint import TensorInfo

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Comparison:
    """How a checkpoint's tensors and a formula's tensors agree."""

    header_total: int
    """Elements in the header's tensors, as stored."""
    predicted_total: int
    """Elements in the predicted tensors."""
    matched: tuple[tuple[str, str | None, Shape], ...]
    """``(header name, predicted name, shape)`` for every pair matched, by header name."""
    unexplained: tuple[TensorInfo, ...]
    """Header tensors no predicted tensor accounts for, by name."""
    missing: tuple[tuple[str | None, Shape, int], ...]
    """Predicted tensors the header does not hold, in the prediction's order: (name, shape,
    how many of them)."""

    @property
    def difference(self) -> int:
        """``header_total - predicted_total``: positive when the checkpoint holds more."""
        return self.header_total - self.predicted_total

    @property
    def totals_equal(self) -> bool:
        return self.header_total == self.predicted_total

    @property
    def exact(self) -> bool:
        """Every tensor on each side matched, one for one."""
        return not self.unexplained and not self.missing


Predicted = tuple[str | None, Sequence[int]] | tuple[str | None, Sequence[int], int]
"""A tensor a formula predicts: its name (or None), its shape, and how many such tensors
(``copies``, 1 when left out: a model's L alike blocks need not be listed L times)."""


def compare_tensors(
    header: Iterable[TensorInfo],
    predicted: Iterable[Predicted],
    shape_of: Callable[[TensorInfo], Shape] = attrgetter("shape"),
) -> Comparison:
    """Match ``header`` (a :class:`~costcalc.checkpoint.Checkpoint`'s ``tensors``) against
    ``predicted`` tensors: by name where both sides name a tensor alike, then by shape
    (``shape_of`` a header tensor: its shape, or another form of it both sides share). The
    work is linear in the header and in the predicted entries, whatever their copies. Raises
    ``ValueError`` for a predicted shape that is not a sequence of non-negative integers, or
    copies that are not a non-negative integer (a bug in the caller, not in a file).
    """
    tensors = sorted(header, key=attrgetter("name"))
    wanted = [_wanted(item) for item in predicted]
    used = bytearray(len(tensors))
    by_name = {t.name: i for i, t in enumerate(tensors)} if any(w[0] for w in wanted) else {}
    matched: list[tuple[str, str | None, Shape]] = []
    left: list[tuple[str | None, Shape, int]] = []
    for name, shape, copies in wanted:
        index = by_name.get(name) if name is not None else None
        if index is not None and copies and not used[index] and shape_of(tensors[index]) == shape:
            matched.append((tensors[index].name, name, shape))
            used[index] = 1
            copies -= 1
        if copies:
            left.append((name, shape, copies))

    pool: dict[Shape, deque[int]] = {}
    for index, tensor in enumerate(tensors):
        if not used[index]:
            pool.setdefault(shape_of(tensor), deque()).append(index)
    missing: list[tuple[str | None, Shape, int]] = []
    for name, shape, copies in left:
        candidates = pool.get(shape, deque())
        for _ in range(min(copies, len(candidates))):
            index = candidates.popleft()
            matched.append((tensors[index].name, name, shape))
            used[index] = 1
            copies -= 1
        if copies:
            missing.append((name, shape, copies))

    return Comparison(
        header_total=sum(tensor.numel for tensor in tensors),
        predicted_total=sum(copies * math.prod(shape) for _, shape, copies in wanted),
        matched=tuple(sorted(matched, key=lambda pair: pair[0])),
        unexplained=tuple(tensor for index, tensor in enumerate(tensors) if not used[index]),
        missing=tuple(missing),
    )


def _wanted(item: Predicted) -> tuple[str | None, Shape, int]:
    name, shape = item[0] or None, _shape(item[0], item[1])
    copies = item[2] if len(item) == 3 else 1
    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 0:
        raise ValueError(f"predicted tensor {name!r}: copies {copies!r} is not a count")
    return name, shape, copies


def _shape(name: str | None, shape: Sequence[int]) -> Shape:
    dims = tuple(shape)
    if not all(isinstance(dim, int) and not isinstance(dim, bool) and dim >= 0 for dim in dims):
        raise ValueError(f"predicted tensor {name!r}: shape {list(dims)} is not non-negative ints")
    return dims
