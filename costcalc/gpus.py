"""The GPU catalogue: memory, memory bandwidth and dense peak FLOP/s of GPUs people rent, each
as its vendor's datasheet states it (``costcalc/data/gpus.yaml``, shipped inside the package).

Figures are exact integers: bytes, bytes per second, FLOP/s. A figure the datasheet does not give
is absent (None, or no entry for the dtype), never guessed; asking for it is a clear error.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from importlib.resources import files
from typing import Any

import yaml

from costcalc.errors import CostcalcError, UsageError, shown

CATALOGUE = "data/gpus.yaml"
PEAK_DTYPES: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")
"""The dtypes a peak may be given for: fp32 is the non-tensor rate, tf32 the Tensor Core rate
for fp32 inputs."""
_FIELDS = frozenset({"name", "memory_gb", "bandwidth_gb_s", "peak_tflops", "source"})


class CatalogueError(CostcalcError, ValueError):
    """An entry of the GPU catalogue that is not well formed."""


@dataclass(frozen=True)
class Gpu:
    """One GPU: ``memory_bytes`` (datasheet GB x 10^9), ``bandwidth`` bytes/s, ``peak_flops``
    dense FLOP/s per dtype, and the datasheet they come from."""

    key: str
    name: str
    memory_bytes: int
    bandwidth: int | None
    peak_flops: dict[str, int]
    source: str

    def peak(self, dtype: str) -> int:
        """Dense peak FLOP/s for ``dtype``; an error naming what the catalogue has otherwise."""
        if dtype not in self.peak_flops:
            given = ", ".join(self.peak_flops) or "none"
            raise UsageError(
                f"the catalogue has no {dtype} peak for {self.key} ({self.source}); "
                f"peaks given: {given}"
            )
        return self.peak_flops[dtype]

    def memory_bandwidth(self) -> int:
        """Peak memory bandwidth in bytes/s; an error when the datasheet gives none."""
        if self.bandwidth is None:
            raise UsageError(
                f"the catalogue has no memory bandwidth for {self.key} ({self.source})"
            )
        return self.bandwidth


def _scaled(key: str, field: str, value: Any, scale: int) -> int:
    """A datasheet figure (int or decimal) times ``scale``, exactly, as an integer."""
    try:
        scaled = Decimal(str(value)) * scale
    except InvalidOperation:
        scaled = Decimal(-1)
    if isinstance(value, bool) or scaled <= 0 or scaled != scaled.to_integral_value():
        raise CatalogueError(
            f"{CATALOGUE}: {key}.{field}: expected a positive number, got {value!r}"
        )
    return int(scaled)


def _gpu(key: str, entry: Any) -> Gpu:
    if not isinstance(entry, dict) or not {"name", "memory_gb", "source"} <= entry.keys():
        raise CatalogueError(f"{CATALOGUE}: {key}: expected name, memory_gb and source")
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        raise CatalogueError(f"{CATALOGUE}: {key}: unknown fields {', '.join(unknown)}")
    peaks = entry.get("peak_tflops") or {}
    bad = sorted(set(peaks) - set(PEAK_DTYPES))
    if bad:
        raise CatalogueError(f"{CATALOGUE}: {key}.peak_tflops: unknown dtypes {', '.join(bad)}")
    bandwidth = entry.get("bandwidth_gb_s")
    return Gpu(
        key=key,
        name=str(entry["name"]),
        memory_bytes=_scaled(key, "memory_gb", entry["memory_gb"], 10**9),
        bandwidth=None if bandwidth is None else _scaled(key, "bandwidth_gb_s", bandwidth, 10**9),
        peak_flops={
            dtype: _scaled(key, f"peak_tflops.{dtype}", peaks[dtype], 10**12)
            for dtype in PEAK_DTYPES
            if dtype in peaks
        },
        source=str(entry["source"]),
    )


@cache
def catalogue() -> dict[str, Gpu]:
    """Every GPU of the shipped catalogue, by key, in the file's order."""
    text = files("costcalc").joinpath(CATALOGUE).read_text(encoding="utf-8")
    loaded = yaml.safe_load(text) or {}
    return {str(key): _gpu(str(key), entry) for key, entry in loaded.items()}


def find_gpu(name: str) -> Gpu:
    """The GPU called ``name`` (its key, any case), or a UsageError with the closest key."""
    key = name.strip().lower()
    gpus = catalogue()
    if key in gpus:
        return gpus[key]
    close = difflib.get_close_matches(key, list(gpus), n=1, cutoff=0.5)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise UsageError(
        f"unknown GPU '{shown(name)}'{hint}; `costcalc gpus` lists them: {', '.join(gpus)}"
    )


def device_capacity(fits: int | None, gpu: str | None) -> int | None:
    """Device memory in bytes from ``--fits SIZE`` or ``--gpu NAME`` (its datasheet memory);
    None when neither is given; both at once is an error."""
    if fits is not None and gpu is not None:
        raise UsageError("give the device memory once: --fits SIZE or --gpu NAME, not both")
    if gpu is not None:
        return find_gpu(gpu).memory_bytes
    return fits
