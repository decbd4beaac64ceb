"""`costcalc plan`: training time and GPU-hours on GPUs of the catalogue, compute-optimal
sizing, and inference rooflines."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Annotated, Any

import typer

from costcalc.cli.common import FormatOption, emit, user_errors
from costcalc.cli.models import ModelSelection, takes_models
from costcalc.render import OutputFormat

if TYPE_CHECKING:
    from costcalc.gpus import Gpu
    from costcalc.loaders import LoadedModel
    from costcalc.render import Grid


@takes_models
def plan(
    models: ModelSelection,
    gpu: Annotated[str, typer.Option("--gpu", metavar="NAME", help="A GPU of `costcalc gpus`.")],
    tokens: Annotated[
        str | None,
        typer.Option("--tokens", help="Training tokens, like 300B or 1T: FLOPs, time, GPU-hours."),
    ] = None,
    length: Annotated[
        int, typer.Option("--length", "-T", help="Tokens per training sequence.")
    ] = 2048,
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs training together.")] = 1,
    mfu: Annotated[
        str, typer.Option("--mfu", help="Model FLOPs utilisation assumed, like 0.4 or 40%.")
    ] = "0.4",
    dtype: Annotated[
        str, typer.Option("--dtype", help="Compute and weight dtype: its peak is used.")
    ] = "bf16",
    budget: Annotated[
        str | None,
        typer.Option("--budget", help="A compute budget in FLOPs (5.76e23): Chinchilla sizing."),
    ] = None,
    prompt: Annotated[
        int | None,
        typer.Option("--prompt", help="Inference roofline: prompt tokens per sequence."),
    ] = None,
    generate: Annotated[
        int, typer.Option("--generate", help="Tokens generated after the prompt.")
    ] = 256,
    batch: Annotated[int, typer.Option("--batch", "-B", help="Sequences decoded together.")] = 1,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Training FLOPs for --tokens from costcalc's exact MACs (6N beside it), wall time and
    GPU-hours at --mfu on --gpus GPUs; with --budget, compute-optimal sizing (rule of thumb);
    with --prompt, prefill time and decode tokens/s on one GPU (roofline ESTIMATES)."""
    from costcalc.compute import check_count
    from costcalc.errors import UsageError
    from costcalc.gpus import find_gpu
    from costcalc.plan import MAX_COUNT, parse_flops, parse_fraction
    from costcalc.units import check_dtype, parse_count

    with user_errors():
        device = find_gpu(gpu)
        check_dtype(dtype)
        counts = {"gpus": gpus, "length": length, "batch": batch, "generate": generate}
        for name, value in {**counts, "prompt": prompt}.items():
            if value is not None:
                check_count(name, value, MAX_COUNT)
        share = parse_fraction(mfu, "MFU")
        count = parse_count(tokens) if tokens is not None else None
        flops_budget = parse_flops(budget) if budget is not None else None
        if count is None and flops_budget is None and prompt is None:
            raise UsageError("nothing to plan: give --tokens, --budget or --prompt")
        results = [
            _plan(m, device, dtype, count, length, gpus, share, prompt, generate, batch)
            for m in models.load()
        ]
    data: list[dict[str, Any]] = [r for r, _ in results]
    grids = [g for _, gs in results for g in gs]
    if flops_budget is not None:
        data_budget, grid = _chinchilla(flops_budget)
        for record in data:
            record["compute_optimal"] = data_budget
        grids.append(grid)
    emit(fmt, data[0] if len(data) == 1 else data, grids)


def _plan(
    model: LoadedModel,
    gpu: Gpu,
    dtype: str,
    tokens: int | None,
    length: int,
    gpus: int,
    mfu: Fraction,
    prompt: int | None,
    generate: int,
    batch: int,
) -> tuple[dict[str, Any], list[Grid]]:
    from costcalc.compute import check_positions
    from costcalc.plan import KAPLAN_RULE, TrainingTime, kaplan_flops, roofline, training_flops
    from costcalc.render import Grid
    from costcalc.results import model_header

    data: dict[str, Any] = {**model_header(model), "gpu": gpu.key, "dtype": dtype}
    grids: list[Grid] = []
    spec = model.spec
    if tokens is not None:
        check_positions(spec, "length", length, length)
        exact = training_flops(spec, tokens, length)
        time = TrainingTime(exact, gpus, gpu.peak(dtype), mfu)
        data["training"] = {
            "tokens": tokens,
            "length": length,
            "flops": exact,
            "flops_6n": kaplan_flops(spec, tokens),
            "gpus": gpus,
            "peak_flops_per_gpu": time.peak,
            "mfu": float(mfu),
            "seconds": float(time.seconds),
            "gpu_hours": float(time.gpu_hours),
        }
        rows = [
            ["training FLOPs (exact MACs x 2)", f"{exact:,}"],
            [KAPLAN_RULE, f"{kaplan_flops(spec, tokens):,}"],
            [f"peak per GPU ({dtype}, dense), FLOP/s", f"{time.peak:,}"],
            ["wall time", _duration(time.seconds)],
            ["GPU-hours", f"{float(time.gpu_hours):,.0f}"],
        ]
        title = (
            f"Training {model.name} on {tokens:,} tokens (T={length:,}): {gpus} x {gpu.key} "
            f"at {float(mfu):.0%} MFU"
        )
        notes = [
            "FLOPs: forward + backward = 3 x forward MACs per sequence, plus the QK^T the sdpa "
            "backward recomputes, x 2 FLOPs per MAC, x tokens / T. Time = FLOPs / (GPUs x peak "
            f"x MFU); the MFU is an assumption, not a measurement. Peak: {gpu.source}."
        ]
        grids.append(Grid(title, ["", "value"], rows, notes))
    if prompt is not None:
        context = prompt + generate
        check_positions(spec, "length", context, context)
        kv_dtype = dtype if dtype in ("fp32", "bf16", "fp16") else "bf16"
        r = roofline(spec, gpu, dtype, kv_dtype, batch, prompt, context)
        data["inference"] = {
            "estimate": True,
            "batch": batch,
            "prompt": prompt,
            "context": context,
            "prefill_flops": r.prefill_flops,
            "prefill_seconds": float(r.prefill_seconds),
            "decode_step_bytes": r.step_bytes,
            "decode_tokens_per_second_per_sequence": float(r.tokens_per_second_per_sequence),
            "decode_tokens_per_second": float(r.tokens_per_second),
        }
        rows = [
            ["prefill time (compute-bound)", _duration(r.prefill_seconds)],
            ["bytes read per decode step", f"{r.step_bytes:,}"],
            ["decode tokens/s per sequence", f"{float(r.tokens_per_second_per_sequence):,.1f}"],
            [f"decode tokens/s, batch {batch}", f"{float(r.tokens_per_second):,.1f}"],
        ]
        notes = [
            "Roofline ESTIMATES on one GPU holding the whole model: prefill = forward FLOPs / "
            "dense peak; a decode step reads the weights and the KV cache at "
            f"{context:,} tokens once, over the memory bandwidth. Real kernels reach less of "
            "either peak."
        ]
        title = f"Inference of {model.name} on {gpu.key} ({dtype}), B={batch}, prompt {prompt:,}"
        grids.append(Grid(title, ["", "ESTIMATE"], rows, notes))
    return data, grids


def _chinchilla(budget: int) -> tuple[dict[str, Any], Grid]:
    from costcalc.plan import CHINCHILLA_RULE, compute_optimal
    from costcalc.render import Grid

    n, d = compute_optimal(budget)
    data = {"budget_flops": budget, "parameters": n, "tokens": d, "rule": CHINCHILLA_RULE}
    rows = [["parameters N_opt", f"{n:,}"], ["tokens D_opt", f"{d:,}"]]
    grid = Grid(
        f"Compute-optimal for {budget:,} FLOPs",
        ["", "rule of thumb"],
        rows,
        [f"{CHINCHILLA_RULE}: N = sqrt(C / 120)."],
    )
    return data, grid


def _duration(seconds: Fraction) -> str:
    """Seconds in the largest fitting unit: 3.2 ms, 41.7 s, 5.3 h, 12.1 days."""
    s = float(seconds)
    for unit, size in (("days", 86_400), ("h", 3_600), ("min", 60), ("s", 1)):
        if s >= size:
            return f"{s / size:,.1f} {unit}"
    return f"{s * 1000:,.2f} ms"
