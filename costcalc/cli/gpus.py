"""`costcalc gpus`: the catalogue, memory as each device reports it beside its datasheet."""

from __future__ import annotations

from costcalc.cli.common import FormatOption, emit, user_errors
from costcalc.render import OutputFormat


def gpus(fmt: FormatOption = OutputFormat.table) -> None:
    """List the GPUs of the catalogue: memory as the device reports it (nvidia-smi's
    memory.total, ...) beside the datasheet's, the reserve set aside for the driver and the
    CUDA context, memory and interconnect bandwidth, and dense peak FLOP/s per dtype (no
    sparsity), each with its source. Use a name with --gpu."""
    from costcalc.gpus import PEAK_DTYPES, catalogue
    from costcalc.render import Grid
    from costcalc.units import format_bytes

    with user_errors():
        listed = list(catalogue().values())
    data = [
        {
            "name": gpu.key,
            "product": gpu.name,
            "names": list(gpu.names),
            "memory_bytes": gpu.memory_bytes,
            "memory_reported_by": gpu.reported_by,
            "memory_source": gpu.memory_source,
            "datasheet_memory_bytes": gpu.datasheet_bytes,
            "cuda_memory_bytes": gpu.cuda_bytes,
            "cuda_memory_source": gpu.cuda_source,
            "reserve_bytes": gpu.reserve,
            "memory_bandwidth_bytes_per_s": gpu.bandwidth,
            "interconnect_bytes_per_s": gpu.interconnect_bandwidth,
            "interconnect": gpu.interconnect,
            "peak_flops": gpu.peak_flops,
            "source": gpu.source,
        }
        for gpu in listed
    ]
    memory_rows = [
        [
            gpu.key,
            f"{gpu.memory_bytes:,} ({format_bytes(gpu.memory_bytes, 'iec')})"
            + ("" if gpu.reported_by else " *"),
            gpu.datasheet_memory,
            format_bytes(gpu.reserve, "iec"),
        ]
        for gpu in listed
    ]
    peak_rows = [
        [
            gpu.key,
            _rate(gpu.bandwidth),
            _rate(gpu.interconnect_bandwidth),
            *(_tflops(gpu.peak_flops.get(dtype)) for dtype in PEAK_DTYPES),
        ]
        for gpu in listed
    ]
    memory_notes = [
        "memory: what the device reports, in bytes (nvidia-smi memory.total, rocm-smi, hl-smi "
        "or Metal's working-set limit, as published; * the datasheet's, where no report was "
        "found); datasheet: the memory its datasheet states; reserve: set aside for the driver "
        "and the CUDA context by --gpu (memory.total - the CUDA-visible total + 512 MiB where "
        "the CUDA total is known, else 1 GiB; --reserve overrides).",
        *(
            f"{gpu.key}: {gpu.reported_by}, {gpu.memory_source}"
            + (
                f"; CUDA-visible {gpu.cuda_bytes:,} bytes, {gpu.cuda_source}"
                if gpu.cuda_bytes
                else ""
            )
            + "."
            for gpu in listed
            if gpu.reported_by
        ),
    ]
    peak_notes = [
        "bandwidth: peak memory bandwidth; interconnect: GPU-to-GPU, both directions together. "
        "Peaks are dense TFLOP/s (10^12; int8 and int4 in TOP/s), no structured sparsity; blank "
        "where the datasheet gives none.",
        *(f"{gpu.key}: {gpu.source}." for gpu in listed),
    ]
    memory_columns = [
        "name",
        "memory (bytes)",
        "datasheet",
        "reserve",
    ]
    grids = [
        Grid("GPUs: memory", memory_columns, memory_rows, memory_notes),
        Grid(
            "GPUs: bandwidth and dense peaks",
            ["name", "bandwidth", "interconnect", *(_unit(d) for d in PEAK_DTYPES)],
            peak_rows,
            peak_notes,
        ),
    ]
    emit(fmt, data, grids)


def _rate(bytes_per_s: int | None) -> str:
    """Bytes per second in SI units, blank when not given."""
    from costcalc.units import format_bytes

    return "" if bytes_per_s is None else f"{format_bytes(bytes_per_s, 'si')}/s"


def _tflops(flops: int | None) -> str:
    """FLOP/s as TFLOP/s, exact (the datasheet's own digits)."""
    if flops is None:
        return ""
    whole, rest = divmod(flops, 10**12)
    return f"{whole:,}" + (f".{rest:012d}".rstrip("0") if rest else "")


def _unit(dtype: str) -> str:
    """The column of a peak: integer rates are operations, not FLOPs."""
    return f"{dtype} TOP/s" if dtype.startswith("int") else f"{dtype} TFLOP/s"
