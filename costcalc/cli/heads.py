"""`costcalc heads`: does a width split into a head count, and which head counts work."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from costcalc.cli.common import FormatOption, count_option, emit, fail, user_errors
from costcalc.render import OutputFormat

if TYPE_CHECKING:
    from costcalc.heads import HeadCheck, HeadSplit
    from costcalc.render import Grid


def heads(
    d: Annotated[int, count_option("--d", "--d-model", help="Width D.")],
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
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Check that D splits into H equal heads (exit 0), or say why not (exit 1).

    Given --heads, prints head_dim = D / H, or "invalid equal split" with the nearest valid head
    counts. Given --d alone, lists every valid split. Nothing is ever corrected.
    """
    from costcalc.errors import UsageError
    from costcalc.heads import check_heads, head_splits

    with user_errors():
        if h is None:
            if head_dim is not None:
                raise UsageError("--head-dim needs --heads: the head count it belongs to")
            splits = head_splits(d, kv_heads)
            data = {"d_model": d, "n_kv_heads": kv_heads, "splits": [vars(s) for s in splits]}
            emit(fmt, data, [splits_grid(d, kv_heads, splits)])
            return
        check = check_heads(d, h, kv_heads, head_dim)
    emit(fmt, check.to_dict(), [check_grid(check)])
    if not check.valid:
        fail("; ".join(check.problems))


def splits_grid(d: int, kv_heads: int | None, splits: list[HeadSplit]) -> Grid:
    from costcalc.render import Grid

    grouped = "" if kv_heads is None else f", H a multiple of {kv_heads:,} key/value heads"
    rows = [[f"{s.n_heads:,}", f"{s.head_dim:,}"] for s in splits]
    return Grid(f"Equal splits of D={d:,}{grouped}", ["heads H", "head_dim"], rows)


def check_grid(check: HeadCheck) -> Grid:
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
    title = f"D={check.d_model:,}, heads={check.n_heads:,}"
    return Grid(title, ["", "value"], rows, notes)
