"""What autograd saves for the backward pass of a training step, one kind of tensor at a time.

A part that was measured (:mod:`costcalc.activations`: transformers 5.24 run under
``torch.autograd.graph.saved_tensors_hooks``) gives the tensors its forward saves as
:class:`Term` records; a part that was not gives none, and the block keeps the estimate.

Symbols: N = B T tokens, e bytes per activation (the training dtype), D width, H query heads,
K key/value heads, d head width. Integer formulas only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from costcalc.anatomy.tensor import Block


@dataclass(frozen=True)
class Term:
    """Bytes one kind of saved tensor takes: ``symbols`` (with N, e, D ...), what it is, and
    whether it is an s x s tensor of eager attention (dropped by selective recomputation)."""

    symbols: str
    what: str
    bytes: int
    scores: bool = False


@dataclass(frozen=True)
class Step:
    """One training forward: ``e`` bytes per activation, ``batch`` B sequences of ``length``
    T tokens, the attention ``kernel`` (``eager``, ``sdpa``, ``flash``)."""

    e: int
    batch: int
    length: int
    kernel: str

    @property
    def tokens(self) -> int:
        """N = B T."""
        return self.batch * self.length


def times(count: int, symbols: str) -> str:
    """``symbols``, written ``count x symbols`` for more than one."""
    return symbols if count == 1 else f"{count} x {symbols}"


def norm_terms(
    kind: str, e: int, rows: tuple[int, str], width: tuple[int, str], norms: int, label: str
) -> list[Term]:
    """``norms`` norms of ``kind`` over ``rows`` rows of ``width`` (value, symbols). RMSNorm
    (``x.to(float32)``, ``pow(2)``, ``rsqrt``, ``weight * x.to(dtype)``) saves the fp32 input
    4 n w, the rsqrt 4 n and the normalized input e n w; LayerNorm (``native_layer_norm``) the
    input e n w and its mean and rstd 2 e n."""
    (n, n_sym), (w, w_sym) = rows, width
    if kind == "rmsnorm":
        return [
            Term(times(norms, f"4 {n_sym} {w_sym}"), f"{label} inputs in fp32", norms * 4 * n * w),
            Term(times(norms, f"4 {n_sym}"), f"{label} rsqrt, fp32", norms * 4 * n),
            Term(times(norms, f"e {n_sym} {w_sym}"), f"{label} normalized", norms * e * n * w),
        ]
    return [
        Term(times(norms, f"e {n_sym} {w_sym}"), f"{label} inputs", norms * e * n * w),
        Term(times(norms, f"2 e {n_sym}"), f"{label} mean and rstd", norms * 2 * e * n),
    ]


def projection_inputs(e: int, N: int, D: int, count: int, what: str) -> Term:
    """A norm's output, saved by the projection that reads it: e N D each."""
    return Term(times(count, "e N D"), what, count * e * N * D)


class SavesForBackward:
    """What a part (a token mixer, an FFN) saves for backward: nothing measured unless the
    part says otherwise."""

    saved_keys: ClassVar[frozenset[str]] = frozenset()
    """The block keys whose every value :meth:`saved` covers (a measured part's)."""

    def measured(self, spec: Block) -> bool:
        """Whether :meth:`saved` gives what the reference saves for backward (False: the
        block's activations are the estimate)."""
        return False

    def saved(self, spec: Block, step: Step) -> list[Term]:
        """The tensors the part saves for backward in one block in ``step``, when
        :meth:`measured`."""
        return []

    def saved_by_convention(self, spec: Block) -> bool:
        """Whether :meth:`saved` rests on code details the config does not state (dtypes that
        differ between families)."""
        return False
