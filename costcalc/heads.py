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
from typing import Any

from costcalc.compute import check_count
from costcalc.scalars import MAX_SIZE
from costcalc.spec import divisors, grouping_problem, nearest_head_counts, split_problem

INVALID_SPLIT = "invalid equal split"


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
    check_sizes(d_model=d_model, n_kv_heads=kv_heads)
    return [HeadSplit(h, d_model // h) for h in nearest_head_counts(d_model, n_heads, kv_heads)]


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
    split = None if head_dim is not None else split_problem(d_model, n_heads)
    grouping = None if kv_heads is None else grouping_problem(n_heads, kv_heads)
    problems = [problem for problem in (split, grouping) if problem is not None]
    width = head_dim if head_dim is not None or split else d_model // n_heads
    nearest = nearest_splits(d_model, n_heads, kv_heads) if problems and head_dim is None else []
    return HeadCheck(d_model, n_heads, kv_heads, width, head_dim is not None, problems, nearest)
