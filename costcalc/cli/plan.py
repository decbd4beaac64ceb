"""`costcalc plan`: training time and GPU-hours on GPUs of the catalogue, compute-optimal
sizing, and inference rooflines."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Annotated

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
from costcalc.cli.memory import DEFAULT_SHARE, RESERVE_HELP
from costcalc.cli.models import ModelSelection, takes_models
from costcalc.render import OutputFormat

if TYPE_CHECKING:
    from costcalc.engines import EngineSetup
    from costcalc.engines.vllm import VllmMemory
    from costcalc.engines.vllm_shards import ServingPlan
    from costcalc.gpus import Gpu
    from costcalc.loaders import LoadedModel
    from costcalc.plan import CacheFit, DecodeStep
    from costcalc.plan_results import InferencePlan, PlanResult
    from costcalc.render import Grid
    from costcalc.routing import ExpertRead


@takes_models
def plan(
    models: ModelSelection,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu", metavar="NAME", help="A GPU of `costcalc gpus` (--budget alone needs none)."
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
        str | None,
        typer.Option(
            "--dtype",
            help="Weights: fp32, bf16, fp16, fp8, int8, int4 or a quantized format (nf4, "
            "gptq-int4, awq-int4, fp8-block, gguf:Q4_K_M, ...; docs/quantization.md); the "
            "peak is that of the dtype its kernels compute in. Default: bf16 for training; "
            "for inference as the checkpoint stores them (its quantization_config), else bf16.",
        ),
    ] = None,
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
        str | None,
        typer.Option(
            "--memory-utilisation",
            help="Share of the GPU's memory weights and cache may take (vLLM's "
            f"gpu_memory_utilization), like 0.92 or 92% (default {DEFAULT_SHARE}).",
        ),
    ] = None,
    reserve: Annotated[int | None, reserve_option("--reserve", help=RESERVE_HELP)] = None,
    tp: Annotated[
        int,
        count_option(
            "--tp",
            metavar="T",
            help="Inference tensor parallel over T GPUs, as vLLM shards the model: each holds "
            "and reads its shards of the weights and its key/value heads of the cache (MLA's "
            "latent whole), and all-reduces over the interconnect.",
        ),
    ] = 1,
    pp: Annotated[
        int,
        count_option(
            "--pp",
            metavar="P",
            help="Inference pipeline parallel over P stages (vLLM's get_pp_indices split); "
            "a token passes them in turn.",
        ),
    ] = 1,
    ep: Annotated[
        int | None,
        count_option(
            "--ep",
            metavar="E",
            help="Inference expert parallel (vLLM's --enable-expert-parallel): whole experts "
            "dealt over E = TP x DP-attention GPUs.",
        ),
    ] = None,
    dp_attention: Annotated[
        int,
        count_option(
            "--dp-attention",
            metavar="D",
            help="Inference data-parallel attention (vLLM's --data-parallel-size): D replicas, "
            "each decoding --batch sequences, the experts over all D x TP GPUs.",
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
    from costcalc.plan_results import plan_result, plan_setup

    with user_errors():
        setup = plan_setup(
            gpu,
            tokens=tokens,
            length=length,
            gpus=gpus,
            mfu=mfu,
            dtype=dtype,
            budget=budget,
            prompt=prompt,
            generate=generate,
            batch=batch,
            utilisation=utilisation,
            reserve=reserve,
            tp=tp,
            pp=pp,
            ep=ep,
            dp_attention=dp_attention,
            kv_dtype=kv_dtype,
            engine=engine,
            cache_type_k=cache_type_k,
            cache_type_v=cache_type_v,
            swa_full=swa_full,
            block_size=block_size,
            max_num_batched_tokens=max_num_batched_tokens,
        )
        results = [plan_result(m, setup) for m in models.load()]
    data = [r.to_dict() for r in results]
    grids = [g for r in results for g in plan_grids(r)]
    if budget is not None:
        grids.append(_chinchilla(budget, results))
    emit(fmt, data[0] if len(data) == 1 else data, grids)


def plan_grids(result: PlanResult) -> list[Grid]:
    """The training table, then the inference roofline, what fits and decode by batch."""
    from costcalc.plan import KAPLAN_RULE
    from costcalc.render import Grid
    from costcalc.results import config_notes

    grids: list[Grid] = []
    name, gpu, dtype = result.model.name, result.gpu, result.dtype
    training = result.training
    if gpu is None:
        return grids
    if training is not None:
        time = training.time
        rows = [
            ["training FLOPs (exact MACs x 2)", f"{training.flops:,}"],
            [KAPLAN_RULE, f"{training.flops_6n:,}"],
            [f"peak per GPU ({dtype}, dense), FLOP/s", f"{time.peak:,}"],
            ["wall time", _duration(time.seconds)],
            ["GPU-hours", f"{float(time.gpu_hours):,.0f}"],
        ]
        title = (
            f"Training {name} on {training.tokens:,} tokens (T={training.length:,}): "
            f"{time.gpus} x {gpu.key} at {float(time.mfu):.0%} MFU"
        )
        notes = [
            "FLOPs: forward + backward = 3 x forward MACs per sequence, plus the QK^T the sdpa "
            "backward recomputes, x 2 FLOPs per MAC, x tokens / T. Time = FLOPs / (GPUs x peak "
            f"x MFU); the MFU is an assumption, not a measurement. Peak: {gpu.source}."
        ]
        grids.append(Grid(title, ["", "value"], rows, notes))
    if result.inference is not None:
        grids += _inference_grids(result.model, gpu, result.inference)
    if not grids:
        return grids
    first = grids[0]  # how the config was read, under the first table
    return [first._replace(notes=[*first.notes, *config_notes(result.model)]), *grids[1:]]


def _inference_grids(model: LoadedModel, gpu: Gpu, plan: InferencePlan) -> list[Grid]:
    from costcalc.render import Grid
    from costcalc.stored_weights import weights_note

    name = model.name
    r, layout, kernels, context = plan.roofline, plan.layout, plan.kernels, plan.context
    prefill = r.prefill_seconds
    rows = [
        [
            "prefill time (compute-bound)",
            "not known" if prefill is None else _duration(prefill),
        ],
        ["bytes read per decode step", f"{r.decode.step_bytes:,}"],
    ]
    moe = bool(r.decode.experts)
    if moe:
        for read in r.decode.experts:
            what = "experts read per layer" + ("" if read.exact_count else " (expected)")
            rows.append([f"{what}, {read.layers} layers", _experts_cell(read)])
        rows.append(["bytes read per decode step, all experts", f"{r.decode.all_experts_bytes:,}"])
    if r.decode.collective_bytes:
        rows.append(["bytes each GPU sends per decode step", f"{r.decode.collective_bytes:,}"])
        if r.decode.link is not None:
            rows.append(["their time over the link", _duration(r.decode.collective_seconds)])
    per_sequence = f"{float(r.decode.tokens_per_second_per_sequence):,.1f}"
    if plan.batch == 1:  # one sequence: its tokens/s are the batch's
        rows.append([f"decode tokens/s, batch 1 ({r.decode.bound}-bound)", per_sequence])
    else:
        rows += [
            [f"decode tokens/s per sequence ({r.decode.bound}-bound)", per_sequence],
            [f"decode tokens/s, batch {plan.batch}", f"{float(r.decode.tokens_per_second):,.1f}"],
        ]
    where = (
        "one GPU holding the whole model"
        if layout.gpus == 1
        else f"one GPU of {layout.label}, laid out as vLLM shards the model"
    )
    notes = [
        f"Roofline ESTIMATES on {where}: prefill = forward FLOPs / dense peak; a decode step "
        f"reads the weights and the cache at {context:,} tokens once over the memory "
        "bandwidth, or does its FLOPs at the dense peak, whichever takes longer. Real kernels "
        "reach less of either peak.",
        f"Compute: {kernels.kernels}; "
        + (
            f"{gpu.key}'s dense {kernels.dtype} peak, {kernels.peak:,} FLOP/s."
            if kernels.peak is not None
            else f"{kernels.missing}: prefill has no time, and the decode rates are its "
            "memory bound alone (upper bounds: a step whose FLOPs take longer cannot be told)."
        ),
    ]
    stored = weights_note(model, plan.dtype)
    if stored is not None:
        notes.append(stored)
    if moe:
        notes.append(_experts_note(r.decode.experts))
    if layout.gpus > 1:
        notes.append(_layout_note(gpu, layout))
    devices = gpu.key if layout.gpus == 1 else f"{layout.gpus} x {gpu.key}"
    title = (
        f"Inference of {name} on {devices} ({plan.dtype}), B={plan.batch}, prompt {plan.prompt:,}"
    )
    grids = [
        Grid(title, ["", "ESTIMATE"], rows, notes),
        _fit_grid(name, gpu, plan.fit, plan.utilisation, layout, plan.serving, plan.vllm),
    ]
    if plan.steps:
        grids += _decode_grids(name, devices, context, list(plan.steps))
    return grids


def _layout_note(gpu: Gpu, layout: ServingPlan) -> str:
    """How one GPU of many was counted: the shards, the FLOPs, the collectives."""
    from costcalc.engines.vllm_shards import VERSION

    if gpu.interconnect_bandwidth is None:
        link = f"not timed: the catalogue gives no interconnect for {gpu.key}"
    else:
        link = (
            f"timed over {gpu.interconnect or 'the link'} at "
            f"{gpu.interconnect_bandwidth // 2:,} bytes/s one way (half the catalogue's "
            f"{gpu.interconnect_bandwidth:,} both ways), latency not counted, not overlapped"
        )
    pipeline = (
        f" A token passes the {layout.pp} stages in turn: the step is {layout.pp} x the "
        "slowest stage's (vLLM overlaps P batches; not counted)."
        if layout.pp > 1
        else ""
    )
    replicas = (
        f" Each of the {layout.dp} data-parallel attention replicas decodes --batch sequences; "
        "tokens/s counts all of them."
        if layout.dp > 1
        else ""
    )
    return (
        f"Each GPU holds and reads its {VERSION} shards of the weights (docs/memory.md) and "
        "the cache of its layers and key/value heads (MLA's latent whole on every TP GPU), and "
        f"does 1 / (TP x PP) of its replica's FLOPs. Collectives per decode step, an ESTIMATE "
        "of NCCL's ring algorithms (2 (N - 1) / N x the bytes per GPU): each layer's attention "
        "and FFN outputs all-reduced over the TP GPUs, an MoE layer's tokens all-gathered and "
        f"reduce-scattered over TP x DP-attention with data-parallel attention; {link}."
        + pipeline
        + replicas
    )


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


def _fit_grid(
    name: str,
    gpu: Gpu,
    fit: CacheFit,
    utilisation: Fraction,
    layout: ServingPlan,
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
    where = gpu.key if layout.gpus == 1 else f"each of {layout.gpus} x {gpu.key} (its shards)"
    if layout.pp > 1:
        where += f", pipeline stage {fit.stage + 1} of {layout.pp} (the fewest sequences)"
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


def _chinchilla(budget: int, results: list[PlanResult]) -> Grid:
    """The compute-optimal size for ``budget`` and, beside it, each model named: its own
    parameters N and the tokens C / (6 N) the budget trains it on by the same rule (the
    compute-optimal size does not depend on the model, so the table says where each stands)."""
    from costcalc.plan import CHINCHILLA_RULE, compute_optimal
    from costcalc.render import Grid

    n, d = compute_optimal(budget)
    own = [result.budget_share for result in results]
    rows = [
        ["parameters", f"{n:,}", *(f"{share[0]:,}" for share in own if share)],
        ["tokens", f"{d:,}", *(f"{share[1]:,}" for share in own if share)],
    ]
    return Grid(
        f"Compute-optimal for {budget:,} FLOPs",
        ["", "N_opt, D_opt", *(result.model.name for result in results)],
        rows,
        [
            f"{CHINCHILLA_RULE}: N = sqrt(C / 120). A model's column: its own N, and the "
            "tokens C / (6 N) the budget trains it on (rounded down)."
        ],
    )


def _duration(seconds: Fraction) -> str:
    """Seconds in the largest fitting unit: 3.2 ms, 41.7 s, 5.3 h, 12.1 days."""
    s = float(seconds)
    for unit, size in (("days", 86_400), ("h", 3_600), ("min", 60), ("s", 1)):
        if s >= size:
            return f"{s / size:,.1f} {unit}"
    return f"{s * 1000:,.2f} ms"
