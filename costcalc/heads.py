"""Splitting a width D into attention heads: which head counts work, and why others do not.

An equal split needs D % H == 0 and gives head_dim = D / H, the contract of PyTorch's
``nn.MultiheadAttention`` and of GPT-2-style blocks (seed 000). Grouped-query attention also needs
H % K == 0 for K key/value heads. Models such as Gemma give head_dim explicitly and use
H x head_dim != D; that is valid, and reported as such. Nothing is corrected: an invalid head count
is reported with the nearest valid ones, never replaced by one (seed 000 tells why the old
automatic fix was dropped).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import isqrt
from typing import Any

from costcalc.compute import check_count
from costcalc.spec import MAX_SIZE

INVALID_SPLIT = "invalid equal split"


def divisors(n: int) -> list[int]:
    """Every divisor of ``n``, ascending (sqrt(n) steps)."""
    small = [k for k in range(1, isqrt(n) + 1) if n % k == 0]
    return small + [n // k for k in reversed(small) if k * k != n]


@dataclass(frozen=True)
class HeadSplit:
    """A valid equal split: H heads of head_dim = D / H."""

    n_heads: int
    head_dim: int


def check_sizes(**sizes: int | None) -> None:
    """Each given size is a positive integer no larger than a model size may be."""
    for name, value in sizes.items():
        if value is not None:
            check_count(name, value, MAX_SIZE)


def head_splits(d_model: int, kv_heads: int | None = None) -> list[HeadSplit]:
    """Every equal split of ``d_model`` (H divides D), with H a multiple of ``kv_heads``."""
    check_sizes(d_model=d_model, n_kv_heads=kv_heads)
    return [
        HeadSplit(h, d_model // h)
        for h in divisors(d_model)
        if kv_heads is None or h % kv_heads == 0
    ]


def nearest_splits(d_model: int, n_heads: int, kv_heads: int | None = None) -> list[HeadSplit]:
    """The valid splits with the nearest head count below and above ``n_heads``."""
    splits = head_splits(d_model, kv_heads)
    below = [s for s in splits if s.n_heads < n_heads]
    above = [s for s in splits if s.n_heads > n_heads]
    return below[-1:] + above[:1]


@dataclass(frozen=True)
class HeadCheck:
    """Whether D, H (and K, head_dim) make a valid attention layout, and what is wrong if not."""

    d_model: int
    n_heads: int
    kv_heads: int | None
    head_dim: int | None
    """The head width: given explicitly, or D / H for a valid equal split, else None."""
    explicit: bool
    problems: list[str] = field(default_factory=list)
    nearest: list[HeadSplit] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def verdict(self) -> str:
        if self.valid:
            return "valid explicit head width" if self.explicit else "valid equal split"
        if self.head_dim is None:
            return INVALID_SPLIT
        return "invalid grouping"

    @property
    def query_width(self) -> int | None:
        """H x head_dim: the width the query projection maps D to."""
        return None if self.head_dim is None else self.n_heads * self.head_dim

    def to_dict(self) -> dict[str, Any]:
        return {
            "d_model": self.d_model,
            "n_heads": self.n_heads,
            "n_kv_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "explicit_head_dim": self.explicit,
            "query_width": self.query_width,
            "valid": self.valid,
            "verdict": self.verdict,
            "problems": self.problems,
            "nearest": [vars(s) for s in self.nearest],
        }


def check_heads(
    d_model: int, n_heads: int, kv_heads: int | None = None, head_dim: int | None = None
) -> HeadCheck:
    """Check a head layout; with an explicit ``head_dim`` no equal split is needed."""
    check_sizes(d_model=d_model, n_heads=n_heads, n_kv_heads=kv_heads, head_dim=head_dim)
    problems = []
    width = head_dim
    if head_dim is None:
        if d_model % n_heads:
            problems.append(
                f"D={d_model:,} does not split into {n_heads:,} equal heads "
                f"({d_model:,} % {n_heads:,} = {d_model % n_heads:,})"
            )
        else:
            width = d_model // n_heads
    if kv_heads is not None and (kv_heads > n_heads or n_heads % kv_heads):
        problems.append(
            f"{n_heads:,} query heads cannot be grouped over {kv_heads:,} key/value heads "
            "(H must be a multiple of the key/value heads)"
        )
    nearest = nearest_splits(d_model, n_heads, kv_heads) if problems and head_dim is None else []
    return HeadCheck(d_model, n_heads, kv_heads, width, head_dim is not None, problems, nearest)
