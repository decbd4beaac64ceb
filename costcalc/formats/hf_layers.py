"""Layer groups from a Hugging Face config: which layers are built which way.

Families whose layers differ (sliding and full attention, dense and MoE FFNs, Mamba and
attention mixers) say so by an explicit per-layer list (``layer_types``) or by a rule
(``sliding_window_pattern``, ``first_k_dense_replace``). Either becomes costcalc's ``layers``:
runs of one kind of block, or a cycling pattern, never a list as long as the model is deep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from costcalc.formats.hf_reader import Reader, is_whole
from costcalc.scalars import MAX_SIZE

MAX_LISTED_LAYERS = 65_536
"""Most layers a per-layer rule is evaluated for one by one (explicit lists are bounded by the
file's own size limits)."""

Block = Mapping[str, Any]


@dataclass(frozen=True)
class Layout:
    """Runs of layer kinds: over the whole model, or (``cycles``) a pattern that repeats over
    it; ``key`` is the config key a problem with them names."""

    runs: Sequence[tuple[str, int]]
    cycles: bool = False
    key: str = "layer_types"


Rule = Callable[[int], Layout | None]
"""A family's rule for its layers, given their count (None: a problem is recorded)."""


def runs(kinds: Sequence[str]) -> list[tuple[str, int]]:
    """Run-length encoding: consecutive equal kinds as (kind, count)."""
    out: list[tuple[str, int]] = []
    for kind in kinds:
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + 1)
        else:
            out.append((kind, 1))
    return out


def groups(
    kind_runs: Sequence[tuple[str, int]], blocks: Mapping[str, Block]
) -> list[dict[str, Any]]:
    """``layers`` for consecutive runs of kinds, each with its block keys."""
    return [{"count": count, **blocks[kind]} for kind, count in kind_runs if count]


def cycle(
    n_layers: int, pattern: Sequence[tuple[str, int]], blocks: Mapping[str, Block]
) -> list[dict[str, Any]]:
    """``layers`` for ``n_layers`` layers cycling through a pattern of runs of kinds."""
    return [{"count": n_layers, "pattern": groups(pattern, blocks)}]


def layer_types(r: Reader, n_layers: Any, key: str = "layer_types") -> list[str] | None:
    """The config's explicit per-layer list (under any spelling of ``key``), checked: one
    string per layer; None when absent. ``layer_types``' legacy names are read as transformers
    renames them (``remap_legacy_layer_types``: ``mamba`` is ``linear_attention``,
    ``attention`` ``full_attention``, ...)."""
    key = r.spelling(key)
    listed = r.data.get(key)
    if listed is None:
        return None
    if not isinstance(listed, list) or not all(isinstance(kind, str) for kind in listed):
        r.fail(key, "expected a list of layer types (strings)")
        return None
    if isinstance(n_layers, int) and len(listed) > n_layers and unchecked_mlp_types(r, key):
        r.note(
            f"{r.name(key)} lists {len(listed):,} layers, but the model has {n_layers:,}: "
            f"{known_name(r)} does not check it and its layers read the first {n_layers:,}; "
            "the rest are ignored, as transformers ignores them."
        )
        listed = listed[:n_layers]
    if isinstance(n_layers, int) and len(listed) != n_layers:
        r.fail(key, f"lists {len(listed):,} layers, but the model has {n_layers:,}")
        return None
    r.key_names["layers"] = r.name(key)
    known = r.config_class
    if "layer_types" in (known.spellings(key) if known is not None else (key,)):
        return [LEGACY_LAYER_TYPES.get(kind) or kind for kind in listed]
    return listed


def unchecked_mlp_types(r: Reader, key: str) -> bool:
    """Whether transformers leaves the length of ``mlp_layer_types`` unchecked:
    ``PreTrainedConfig.validate_layer_type`` returns before it reaches ``mlp_layer_types``
    when the config holds no ``layer_types`` (a class without the field, a file without the
    key), so a longer list builds, each layer reading its own entry."""
    known = r.config_class
    return (
        known is not None
        and "mlp_layer_types" in known.spellings(key)
        and "layer_types" not in known.fields
        and all(r.data.get(name) is None for name in known.spellings("layer_types"))
    )


def known_name(r: Reader) -> str:
    """The family's configuration class, by name."""
    return r.config_class.name if r.config_class is not None else "its class"


LEGACY_LAYER_TYPES = {
    "mamba": "linear_attention",
    "attention": "full_attention",
    "deepseek_sparse_attention": "indexed_attention",
    "qwen_sparse_attention": "indexed_attention",
}
"""Old layer type names and the names transformers 5.24 reads them as
(``configuration_utils._LEGACY_LAYER_TYPE_REMAP``)."""


def by_rule(r: Reader, n_layers: Any, key: str) -> range | None:
    """Layer indices for evaluating a per-layer rule, refused past MAX_LISTED_LAYERS layers."""
    if not is_whole(n_layers, 1):
        return None  # reported where the size is read
    if n_layers > MAX_LISTED_LAYERS:
        r.fail(key, f"a per-layer rule is evaluated for at most {MAX_LISTED_LAYERS:,} layers")
        return None
    return range(n_layers)


def at_indices(
    r: Reader,
    n_layers: int,
    key: str,
    listed: str,
    other: str,
    default: Sequence[int] | None = None,
) -> Layout | None:
    """Layers of kind ``listed`` at the indices the list under ``key`` names (the family's
    ``default`` when the key is absent or null), ``other`` elsewhere; indices past the last
    layer name none. None, with a problem, when there is no list of indices."""
    indices = r.data.get(key)
    indices = list(default) if indices is None and default is not None else indices
    if not isinstance(indices, list) or not all(is_whole(i, 0) for i in indices):
        r.fail(key, "expected a list of layer indices")
        return None
    layers = by_rule(r, n_layers, key)
    if layers is None:
        return None
    r.key_names["layers"] = r.name(key)
    chosen = set(indices)
    return Layout(runs([listed if i in chosen else other for i in layers]), key=key)


def count_of(n_layers: Any) -> int | None:
    """The layer count when it is a usable size (else None: reported where it is read)."""
    return n_layers if is_whole(n_layers, 1) and n_layers <= MAX_SIZE else None


def apply(
    r: Reader,
    fields: dict[str, Any],
    kind_runs: Sequence[tuple[str, int]],
    blocks: Mapping[str, Block],
    key: str = "layer_types",
) -> None:
    """Set ``fields`` for these runs: the block keys themselves when every layer is one kind,
    else ``layers``. A kind without a block is a problem with ``key``."""
    present = [(kind, count) for kind, count in kind_runs if count]
    unknown = sorted({kind for kind, _ in present if kind not in blocks})
    if unknown:
        r.fail(key, f"unknown layer type {unknown[0]!r}; expected one of {', '.join(blocks)}")
        return
    if len({kind for kind, _ in present}) == 1:
        fields.update(blocks[present[0][0]])
    elif present:
        fields["layers"] = groups(present, blocks)


def set_layers(
    r: Reader, fields: dict[str, Any], n_layers: int, layout: Layout, blocks: Mapping[str, Block]
) -> None:
    """Set ``fields`` for ``n_layers`` layers laid out so (:func:`apply`); a cycling pattern
    stays a pattern when the model holds all of it and more than one kind, else it is cut to
    the model's first ``n_layers`` layers."""
    kind_runs = list(layout.runs)
    if layout.cycles:
        period = sum(count for _, count in kind_runs)
        if period <= n_layers and len({kind for kind, count in kind_runs if count}) > 1:
            fields["layers"] = cycle(n_layers, kind_runs, blocks)
            return
        kind_runs = _first(kind_runs, n_layers)
    apply(r, fields, kind_runs, blocks, layout.key)


def _first(kind_runs: Sequence[tuple[str, int]], n_layers: int) -> list[tuple[str, int]]:
    """The runs cut to their first ``n_layers`` layers."""
    out, left = [], n_layers
    for kind, count in kind_runs:
        out.append((kind, min(count, left)))
        left -= out[-1][1]
    return out


def listed_or_rule(
    r: Reader,
    fields: dict[str, Any],
    blocks: Mapping[str, Block],
    rule: Rule,
    ffn: tuple[Sequence[tuple[str, int]], Mapping[str, Block]] | None = None,
) -> None:
    """Set ``fields`` for the model's layers: as ``layer_types`` lists them when the config has
    it, else by the family's ``rule`` (nothing when the layer count is unusable: reported where
    it is read); with ``ffn`` (runs of FFN kinds and their blocks) each layer's FFN as those
    runs say (:func:`combine`)."""
    n = count_of(fields["n_layers"])
    if n is None:
        return
    listed = layer_types(r, n)
    layout = Layout(runs(listed)) if listed is not None else rule(n)
    if layout is not None and ffn is not None:
        combine(r, fields, layout, blocks, *ffn)
    elif layout is not None:
        set_layers(r, fields, n, layout, blocks)


def attention_layers(r: Reader, fields: dict[str, Any], window: Any, rule: Rule) -> None:
    """Which layers attend within ``window``: those ``layer_types`` marks
    ``sliding_attention``, else those the family's ``rule`` does. No window (null): every
    layer attends fully, and ``layer_types``, unused then, is still checked as transformers
    checks it (``PreTrainedConfig.validate_layer_type``): one of its attention layer types per
    layer, so a config it refuses is refused here too."""
    if window is None:
        r.forget("sliding_window")
        n = count_of(fields["n_layers"])
        listed = None if n is None else layer_types(r, n)
        unknown = sorted({kind for kind in listed or () if kind not in ATTENTION_LAYER_TYPES})
        if unknown:
            r.fail(
                "layer_types",
                f"unknown layer type {unknown[0]!r}; transformers takes "
                f"{', '.join(ATTENTION_LAYER_TYPES)}",
            )
        return
    listed_or_rule(r, fields, attention_windows(window), rule)


ATTENTION_LAYER_TYPES = (
    "full_attention",
    "sliding_attention",
    "chunked_attention",
    "window_attention",
    "indexed_attention",
    "compressed_sparse_attention",
    "heavily_compressed_attention",
    "minimax_m3_sparse",
    "conv",
    "moe",
    "hybrid",
    "hybrid_sliding",
    "reference_sliding_attention",
    "linear_attention",
    "mamba",
    "attention",
    "deepseek_sparse_attention",
    "qwen_sparse_attention",
)
"""The layer types transformers 5.24 takes (``ALLOWED_ATTN_LAYER_TYPES``, with the legacy names
it maps onto them: ``mamba``, ``attention``, ``deepseek_sparse_attention``,
``qwen_sparse_attention``; transformers/configuration_utils.py)."""


def unrolled(r: Reader, layout: Layout, n_layers: int) -> list[tuple[str, int]] | None:
    """The runs of ``layout`` over the model's ``n_layers`` layers: a cycling pattern repeated
    and cut (as many runs as the layers make; None past :data:`MAX_LISTED_LAYERS`, a problem
    with ``layout.key``)."""
    if not layout.cycles:
        return list(layout.runs)
    if by_rule(r, n_layers, layout.key) is None:
        return None
    kinds = [kind for kind, count in layout.runs for _ in range(count)]
    return runs([kinds[i % len(kinds)] for i in range(n_layers)])


def every_nth(every: int, nth: str, other: str) -> Layout:
    """Every ``every``-th layer (transformers' ``(i + 1) % every == 0``) is of kind ``nth``,
    the others of kind ``other``: a cycling pattern in closed form."""
    return Layout([(other, every - 1), (nth, 1)], cycles=True)


def full_every(r: Reader, every: int, key: str | None = None) -> Rule:
    """The rule most configuration classes fill ``layer_types`` with: every ``every``-th layer
    attends fully, the others within the window (``every`` read from ``key`` when the family
    has one)."""

    def rule(n_layers: int) -> Layout:
        period = every if key is None else r.count(key, every)
        return every_nth(period, "full_attention", "sliding_attention")

    return rule


def cut(kind_runs: Sequence[tuple[str, int]], start: int, stop: int) -> list[tuple[str, int]]:
    """The runs of layers ``start`` to ``stop`` - 1 (closed form)."""
    out, first = [], 0
    for kind, count in kind_runs:
        low, high = max(first, start), min(first + count, stop)
        if high > low:
            out.append((kind, high - low))
        first += count
    return out


def split_at(
    r: Reader, n_layers: int, key: str, default: int, before: str, after: str
) -> list[tuple[str, int]]:
    """Runs for "the first ``key`` layers are one kind, the rest another" (closed form)."""
    head = min(r.count(key, default, minimum=0), n_layers)
    return [(before, head), (after, n_layers - head)]


def attention_windows(window: Any) -> dict[str, Block]:
    """Blocks of transformers' attention layer types: full, or within a sliding window."""
    return {"full_attention": {}, "sliding_attention": {"sliding_window": window}}


def merge(
    first: Sequence[tuple[str, int]], second: Sequence[tuple[str, int]]
) -> list[tuple[str, int]]:
    """Two runs over the same layers (attention kinds, FFN kinds) as one: runs of ``a+b``,
    a new run wherever either changes (closed form: as many runs as boundaries)."""
    a = [(kind, count) for kind, count in first if count]
    b = [(kind, count) for kind, count in second if count]
    out: list[tuple[str, int]] = []
    i = j = 0
    used_a = used_b = 0
    while i < len(a) and j < len(b):
        step = min(a[i][1] - used_a, b[j][1] - used_b)
        out.append((f"{a[i][0]}+{b[j][0]}", step))
        used_a, used_b = used_a + step, used_b + step
        if used_a == a[i][1]:
            i, used_a = i + 1, 0
        if used_b == b[j][1]:
            j, used_b = j + 1, 0
    return out


def merged_blocks(
    first: Mapping[str, Block], second: Mapping[str, Block]
) -> dict[str, dict[str, Any]]:
    """The blocks of :func:`merge`'s kinds: each pair's keys together."""
    return {f"{a}+{b}": {**first[a], **second[b]} for a in first for b in second}


def rotate(kind_runs: Sequence[tuple[str, int]], offset: int) -> list[tuple[str, int]]:
    """A cycling pattern started ``offset`` layers into it (closed form)."""
    period = sum(count for _, count in kind_runs)
    offset = offset % period if period else 0
    head: list[tuple[str, int]] = []
    tail: list[tuple[str, int]] = []
    start = 0
    for kind, count in kind_runs:
        cut = min(max(offset - start, 0), count)
        head.append((kind, cut))
        tail.append((kind, count - cut))
        start += count
    return [(kind, count) for kind, count in tail + head if count]


def combine(
    r: Reader,
    fields: dict[str, Any],
    attention: Layout,
    attention_blocks: Mapping[str, Block],
    ffn_runs: Sequence[tuple[str, int]],
    ffn_blocks: Mapping[str, Block],
    offset: int = 0,
) -> None:
    """Set ``fields`` for layers whose attention follows ``attention`` (runs, or a cycling
    pattern) and whose FFN follows ``ffn_runs``: runs of both kinds (:func:`merge`), or one group
    per FFN run cycling through the attention pattern from where that run starts (closed form;
    the first layer ``offset`` layers into the pattern)."""
    unknown = sorted({kind for kind, _ in attention.runs if kind not in attention_blocks})
    if unknown:
        apply(r, fields, attention.runs, attention_blocks, attention.key)  # reports it
        return
    if not attention.cycles:
        blocks = merged_blocks(attention_blocks, ffn_blocks)
        apply(r, fields, merge(attention.runs, ffn_runs), blocks, attention.key)
        return
    layers, start = list(fields.get("layers") or ()), offset
    for kind, count in ffn_runs:
        if count:
            pattern = groups(rotate(attention.runs, start), attention_blocks)
            layers.append({"count": count, **ffn_blocks[kind], "pattern": pattern})
        start += count
    fields["layers"] = layers
