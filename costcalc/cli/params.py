"""`costcalc params`: where a model's parameters sit and what its weights weigh."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from costcalc.cli.common import ExplainOption, FormatOption, emit, user_errors
from costcalc.cli.models import ModelSelection, takes_models
from costcalc.cli.workload import (
    AttentionOption,
    BatchOption,
    CausalOption,
    GenerateOption,
    LengthOption,
    PromptOption,
    RecomputeOption,
    warn_past_context,
    workload_from,
    workload_tokens,
)
from costcalc.render import OutputFormat

if TYPE_CHECKING:
    from costcalc.checkpoint import Checkpoint
    from costcalc.checkpoint_report import CheckpointView
    from costcalc.compute import ComputeResult
    from costcalc.params import ParamReport
    from costcalc.render import Grid
    from costcalc.results import ParamsResult

ROWS = (
    ("token_embedding", "token embedding"),
    ("position_embedding", "position embedding"),
    ("embedding_projection", "embedding projections"),
    ("embedding_norm", "embedding norm"),
    ("per_layer_embedding", "per-layer input table"),
    ("per_layer_projection", "per-layer input projection"),
    ("attention", "  attention (per block)"),
    ("ffn", "  FFN (per block)"),
    ("norms", "  norms (per block)"),
    ("per_block", "per block"),
    ("blocks", "all blocks"),
    ("stream_collapse", "residual streams' last collapse"),
    ("altup_projections", "AltUp stream projections"),
    ("final_norm", "final norm"),
    ("initial_state", "second stream's initial state"),
    ("lm_head", "LM head"),
    ("total", "total"),
    ("untied_total", "untied total"),
)


@takes_models
def params(
    models: ModelSelection,
    explain: ExplainOption = False,
    fmt: FormatOption = OutputFormat.table,
    batch: BatchOption = None,
    length: LengthOption = None,
    causal: CausalOption = False,
    recompute: RecomputeOption = None,
    attention: AttentionOption = None,
    prompt: PromptOption = None,
    generate: GenerateOption = None,
    dtypes: Annotated[
        list[str] | None,
        typer.Option(
            "--dtype",
            metavar="FORMAT",
            help="Add a weight-bytes row for a quantized format with its scales (nf4, "
            "gptq-int4:g128, awq-int4, fp8-block, gguf:Q4_K_M, ...; docs/quantization.md). "
            "Repeatable.",
        ),
    ] = None,
    full_model: Annotated[
        bool,
        typer.Option(
            "--full-model",
            help="JSON and JSONL: `model` holds every field of the resolved model, defaults "
            "included (without it, only the fields that differ from their defaults).",
        ),
    ] = False,
) -> None:
    """Count a model's parameters exactly: tables, blocks, LM head, tying, weight bytes.

    Several --preset/--config/--hf render side by side. Totals count a tied matrix once, as
    PyTorch's sum(p.numel() for p in model.parameters()) does. With --length (and --batch),
    also the forward MACs and FLOPs; with --prompt and --generate, the cost of decoding with a
    KV cache.
    """
    from costcalc.results import header_only_record, params_result
    from costcalc.units import DTYPES
    from costcalc.weight_format import check_weight_dtype

    with user_errors():
        formats = tuple(dict.fromkeys(check_weight_dtype(d) for d in dtypes or ()))
        formats = tuple(f for f in formats if f not in DTYPES)
        workload = workload_from(batch, length, causal, recompute, prompt, generate, attention)
        loaded, headers = models.load_with_checkpoints()
        warn_past_context(loaded, workload_tokens(workload))
        results = [params_result(model, workload, formats) for model in loaded]
        views = [_header_view(cp) for cp in headers]
    data = [result.to_dict(full_model) for result in results]
    data += [header_only_record(v) for v in views]
    grids = _grids(results, views, explain) if fmt in TABLES else []
    emit(fmt, data[0] if len(data) == 1 else data, grids)


TABLES = (OutputFormat.table, OutputFormat.markdown)
"""The formats drawn from grids; the others are built from the JSON records alone."""


def _grids(results: list[ParamsResult], views: list[CheckpointView], explain: bool) -> list[Grid]:
    """The tables of ``params``: the models', then each checkpoint's."""
    grids = params_grids(results, explain) if results else []
    if any(r.checkpoint is not None for r in results) or views:
        from costcalc.checkpoint_report import checkpoint_grid

        grids += [checkpoint_grid(r.checkpoint) for r in results if r.checkpoint is not None]
        grids += [checkpoint_grid(view) for view in views]
    return grids


def _header_view(checkpoint: Checkpoint) -> CheckpointView:
    """A checkpoint costcalc has no formula for, named by its file."""
    from costcalc.checkpoint_report import checkpoint_view

    return checkpoint_view(Path(checkpoint.source).name, checkpoint, None)


def params_grids(results: list[ParamsResult], explain: bool) -> list[Grid]:
    """The parameter table (a column per model), the weight-bytes table and the MAC tables."""
    from costcalc.compute import compute_grids
    from costcalc.explain import explain as explain_rows
    from costcalc.params import OPTIONAL_PARTS
    from costcalc.render import Grid
    from costcalc.results import config_notes
    from costcalc.units import format_bytes, format_count
    from costcalc.weight_format import weight_label

    names = [result.model.name for result in results]
    counts = [result.parameters for result in results]
    shown = [
        (key, label)
        for key, label in ROWS
        if key not in OPTIONAL_PARTS or any(getattr(c, key) for c in counts)
    ]
    rows = [[label, *(_cell(getattr(c, key)) for c in counts)] for key, label in shown]
    at = next(i for i, (k, _) in enumerate(shown) if k == "total") + 1
    rows[at:at] = [
        ["non-embedding (nanoGPT)", *(f"{c.non_embedding:,}" for c in counts)],
        ["non-embedding (Kaplan, Qwen)", *(f"{c.non_embedding_kaplan:,}" for c in counts)],
    ]
    tied = [r.model.spec.tie_embeddings for r in results]
    if any(tied):  # an untied model's note says what tying would save
        saves = [f"{c.tying_saving:,}" if t else "-" for c, t in zip(counts, tied, strict=True)]
        rows.append(["tying saves (V x E)", *saves])
    if any(c.active != c.total for c in counts):
        rows.append(["active per token", *(format_count(c.active) for c in counts)])
        rows.append(
            ["active, no token table (OpenAI)", *(f"{c.active_non_embedding:,}" for c in counts)]
        )
    emphasis = frozenset(index for index, (key, _) in enumerate(shown) if key == "total")
    notes = [
        "Totals count tied weights once; the untied total gives the LM head a matrix of its own.",
        "Non-embedding: nanoGPT's get_num_params(non_embedding=True) leaves out the position "
        "table only (a tied token table stays, as the LM head); Kaplan et al. (2020) and Qwen's "
        "reports leave out the token table and the LM head too.",
        *(_tying_note(r.model.name, r.parameters, r.model.spec.tie_embeddings) for r in results),
        *(note for r in results for note in config_notes(r.model)),
    ]
    if any(c.per_layer_embedding for c in counts):
        notes.append(
            "Non-embedding also leaves out the per-layer input table, which is looked up, not "
            "multiplied by (transformers' num_parameters(exclude_embeddings=True) leaves it out)."
        )
    if any(c.active != c.total for c in counts):
        notes.append(
            "Active per token: the total less the routed experts a token is not sent to (all but "
            "the top-k of each MoE block); shared experts, routers, the token table and the LM "
            "head count in full, as Mistral and Qwen count it. Active, no token table: as "
            "OpenAI's gpt-oss card counts it (gpt-oss-20b: 3.61B); the LM head stays in."
        )
        if any(s.moe_modality_ffn_hidden for r in results for s in r.model.spec.stacks):
            notes[-1] += (
                " Another modality's experts and their router, which no text token runs, are "
                "left out too."
            )
    grids = [Grid("Parameters", ["", *names], rows, notes, emphasis), share_grid(names, counts)]
    grids += [
        stack_grid(result.model.name, result.parameters)
        for result in results
        if result.parameters.per_block is None
    ]
    if explain:
        for result in results:
            formulas = explain_rows(result.model.spec, result.parameters)
            labels = [
                *shown,
                ("non_embedding", "non-embedding (nanoGPT)"),
                ("non_embedding_kaplan", "non-embedding (Kaplan, Qwen)"),
                ("active", "active per token"),
                ("active_non_embedding", "active, no token table (OpenAI)"),
            ]
            explain_rows_ = [[label, formulas[key]] for key, label in labels if key in formulas]
            grids.append(
                Grid(f"How {result.model.name} is counted", ["", "formula"], explain_rows_)
            )
    byte_rows = []
    for dtype in dict.fromkeys(key for result in results for key in result.weight_bytes):
        for result in results:
            if dtype not in result.weight_bytes:
                continue
            n = result.weight_bytes[dtype]
            name = weight_label(dtype)
            if dtype == result.model.weight_format:
                name += " (stored)"
            label = name if len(results) == 1 else f"{name} {result.model.name}"
            byte_rows.append([label, f"{n:,}", format_bytes(n, "si"), format_bytes(n, "iec")])
    byte_notes = [
        "fp8, int8 and int4 are raw: values only (int4 two per byte), no scales. "
        "Quantized checkpoints with their scales and unquantized tensors: "
        "--dtype nf4, gptq-int4, gguf:Q4_K_M, ... (docs/quantization.md)."
    ]
    for result in results:
        byte_notes += result.stored_notes()
    grids.append(
        Grid(
            "Weight bytes (parameters only; no gradients, optimizer state or activations)",
            ["dtype", "bytes", "SI (10^3)", "binary (2^10)"],
            byte_rows,
            byte_notes,
        )
    )
    computed = [result.compute for result in results if result.compute is not None]
    if computed:
        grids += compute_grids(names, computed)
    if explain:
        grids += [
            mac_explain_grid(result.model.name, result.compute)
            for result in results
            if result.compute is not None and result.compute.forward is not None
        ]
    return grids


def mac_explain_grid(name: str, compute: ComputeResult) -> Grid:
    """Each forward MAC row of one model with its formula and numbers."""
    from costcalc.compute import FORWARD_ROWS
    from costcalc.explain import explain_macs
    from costcalc.render import Grid

    w = compute.workload
    assert compute.forward is not None and w.length is not None
    formulas = explain_macs(compute.spec, compute.forward, w.batch, w.length, w.causal)
    rows = [[label, formulas[key]] for key, label in FORWARD_ROWS if key in formulas]
    return Grid(f"How the forward MACs of {name} are counted", ["", "formula"], rows)


def _tying_note(name: str, report: ParamReport, tied: bool) -> str:
    """Tying in words: what it saves, as a share of the untied model and the other way round."""
    from costcalc.units import format_percent

    verb = ": tying saves" if tied else " is not tied; tying would save"
    return (
        f"{name}{verb} V x E = {report.tying_saving:,} parameters "
        f"({format_percent(report.tying_share)} of the untied model; the untied model is "
        f"{format_percent(report.untied_increase)} larger)."
    )


PART_LABELS = {
    "token_embedding": "token embedding",
    "position_embedding": "position embedding",
    "embedding_projection": "embedding projections",
    "embedding_norm": "embedding norm",
    "per_layer_embedding": "per-layer input table",
    "per_layer_projection": "per-layer input projection",
    "attention": "token mixers (all blocks)",
    "ffn": "FFNs (all blocks)",
    "norms": "norms (all blocks)",
    "shared_blocks": "shared blocks (weight sets, adapters)",
    "stream_collapse": "residual streams' last collapse",
    "altup_projections": "AltUp stream projections",
    "final_norm": "final norm",
    "initial_state": "second stream's initial state",
    "lm_head": "LM head",
}


def share_grid(names: list[str], counts: list[ParamReport]) -> Grid:
    """Each part's share of the total, a column per model; parts no model has are left out."""
    from fractions import Fraction

    from costcalc.render import Grid
    from costcalc.units import format_percent

    parts = [c.parts() for c in counts]
    rows = [
        [
            label,
            *(
                format_percent(Fraction(p[key], c.total))
                for p, c in zip(parts, counts, strict=True)
            ),
        ]
        for key, label in PART_LABELS.items()
        if any(p[key] for p in parts)
    ]
    return Grid("Share of the total", ["", *names], rows)


def _cell(value: int | None) -> str:
    """A count, or where blocks differ, a pointer to the block table."""
    return "by kind, below" if value is None else f"{value:,}"


def stack_grid(name: str, report: ParamReport) -> Grid:
    """Each kind of block of a layered model, a column each: layers, parts per block, all."""
    from costcalc.render import Grid

    stacks = report.stacks
    rows = [
        ["layers", *(f"{s.layers:,}" for s in stacks)],
        ["  token mixer (per block)", *(f"{s.attention:,}" for s in stacks)],
        ["  FFN (per block)", *(f"{s.ffn:,}" for s in stacks)],
        ["  norms (per block)", *(f"{s.norms:,}" for s in stacks)],
        ["per block", *(f"{s.per_block:,}" for s in stacks)],
        *(
            [["shared weight sets and adapters", *(f"{s.shared:,}" for s in stacks)]]
            if any(s.shared for s in stacks)
            else []
        ),
        ["all blocks of the kind", *(f"{s.blocks:,}" for s in stacks)],
    ]
    notes = [f"All {sum(s.layers for s in stacks):,} blocks: {report.blocks:,} parameters."]
    return Grid(
        f"Blocks of {name}, by kind", ["", *(s.kind for s in stacks)], rows, notes, frozenset({5})
    )
