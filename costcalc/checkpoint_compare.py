"""Compare a checkpoint's header tensors with the tensors a formula predicts.

The prediction is a plain list of ``(name, shape)`` pairs; ``name`` may be ``None`` (or empty)
when the formula does not know the family's names. Matching is exact and in two passes:

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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
    missing: tuple[tuple[str | None, Shape], ...]
    """Predicted tensors the header does not hold, in the prediction's order."""

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


def compare_tensors(
    header: Iterable[TensorInfo], predicted: Sequence[tuple[str | None, Sequence[int]]]
) -> Comparison:
    """Match ``header`` (a :class:`~costcalc.checkpoint.Checkpoint`'s ``tensors``) against
    ``predicted`` ``(name, shape)`` pairs: by name where both sides name a tensor alike, then by
    shape. Raises ``ValueError`` for a predicted shape that is not a sequence of non-negative
    integers (a bug in the caller, not in a file).
    """
    tensors = sorted(header, key=lambda tensor: tensor.name)
    wanted = [(name or None, _shape(name, shape)) for name, shape in predicted]

    by_name = {tensor.name: tensor for tensor in tensors}
    matched: list[tuple[str, str | None, Shape]] = []
    used: set[str] = set()
    left: list[tuple[str | None, Shape]] = []
    for name, shape in wanted:
        tensor = by_name.get(name) if name is not None else None
        if tensor is not None and tensor.name not in used and tensor.shape == shape:
            matched.append((tensor.name, name, shape))
            used.add(tensor.name)
        else:
            left.append((name, shape))

    pool: dict[Shape, deque[TensorInfo]] = {}
    for tensor in tensors:
        if tensor.name not in used:
            pool.setdefault(tensor.shape, deque()).append(tensor)
    missing: list[tuple[str | None, Shape]] = []
    for name, shape in left:
        candidates = pool.get(shape)
        if candidates:
            tensor = candidates.popleft()
            matched.append((tensor.name, name, shape))
            used.add(tensor.name)
        else:
            missing.append((name, shape))

    return Comparison(
        header_total=sum(tensor.numel for tensor in tensors),
        predicted_total=sum(math.prod(shape) for _, shape in wanted),
        matched=tuple(sorted(matched, key=lambda pair: pair[0])),
        unexplained=tuple(tensor for tensor in tensors if tensor.name not in used),
        missing=tuple(missing),
    )


def _shape(name: str | None, shape: Sequence[int]) -> Shape:
    dims = tuple(shape)
    if not all(isinstance(dim, int) and not isinstance(dim, bool) and dim >= 0 for dim in dims):
        raise ValueError(f"predicted tensor {name!r}: shape {list(dims)} is not non-negative ints")
    return dims
