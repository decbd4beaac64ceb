"""The accelerator catalogue: the memory each device reports to its driver beside its datasheet's,
memory and interconnect bandwidth and dense peak FLOP/s (``costcalc/data/gpus.yaml``, shipped
inside the package).

Figures are exact integers: bytes, bytes per second, FLOP/s. A figure the source does not give
is absent (None, or no entry for the dtype), never guessed; asking for it is a clear error.

Memory: ``memory_bytes`` is what the device reports (nvidia-smi's ``memory.total`` in MiB x 2^20,
rocm-smi's bytes, hl-smi's MiB, Metal's ``recommendedMaxWorkingSetSize``), the datasheet's
(``datasheet_bytes``) only where no report was found. What a program can fill is less: the
driver keeps part for itself (``cuda_bytes``, the total CUDA sees, where published) and the CUDA
context and runtime take more. :func:`default_reserve` states what is set aside for both:
memory.total - the CUDA total + 512 MiB where the catalogue has the CUDA total, else 1 GiB.

Names (:func:`find_gpu`): a key (``h100-sxm``), a name the device prints (``NVIDIA H100 80GB
HBM3``, any case and spacing), or words that name one device (``4090``, ``h100 sxm``). Words
that name several (``h100``, ``a100``) are an error listing them; a suggestion for an unknown
name never changes a model number (``h100`` is never offered ``h200``).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from importlib.resources import files
from typing import Any

from costcalc.errors import CostcalcError, UsageError, shown
from costcalc.option_names import option

CATALOGUE = "data/gpus.yaml"
PEAK_DTYPES: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "fp4")
"""The dtypes a peak may be given for: fp32 is the non-tensor rate, tf32 the Tensor Core rate
for fp32 inputs; int8 and int4 are operations, not FLOPs."""
MIB = 2**20
CONTEXT_RESERVE = 512 * MIB
"""Set aside for the CUDA context and runtime (kernels, cuBLAS workspaces) on top of what the
driver keeps: a stated convention (a CUDA 12 context with lazy loading takes a few hundred MiB;
more with eager module loading)."""
DEFAULT_RESERVE = 2**30
"""Set aside where the catalogue has no CUDA-visible total to measure the driver's share by."""
_FIELDS = frozenset(
    {
        "name",
        "names",
        "memory",
        "reported_mib",
        "reported_bytes",
        "reported_by",
        "reported_source",
        "cuda_bytes",
        "cuda_source",
        "bandwidth_gb_s",
        "interconnect_gb_s",
        "interconnect",
        "peak_tflops",
        "source",
    }
)


class CatalogueError(CostcalcError, ValueError):
    """An entry of the GPU catalogue that is not well formed."""


@dataclass(frozen=True)
class Gpu:
    """One device: ``memory_bytes`` as it reports itself (or its datasheet's, ``reported_by``
    None), ``datasheet_bytes``, the CUDA-visible total ``cuda_bytes`` where published,
    ``bandwidth`` and ``interconnect_bandwidth`` bytes/s (the link's both directions together),
    ``peak_flops`` dense FLOP/s per dtype, and the sources of each."""

    key: str
    name: str
    memory_bytes: int
    bandwidth: int | None
    peak_flops: dict[str, int]
    source: str
    datasheet_bytes: int | None = None
    """The datasheet's memory in bytes; None: ``memory_bytes``."""
    reported_by: str | None = None
    memory_source: str | None = None
    cuda_bytes: int | None = None
    cuda_source: str | None = None
    interconnect_bandwidth: int | None = None
    interconnect: str | None = None
    names: tuple[str, ...] = ()
    datasheet_memory: str = ""
    """The datasheet's memory as it writes it, with a space before the unit: ``80 GB``."""

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

    def link_bandwidth(self) -> int:
        """GPU-to-GPU bandwidth in bytes/s, both directions together; an error when the
        datasheet gives none."""
        if self.interconnect_bandwidth is None:
            raise UsageError(
                f"the catalogue has no interconnect bandwidth for {self.key} ({self.source})"
            )
        return self.interconnect_bandwidth

    @property
    def reserve(self) -> int:
        """The default reserve (:func:`default_reserve`)."""
        return default_reserve(self)


def default_reserve(gpu: Gpu) -> int:
    """Bytes set aside for the driver and the CUDA context: memory.total - the CUDA-visible
    total + 512 MiB where the catalogue has both, else 1 GiB (a stated convention)."""
    if gpu.cuda_bytes is None:
        return DEFAULT_RESERVE
    return gpu.memory_bytes - gpu.cuda_bytes + CONTEXT_RESERVE


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


def _size(key: str, value: Any) -> int:
    """The datasheet's memory, a size with its unit (``80GB``, ``64GiB``)."""
    from costcalc.units import parse_bytes

    try:
        return parse_bytes(str(value))
    except UsageError:
        raise CatalogueError(
            f"{CATALOGUE}: {key}.memory: expected a size such as 80GB or 64GiB, got {value!r}"
        ) from None


def _optional(key: str, entry: dict[str, Any], field: str, scale: int) -> int | None:
    value = entry.get(field)
    return None if value is None else _scaled(key, field, value, scale)


def _reported(key: str, entry: dict[str, Any]) -> int | None:
    """The reported memory: ``reported_mib`` x 2^20 or ``reported_bytes``, with the tool and
    the place it was published; None without one."""
    given = [f for f in ("reported_mib", "reported_bytes") if f in entry]
    if not given:
        return None
    if len(given) > 1 or not {"reported_by", "reported_source"} <= entry.keys():
        raise CatalogueError(
            f"{CATALOGUE}: {key}: a reported memory needs one of reported_mib or reported_bytes, "
            "with reported_by and reported_source"
        )
    return _scaled(key, given[0], entry[given[0]], MIB if given[0] == "reported_mib" else 1)


def _gpu(key: str, entry: Any) -> Gpu:
    if not isinstance(entry, dict) or not {"name", "memory", "source"} <= entry.keys():
        raise CatalogueError(f"{CATALOGUE}: {key}: expected name, memory and source")
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        raise CatalogueError(f"{CATALOGUE}: {key}: unknown fields {', '.join(unknown)}")
    peaks = entry.get("peak_tflops") or {}
    bad = sorted(set(peaks) - set(PEAK_DTYPES))
    if bad:
        raise CatalogueError(f"{CATALOGUE}: {key}.peak_tflops: unknown dtypes {', '.join(bad)}")
    if ("cuda_bytes" in entry) != ("cuda_source" in entry):
        raise CatalogueError(f"{CATALOGUE}: {key}: cuda_bytes and cuda_source go together")
    datasheet = _size(key, entry["memory"])
    reported = _reported(key, entry)
    return Gpu(
        key=key,
        name=str(entry["name"]),
        memory_bytes=datasheet if reported is None else reported,
        datasheet_bytes=datasheet,
        reported_by=None if reported is None else str(entry["reported_by"]),
        memory_source=None if reported is None else str(entry["reported_source"]),
        cuda_bytes=_optional(key, entry, "cuda_bytes", 1),
        cuda_source=str(entry["cuda_source"]) if "cuda_source" in entry else None,
        bandwidth=_optional(key, entry, "bandwidth_gb_s", 10**9),
        interconnect_bandwidth=_optional(key, entry, "interconnect_gb_s", 10**9),
        interconnect=str(entry["interconnect"]) if "interconnect" in entry else None,
        peak_flops={
            dtype: _scaled(key, f"peak_tflops.{dtype}", peaks[dtype], 10**12)
            for dtype in PEAK_DTYPES
            if dtype in peaks
        },
        source=str(entry["source"]),
        names=tuple(str(name) for name in entry.get("names") or ()),
        datasheet_memory=re.sub(r"(?<=\d)(?=[A-Za-z])", " ", str(entry["memory"]).strip()),
    )


@cache
def catalogue() -> dict[str, Gpu]:
    """Every device of the shipped catalogue, by key, in the file's order."""
    import yaml  # only here: a run that names no GPU never reads YAML for it

    text = files("costcalc").joinpath(CATALOGUE).read_text(encoding="utf-8")
    loaded = yaml.safe_load(text) or {}
    return {str(key): _gpu(str(key), entry) for key, entry in loaded.items()}


# --------------------------------------------------------------------------- names

_VENDOR_WORDS = frozenset({"nvidia", "geforce", "tesla", "amd", "instinct", "intel", "apple"})


def _words(text: str) -> tuple[str, ...]:
    """A name as lower-case runs of letters and of digits, vendor words dropped:
    ``NVIDIA GeForce RTX 4090`` -> (rtx, 4090); ``a100-80gb`` -> (a, 100, 80, gb)."""
    runs = re.findall(r"[a-z]+|[0-9]+", text.lower())
    return tuple(run for run in runs if run not in _VENDOR_WORDS)


def _numbers(words: tuple[str, ...]) -> frozenset[str]:
    return frozenset(word for word in words if word.isdigit())


@cache
def _vocabulary() -> dict[str, tuple[tuple[str, ...], ...]]:
    """Each device's key and printed names as words (:func:`_words`)."""
    return {
        key: tuple(_words(name) for name in (key, *gpu.names)) for key, gpu in catalogue().items()
    }


def find_gpu(name: str) -> Gpu:
    """The device ``name`` names: a key or a printed name (any case, spacing and vendor words),
    or words every one of which is in one device's key or printed name, its model numbers and
    sizes among them (``4090``, ``h100 sxm``). Words that fit several devices, or one but
    leave its size unsaid (``m2 max``), are a UsageError listing them; an unknown name a
    UsageError with the closest key of the same family (its first letters) whose model numbers
    include the name's."""
    gpus = catalogue()
    key = name.strip().lower()
    if key in gpus:
        return gpus[key]
    words = _words(name)
    vocabulary = _vocabulary()
    exact = [k for k, forms in vocabulary.items() if words and words in forms]
    if len(exact) == 1:
        return gpus[exact[0]]
    fitting = [
        k for k, forms in vocabulary.items() if words and any(set(words) <= set(f) for f in forms)
    ]
    numbers = _numbers(words)
    if len(fitting) == 1 and _numbers(vocabulary[fitting[0]][0]) <= numbers:
        return gpus[fitting[0]]
    if fitting:
        listed = ", ".join(f"{k} ({gpus[k].name})" for k in fitting)
        several = "several GPUs" if len(fitting) > 1 else "a GPU by part of its name"
        raise UsageError(f"'{shown(name)}' names {several}: {listed}; give one by its name")
    family = words[:1] if words and not words[0].isdigit() else ()
    allowed = [
        k
        for k, forms in vocabulary.items()
        if numbers <= _numbers(forms[0]) and forms[0][: len(family)] == family
    ]
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.5)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise UsageError(
        f"unknown GPU '{shown(name)}'{hint}; `costcalc gpus` lists them: {', '.join(gpus)}"
    )


# --------------------------------------------------------------------------- capacity


def parse_reserve(text: str) -> int:
    """``--reserve SIZE`` in bytes: a size with its unit (``1GiB``), or ``0`` to set nothing
    aside."""
    from costcalc.units import parse_bytes

    return 0 if text.strip() in ("0", "0B") else parse_bytes(text)


@dataclass(frozen=True)
class Capacity:
    """Device memory a model is judged against: ``bytes`` usable, of ``total`` (a GPU's
    reported memory, or the size given) less ``reserve``; ``gpu`` when it is a catalogue's."""

    bytes: int
    total: int
    reserve: int
    gpu: Gpu | None = None

    @property
    def note(self) -> str | None:
        """Where the capacity comes from, in words; None for a size given with no reserve."""
        if self.gpu is None:
            if not self.reserve:
                return None
            return f"Device memory: {self.total:,} bytes given, less a reserve of {self.reserve:,}."
        gpu = self.gpu
        told = (
            f"{gpu.memory_bytes:,} bytes, as {gpu.reported_by} reports it"
            if gpu.reported_by
            else f"{gpu.memory_bytes:,} bytes, the datasheet's (no device report found)"
        )
        return (
            f"Device memory: {gpu.key} has {told} (datasheet: {gpu.datasheet_memory}; sources "
            f"in `costcalc gpus`), less {self.reserve:,} set aside for the driver and the CUDA "
            f"context (--reserve SIZE): {self.bytes:,} bytes."
        )

    def to_dict(self) -> dict[str, Any]:
        """The capacity's parts in JSON."""
        return {
            "gpu": None if self.gpu is None else self.gpu.key,
            "total_bytes": self.total,
            "reserve_bytes": self.reserve,
            "datasheet_bytes": None if self.gpu is None else self.gpu.datasheet_bytes,
        }


def device_memory(fits: int | None, gpu: str | None, reserve: int | None = None) -> Capacity | None:
    """Usable device memory: ``fits`` bytes as given, or ``gpu``'s reported memory, less the
    reserve (``reserve`` bytes; by default the GPU's :func:`default_reserve`, none with
    ``fits``); None when neither is given; both at once is an error."""
    if fits is not None and gpu is not None:
        raise UsageError(
            f"give the device memory once: {option('--fits')} or {option('--gpu')}, not both"
        )
    if gpu is not None:
        device = find_gpu(gpu)
        kept = device.reserve if reserve is None else reserve
        return Capacity(usable_memory(device, kept), device.memory_bytes, kept, device)
    if fits is None:
        if reserve is not None:
            raise UsageError(
                f"{option('--reserve')} sets memory aside on a device: add {option('--gpu')} "
                f"or {option('--fits')}"
            )
        return None
    return Capacity(usable_memory_of(fits, reserve or 0, "the device"), fits, reserve or 0)


def device_capacity(fits: int | None, gpu: str | None, reserve: int | None = None) -> int | None:
    """The bytes of :func:`device_memory`, or None."""
    capacity = device_memory(fits, gpu, reserve)
    return None if capacity is None else capacity.bytes


def usable_memory(gpu: Gpu, reserve: int) -> int:
    """The GPU's memory less ``reserve`` (a UsageError when nothing is left)."""
    return usable_memory_of(gpu.memory_bytes, reserve, gpu.key)


def usable_memory_of(capacity: int, reserve: int, what: str) -> int:
    """``capacity`` - ``reserve`` bytes, or a UsageError when the reserve takes it all."""
    if reserve >= capacity:
        raise UsageError(
            f"{option('--reserve', reserve)} bytes leaves nothing of {shown(what)}'s "
            f"{capacity:,} bytes"
        )
    return capacity - reserve
