"""`costcalc lora`: what LoRA adds and trains, as peft counts it, and what training it needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from costcalc.cli.common import (
    FormatOption,
    UnitsOption,
    count_option,
    emit,
    reserve_option,
    size_option,
    user_errors,
)
from costcalc.cli.memory import ATTENTION_HELP, RESERVE_HELP, training_notes
from costcalc.cli.models import ModelSelection, takes_models
from costcalc.render import OutputFormat

if TYPE_CHECKING:
    from costcalc.loaders import LoadedModel
    from costcalc.lora import LoraReport
    from costcalc.lora_memory import LoraMemory
    from costcalc.render import Grid
    from costcalc.units import UnitSystem

TRAIN_PANEL = "Training memory (with --train)"
PARALLEL_PANEL = "Parallelism (with --train)"


def _names(text: str | None) -> list[str]:
    """A comma-separated list, blanks and repeats dropped: peft matches each module once, however
    often the list names it."""
    return list(dict.fromkeys(part.strip() for part in (text or "").split(",") if part.strip()))


@takes_models
def lora(
    models: ModelSelection,
    targets: Annotated[
        str | None,
        typer.Option(
            "--targets",
            "-t",
            metavar="NAMES",
            help="Modules to adapt, by the family's names (q_proj,v_proj; GPT-2 c_attn; tables "
            "such as embed_tokens), matched as name suffixes as peft does; or all-linear (every "
            "linear layer but the head).",
        ),
    ] = None,
    rank: Annotated[int, count_option("--rank", "-r", help="LoRA rank r (peft's default 8).")] = 8,
    target_parameters: Annotated[
        str | None,
        typer.Option(
            "--target-parameters",
            metavar="NAMES",
            help="Stacked experts and bare router weights, as peft's target_parameters "
            "(experts.gate_up_proj,experts.down_proj).",
        ),
    ] = None,
    bias: Annotated[
        str, typer.Option("--bias", help="Biases trained: none, all or lora_only.")
    ] = "none",
    modules_to_save: Annotated[
        str | None,
        typer.Option(
            "--modules-to-save",
            metavar="NAMES",
            help="Modules trained in full as a copy beside the frozen original (lm_head, "
            "embed_tokens).",
        ),
    ] = None,
    dora: Annotated[
        bool, typer.Option("--dora", help="DoRA: a magnitude vector per adapted linear.")
    ] = False,
    train: Annotated[
        bool,
        typer.Option(
            "--train", help="Memory of training: frozen base, adapters, gradients, optimizer."
        ),
    ] = False,
    base_dtype: Annotated[
        str | None,
        typer.Option(
            "--base-dtype",
            help="Frozen base: bf16 (default), fp16, fp32, int8 (LLM.int8) or nf4 (QLoRA).",
            rich_help_panel=TRAIN_PANEL,
        ),
    ] = None,
    double_quant: Annotated[
        bool | None,
        typer.Option(
            "--double-quant/--no-double-quant",
            help="nf4: quantize the absmax too (default: on, as QLoRA does).",
            rich_help_panel=TRAIN_PANEL,
        ),
    ] = None,
    adapter_dtype: Annotated[
        str | None,
        typer.Option(
            "--adapter-dtype",
            help="Adapters, their gradients and moments: fp32 (default), bf16 or fp16.",
            rich_help_panel=TRAIN_PANEL,
        ),
    ] = None,
    optimizer: Annotated[
        str | None,
        typer.Option(
            "--optimizer",
            help="adamw (default), sgd or sgd-momentum.",
            rich_help_panel=TRAIN_PANEL,
        ),
    ] = None,
    batch: Annotated[
        int | None,
        count_option("--batch", "-B", help="Sequences B.", rich_help_panel=TRAIN_PANEL),
    ] = None,
    length: Annotated[
        int | None,
        count_option(
            "--length",
            "-T",
            help="Tokens T per sequence (required with --train).",
            rich_help_panel=TRAIN_PANEL,
        ),
    ] = None,
    recompute: Annotated[
        str | None,
        typer.Option(
            "--recompute",
            help="Activation recomputation: none (default), selective or full.",
            rich_help_panel=TRAIN_PANEL,
        ),
    ] = None,
    attention: Annotated[
        str | None,
        typer.Option(
            "--attention",
            metavar="KERNEL",
            help=ATTENTION_HELP,
            rich_help_panel=TRAIN_PANEL,
        ),
    ] = None,
    fits: Annotated[
        int | None,
        size_option(
            "--fits",
            "--gpu-memory",
            help="Device memory, like 24GiB: does training fit? Exit 1 when it does not.",
            rich_help_panel=TRAIN_PANEL,
        ),
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu",
            metavar="NAME",
            help="A GPU of `costcalc gpus`: --fits the memory it reports, less --reserve.",
            rich_help_panel=TRAIN_PANEL,
        ),
    ] = None,
    gpus: Annotated[
        int | None,
        count_option(
            "--gpus",
            metavar="N",
            help="Training on N GPUs, each running --batch sequences: figures per GPU.",
            rich_help_panel=PARALLEL_PANEL,
        ),
    ] = None,
    zero: Annotated[
        int | None,
        typer.Option(
            "--zero",
            metavar="STAGE",
            help="DeepSpeed ZeRO stage 1-3 over the GPUs (the frozen base whole under 1-2).",
            rich_help_panel=PARALLEL_PANEL,
        ),
    ] = None,
    fsdp: Annotated[
        str | None,
        typer.Option(
            "--fsdp",
            metavar="MODE",
            help="FSDP2 sharding, frozen base included: full, grad-op or hybrid.",
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
    reserve: Annotated[
        int | None,
        reserve_option("--reserve", help=RESERVE_HELP, rich_help_panel=TRAIN_PANEL),
    ] = None,
    units: UnitsOption = "iec",
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Trainable parameters of LoRA (QLoRA, DoRA) exactly as peft's
    get_nb_trainable_parameters() reports them, with a breakdown by target; with --train, the
    memory of training (activations an ESTIMATE)."""
    from costcalc.cli.memory import _unit_system
    from costcalc.gpus import device_capacity
    from costcalc.lora import lora_config
    from costcalc.lora_results import lora_inputs, lora_result

    with user_errors():
        unit_system = _unit_system(units)
        config = lora_config(
            rank,
            _names(targets),
            _names(target_parameters),
            bias,
            _names(modules_to_save),
            dora,
        )
        given = {
            "--base-dtype": base_dtype,
            "--double-quant": double_quant,
            "--adapter-dtype": adapter_dtype,
            "--optimizer": optimizer,
            "--batch": batch,
            "--length": length,
            "--recompute": recompute,
            "--attention": attention,
            "--fits": fits,
            "--gpu": gpu,
            "--gpus": gpus,
            "--zero": zero,
            "--fsdp": fsdp,
            "--node-gpus": node_gpus,
            "--reserve": reserve,
        }
        training, plan = lora_inputs(train, given)
        capacity = device_capacity(fits, gpu, reserve)
        results = [lora_result(m, config, training, plan, capacity) for m in models.load()]
    data = [result.to_dict() for result in results]
    grids = [
        grid
        for r in results
        for grid in lora_grids(r.model, r.report, r.memory, r.capacity, unit_system)
    ]
    emit(fmt, data[0] if len(data) == 1 else data, grids)
    misses = [r for r in results if r.fits is False and r.memory is not None]
    for r in misses:
        assert r.memory is not None
        typer.echo(
            f"does not fit: {r.model.name} needs {r.memory.bytes_total:,} bytes, "
            f"{-(r.headroom or 0):,} more than the {r.capacity or 0:,} given",
            err=True,
        )
    if misses:
        raise typer.Exit(1)


def lora_grids(
    model: LoadedModel,
    report: LoraReport,
    memory: LoraMemory | None,
    capacity: int | None,
    system: UnitSystem,
) -> list[Grid]:
    """The parameter breakdown, then (with --train) the memory breakdown."""
    from costcalc.render import Grid
    from costcalc.results import config_notes
    from costcalc.units import format_percent

    c = report.config
    rows = [
        [
            m.name,
            f"{m.modules:,}",
            ", ".join(" x ".join(f"{n:,}" for n in shape) for shape in m.shapes),
            f"{m.rank}",
            f"{m.added:,}",
        ]
        for m in report.modules
    ]
    rows += [[f"{name} (trainable copy)", "1", "", "", f"{n:,}"] for name, n in report.saved]
    if c.bias != "none":
        rows.append([f"biases ({c.bias})", "", "", "", f"{report.bias_elements:,}"])
    rows += [
        ["trainable", "", "", "", f"{report.trainable:,}"],
        ["total (base + adapters + copies)", "", "", "", f"{report.total:,}"],
        ["trainable share", "", "", "", format_percent(report.share)],
    ]
    emphasis = frozenset({len(rows) - 3})
    title = f"LoRA on {model.name}: rank {c.rank}" + (", DoRA" if c.dora else "")
    notes = [
        "LoRA adds r (in + out) per adapted linear (X r (a + b) for X stacked experts)"
        + ("; DoRA adds out magnitudes per linear" if c.dora else "")
        + "; counts as peft's get_nb_trainable_parameters() reports them.",
        *config_notes(model),
    ]
    if report.converted:
        notes.append(
            f"peft reads {', '.join(report.converted)} as the transformers 4 names of the "
            f"experts and router of {model.family} and adapts those (the fused gate and up "
            "experts at twice the rank), not linear layers of that name."
        )
    columns = ["adapted", "modules", "shape (out x in)", "rank", "parameters"]
    grids = [Grid(title, columns, rows, notes, emphasis)]
    if memory is not None:
        grids.append(_memory_grid(model, memory, capacity, system))
    return grids


def _memory_grid(
    model: LoadedModel, memory: LoraMemory, capacity: int | None, system: UnitSystem
) -> Grid:
    from costcalc.lora_memory import (
        FLOAT_DTYPES,
        INT8_SOURCE,
        NF4_SOURCE,
        quantization_dtype,
    )
    from costcalc.memory import LOSS_DTYPE
    from costcalc.render import Grid
    from costcalc.units import format_bytes

    t = memory.training
    quantized = t.base_dtype not in FLOAT_DTYPES
    parts: list[tuple[str, int | None, str, int]] = []
    if quantized:
        parts.append(
            (
                "frozen linears",
                memory.elements_quantized,
                quantization_dtype(t),
                memory.bytes_quantized,
            )
        )
    parts += [
        (
            "frozen, the rest" if quantized else "frozen weights",
            memory.elements_frozen_float,
            t.float_dtype,
            memory.bytes_frozen_float,
        ),
        ("adapters", memory.elements_adapters, t.adapter_dtype, memory.bytes_adapters),
    ]
    if memory.elements_saved:
        parts.append(("saved copies", memory.elements_saved, t.float_dtype, memory.bytes_saved))
    plan = memory.plan
    parts += [("gradients", memory.elements_trainable, "", memory.bytes_gradients)]
    if memory.bytes_masters:
        parts.append(("master weights", memory.elements_masters, "fp32", memory.bytes_masters))
    parts += [
        (f"optimizer ({t.optimizer})", memory.elements_optimizer, "", memory.bytes_optimizer),
        (
            "activations (ESTIMATE)",
            None,
            "",
            memory.bytes_activations - memory.bytes_attention_scores,
        ),
    ]
    if memory.bytes_attention_scores:
        parts.append(("attention scores (ESTIMATE)", None, "", memory.bytes_attention_scores))
    step_dtype = t.float_dtype if t.float_dtype == "fp32" else f"{t.float_dtype} + fp32"
    parts += [
        (label, count, dtype, size)
        for label, count, dtype, size in (
            ("gathered params (while a layer runs)", memory.elements_gathered, "as stored",
             memory.bytes_gathered),
            ("small params kept whole", memory.elements_persistent, t.float_dtype,
             memory.bytes_persistent),
            ("prefetched params (bound)", memory.elements_prefetch, t.float_dtype,
             memory.bytes_prefetch),
            ("reduce bucket" + ("" if memory.bucket_held else " (backward)"),
             memory.elements_bucket, t.float_dtype, memory.bytes_bucket),
            ("gradient partition (in the step)", memory.elements_step_buffer, step_dtype,
             memory.bytes_step_buffer),
        )
        if size
    ]  # fmt: skip
    parts.append(("logits", memory.elements_logits, t.float_dtype, memory.bytes_logits))
    if memory.bytes_logits_fp32:
        parts.append(
            (
                "log-probabilities (fp32)",
                memory.elements_logits,
                LOSS_DTYPE,
                memory.bytes_logits_fp32,
            )
        )
    rows = [
        [label, "" if n is None else f"{n:,}", dtype, f"{b:,}", format_bytes(b, system)]
        for label, n, dtype, b in parts
    ]
    total = memory.bytes_total
    rows.append(["total (incl. estimate)", "", "", f"{total:,}", format_bytes(total, system)])
    emphasis = frozenset({len(rows) - 1})
    if capacity is not None:
        headroom = capacity - total
        verdict = "headroom" if headroom >= 0 else "short by (does not fit)"
        rows.append(["device memory", "", "", f"{capacity:,}", format_bytes(capacity, system)])
        rows.append([verdict, "", "", f"{abs(headroom):,}", format_bytes(abs(headroom), system)])
    activations, *rest = training_notes(
        model.spec, t.batch, memory.length, t.recompute, t.attention, t.float_dtype
    )
    notes = [
        activations,
        "For LoRA they are an ESTIMATE: full training's, as backpropagation runs through every "
        "layer; frozen norm weights spare their normalized inputs, and the adapters' r-wide "
        "intermediates are not added.",
        *rest,
        "Gradients and optimizer moments follow each trainable parameter's dtype: adapters "
        f"{t.adapter_dtype}, saved copies and trained biases {t.float_dtype}"
        + ("; one fp32 step per trainable tensor." if t.optimizer == "adamw" else "."),
    ]
    if quantized:
        notes.append(
            "Quantized: every linear layer but the output head; "
            + (NF4_SOURCE if t.base_dtype == "nf4" else INT8_SOURCE)
            + "."
        )
    mode = f"{t.attention} attention, B={t.batch}, T={memory.length:,}"
    title = f"Memory of LoRA training on {model.name}: {t.base_dtype} base, {mode}"
    if plan is not None:
        title = f"Memory per GPU of LoRA training on {model.name}: {t.base_dtype} base, {mode}"
        title += f"; {plan.label}"
        notes.append(plan_note(memory))
    return Grid(title, ["", "elements", "dtype", "bytes", _header(system)], rows, notes, emphasis)


def plan_note(memory: LoraMemory) -> str:
    """How the plan shards the frozen base and the trainable part on one GPU."""
    from costcalc.lora_parallel import LORA_PARALLEL_SOURCE

    plan, t = memory.plan, memory.training
    assert plan is not None
    n = plan.shard_gpus
    if plan.fsdp is not None:
        storage = (
            "; the 4-bit weights stored as bf16 (bnb_4bit_quant_storage), ceil(rows / "
            f"{n}) of their packed rows per GPU, their quantization state (absmax, nested "
            "scales) whole on every GPU"
            if t.base_dtype == "nf4"
            else ""
        )
        held = (
            "the whole base held beside its shards from the forward to the backward "
            "(reshard_after_forward=False)"
            if plan.fsdp == "grad-op"
            else "in the backward, unsharded: the root unit's parameters (not resharded after its "
            "forward), the largest layer's twice (the running one and the one prefetched) and "
            "its adapter gradients"
        )
        return (
            f"FSDP2 (fully_shard) over {n} GPUs: every parameter, frozen or trainable, has its "
            f"rows padded to a multiple of {n}, ceil(rows / {n}) per GPU{storage}; gradients and "
            f"optimizer state of the trainable shards only; {held}. Every GPU runs --batch "
            f"sequences. Source: {LORA_PARALLEL_SOURCE}."
        )
    if plan.stage == 0:
        return (
            f"Every one of the {plan.gpus} GPUs holds all of the above (DDP) and runs --batch "
            "sequences."
        )
    frozen = (
        "the frozen base partitioned ceil(n / N) per parameter, the small ones (at most 1e5 "
        "elements) also whole, the largest module gathered whole while it runs"
        if plan.stage == 3
        else "the frozen base whole on every GPU (the optimizer sees only trainable parameters)"
    )
    return (
        f"DeepSpeed ZeRO-{plan.stage} over {n} GPUs: {frozen}; the trainable tensors cast to "
        f"{t.float_dtype} (the engine casts every float parameter) in "
        + ("per-parameter partitions" if plan.stage == 3 else f"a flat buffer padded to {2 * n}")
        + f", fp32 masters and moments of 1 / {n}, the reduce bucket (reduce_bucket_size 5e8), "
        "and in the step the gradient partition flattened and cast to fp32. Every GPU runs "
        f"--batch sequences. Source: {LORA_PARALLEL_SOURCE}."
    )


def _header(system: UnitSystem) -> str:
    from costcalc.cli.memory import UNIT_HEADERS

    return UNIT_HEADERS[system]
