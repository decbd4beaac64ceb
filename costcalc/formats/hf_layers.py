"""Layer groups from a Hugging Face config: which layers are built which way.

Families whose layers differ (sliding and full attention, dense and MoE FFNs, Mamba and
attention mixers) say so by an explicit per-layer list (``layer_types``) or by a rule
(``sliding_window_pattern``, ``first_k_dense_replace``). Either becomes costcalc's ``layers``:
runs of one kind of block, or a cycling pattern, never a list as long as the model is deep.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from costcalc.formats.hf_reader import Reader
from costcalc.spec import MAX_SIZE

MAX_LISTED_LAYERS = 65_536
"""Most layers a per-layer rule is evaluated for one by one (explicit lists are bounded by the
file's own size limits)."""

Block = Mapping[str, Any]


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
    """The config's explicit per-layer list, checked: one string per layer; None when absent."""
    listed = r.data.get(key)
    if listed is None:
        return None
    if not isinstance(listed, list) or not all(isinstance(kind, str) for kind in listed):
        r.fail(key, "expected a list of layer types (strings)")
        return None
    if isinstance(n_layers, int) and len(listed) != n_layers:
        r.fail(key, f"lists {len(listed):,} layers, but the model has {n_layers:,}")
        return None
    r.key_names["layers"] = r.name(key)
    return listed


def by_rule(r: Reader, n_layers: Any, key: str) -> range | None:
    """Layer indices for evaluating a per-layer rule, refused past MAX_LISTED_LAYERS layers."""
    if not isinstance(n_layers, int) or isinstance(n_layers, bool) or n_layers < 1:
        return None  # reported where the size is read
    if n_layers > MAX_LISTED_LAYERS:
        r.fail(key, f"a per-layer rule is evaluated for at most {MAX_LISTED_LAYERS:,} layers")
        return None
    return range(n_layers)


def count_of(n_layers: Any) -> int | None:
    """The layer count when it is a usable size (else None: reported where it is read)."""
    ok = isinstance(n_layers, int) and not isinstance(n_layers, bool) and 1 <= n_layers <= MAX_SIZE
    return n_layers if ok else None


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


def split_at(
    r: Reader, n_layers: int, key: str, default: int, before: str, after: str
) -> list[tuple[str, int]]:
    """Runs for "the first ``key`` layers are one kind, the rest another" (closed form)."""
    first = r.value("layers", key, default=default)
    if isinstance(first, bool) or not isinstance(first, int) or first < 0:
        r.fail(key, f"expected a whole number of layers, 0 or more (got {first!r})")
        first = 0
    head = min(first, n_layers)
    return [(before, head), (after, n_layers - head)]


def attention_windows(window: Any) -> dict[str, Block]:
    """Blocks of transformers' attention layer types: full, or within a sliding window."""
    return {"full_attention": {}, "sliding_attention": {"sliding_window": window}}
