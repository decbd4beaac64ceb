"""`costcalc plan`: training time and GPU-hours on GPUs of the catalogue, compute-optimal
sizing, and inference rooflines."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Annotated, Any

import typer

from costcalc.cli.common import (
    BatchedTokensOption,
    BlockSizeOption,
    CacheTypeKOption,
    CacheTypeVOption,
    EngineOption,
    FormatOption,
    SwaFullOption,
    count_option,
    emit,
    reserve_option,
    user_errors,
)
from costcalc.cli.memory import RESERVE_HELP
from costcalc.cli.models import ModelSelection, takes_models
from costcalc.render import OutputFormat

TRAINING_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8")
"""The dtypes a training run's peak is taken for."""

if TYPE_CHECKING:
    from costcalc.engines import EngineSetup
    from costcalc.engines.vllm import VllmMemory
    from costcalc.gpus import Gpu
    from costcalc.loaders import LoadedModel
    from costcalc.plan import CacheFit, DecodeStep
    from costcalc.render import Grid
    from costcalc.routing import ExpertRead


@takes_models
def plan(
    models: ModelSelection,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu", metavar="NAME", help="A GPU of `costcalc gpus` (for --tokens and --prompt)."
        ),
    ] = None,
    tokens: Annotated[
        int | None,
        count_option("--tokens", help="Training tokens, like 300B or 1T: FLOPs, time, GPU-hours."),
    ] = None,
    length: Annotated[
        int, count_option("--length", "-T", help="Tokens per training sequence.")
    ] = 2048,
    gpus: Annotated[int, count_option("--gpus", help="GPUs training together.")] = 1,
    mfu: Annotated[
        str, typer.Option("--mfu", help="Model FLOPs utilisation assumed, like 0.4 or 40%.")
    ] = "0.4",
    dtype: Annotated[
        str,
        typer.Option(
            "--dtype",
            help="Weights: fp32, bf16, fp16, fp8, int8, int4 or a quantized format (nf4, "
            "gptq-int4, awq-int4, fp8-block, gguf:Q4_K_M, ...; docs/quantization.md); the "
            "peak is that of the dtype its kernels compute in.",
        ),
    ] = "bf16",
    budget: Annotated[
        int | None,
        count_option("--budget", help="A compute budget in FLOPs (5.76e23): Chinchilla sizing."),
    ] = None,
    prompt: Annotated[
        int | None,
        count_option("--prompt", help="Inference roofline: prompt tokens per sequence."),
    ] = None,
    generate: Annotated[
        int, count_option("--generate", help="Tokens generated after the prompt.")
    ] = 256,
    batch: Annotated[int, count_option("--batch", "-B", help="Sequences decoded together.")] = 1,
    utilisation: Annotated[
        str,
        typer.Option(
            "--memory-utilisation",
            help="Share of the GPU's memory weights and cache may take (vLLM's "
            "gpu_memory_utilization), like 0.9 or 90%.",
        ),
    ] = "0.9",
    reserve: Annotated[int | None, reserve_option("--reserve", help=RESERVE_HELP)] = None,
    tp: Annotated[
        int,
        count_option(
            "--tp",
            metavar="T",
            help="Inference tensor parallel over T GPUs: each holds and reads its shard of the "
            "weights and 1 / T of the cache (Megatron-LM's layout).",
        ),
    ] = 1,
    kv_dtype: Annotated[
        str | None,
        typer.Option(
            "--kv-dtype",
            help="KV-cache dtype: fp32, bf16, fp16, fp8 (default: the weights' 16-bit dtype, "
            "bf16 for others); llama.cpp takes --cache-type-k / -v.",
        ),
    ] = None,
    engine: EngineOption = None,
    cache_type_k: CacheTypeKOption = None,
    cache_type_v: CacheTypeVOption = None,
    swa_full: SwaFullOption = False,
    block_size: BlockSizeOption = None,
    max_num_batched_tokens: BatchedTokensOption = None,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Training FLOPs for --tokens from costcalc's exact MACs (6N beside it), wall time and
    GPU-hours at --mfu on --gpus GPUs; with --budget, compute-optimal sizing (rule of thumb);
    with --prompt, prefill time and decode tokens/s on one GPU (roofline ESTIMATES), the largest
    batch and context whose cache fits beside the weights, and decode tokens/s by batch."""
    from costcalc.compute import check_count
    from costcalc.engines.dispatch import engine_setup
    from costcalc.errors import UsageError, check_choice
    from costcalc.gpus import find_gpu
    from costcalc.plan import MAX_COUNT, parse_fraction
    from costcalc.units import DTYPES
    from costcalc.weight_format import check_weight_dtype

    with user_errors():
        if tokens is None and budget is None and prompt is None:
            raise UsageError("nothing to plan: give --tokens, --budget or --prompt")
        if tokens is None and prompt is None:
            assert budget is not None
            check_count("budget", budget, MAX_COUNT)
            if gpu is not None:
                raise UsageError(
                    "--budget sizes a model for a compute budget on no GPU in particular: --gpu "
                    "applies with --tokens or --prompt"
                )
            named = models.presets or models.configs or models.hub_ids
            _budget_alone(budget, models.load() if named else [], fmt)
            return
        if gpu is None:
            raise UsageError("--tokens and --prompt run on a GPU: give --gpu NAME (costcalc gpus)")
        device = find_gpu(gpu)
        dtype = check_weight_dtype(dtype)
        counts = {"gpus": gpus, "length": length, "batch": batch, "generate": generate, "tp": tp}
        for name, value in {**counts, "prompt": prompt, "tokens": tokens, "budget": budget}.items():
            if value is not None:
                check_count(name, value, MAX_COUNT)
        share = parse_fraction(mfu, "MFU")
        memory_share = parse_fraction(utilisation, "memory utilisation")
        if tp > 1 and prompt is None:
            raise UsageError("--tp shards the inference rooflines: add --prompt")
        serving = engine_setup(
            engine,
            cache_type_k,
            cache_type_v,
            swa_full,
            block_size,
            max_num_batched_tokens,
            device_memory=device.memory_bytes,
        )
        if serving.name != "transformers" and (prompt is None or tp > 1):
            raise UsageError(
                f"--engine {serving.name} sizes inference on one GPU: give --prompt, not --tp"
            )
        if kv_dtype is not None:
            check_choice(kv_dtype, ("fp32", "bf16", "fp16", "fp8"), "KV-cache dtype")
        if tokens is not None and dtype not in TRAINING_DTYPES:
            kind = "a storage dtype" if dtype in DTYPES else "a stored weight format"
            raise UsageError(
                f"--tokens: training computes at the peak of {', '.join(TRAINING_DTYPES)}, and "
                f"{dtype} is {kind} (its decoding: --prompt)"
            )
        results = [
            _plan(
                m,
                device,
                dtype,
                tokens,
                length,
                gpus,
                share,
                prompt,
                generate,
                batch,
                memory_share,
                tp,
                reserve,
                serving,
                kv_dtype,
            )
            for m in models.load()
        ]
    data: list[dict[str, Any]] = [r for r, _ in results]
    grids = [g for _, gs in results for g in gs]
    if budget is not None:
        optimal, grid = _chinchilla(budget, models.load())
        for record, own in zip(data, optimal, strict=True):
            record["compute_optimal"] = own
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
    utilisation: Fraction,
    tp: int,
    reserve: int | None,
    serving: EngineSetup,
    kv_dtype: str | None,
) -> tuple[dict[str, Any], list[Grid]]:
    from costcalc.compute import check_positions
    from costcalc.plan import KAPLAN_RULE, TrainingTime, kaplan_flops, training_flops
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
        inference, inference_grids = _inference(
            model, gpu, dtype, prompt, generate, batch, utilisation, tp, reserve, serving, kv_dtype
        )
        data["inference"] = inference
        grids += inference_grids
    return data, grids


def _inference(
    model: LoadedModel,
    gpu: Gpu,
    dtype: str,
    prompt: int,
    generate: int,
    batch: int,
    utilisation: Fraction,
    tp: int,
    reserve: int | None,
    serving: EngineSetup,
    kv_dtype: str | None,
) -> tuple[dict[str, Any], list[Grid]]:
    """The roofline at --batch, what fits at the memory utilisation, and decode by batch."""
    from costcalc.compute import check_positions
    from costcalc.plan import cache_fit, compute, decode_batches, decode_step, roofline
    from costcalc.render import Grid, ratio_dict
    from costcalc.weight_format import describe_format

    spec = model.spec
    context = prompt + generate
    check_positions(spec, "length", context, context)
    kv_dtype = kv_dtype or (dtype if dtype in ("fp32", "bf16", "fp16") else "bf16")
    kernels = compute(dtype, gpu)
    r = roofline(spec, gpu, dtype, kv_dtype, batch, prompt, context, tp, serving)
    fit = cache_fit(spec, gpu, utilisation, dtype, kv_dtype, batch, context, tp, reserve, serving)
    top = batch if fit.largest_batch is None else fit.largest_batch
    steps = [
        decode_step(spec, gpu, dtype, kv_dtype, b, context, tp, serving)
        for b in decode_batches(top)
    ]
    fit_data: dict[str, Any] = {
        "memory_utilisation": ratio_dict(utilisation),
        "memory_bytes": gpu.memory_bytes,
        "reserve_bytes": fit.reserve,
        "budget_bytes": fit.budget,
        "weight_bytes": fit.weights,
        "cache_bytes_free": fit.free,
        "kv_dtype": _cache_dtype(serving, kv_dtype),
        "context": context,
        "largest_batch": fit.largest_batch,
        "batch": batch,
        "largest_context": fit.largest_context,
        "positions": fit.positions,
    }
    data = {
        "estimate": True,
        "engine": serving.name,
        "tensor_parallel": tp,
        "batch": batch,
        "prompt": prompt,
        "context": context,
        "weights": {
            "dtype": dtype,
            "description": describe_format(dtype),
            "compute_dtype": kernels.dtype,
            "peak_flops_per_gpu": kernels.peak,
            "kernels": kernels.kernels,
        },
        "prefill_flops": r.prefill_flops,
        "prefill_seconds": float(r.prefill_seconds),
        "decode_step_bytes": r.decode.step_bytes,
        "decode_all_experts_step_bytes": r.decode.all_experts_bytes,
        "decode_bound": r.decode.bound,
        "decode_tokens_per_second_per_sequence": float(r.decode.tokens_per_second_per_sequence),
        "decode_tokens_per_second": float(r.decode.tokens_per_second),
        "experts_read": [_experts_dict(e) for e in r.decode.experts],
        "fit": fit_data,
        "decode_by_batch": [_step_dict(step) for step in steps],
    }

    vllm = None
    if serving.name == "vllm":
        from costcalc.engines.vllm import BLOCK_SIZE, default_batched_tokens, vllm_memory

        vllm = vllm_memory(
            spec,
            dtype,
            context,
            batch,
            kv_dtype,
            serving.block_size or BLOCK_SIZE,
            serving.max_num_batched_tokens or default_batched_tokens(gpu.memory_bytes),
            fit.free,
        )
        fit_data["vllm"] = vllm.to_dict()
    rows = [
        ["prefill time (compute-bound)", _duration(r.prefill_seconds)],
        ["bytes read per decode step", f"{r.decode.step_bytes:,}"],
    ]
    moe = bool(r.decode.experts)
    if moe:
        for read in r.decode.experts:
            what = "experts read per layer" + ("" if read.exact_count else " (expected)")
            rows.append([f"{what}, {read.layers} layers", _experts_cell(read)])
        rows.append(["bytes read per decode step, all experts", f"{r.decode.all_experts_bytes:,}"])
    per_sequence = f"{float(r.decode.tokens_per_second_per_sequence):,.1f}"
    if batch == 1:  # one sequence: its tokens/s are the batch's
        rows.append([f"decode tokens/s, batch 1 ({r.decode.bound}-bound)", per_sequence])
    else:
        rows += [
            [f"decode tokens/s per sequence ({r.decode.bound}-bound)", per_sequence],
            [f"decode tokens/s, batch {batch}", f"{float(r.decode.tokens_per_second):,.1f}"],
        ]
    where = "one GPU holding the whole model" if tp == 1 else f"one of {tp} tensor-parallel GPUs"
    notes = [
        f"Roofline ESTIMATES on {where}: prefill = forward FLOPs / dense peak; a decode step "
        f"reads the weights and the cache at {context:,} tokens once over the memory "
        "bandwidth, or does its FLOPs at the dense peak, whichever takes longer. Real kernels "
        "reach less of either peak.",
        f"Compute: {kernels.kernels}; {gpu.key}'s dense {kernels.dtype} peak, "
        f"{kernels.peak:,} FLOP/s.",
    ]
    if moe:
        notes.append(_experts_note(r.decode.experts))
    if tp > 1:
        notes.append(
            f"Each GPU holds its Megatron-LM shard of the weights (vocab padded to a multiple of "
            f"128 x {tp}) and 1 / {tp} of the cache, and does 1 / {tp} of the FLOPs; the "
            "all-reduces between the GPUs are not counted."
        )
    devices = gpu.key if tp == 1 else f"{tp} x {gpu.key}"
    title = f"Inference of {model.name} on {devices} ({dtype}), B={batch}, prompt {prompt:,}"
    grids = [
        Grid(title, ["", "ESTIMATE"], rows, notes),
        _fit_grid(model.name, gpu, fit, utilisation, tp, serving, vllm),
    ]
    if steps:
        grids += _decode_grids(model.name, devices, context, steps)
    return data, grids


def _cache_dtype(serving: EngineSetup, kv_dtype: str) -> str:
    """The cache's dtype: llama.cpp's K and V cache types (``q8_0 / f16`` when they differ)."""
    if serving.name != "llamacpp":
        return kv_dtype
    k, v = serving.cache_type_k or "f16", serving.cache_type_v or "f16"
    return k if k == v else f"{k} / {v}"


def _experts_cell(read: ExpertRead) -> str:
    """``2 of 8`` at B = 1 (a count), ``7.9999999 of 8`` (an expectation) beyond."""
    if read.exact_count:
        return f"{read.expected_experts.numerator:,} of {read.experts:,}"
    return f"{_expected(read.expected_experts, read.experts)} of {read.experts:,}"


def _expected(value: Fraction, bound: int, most: int = 12) -> str:
    """``value`` rounded half up to 2 decimals, or to as many more (at most ``most``) as
    show it below ``bound`` when 2 would round it up to the bound."""
    places = 2
    while True:
        scale = 10**places
        rounded = math.floor(value * scale + Fraction(1, 2))
        if rounded < bound * scale or places >= most or value >= bound:
            break
        places += 1
    whole, part = divmod(rounded, scale)
    return f"{whole:,}.{part:0{places}d}"


def _experts_note(reads: tuple[ExpertRead, ...]) -> str:
    from costcalc.routing import ROUTING_ASSUMPTION

    routed = ", ".join(f"{r.routed} of {r.experts}" for r in reads)
    return (
        f"Experts read: each token runs {routed} experts per MoE layer; a step reads the "
        f"experts its batch runs, an ESTIMATE under {ROUTING_ASSUMPTION} (a count at B = 1; "
        "expectations rounded, bytes read rounded up to a whole byte); shared experts, routers "
        "and every other tensor whole. The all-experts row reads every expert: the bound."
    )


def _experts_dict(read: ExpertRead) -> dict[str, Any]:
    from costcalc.routing import ROUTING_ASSUMPTION

    return {
        "layers": read.layers,
        "experts": read.experts,
        "routed_per_token": read.routed,
        "batch": read.batch,
        "expected_experts_per_layer": float(read.expected_experts),
        "count": read.exact_count,
        "expert_bytes": read.bytes,
        "expert_bytes_read": read.bytes_read,
        "estimate": not read.exact_count,
        "assumption": ROUTING_ASSUMPTION,
    }


def _step_dict(step: DecodeStep) -> dict[str, Any]:
    compute = step.compute_seconds
    return {
        "batch": step.batch,
        "step_bytes": step.step_bytes,
        "weight_bytes_read": step.weight_bytes,
        "cache_bytes": step.cache_bytes,
        "all_experts_step_bytes": step.all_experts_bytes,
        "expected_experts_per_layer": [float(e.expected_experts) for e in step.experts],
        "step_flops": step.step_flops,
        "memory_seconds": float(step.memory_seconds),
        "compute_seconds": None if compute is None else float(compute),
        "bound": step.bound,
        "tokens_per_second_per_sequence": float(step.tokens_per_second_per_sequence),
        "tokens_per_second": float(step.tokens_per_second),
    }


def _fit_grid(
    name: str,
    gpu: Gpu,
    fit: CacheFit,
    utilisation: Fraction,
    tp: int,
    serving: EngineSetup,
    vllm: VllmMemory | None = None,
) -> Grid:
    """The budget, the weights, what is left, and the largest batch and context."""
    from costcalc.render import Grid
    from costcalc.units import format_percent

    blocks = serving.name == "vllm"
    largest_batch = "no bound" if fit.largest_batch is None else f"{fit.largest_batch:,}"
    rows = [[f"memory {gpu.key} reports", f"{gpu.memory_bytes:,}"]]
    if not blocks:
        rows.append(["reserve (driver, CUDA context)", f"{fit.reserve:,}"])
    rows += [
        [
            "memory budget (ceil(utilisation x memory))"
            if blocks
            else "memory budget (utilisation x the rest)",
            f"{fit.budget:,}",
        ],
        ["model buffer" if serving.name == "llamacpp" else "weights", f"{fit.weights:,}"],
        ["left for the cache" + (" (at most)" if blocks else ""), f"{fit.free:,}"],
        [f"largest batch at {fit.context:,} tokens", largest_batch],
        [f"largest context at batch {fit.batch:,}", f"{fit.largest_context:,}"],
    ]
    if vllm is not None and vllm.max_concurrency is not None:
        rows += [
            [f"vLLM blocks of {vllm.block_size} tokens (at most)", f"{vllm.num_blocks:,}"],
            [
                f"vLLM maximum concurrency at {fit.context:,} tokens (at most)",
                f"{float(vllm.max_concurrency):,.2f}x",
            ],
        ]
    told = f"as {gpu.reported_by} reports it" if gpu.reported_by else "its datasheet's"
    cache = {
        "transformers": "The cache (KV cache at the tokens each block keeps, and recurrent "
        "state) fits",
        "llamacpp": "llama.cpp's KV caches (its cells for -c B x T -np B, docs/engines.md) and "
        "output buffer fit",
        "vllm": "vLLM's KV cache blocks (docs/engines.md) fit",
    }[serving.name]
    if blocks:
        notes = [
            f"{cache} beside the weights in ceil({format_percent(utilisation)} x "
            f"{gpu.memory_bytes:,}) bytes ({told}), vLLM's request_memory; its profile run "
            "also takes from it what costcalc cannot measure (the forward's peak activations, "
            "memory outside PyTorch's allocator, CUDA graphs), so the largest batch and context "
            f"are upper bounds. The context is at most the model's {fit.positions:,} positions."
        ]
    else:
        notes = [
            f"{cache} beside the weights in {format_percent(utilisation)} of what "
            f"{gpu.key}'s {gpu.memory_bytes:,} bytes ({told}) leave once {fit.reserve:,} are set "
            "aside for the driver and the CUDA context (--reserve SIZE); the context is at most "
            f"the model's {fit.positions:,} positions. Not counted: activations of the forward "
            + (
                "and CUDA graphs, which vLLM also takes from it."
                if serving.name == "transformers"
                else "(llama.cpp's compute buffer)."
            )
        ]
    if fit.free < 0:
        notes.append("The weights alone do not fit: nothing is left for the cache.")
    where = gpu.key if tp == 1 else f"each of {tp} x {gpu.key} (its shard)"
    return Grid(f"What fits on {where} beside {name}'s weights (bytes)", ["", "value"], rows, notes)


def _decode_grids(name: str, devices: str, context: int, steps: list[DecodeStep]) -> list[Grid]:
    """Decode tokens/s by batch: a table (bound, step time, rates) and a bar chart of the
    aggregate rate (a memory-bound bar in full blocks, a compute-bound one shaded)."""
    from costcalc.cli.memory import bar
    from costcalc.render import Grid

    moe = bool(steps[0].experts)
    rows = [
        [
            f"{s.batch:,}",
            *([" + ".join(_experts_cell(e) for e in s.experts)] * moe),
            s.bound,
            _duration(s.seconds),
            f"{float(s.tokens_per_second_per_sequence):,.1f}",
            f"{float(s.tokens_per_second):,.1f}",
        ]
        for s in steps
    ]
    title = f"Decode of {name} on {devices} by batch, at {context:,} tokens (ESTIMATE)"
    columns = ["batch", *(["experts per layer"] * moe), "bound", "step"]
    columns += ["tokens/s per sequence", "tokens/s"]
    notes = [
        "Batches 1, 2, 4, ... up to the largest whose cache fits. Memory-bound: the step reads "
        "the weights and every sequence's cache; compute-bound: its FLOPs at the dense peak "
        "take longer."
        + (" Experts per layer: the distinct experts the batch runs (expected)." if moe else "")
    ]
    top = max(s.tokens_per_second for s in steps)
    bars = []
    for s in steps:
        cells = bar(s.tokens_per_second / top)
        bars.append(
            [
                f"B={s.batch:,}",
                f"{float(s.tokens_per_second):,.0f}",
                cells if s.bound == "memory" else cells.replace("█", "▓"),
            ]
        )
    legend = ["Bars: aggregate tokens/s; █ memory-bound, ▓ compute-bound."]
    chart = Grid(
        f"Decode tokens/s of {name} by batch", ["", "tokens/s", ""], bars, legend, chart=True
    )
    return [Grid(title, columns, rows, notes), chart]


def _budget_alone(budget: int, models: list[LoadedModel], fmt: OutputFormat) -> None:
    """``plan --budget`` without --tokens or --prompt: the compute-optimal size, and each model
    named beside it (no model is needed)."""
    from costcalc.plan import CHINCHILLA_RULE, compute_optimal
    from costcalc.results import model_header

    optimal, grid = _chinchilla(budget, models)
    if models:
        data = [
            {**model_header(m), "compute_optimal": own}
            for m, own in zip(models, optimal, strict=True)
        ]
        emit(fmt, data[0] if len(data) == 1 else data, [grid])
        return
    n, d = compute_optimal(budget)
    own = {"budget_flops": budget, "parameters": n, "tokens": d, "rule": CHINCHILLA_RULE}
    emit(fmt, {"compute_optimal": own}, [grid])


def _chinchilla(budget: int, models: list[LoadedModel]) -> tuple[list[dict[str, Any]], Grid]:
    """The compute-optimal size for ``budget`` and, beside it, each model named: its own
    parameters N and the tokens C / (6 N) the budget trains it on by the same rule (the
    compute-optimal size does not depend on the model, so the table says where each stands).
    One record per model."""
    from costcalc.params import total_params
    from costcalc.plan import CHINCHILLA_RULE, compute_optimal
    from costcalc.render import Grid

    n, d = compute_optimal(budget)
    data = {"budget_flops": budget, "parameters": n, "tokens": d, "rule": CHINCHILLA_RULE}
    own = [total_params(model.spec) for model in models]
    records = [{**data, "model_parameters": p, "model_tokens": budget // (6 * p)} for p in own]
    rows = [
        ["parameters", f"{n:,}", *(f"{p:,}" for p in own)],
        ["tokens", f"{d:,}", *(f"{budget // (6 * p):,}" for p in own)],
    ]
    grid = Grid(
        f"Compute-optimal for {budget:,} FLOPs",
        ["", "N_opt, D_opt", *(model.name for model in models)],
        rows,
        [
            f"{CHINCHILLA_RULE}: N = sqrt(C / 120). A model's column: its own N, and the "
            "tokens C / (6 N) the budget trains it on (rounded down)."
        ],
    )
    return records, grid


def _duration(seconds: Fraction) -> str:
    """Seconds in the largest fitting unit: 3.2 ms, 41.7 s, 5.3 h, 12.1 days."""
    s = float(seconds)
    for unit, size in (("days", 86_400), ("h", 3_600), ("min", 60), ("s", 1)):
        if s >= size:
            return f"{s / size:,.1f} {unit}"
    return f"{s * 1000:,.2f} ms"
