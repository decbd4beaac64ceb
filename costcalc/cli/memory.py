"""`costcalc memory`: exact bytes of weights, training state and KV cache, and what fits where."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Annotated

import typer

from costcalc.cli.common import (
    ENGINE_PANEL,
    BatchedTokensOption,
    BlockSizeOption,
    CacheTypeKOption,
    CacheTypeVOption,
    EngineOption,
    ExplainOption,
    FormatOption,
    KvCacheMemoryOption,
    SwaFullOption,
    UnitsOption,
    count_option,
    emit,
    reserve_option,
    size_option,
    user_errors,
)
from costcalc.cli.models import ModelSelection, takes_models
from costcalc.engines.vllm import DEFAULT_UTILISATION
from costcalc.render import OutputFormat

if TYPE_CHECKING:
    from costcalc.memory_results import MemoryResult
    from costcalc.parallel import ParallelPlan
    from costcalc.render import Grid
    from costcalc.spec import ModelSpec
    from costcalc.units import UnitSystem

BAR_WIDTH = 30
STACK_WIDTH = 24
"""Cells of a stacked per-GPU bar (narrower, so a 60-column terminal shows it whole)."""
STACK_GLYPHS: dict[str, str] = {
    "weights": "█",
    "gradients": "▓",
    "optimizer": "▒",
    "activations": "░",
}
UNIT_HEADERS = {"si": "SI (10^3)", "iec": "binary (2^10)"}
PARALLEL_PANEL = "Parallelism (training, or serving as vLLM shards)"
RESERVE_HELP = (
    "Memory set aside for the driver and the CUDA context, like 1GiB or 0 (default with --gpu: "
    "its reported memory less the CUDA-visible total, + 512MiB; 1GiB where unknown; none with "
    "--fits)."
)
DEFAULT_SHARE = f"{float(DEFAULT_UTILISATION):g}"
"""vLLM's default ``gpu_memory_utilization`` as the options write it: 0.92."""
GpuUtilisationOption = Annotated[
    str | None,
    typer.Option(
        "--gpu-memory-utilization",
        metavar="SHARE",
        help=f"vLLM's --gpu-memory-utilization of --gpu / --fits memory (default {DEFAULT_SHARE}): "
        "its KV budget, less the weights, an upper bound.",
        rich_help_panel=ENGINE_PANEL,
    ),
]
ATTENTION_HELP = (
    "Attention kernel of training: sdpa (default, as transformers), flash, or eager (keeps the "
    "T x T scores)."
)


@takes_models
def memory(
    models: ModelSelection,
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            help="Weights: fp32, bf16, fp16, or a quantized format with its scales (nf4, "
            "llm-int8, gptq-int4:g128, awq-int4, fp8-block, mxfp4, nvfp4, gguf:Q4_K_M, ...; "
            "docs/quantization.md); fp8, int8, int4 are raw, no scales. Default: as the "
            "checkpoint stores them (its quantization_config), else bf16.",
        ),
    ] = None,
    train: Annotated[
        bool, typer.Option("--train", help="Training: gradients, optimizer state, activations.")
    ] = False,
    optimizer: Annotated[
        str | None,
        typer.Option("--optimizer", help="adamw (default), sgd, sgd-momentum or adafactor."),
    ] = None,
    mixed_precision: Annotated[
        bool | None,
        typer.Option(
            "--mixed-precision/--no-mixed-precision",
            help="fp32 master weights and optimizer state next to 16-bit weights "
            "(default: on for bf16/fp16 training).",
        ),
    ] = None,
    batch: Annotated[int, count_option("--batch", "-B", help="Sequences B.")] = 1,
    length: Annotated[
        int | None,
        count_option(
            "--length",
            "-T",
            help="Tokens T per sequence (inference default: the context; training needs it).",
        ),
    ] = None,
    kv_dtype: Annotated[
        str | None,
        typer.Option("--kv-dtype", help="KV-cache dtype (default: the weights' float dtype)."),
    ] = None,
    recompute: Annotated[
        str | None,
        typer.Option(
            "--recompute",
            metavar="MODE",
            help="Activation recomputation: none (default), selective or full.",
        ),
    ] = None,
    attention: Annotated[
        str | None,
        typer.Option(
            "--attention",
            metavar="KERNEL",
            help=ATTENTION_HELP,
        ),
    ] = None,
    explain: ExplainOption = False,
    fits: Annotated[
        int | None,
        size_option(
            "--fits",
            "--gpu-memory",
            help="Device memory, like 24GiB or 80GB: does it fit? Exit 1 when it does not.",
        ),
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu",
            metavar="NAME",
            help="A GPU of `costcalc gpus` (its key or the name nvidia-smi prints): --fits the "
            "memory it reports, less --reserve.",
        ),
    ] = None,
    reserve: Annotated[int | None, reserve_option("--reserve", help=RESERVE_HELP)] = None,
    gpus: Annotated[
        int | None,
        count_option(
            "--gpus",
            metavar="N",
            help="GPUs in all, figures per GPU: training's DP x TP x PP x CP, each running "
            "--batch sequences per micro-batch; serving's DP-attention x PP x TP.",
            rich_help_panel=PARALLEL_PANEL,
        ),
    ] = None,
    zero: Annotated[
        int | None,
        typer.Option(
            "--zero",
            metavar="STAGE",
            help="DeepSpeed ZeRO stage: 1 shards optimizer state (fp32 masters included), "
            "2 also gradients, 3 also parameters.",
            rich_help_panel=PARALLEL_PANEL,
        ),
    ] = None,
    fsdp: Annotated[
        str | None,
        typer.Option(
            "--fsdp",
            metavar="MODE",
            help="PyTorch FSDP sharding: full, grad-op or hybrid (full within a node).",
            rich_help_panel=PARALLEL_PANEL,
        ),
    ] = None,
    node_gpus: Annotated[
        int | None,
        count_option(
            "--node-gpus",
            metavar="G",
            help="GPUs per node: the shard group of --fsdp hybrid.",
            rich_help_panel=PARALLEL_PANEL,
        ),
    ] = None,
    tp: Annotated[
        int | None,
        count_option(
            "--tp",
            metavar="T",
            help="Tensor parallel over T GPUs: training in Megatron-LM's layout (vocab padded "
            "to 128 x T), serving in vLLM's (vocab padded to 64, KV heads replicated when "
            "fewer than T, MLA's latent cache on every GPU).",
            rich_help_panel=PARALLEL_PANEL,
        ),
    ] = None,
    pp: Annotated[
        int | None,
        count_option(
            "--pp",
            metavar="P",
            help="Pipeline parallel over P stages of L / P layers (training 1F1B; serving as "
            "vLLM's get_pp_indices splits them); the largest stage is shown.",
            rich_help_panel=PARALLEL_PANEL,
        ),
    ] = None,
    sp: Annotated[
        bool,
        typer.Option(
            "--sp",
            help="Sequence parallelism: norm and dropout activations split over the TP ranks.",
            rich_help_panel=PARALLEL_PANEL,
        ),
    ] = False,
    micro_batches: Annotated[
        int | None,
        count_option(
            "--micro-batches",
            metavar="M",
            help="Micro-batches per step under --pp (default P); stage s holds min(M, P - s).",
            rich_help_panel=PARALLEL_PANEL,
        ),
    ] = None,
    ep: Annotated[
        int | None,
        count_option(
            "--ep",
            metavar="E",
            help="Expert parallel over E GPUs: X / E experts of each MoE layer per GPU "
            "(training: E of the data-parallel ranks; serving: vLLM's "
            "--enable-expert-parallel, E = TP x DP-attention).",
            rich_help_panel=PARALLEL_PANEL,
        ),
    ] = None,
    cp: Annotated[
        int | None,
        count_option(
            "--cp",
            metavar="C",
            help="Context parallel over C GPUs, Megatron-Core's: T / C tokens of each sequence "
            "per GPU (T divisible by 2C), ring attention.",
            rich_help_panel=PARALLEL_PANEL,
        ),
    ] = None,
    dp_attention: Annotated[
        int | None,
        count_option(
            "--dp-attention",
            metavar="D",
            help="Serving: D data-parallel replicas of attention (vLLM's "
            "--data-parallel-size), each its own TP group and requests (--batch each); "
            "the experts spread over all D x TP GPUs.",
            rich_help_panel=PARALLEL_PANEL,
        ),
    ] = None,
    engine: EngineOption = None,
    cache_type_k: CacheTypeKOption = None,
    cache_type_v: CacheTypeVOption = None,
    swa_full: SwaFullOption = False,
    block_size: BlockSizeOption = None,
    max_num_batched_tokens: BatchedTokensOption = None,
    kv_cache_memory: KvCacheMemoryOption = None,
    gpu_memory_utilization: GpuUtilisationOption = None,
    units: UnitsOption = "iec",
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Memory a model needs: weights and KV cache for inference; with --train, gradients,
    optimizer state, master weights and the activations transformers saves for backward.

    Every byte count is exact, but activations of blocks not measured and under --tp, an
    ESTIMATE (Korthikanti et al. 2022). With --fits, says whether the total fits and by how
    much; the exit code is 1 when it does not.
    """
    from costcalc.cli.workload import warn_past_context
    from costcalc.engines.dispatch import engine_setup
    from costcalc.errors import UsageError
    from costcalc.gpus import device_memory
    from costcalc.memory import memory_setup
    from costcalc.memory_results import memory_result, parallel_plans
    from costcalc.plan import parse_fraction

    with user_errors():
        unit_system = _unit_system(units)
        capacity = device_memory(fits, gpu, reserve)
        serving = engine_setup(
            engine,
            cache_type_k,
            cache_type_v,
            swa_full,
            block_size,
            max_num_batched_tokens,
            kv_cache_memory,
            parse_fraction(gpu_memory_utilization, "GPU memory utilization")
            if gpu_memory_utilization is not None
            else None,
            None if capacity is None else capacity.total,
        )
        setup = memory_setup(
            dtype=dtype,
            train=train,
            optimizer=optimizer,
            mixed_precision=mixed_precision,
            batch=batch,
            length=length,
            kv_dtype=kv_dtype,
            recompute=recompute,
            attention=attention,
            engine=serving,
        )
        plan, shards = parallel_plans(
            train, gpus, zero, fsdp, node_gpus, tp, pp, sp, micro_batches, ep, cp, dp_attention
        )
        if serving.name != "transformers" and (plan is not None or explain):
            what = "--explain shows the formula's rows" if explain else "it serves on one device"
            raise UsageError(f"--engine {serving.name}: {what}; drop the one or the other")
        if (plan is not None or shards is not None) and explain:
            raise UsageError(
                "--explain shows the whole model's formulas, not one GPU's share: drop "
                "--explain, or the parallel options"
            )
        loaded = models.load()
        warn_past_context(loaded, setup.length)
        results = [memory_result(model, setup, capacity, plan, shards) for model in loaded]
    data = [result.to_dict() for result in results]
    emit(
        fmt,
        data[0] if len(data) == 1 else data,
        [g for r in results for g in memory_grids(r, unit_system, explain)],
    )
    misses = [result for result in results if result.fits is False]
    for result in misses:
        shortfall = -(result.headroom or 0)
        typer.echo(
            f"does not fit: {result.model.name} needs {result.report.bytes_total:,} bytes, "
            f"{shortfall:,} ({_human(shortfall, unit_system)}) more than the "
            f"{result.capacity or 0:,} bytes given",
            err=True,
        )
    if misses:
        raise typer.Exit(1)


def _unit_system(units: str) -> UnitSystem:
    from costcalc.errors import UsageError

    if units == "si":
        return "si"
    if units == "iec":
        return "iec"
    raise UsageError(f"unknown units '{units}'; expected si (MB, GB) or iec (MiB, GiB)")


def _human(n: int, system: UnitSystem) -> str:
    from costcalc.units import format_bytes

    return format_bytes(n, system)


def bar(share: Fraction, width: int = BAR_WIDTH) -> str:
    """A share of the total as a bar of ``width`` cells (a thin mark for a non-zero sliver)."""
    filled = int(share * width + Fraction(1, 2))
    if filled == 0 and share > 0:
        return "▏".ljust(width, "·")
    return "█" * filled + "·" * (width - filled)


def memory_grids(result: MemoryResult, system: UnitSystem, explain: bool = False) -> list[Grid]:
    """One model's breakdown (a row per component, the total and, with a capacity, the headroom
    or the shortfall), with ``explain`` each row's formula, then a bar per component showing
    where the memory goes."""
    from costcalc.memory_explain import memory_explain
    from costcalc.render import Grid
    from costcalc.units import format_percent

    report = result.report
    components = result.components()
    rows = [
        [
            c.label,
            f"{c.elements:,}" if c.elements is not None else "",
            c.dtype or "",
            f"{c.bytes:,}",
            _human(c.bytes, system),
        ]
        for c in components
    ]
    total = report.bytes_total
    label = "total (incl. estimate)" if result.estimated_activations else "total"
    rows.append([label, "", "", f"{total:,}", _human(total, system)])
    emphasis = frozenset({len(rows) - 1})
    if result.capacity is not None:
        headroom = result.headroom or 0
        verdict = "headroom" if headroom >= 0 else "short by (does not fit)"
        rows.append(
            ["device memory", "", "", f"{result.capacity:,}", _human(result.capacity, system)]
        )
        rows.append([verdict, "", "", f"{abs(headroom):,}", _human(abs(headroom), system)])
    columns = ["", "elements", "dtype", "bytes", UNIT_HEADERS[system]]
    title = f"Memory of {result.model.name}: {_mode(result)}"
    if result.plan is not None:
        title = f"Memory per GPU of {result.model.name}: {_mode(result)}; {result.plan.label}"
    if result.serving is not None:
        shards = f"{result.serving.label}, as vLLM shards"
        title = f"Memory per GPU of {result.model.name}: {_mode(result)}; {shards}"
    table = Grid(title, columns, rows, _notes(result), emphasis)
    grids = [table]
    if explain:
        formulas = memory_explain(result.model.spec, report)
        labelled = [(c.key, c.label) for c in components] + [("total", label)]
        grids.append(
            Grid(
                f"How {result.model.name}'s memory is counted (bytes)",
                ["", "formula"],
                [[text, formulas.get(key, "see the notes")] for key, text in labelled],
            )
        )
    bars = [[c.label, format_percent(result.share(c)), bar(result.share(c))] for c in components]
    chart = Grid(f"Where {result.model.name}'s memory goes", ["", "share", ""], bars, chart=True)
    if result.plan is not None:
        return [*grids, chart, _stage_chart(result, system)]
    return [*grids, chart]


def stacked_bar(parts: list[int], glyphs: list[str], scale: int, width: int = STACK_WIDTH) -> str:
    """``parts`` one after another on a bar of ``width`` cells for ``scale`` bytes, each ending
    at the cell nearest its running total (so the bar's length is the sum's), the rest dots."""
    cells, running, end = "", 0, 0
    for part, glyph in zip(parts, glyphs, strict=True):
        running += part
        stop = int(Fraction(running * width, scale) + Fraction(1, 2)) if scale else 0
        cells += glyph * (stop - end)
        end = stop
    return cells + "·" * (width - end)


def _stage_chart(result: MemoryResult, system: UnitSystem) -> Grid:
    """One GPU of each pipeline stage as a bar stacked by component, against the device memory
    when one is given."""
    from costcalc.memory_results import stacked_parts
    from costcalc.render import Grid

    plan = result.plan
    assert plan is not None
    stages = [stacked_parts(report) for report in result.stages]
    totals = [report.bytes_total for report in result.stages]
    scale = max([*totals, result.capacity or 0])
    glyphs = [STACK_GLYPHS[name] for name, _ in stages[0]]
    rows = []
    for number, (parts, total) in enumerate(zip(stages, totals, strict=True), 1):
        label = f"stage {number}" if plan.pp > 1 else "each GPU"
        bytes_ = [b for _, b in parts]
        rows.append([label, _human(total, system), stacked_bar(bytes_, glyphs, scale)])
    if result.capacity is not None:
        rows.append(
            [
                "GPU memory",
                _human(result.capacity, system),
                stacked_bar([result.capacity], ["─"], scale),
            ]
        )
    legend = ", ".join(f"{glyph} {name}" for name, glyph in STACK_GLYPHS.items())
    notes = [
        f"{legend} (optimizer with the fp32 master weights; activations with the logits and "
        "what else the backward holds, or the optimizer step's buffers when larger). "
        + ("One GPU of each pipeline stage." if plan.pp > 1 else "Every GPU holds the same.")
    ]
    title = f"Memory per GPU of {result.model.name}, by component"
    return Grid(title, ["", "total", ""], rows, notes, chart=True)


def _mode(result: MemoryResult) -> str:
    setup, length = result.report.setup, result.report.length
    if not setup.train:
        from costcalc.engines import ENGINE_WORDS

        name = None if result.report.engine is None else ENGINE_WORDS[result.report.engine.name]
        engine = f", as {name} allocates it" if name else ""
        return f"inference, B={setup.batch}, T={length:,}{engine}"
    mode = f"training with {setup.optimizer}, {setup.attention} attention, B={setup.batch}, "
    mode += f"T={length:,}"
    if result.plan is not None and result.plan.cp > 1:
        mode += f" ({result.plan.tokens(length):,} per GPU)"
    return mode + (f", mixed precision ({setup.dtype} + fp32)" if setup.mixed_precision else "")


def _notes(result: MemoryResult) -> list[str]:
    """The components' notes, how the config was read (the cache's window, say) and the
    device's reserve."""
    from costcalc.results import config_notes

    device = [] if result.device is None or result.device.note is None else [result.device.note]
    return _component_notes(result) + config_notes(result.model) + device


INFERENCE_UNCOUNTED = (
    "Not counted: the forward's activations and logits and the kernels' workspace, which grow "
    "with B x T, nor the driver and CUDA context (--gpu sets a reserve aside for those); "
    "`costcalc plan --prompt` weighs what fits beside the weights."
)
"""What inference memory leaves out (the headroom is before it)."""


def buffers_note(spec: ModelSpec, dtype: str) -> str:
    """What the weights leave out (measured for every golden model by
    tests/reference/make_buffers.py): buffers, tensors that are not parameters, with a
    sinusoidal position table's values, which costcalc knows
    (:func:`costcalc.anatomy.model.sinusoidal_table_elements`); in 16 bits, the parameters a
    class keeps in fp32 (``_keep_in_fp32_modules_strict``, and for fp16 ``_keep_in_fp32_modules``:
    ``PreTrainedModel._from_config`` and ``from_pretrained`` leave them in fp32)."""
    from costcalc.anatomy.model import sinusoidal_table_elements

    table = sinusoidal_table_elements(spec)
    known = (
        f" Its buffers include a sinusoidal position table, {spec.sinusoidal_rows:,} x "
        f"{spec.d_model:,} = {table:,} values (XGLM and Kosmos-2 make it in the weights' "
        "dtype, CTRL in fp32)."
        if table
        else ""
    )
    return (
        "Not counted: buffers, the tensors a loaded model holds beside its parameters "
        "(rotary frequencies, causal masks, sinusoidal position tables, router "
        "score-correction biases): 4,096 bytes or less in most models, up to 591,799,552 "
        "(MiniMax-Text-01)"
        + (
            "; nor the parameters transformers keeps in fp32 when it loads a model in 16 bits, "
            "2 bytes more each: the routers of DeepSeek-V3 and many other MoE models"
            if dtype in ("bf16", "fp16")
            else ""
        )
        + "."
        + known
        + " See docs/memory.md."
    )


def _component_notes(result: MemoryResult) -> list[str]:
    report, setup = result.report, result.report.setup
    weights = [note for note in (result.weights_note, result.stored_sentence) if note]
    shards: list[str] = []
    if result.serving is not None:
        from costcalc.engines.vllm_shards import shard_notes

        shards = shard_notes(result.model.spec, result.serving, result.stage)
    if report.engine is not None:
        return [*weights, *shards, *report.engine.notes()]
    buffers = buffers_note(result.model.spec, setup.dtype)
    if not setup.train:
        return [*weights, *shards, _kv_note(result), INFERENCE_UNCOUNTED, buffers]
    notes = weights + training_notes(
        result.model.spec, setup.batch, report.length, setup.recompute, setup.attention, setup.dtype
    )
    if result.plan is not None:
        if result.plan.cp > 1:
            notes = notes[2:]  # the parallel note says what ring attention keeps
        elif result.plan.tp > 1 or result.plan.pp > 1 or result.plan.ep > 1:
            notes = notes[1:]  # the activation formula is the parallel note's
        notes.append(_parallel_note(result))
        partition = "; of the sharded states, its partition" if result.plan.stage else ""
        notes.append(
            f"Elements are one GPU's, as its bytes are (its share of each tensor{partition}); "
            "the activations, tensors of several dtypes, are shown in bytes only."
        )
    if report.elements_optimizer_steps:
        notes.append(
            f"Optimizer state includes {report.elements_optimizer_steps:,} fp32 step scalars, "
            "one per parameter tensor (torch keeps them on the host unless fused)."
        )
    return [*notes, buffers]


def _experts_per_rank(spec: ModelSpec, ep: int) -> str:
    """X / E experts for each MoE layer's expert count X ("1 expert", "2 or 4 experts" when
    layers differ)."""
    from costcalc.units import plural

    counts = sorted({s.moe_experts // ep for s in spec.stacks if s.moe_experts is not None})
    fewer = "".join(f"{count:,} or " for count in counts[:-1])
    return fewer + plural(counts[-1], "expert")


def _parallel_note(result: MemoryResult) -> str:
    """How the plan divides the states, and what one GPU's figures leave out."""
    from costcalc.parallel import (
        fsdp_unsharded,
        padded_vocab,
        parallel_activation_formula,
    )
    from costcalc.units import plural

    plan, setup = result.plan, result.report.setup
    assert plan is not None
    spec = result.model.spec
    note = ""
    if plan.tp > 1 or plan.pp > 1 or plan.ep > 1:
        note = (
            f"Tensor parallel over {plan.tp} (Megatron-LM: q/k/v, FFN gate/up and down, "
            f"o_proj split; norms and row-parallel biases whole; vocab padded to "
            f"{padded_vocab(spec, plan.tp):,} = a multiple of 128 x {plan.tp}); pipeline stage "
            f"{result.stage + 1} of {plan.pp} (the largest; {spec.n_layers // plan.pp} layers "
            f"each), {plural(plan.in_flight(result.stage), 'micro-batch', 'micro-batches')} in "
            "flight (1F1B, Narayanan "
            "et al. 2021). "
            + (
                f"Expert parallel over {plan.ep}: {_experts_per_rank(spec, plan.ep)} of "
                "each MoE layer per GPU, each split as the TP ranks split a dense FFN; routers "
                "and shared experts whole. "
                if plan.ep > 1
                else ""
            )
        )
    if plan.cp > 1:
        note += _context_note(plan, result.report.length)
    if plan.tp > 1 or plan.pp > 1 or plan.ep > 1 or plan.cp > 1:
        note += (
            "Activations per GPU"
            + (", ESTIMATE (Korthikanti et al. 2022, Table 2): " if plan.tp > 1 else ": ")
            + parallel_activation_formula(spec, plan, setup.recompute, setup.attention, setup.dtype)
            + ". "
        )
    replicas = (
        f"{plan.dp * plan.cp} data- and context-parallel ranks (DP {plan.dp} x CP {plan.cp})"
        if plan.cp > 1
        else f"{plan.dp} data-parallel replicas"
    )
    if plan.stage == 0:
        return note + (
            f"Every one of the {replicas} holds its whole share of the model, its gradients and "
            "optimizer state; --batch sequences each."
        )
    sharded = {
        1: "optimizer state (fp32 masters included)",
        2: "optimizer state and gradients",
        3: "optimizer state, gradients and parameters",
    }[plan.stage]
    experts = plan.shard_gpus // plan.ep
    if plan.fsdp is None:
        return note + _deepspeed_note(result)
    note += (
        f"FSDP2 (torch 2.13 fully_shard, each layer a unit) over {plan.shard_gpus} GPUs: each "
        f"parameter's rows padded to a multiple of {plan.shard_gpus}, ceil(rows / "
        f"{plan.shard_gpus}) per GPU (FSDPParam)"
        + ("; the DP x CP ranks, as Megatron's distributed optimizer" if plan.cp > 1 else "")
        + (f"; the experts' over the {experts} GPUs holding the same ones" if plan.ep > 1 else "")
        + f": {sharded}"
        + (
            "; with mixed precision the shards are fp32 (MixedPrecisionPolicy(param_dtype="
            f"{result.report.setup.dtype}) casts them for the all-gather), so no separate masters"
            if result.report.setup.mixed_precision
            else ""
        )
        + "; one step scalar per tensor; --batch sequences per GPU. Not counted: the all-gather "
        "and reduce-scatter buffers."
    )
    if plan.stage == 3:
        u = fsdp_unsharded(spec, plan, result.stage)
        note += (
            f" Gathered layer: what the backward holds unsharded, in {setup.dtype}: the root "
            f"unit's {u.root:,} parameters (padded; not resharded after its forward), the "
            f"{u.root_grads:,} gradients of its final norm and head (produced first), "
            f"{u.layers} x {u.layer:,} parameters of the largest layer (the running one and "
            f"the one prefetched) and its {u.layer_grads:,} gradients."
        )
    return note


def _deepspeed_note(result: MemoryResult) -> str:
    """How DeepSpeed's ZeRO holds the states on one GPU, and its estimator's figure beside."""
    from costcalc.memory_results import deepspeed_dict
    from costcalc.zero import ZERO_SOURCE

    plan, report = result.plan, result.report
    assert plan is not None
    data = deepspeed_dict(result.model.spec, plan, result.stage, report)
    assert data is not None
    n = plan.shard_gpus
    if plan.stage == 3:
        layout = (
            f"ZeRO-3 over {n} GPUs as DeepSpeed allocates it: each parameter padded to a "
            f"multiple of {n}, ceil(n / {n}) of it per GPU for the 16-bit weights, the 16-bit "
            "gradients (grad_partitions_flat_buffer), the fp32 masters and the optimizer state; "
            "parameters of at most 1e5 elements also whole on every GPU; the reduce bucket "
            "(reduce_bucket_size 5e8) held throughout; while a layer runs, the largest module's "
            "params and grads whole and up to 5e7 prefetched params (stage3_prefetch_bucket_size, "
            "a bound); in the step, one sub-group's gradients (up to sub_group_size 1e9) "
            "flattened and cast to fp32."
        )
    else:
        layout = (
            f"ZeRO-{plan.stage} over {n} GPUs as DeepSpeed allocates it: the whole model in one "
            f"flat 16-bit buffer padded to a multiple of {2 * n} ({report.elements_weights:,} "
            f"elements), the fp32 masters and the optimizer state of 1 / {n} of it, the 16-bit "
            "gradients of the whole parameters that share touches (grads_in_partition, on the "
            "GPU that holds most), a 16-bit reduce bucket (reduce_bucket_size 5e8) during the "
            "backward, and in the step the gradient partition flattened and cast to fp32."
        )
    estimator = data["estimator"]
    if estimator is None:
        beside = " DeepSpeed has no estimator for ZeRO-1."
    else:
        beside = (
            f" DeepSpeed's {estimator['function']} gives {estimator['bytes']:,} bytes for the "
            f"model states; costcalc counts {data['model_states_bytes']:,} at the step "
            f"({estimator['difference_bytes']:+,}): the estimator counts 18 bytes per sharded "
            "element (2 16-bit grads, 4 fp32 grads, 4 masters, 8 moments) of an unpadded P / N, "
            "where the engine pads "
            + (
                "each parameter, keeps the small ones whole and the reduce bucket held, and "
                if plan.stage == 3
                else "the flat buffer, keeps the 16-bit gradients of whole touched parameters, "
            )
            + "flattens a 16-bit copy beside the fp32 gradient partition in the step."
        )
    experts = (
        f" The experts are a group of their own, over the {n // plan.ep} GPUs holding the "
        "same ones (DeepSpeed-MoE's expert data-parallel group)."
        if plan.ep > 1
        else ""
    )
    return f"{layout}{experts}{beside} Source: {ZERO_SOURCE}; --batch sequences per GPU."


def _context_note(plan: ParallelPlan, length: int) -> str:
    """How context parallelism splits each sequence, and what its attention keeps."""
    return (
        f"Context parallel over {plan.cp} (Megatron-Core): each sequence's {length:,} tokens in "
        f"{2 * plan.cp} chunks of {length // (2 * plan.cp):,}, two per GPU (chunks i and "
        f"{2 * plan.cp - 1} - i on GPU i), so each GPU's activations and logits are those of "
        f"{plan.tokens(length):,} tokens; ring attention keeps the queries, keys, values, output "
        "and log-sum-exp of its own tokens and no T x T scores; weights, gradients and optimizer "
        "state replicated over the CP ranks as over DP. "
    )


def training_notes(
    spec: ModelSpec, batch: int, length: int, recompute: str, attention: str, dtype: str
) -> list[str]:
    """The notes of every training table (``memory --train``, ``lora --train``): how the
    activations are counted, whether the T x T scores are stored, how the logits are counted."""
    from costcalc.activations import activation_note
    from costcalc.memory import LOGITS_SOURCE

    return [
        activation_note(spec, recompute, attention, dtype),
        _scores_note(spec, batch, length, recompute, attention, dtype),
        f"Logits are exact: {LOGITS_SOURCE}.",
    ]


def _scores_note(
    spec: ModelSpec, batch: int, length: int, recompute: str, attention: str, dtype: str
) -> str:
    """Whether the T x T attention scores are stored, and what they weigh under eager attention."""
    from costcalc.memory import attention_score_bytes
    from costcalc.memory_explain import scores_row

    scores = scores_row(spec, batch, length, dtype)
    if attention_score_bytes(spec, batch, length, recompute, attention, dtype):
        return f"--attention eager keeps the T x T scores, a row of their own: {scores} bytes."
    if recompute != "none":
        why = f"--recompute {recompute} runs the attention core again in the backward"
    else:
        why = f"--attention {attention} never stores them (its backward recomputes QK^T)"
    eager = f"eager attention without recomputation would keep {scores} bytes"
    return f"No T x T scores stored: {why}; {eager}."


def _kv_note(result: MemoryResult) -> str:
    """How the KV cache was counted: the classic formula for plain attention blocks alike, else
    each kind of block's layers x batch x cached tokens x elements per token; on one GPU of a
    serving plan, of its layers and key/value heads."""
    from costcalc.anatomy.attention import cached_heads
    from costcalc.engines.vllm_shards import rank_stacks
    from costcalc.macs import SKIPPED_WORDS, skipped_layers

    report, setup, spec = result.report, result.report.setup, result.model.spec
    kinds = spec.stacks
    if result.serving is not None:
        kinds = rank_stacks(spec, result.serving, result.stage)
    stacks = [stack for stack in kinds if stack.has_attention]
    if not stacks:
        return "No block caches keys and values; recurrent state, if any, does not grow with T."
    one = stacks[0]
    plain = one.v_head_dim is None and one.key_width == one.head_width
    plain = plain and one.kv_compress_rate is None
    if len(kinds) == 1 and one.mixer == "attention" and plain:
        capped = report.kv_cache_tokens < report.length
        window = f" (T capped by the sliding window of {one.sliding_window:,})" if capped else ""
        return (
            f"KV cache: 2 x L x B x T x KV-heads x head_dim = 2 x {one.n_layers} x "
            f"{setup.batch} x {report.kv_cache_tokens:,} x {cached_heads(one)} x "
            f"{one.head_width} elements of {report.kv_dtype}{window}."
        )
    terms = " + ".join(
        _kv_term(stack, setup.batch, report.length) for stack in stacks if stack.runs_on_text
    )
    compressed = any(stack.kv_compress_rate is not None for stack in stacks)
    kept = ", plus what a key compressor keeps" if compressed else ""
    skipped = skipped_layers(spec)
    also = f" The {skipped:,} {SKIPPED_WORDS}: nothing cached." if skipped else ""
    return (
        "KV cache, per kind of attention block: layers x B x cached tokens x elements per token "
        f"(keys and values, or MLA's latent){kept} = {terms} elements of {report.kv_dtype}.{also}"
    )


def _kv_term(stack: ModelSpec, batch: int, length: int) -> str:
    """One kind of block's cache: layers x B x (tokens x width [+ the compressor's])."""
    from costcalc.memory import (
        cached_layers,
        compressor_cache_elements,
        kv_width,
        stored_tokens,
    )

    kept = f"{stored_tokens(stack, length):,} x {kv_width(stack):,}"
    compressor = compressor_cache_elements(stack, length)
    if compressor:
        kept = f"({kept} + {compressor:,})"
    return f"{cached_layers(stack)} x {batch} x {kept}"
