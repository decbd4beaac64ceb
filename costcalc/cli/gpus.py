"""`costcalc gpus`: the GPU catalogue, each figure as its vendor's datasheet states it."""

from __future__ import annotations

from costcalc.cli.common import FormatOption, emit, user_errors
from costcalc.render import OutputFormat


def gpus(fmt: FormatOption = OutputFormat.table) -> None:
    """List the GPUs of the catalogue: memory, memory bandwidth and dense peak FLOP/s per dtype
    (no sparsity), with the datasheet each comes from. Use a name with --gpu."""
    from costcalc.gpus import PEAK_DTYPES, catalogue
    from costcalc.render import Grid
    from costcalc.units import format_bytes

    with user_errors():
        listed = list(catalogue().values())
    data = [
        {
            "name": gpu.key,
            "product": gpu.name,
            "memory_bytes": gpu.memory_bytes,
            "memory_bandwidth_bytes_per_s": gpu.bandwidth,
            "peak_flops": gpu.peak_flops,
            "source": gpu.source,
        }
        for gpu in listed
    ]
    rows = [
        [
            gpu.key,
            format_bytes(gpu.memory_bytes, "si"),
            "" if gpu.bandwidth is None else f"{format_bytes(gpu.bandwidth, 'si')}/s",
            *(_tflops(gpu.peak_flops.get(dtype)) for dtype in PEAK_DTYPES),
        ]
        for gpu in listed
    ]
    sources = [f"{gpu.key}: {gpu.source}." for gpu in listed]
    notes = [
        "Peaks are dense TFLOP/s (10^12), no structured sparsity; blank where the datasheet "
        "gives none. Memory in GB (10^9 bytes) as the datasheet writes it.",
        *sources,
    ]
    columns = ["name", "memory", "bandwidth", *(_unit(dtype) for dtype in PEAK_DTYPES)]
    emit(fmt, data, [Grid("GPUs", columns, rows, notes)])


def _tflops(flops: int | None) -> str:
    """FLOP/s as TFLOP/s, exact (the datasheet's own digits)."""
    if flops is None:
        return ""
    whole, rest = divmod(flops, 10**12)
    return f"{whole:,}" + (f".{rest:012d}".rstrip("0") if rest else "")


def _unit(dtype: str) -> str:
    """The column of a peak: integer rates are operations, not FLOPs."""
    return f"{dtype} TOP/s" if dtype.startswith("int") else f"{dtype} TFLOP/s"
