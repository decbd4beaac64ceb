"""`costcalc heads`: does a width split into a head count, and which head counts work."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from costcalc.cli.common import FormatOption, count_option, emit, fail, user_errors
from costcalc.cli.models import ConfigOption, HubOption, PresetOption, RevisionOption
from costcalc.render import OutputFormat

if TYPE_CHECKING:
    from costcalc.heads import HeadCheck, HeadSplit
    from costcalc.loaders import LoadedModel
    from costcalc.render import Grid


def heads(
    d: Annotated[
        int | None, count_option("--d", "--d-model", help="Width D (default: the model's).")
    ] = None,
    h: Annotated[
        int | None, count_option("--heads", "-H", "--h", help="Query heads H to check.")
    ] = None,
    kv_heads: Annotated[
        int | None,
        count_option("--kv-heads", help="Key/value heads K (GQA/MQA): H must be a multiple."),
    ] = None,
    head_dim: Annotated[
        int | None,
        count_option("--head-dim", help="An explicit head width (H x head_dim may differ from D)."),
    ] = None,
    preset: PresetOption = None,
    config: ConfigOption = None,
    hf: HubOption = None,
    revision: RevisionOption = None,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Check that D splits into H equal heads (exit 0), or say why not (exit 1).

    Given --heads, prints head_dim = D / H, or "invalid equal split" with the nearest valid head
    counts. Given --d alone, lists every valid split. Given a model (-p, -c, --hf), checks its
    attention layout, with --d, --heads, --kv-heads or --head-dim changed as given. Nothing is
    ever corrected.
    """
    from costcalc.cli.models import ModelSelection, config_paths
    from costcalc.errors import UsageError
    from costcalc.heads import check_heads, head_splits

    with user_errors():
        selection = ModelSelection(preset or (), config_paths(config or ()), hf or (), revision, {})
        if selection.presets or selection.configs or selection.hub_ids:
            given = (d, h, kv_heads, head_dim)
            named = [(m.name, layout) for m in selection.load() for layout in _layouts(m, given)]
            checks = [(name, check_heads(*layout)) for name, layout in named]
        elif d is None:
            raise UsageError("give --d D (with --heads H to check), or a model: -p, -c or --hf")
        elif h is None:
            if head_dim is not None:
                raise UsageError("--head-dim needs --heads: the head count it belongs to")
            splits = head_splits(d, kv_heads)
            data = {"d_model": d, "n_kv_heads": kv_heads, "splits": [vars(s) for s in splits]}
            emit(fmt, data, [splits_grid(d, kv_heads, splits)])
            return
        else:
            checks = [("", check_heads(d, h, kv_heads, head_dim))]
    records = [{"model": name, **c.to_dict()} if name else c.to_dict() for name, c in checks]
    emit(fmt, records[0] if len(records) == 1 else records, [check_grid(c, n) for n, c in checks])
    problems = [f"{name}: {p}" if name else p for name, c in checks for p in c.problems]
    if problems:
        fail("; ".join(problems))


Layout = tuple[int, int, "int | None", "int | None"]


def _layouts(model: LoadedModel, given: tuple[int | None, ...]) -> list[Layout]:
    """The distinct attention layouts (D, H, K, explicit head_dim) of ``model``'s blocks, each
    value given on the command line put in place of the model's."""
    from costcalc.errors import UsageError

    found: list[Layout] = []
    for stack in model.spec.stacks:
        if stack.mixer != "attention" or not stack.n_heads:
            continue
        own = (stack.d_model, stack.n_heads, stack.n_kv_heads, stack.head_dim)
        layout = tuple(o if g is None else g for g, o in zip(given, own, strict=True))
        if layout not in found:
            found.append(layout)  # type: ignore[arg-type]
    if not found:
        mixers = ", ".join(dict.fromkeys(stack.mixer for stack in model.spec.stacks))
        raise UsageError(
            f"{model.name} has no attention blocks to split into heads (its blocks: {mixers}; "
            "multi-head latent attention sizes its heads by qk_nope_head_dim, qk_rope_head_dim "
            "and v_head_dim, not D / H)"
        )
    return found


def splits_grid(d: int, kv_heads: int | None, splits: list[HeadSplit]) -> Grid:
    from costcalc.render import Grid

    grouped = "" if kv_heads is None else f", H a multiple of {kv_heads:,} key/value heads"
    rows = [[f"{s.n_heads:,}", f"{s.head_dim:,}"] for s in splits]
    return Grid(f"Equal splits of D={d:,}{grouped}", ["heads H", "head_dim"], rows)


def check_grid(check: HeadCheck, name: str = "") -> Grid:
    from costcalc.render import Grid

    shown = "-" if check.head_dim is None else f"{check.head_dim:,}"
    rows = [
        ["D", f"{check.d_model:,}"],
        ["heads H", f"{check.n_heads:,}"],
    ]
    if check.kv_heads is not None:
        rows.append(["key/value heads", f"{check.kv_heads:,}"])
    rows += [["head_dim", shown], ["verdict", check.verdict]]
    notes: list[str] = []  # the problems go to stderr, once
    width = check.query_width
    if check.explicit and width is not None and width != check.d_model:
        notes.append(
            f"H x head_dim = {width:,} differs from D = {check.d_model:,}: the query projection "
            f"maps D to {width:,} and the output projection maps it back."
        )
    if check.nearest:
        notes.append(
            "Nearest valid head counts: "
            + ", ".join(f"H={s.n_heads:,} (head_dim {s.head_dim:,})" for s in check.nearest)
            + "."
        )
    title = f"{name + ': ' if name else ''}D={check.d_model:,}, heads={check.n_heads:,}"
    return Grid(title, ["", "value"], rows, notes)
