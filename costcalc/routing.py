"""What one decode step reads of a mixture of experts: an ESTIMATE under uniform routing.

A step decodes one token of each of B sequences. Each token runs k of a layer's X experts
(``moe_top_k``; a mixture of attention heads: H / K). If every token picks its k experts as a
uniformly random k-subset, independently of the others, one token leaves a given expert out
with probability 1 - k / X and all B tokens with (1 - k / X)^B, so the expected number of
distinct experts a layer reads is

    X (1 - (1 - k / X)^B)

(k exactly at B = 1; X, all of them, is the bound at any B). Real routers are not uniform:
tokens of one text favour some experts, which makes the true count smaller. Shared experts and
the router are dense tensors, read every step; another modality's experts (text=False) are
never read by text. An expert's slice of a stacked tensor (its values and their scales in any
format) is 1 / X of the stack's bytes, its stacked biases (``<name>_bias``) likewise.

The arithmetic is exact: (X - k)^B / X^B is a fraction, computed as one while its terms stay
below :data:`EXACT_BITS` bits; past that it is bounded from both sides in fixed point with
:data:`EXTRA_BITS` bits beyond the bytes' own. The bytes a step leaves unread are the expert
bytes x the lower bound, rounded down to a whole byte, taken from the exact total: so the bytes
read are the expectation rounded up (exactly so while the share is exact, else at most one
byte more), and the all-experts
bound is the weights' bytes as ``memory`` counts them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from costcalc.errors import UsageError
from costcalc.spec import ModelSpec
from costcalc.tensors import Tensor, block_tensors

EXACT_BITS = 1 << 14
"""Largest bit length of (X - k)^B or X^B computed exactly."""
EXTRA_BITS = 128
"""Fixed-point bits beyond the bit length of the bytes the bounds multiply."""
ROUTING_ASSUMPTION = (
    "uniform routing: each token's k experts a uniformly random k-subset of the layer's X, "
    "independent across the batch; expected distinct experts X (1 - (1 - k / X)^B)"
)


@dataclass(frozen=True)
class Untouched:
    """(1 - k / X)^B, the share of a layer's experts no token of the batch runs: exact, or
    bounded by ``low`` <= share <= ``high`` (``low == high`` when exact)."""

    low: Fraction
    high: Fraction

    @property
    def exact(self) -> bool:
        return self.low == self.high

    @property
    def value(self) -> Fraction:
        """The exact share, or the middle of its bounds."""
        return (self.low + self.high) / 2


def untouched(experts: int, routed: int, batch: int, scale_bits: int = 0) -> Untouched:
    """(X - k)^B / X^B exactly while both powers stay below EXACT_BITS bits; else lower and
    upper bounds in fixed point with ``scale_bits`` + EXTRA_BITS fractional bits (binary
    powering, each product rounded down for the lower bound and up for the upper)."""
    free = experts - routed
    if free == 0:
        return Untouched(Fraction(0), Fraction(0))
    if batch * experts.bit_length() <= EXACT_BITS:
        share = Fraction(free**batch, experts**batch)
        return Untouched(share, share)
    bits = scale_bits + EXTRA_BITS
    one = 1 << bits
    base_low, base_high = (free << bits) // experts, -(-(free << bits) // experts)
    low = high = one
    exponent = batch
    while exponent:
        if exponent & 1:
            low, high = (low * base_low) >> bits, -(-(high * base_high) >> bits)
        base_low, base_high = (base_low * base_low) >> bits, -(-(base_high * base_high) >> bits)
        exponent >>= 1
    return Untouched(Fraction(low, one), Fraction(min(high, one), one))


@dataclass(frozen=True)
class ExpertRead:
    """One kind of MoE layer in a decode step of ``batch`` sequences: ``layers`` layers of
    ``experts`` experts, ``routed`` per token, ``bytes`` of expert weights in all (the
    all-experts bound) of which the step reads ``bytes_read`` (expected, rounded up)."""

    layers: int
    experts: int
    routed: int
    batch: int
    bytes: int
    share_untouched: Untouched

    @property
    def exact_count(self) -> bool:
        """The distinct experts are a count, not an expectation: B = 1 (k experts), or every
        expert routed to (k = X)."""
        return self.batch == 1 or self.routed == self.experts

    @property
    def expected_experts(self) -> Fraction:
        """X (1 - (1 - k / X)^B) distinct experts per layer (exact at B = 1: k)."""
        return self.experts * (1 - self.share_untouched.value)

    @property
    def bytes_unread(self) -> int:
        """bytes x the untouched share's lower bound, rounded down to a whole byte: what the
        step is expected to leave unread (so bytes read are rounded up)."""
        low = self.share_untouched.low
        return self.bytes * low.numerator // low.denominator

    @property
    def bytes_read(self) -> int:
        """The expected bytes read of these experts, rounded up to a whole byte."""
        return self.bytes - self.bytes_unread


def _expert_slices(tensors: Sequence[Tensor], top_k: int) -> dict[str, tuple[int, int]]:
    """Name -> (X, k) of the stacked expert tensors of one block that text runs, and of their
    stacked biases (``<name>_bias``)."""
    slices: dict[str, tuple[int, int]] = {}
    for t in tensors:
        if t.use == "experts" and t.text:
            routed = top_k if t.active is None else t.active
            slices[t.name] = slices[t.name + "_bias"] = (t.shape[0], routed)
    return slices


def routing_keys(spec: ModelSpec) -> dict[tuple[str, tuple[int, ...]], tuple[int, int]]:
    """(name, shape) of every stacked expert tensor of ``spec`` (and its stacked bias) -> (X, k);
    a UsageError when two kinds of block hold the same tensor routed differently (their bytes
    could not be told apart in a GGUF mix)."""
    keys: dict[tuple[str, tuple[int, ...]], tuple[int, int]] = {}
    for stack in spec.stacks:
        tensors = block_tensors(stack)
        slices = _expert_slices(tensors, stack.moe_top_k or 0)
        for t in tensors:
            if t.name in slices and t.shape[0] == slices[t.name][0]:
                key, value = (t.name, t.shape), slices[t.name]
                if keys.setdefault(key, value) != value:
                    raise UsageError(
                        f"{t.name} {t.shape} is routed to {keys[key][1]} and to {value[1]} of "
                        "its experts in different layers: decode reads of such experts are not "
                        "modelled"
                    )
    return keys


def other_modality(spec: ModelSpec) -> set[str]:
    """Names of tensors only another modality's tokens run (never read by text)."""
    return {t.name for stack in spec.stacks for t in block_tensors(stack) if not t.text}


def expert_reads(
    spec: ModelSpec, rows: Iterable[tuple[str, tuple[int, ...], int]], batch: int
) -> tuple[int, tuple[ExpertRead, ...]]:
    """Of the weights ``rows`` (name, shape, bytes of all copies): the bytes a decode step of
    ``batch`` sequences leaves unread (another modality's tensors, and the experts no token is
    expected to run, rounded down), and one :class:`ExpertRead` per kind of MoE layer (X, k)."""
    keys = routing_keys(spec)
    skipped = other_modality(spec)
    unread = 0
    groups: dict[tuple[int, int], int] = {}
    for name, shape, size in rows:
        key = keys.get((name, shape))
        if key is not None:
            groups[key] = groups.get(key, 0) + size
        elif name in skipped:
            unread += size
    reads = tuple(
        ExpertRead(
            _layers(spec, experts, routed),
            experts,
            routed,
            batch,
            size,
            untouched(experts, routed, batch, size.bit_length()),
        )
        for (experts, routed), size in groups.items()
    )
    return unread + sum(r.bytes_unread for r in reads), reads


def _layers(spec: ModelSpec, experts: int, routed: int) -> int:
    """Layers whose block routes its tokens to ``routed`` of ``experts`` experts."""
    return sum(
        stack.n_layers
        for stack in spec.stacks
        if (experts, routed) in _expert_slices(block_tensors(stack), stack.moe_top_k or 0).values()
    )
