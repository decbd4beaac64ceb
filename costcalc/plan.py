"""Time and throughput: training FLOPs, wall time and GPU-hours at a stated MFU, compute-optimal
sizing, and inference rooflines.

Training FLOPs come from costcalc's exact MACs: one training step over a sequence of T tokens
(:func:`costcalc.macs.training_macs` over the forward at T), times the sequences in N tokens;
6 x parameters x tokens (Kaplan et al. 2020) is shown beside it as the rule of thumb it is. Wall
time = FLOPs / (GPUs x dense peak x MFU). Rooflines are ESTIMATES: prefill as compute-bound
(forward FLOPs / peak), decode as memory-bound (weight bytes + KV bytes read per step /
bandwidth).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from costcalc.errors import UsageError
from costcalc.gpus import Gpu
from costcalc.macs import attention_pair_macs, flops, forward_macs, training_macs
from costcalc.memory import kv_cache_bytes, weight_bytes
from costcalc.params import total_params
from costcalc.spec import ModelSpec
from costcalc.units import MAX_DIGITS

KAPLAN_RULE = "6 x parameters x tokens (Kaplan et al. 2020, rule of thumb)"
CHINCHILLA_TOKENS_PER_PARAM = 20
"""Hoffmann et al. 2022: about 20 training tokens per parameter (rule of thumb)."""
CHINCHILLA_RULE = "C = 6 N D with D = 20 N (Hoffmann et al. 2022, rule of thumb)"

MAX_COUNT = 10**MAX_DIGITS - 1
"""Most GPUs, tokens per sequence, sequences, prompt or generated tokens a plan takes (at most
MAX_DIGITS digits, as a token count): every time and rate it prints then fits a float."""


def _decimal(text: str) -> Decimal | None:
    """``text`` as a finite decimal between 10^-MAX_DIGITS and 10^MAX_DIGITS in size (so that
    turning it into an exact number is cheap: ``1e999999999`` is refused, not computed), else
    None."""
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        return None
    if not value.is_finite() or not -MAX_DIGITS <= value.adjusted() < MAX_DIGITS:
        return None
    return value


def parse_fraction(text: str, what: str) -> Fraction:
    """A share such as ``0.4`` or ``40%``, strictly between 0 and 1 (inclusive of 1)."""
    raw = text.strip()
    scale = Fraction(1, 100) if raw.endswith("%") else Fraction(1)
    number = _decimal(raw.removesuffix("%"))
    if number is None:
        raise UsageError(f"{what} '{text}': expected a share such as 0.4 or 40%")
    value = Fraction(number) * scale
    if not 0 < value <= 1:
        raise UsageError(f"{what} '{text}': expected a share above 0 and at most 1 (100%)")
    return value


def parse_flops(text: str) -> int:
    """A FLOP budget such as ``5.76e23``: a positive whole number of FLOPs."""
    value = _decimal(text) or Decimal(0)
    if value < 1 or value != value.to_integral_value():
        raise UsageError(
            f"compute budget '{text}': expected a whole number of FLOPs below 1e{MAX_DIGITS}, "
            "such as 5.76e23"
        )
    return int(value)


def training_flops(spec: ModelSpec, tokens: int, length: int, kernel: str = "sdpa") -> int:
    """FLOPs to train on ``tokens`` tokens in sequences of ``length``: 2 x training MACs of one
    sequence x tokens / T, rounded up."""
    forward = forward_macs(spec, 1, length)
    step = flops(training_macs(forward, attention_pair_macs(spec, 1, length), "none", kernel))
    return -(-step * tokens // length)


def kaplan_flops(spec: ModelSpec, tokens: int) -> int:
    """6 x P x tokens."""
    return 6 * total_params(spec) * tokens


@dataclass(frozen=True)
class TrainingTime:
    """Wall time and GPU-hours of ``flops`` on ``gpus`` GPUs at ``mfu`` of the dense peak."""

    flops: int
    gpus: int
    peak: int
    mfu: Fraction

    @property
    def seconds(self) -> Fraction:
        """FLOPs / (GPUs x peak x MFU)."""
        return Fraction(self.flops) / (self.gpus * self.peak * self.mfu)

    @property
    def gpu_hours(self) -> Fraction:
        """GPUs x seconds / 3600."""
        return self.gpus * self.seconds / 3600


def compute_optimal(budget: int) -> tuple[int, int]:
    """N_opt and D_opt for a budget C under C = 6 N D, D = 20 N: N = sqrt(C / 120), D = 20 N
    (N rounded down to a whole parameter)."""
    n = math.isqrt(budget // (6 * CHINCHILLA_TOKENS_PER_PARAM))
    return n, CHINCHILLA_TOKENS_PER_PARAM * n


@dataclass(frozen=True)
class Roofline:
    """Inference ESTIMATES on one GPU holding the whole model: prefill compute-bound, decode
    memory-bound."""

    prefill_flops: int
    peak: int
    step_bytes: int
    bandwidth: int
    batch: int

    @property
    def prefill_seconds(self) -> Fraction:
        """Forward FLOPs of the prompts / peak."""
        return Fraction(self.prefill_flops, self.peak)

    @property
    def decode_step_seconds(self) -> Fraction:
        """(weight bytes + KV bytes) read per step / bandwidth."""
        return Fraction(self.step_bytes, self.bandwidth)

    @property
    def tokens_per_second_per_sequence(self) -> Fraction:
        return 1 / self.decode_step_seconds

    @property
    def tokens_per_second(self) -> Fraction:
        """All B sequences: B / step time."""
        return self.batch / self.decode_step_seconds


def roofline(
    spec: ModelSpec, gpu: Gpu, dtype: str, kv_dtype: str, batch: int, prompt: int, context: int
) -> Roofline:
    """Prefill of B prompts of ``prompt`` tokens; decode steps at ``context`` cached tokens."""
    return Roofline(
        prefill_flops=flops(forward_macs(spec, batch, prompt)),
        peak=gpu.peak(dtype),
        step_bytes=weight_bytes(spec, dtype) + kv_cache_bytes(spec, batch, context, kv_dtype),
        bandwidth=gpu.memory_bandwidth(),
        batch=batch,
    )
