"""How the leading cost terms of the embedding notes' cost example grow when one dimension of a
model grows.

Six terms, named as in the embedding notes' ``leading_cost``: the token and position tables, the
block weight matrices, and the forward MACs of the projections + FFN, the attention token pairs
and the LM head. For a plain block they are V D, N D, (4 + 2r) D^2 L, (4 + 2r) B T D^2 L,
2 B T^2 D L and B T D V, so doubling D doubles four of them and quadruples two. Ratios are
exact fractions to the first value. What else the model holds fixed as the dimension grows, and
what it derives from it (head width D / H, FFN width r x D), is read from the models themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from costcalc import macs
from costcalc.params import position_embedding_params, token_embedding_params
from costcalc.spec import ModelSpec
from costcalc.tensors import stack_tensors

if TYPE_CHECKING:
    from costcalc.render import Grid

TERM_WORDS = {
    "token_parameters": "token table",
    "position_parameters": "position table",
    "block_matrix_parameters": "block matrices",
    "projection_ffn_macs": "projection/FFN MACs",
    "attention_pair_macs": "attention pair MACs",
    "lm_head_macs": "LM head MACs",
}
"""The six terms, by their JSON keys (the embedding notes' names), in the words tables use: three
counts of parameters, three of forward MACs."""
TERMS = tuple(TERM_WORDS)

DIMENSIONS = {
    "d": "D",
    "vocab": "V",
    "layers": "L",
    "length": "T",
    "context": "context",
}
"""Dimensions that can be varied: option name -> symbol shown in tables."""

SEED_BATCH, SEED_LENGTH = 2, 4
"""The cost example's workload: ``leading_cost(..., batch=2, length=4)``."""

BAR_WIDTH = 24


def block_matrix_params(spec: ModelSpec) -> int:
    """Weight matrices of all blocks, no biases or norms: L (D (H + 2K) d + H d D + X F + D X),
    F = D h + h D (2 D h + h D gated); (4 + 2r) D^2 per GPT-2 block, as the course notes on
    embeddings count it."""
    return sum(t.elements for stack in spec.stacks for t in stack_tensors(stack) if t.use != "none")


def leading_terms(spec: ModelSpec, batch: int, length: int, causal: bool = False) -> dict[str, int]:
    """The six terms of the embedding notes' cost example for one model and workload."""
    return {
        "token_parameters": token_embedding_params(spec),
        "position_parameters": position_embedding_params(spec),
        "block_matrix_parameters": block_matrix_params(spec),
        "projection_ffn_macs": macs.projection_ffn_macs(spec, batch, length),
        "attention_pair_macs": macs.attention_pair_macs(spec, batch, length, causal),
        "lm_head_macs": macs.lm_head_macs(spec, batch, length),
    }


def ratios(values: Sequence[int]) -> list[Fraction | None]:
    """Each value over the first, exactly; None (no ratio) where the first is 0 (a model
    without a learned position table has none at any width)."""
    first = values[0]
    return [Fraction(v, first) if first else None for v in values]


def format_ratio(ratio: Fraction | None) -> str:
    """A ratio with the fewest decimals (1 to 3) that show it exactly, else ~ and 3 decimals;
    "-" for no ratio (0 -> 0)."""
    if ratio is None:
        return "-"
    for places in (1, 2, 3):
        if (ratio * 10**places).denominator == 1:
            return _decimal(ratio, places)
    return "~" + _decimal(ratio, 3)


def _decimal(ratio: Fraction, places: int) -> str:
    """``ratio`` rounded half up to ``places`` decimals, from exact integers."""
    scale = 10**places
    n = (ratio * scale + Fraction(1, 2)).__floor__()
    return f"{n // scale:,}.{n % scale:0{places}d}"


@dataclass(frozen=True)
class ScaleResult:
    """The six terms at each value of one varied dimension."""

    name: str
    dimension: str
    values: list[int]
    batch: int
    length: int | None
    causal: bool
    terms: dict[str, list[int]]
    windowed: bool = False
    fixed: dict[str, int] = field(default_factory=dict)
    """What the models keep as the dimension grows, by ModelSpec field."""
    derived: dict[str, list[int]] = field(default_factory=dict)
    """What the models derive from the dimension, by field: its value at each value."""

    def ratios(self, term: str) -> list[Fraction | None]:
        return ratios(self.terms[term])

    def to_dict(self) -> dict[str, Any]:
        """``{dimension: values, "terms": {term: {"values", "ratios"}}, "fixed", "derived"}``; a
        ratio is an exact ratio object (:func:`costcalc.render.ratio_dict`), null for 0 -> 0."""
        from costcalc.render import ratio_dict

        workload: dict[str, Any] = {"batch": self.batch}
        if self.length is not None:
            workload["length"] = self.length
        return {
            self.dimension: self.values,
            "terms": {
                term: {
                    "values": values,
                    "ratios": [None if r is None else ratio_dict(r) for r in self.ratios(term)],
                }
                for term, values in self.terms.items()
            },
            "fixed": self.fixed,
            "derived": self.derived,
            "model": self.name,
            "workload": workload,
            "attention": "causal" if self.causal else "full",
        }

    def records(self) -> list[dict[str, Any]]:
        """One record per value of the varied dimension (JSON Lines, CSV): the model named with
        the value, the value, the workload, the six terms and their ratios to the first."""
        from costcalc.render import ratio_dict

        base = self.to_dict()
        symbol = DIMENSIONS[self.dimension]
        return [
            {
                "name": f"{self.name} ({symbol}={value})",
                self.dimension: value,
                "workload": base["workload"],
                "attention": base["attention"],
                "terms": {term: values[index] for term, values in self.terms.items()},
                "ratios": {
                    term: None if (r := self.ratios(term)[index]) is None else ratio_dict(r)
                    for term in self.terms
                },
            }
            for index, value in enumerate(self.values)
        ]


def scale_result(
    name: str,
    dimension: str,
    specs: Sequence[tuple[int, ModelSpec]],
    batch: int,
    length: int | None,
    causal: bool = False,
) -> ScaleResult:
    """The six terms for each (value, spec); ``length`` is None when it is the varied one."""
    terms: dict[str, list[int]] = {term: [] for term in TERMS}
    windowed = False
    for value, spec in specs:
        T = value if length is None else length
        for term, count in leading_terms(spec, batch, T, causal).items():
            terms[term].append(count)
        windowed = windowed or macs.window_applies(spec, T)
    values = [value for value, _ in specs]
    fixed, derived = held_and_derived([spec for _, spec in specs], dimension)
    return ScaleResult(
        name, dimension, values, batch, length, causal, terms, windowed, fixed, derived
    )


SIZES: dict[str, Callable[[ModelSpec], int]] = {
    "vocab_size": lambda s: s.vocab_size,
    "n_layers": lambda s: s.n_layers,
    "d_model": lambda s: s.d_model,
    "embedding_dim": lambda s: s.embed_width,
    "n_heads": lambda s: s.n_heads or 0,
    "n_kv_heads": lambda s: s.kv_heads,
    "head_dim": lambda s: s.head_width,
    "ffn_hidden": lambda s: 0 if s.ffn == "none" else s.ffn_width,
    "moe_ffn_hidden": lambda s: s.expert_width if s.moe_experts else 0,
    "context_length": lambda s: s.context_length,
}
"""The sizes of a model, as built, that a varied dimension may leave or change."""
SIZE_WORDS = {
    "vocab_size": "V",
    "n_layers": "L",
    "d_model": "D",
    "embedding_dim": "token width E",
    "n_heads": "H",
    "n_kv_heads": "K",
    "head_dim": "head width",
    "ffn_hidden": "FFN width",
    "moe_ffn_hidden": "expert width",
    "context_length": "context",
}
VARIED_FIELD = {
    "d": "d_model",
    "vocab": "vocab_size",
    "layers": "n_layers",
    "context": "context_length",
}


def held_and_derived(
    specs: Sequence[ModelSpec], dimension: str
) -> tuple[dict[str, int], dict[str, list[int]]]:
    """The sizes every model shares (held fixed) and those that change with the varied
    dimension (derived from it), the dimension itself left out; a size a model does not have
    (no attention, no experts) is in neither."""
    fixed: dict[str, int] = {}
    derived: dict[str, list[int]] = {}
    same = {"embedding_dim": "d_model", "n_kv_heads": "n_heads"}
    for name, size in SIZES.items():
        values = [size(spec) for spec in specs]
        if name == VARIED_FIELD.get(dimension) or not values[0]:
            continue
        if name in same and values == [SIZES[same[name]](spec) for spec in specs]:
            continue  # E = D, K = H: nothing to say
        if len(set(values)) == 1:
            fixed[name] = values[0]
        else:
            derived[name] = values
    return fixed, derived


def held_and_derived_notes(result: ScaleResult, base: ModelSpec) -> list[str]:
    """The held-fixed and derived sizes in words: which a config gives (and so does not follow
    the dimension) and the rule each derived one follows."""
    symbol = DIMENSIONS[result.dimension]
    given = {
        "head_dim": base.head_dim is not None,
        "ffn_hidden": base.ffn_hidden is not None,
        "embedding_dim": base.embedding_dim is not None,
    }
    held = []
    for name, value in result.fixed.items():
        why = " (the config gives it)" if given.get(name) and result.dimension == "d" else ""
        held.append(f"{SIZE_WORDS[name]} {value:,}{why}")
    notes = [f"Held fixed as {symbol} grows: {', '.join(held)}." if held else ""]
    rules = {
        "head_dim": "D / H",
        "ffn_hidden": f"{base.ffn_mult or 4} x D",
        "embedding_dim": "D",
        "moe_ffn_hidden": "the FFN width",
    }
    derived = [
        f"{SIZE_WORDS[name]} = {rules.get(name, symbol)}: " + " -> ".join(f"{v:,}" for v in values)
        for name, values in result.derived.items()
    ]
    if derived:
        notes.append(f"Derived from {symbol}: {'; '.join(derived)}.")
    return [note for note in notes if note]


def scale_grids(result: ScaleResult, setting: list[str]) -> list[Grid]:
    """The values-and-ratios table and the bar chart of the ratios (shown in a terminal)."""
    from costcalc.render import Grid

    symbol = DIMENSIONS[result.dimension]
    first = result.values[0]
    columns = [f"{symbol}={v:,}" for v in result.values]
    columns += [f"ratio {symbol}={v:,}/{first:,}" for v in result.values[1:]]
    rows = [
        [
            TERM_WORDS[term],
            *(f"{v:,}" for v in result.terms[term]),
            *(format_ratio(r) for r in result.ratios(term)[1:]),
        ]
        for term in TERMS
    ]
    attention = "causal T(T+1)/2 pairs" if result.causal else "the full T^2 square"
    notes = [
        *setting,
        "The tables and block matrices count parameters (weights, no biases or norms), the "
        f"rest forward MACs (FLOPs = 2 x MACs); attention pairs count {attention}. A term 0 at "
        "every value has no ratio (-).",
    ]
    if result.windowed:
        notes.append("A sliding window shorter than T: only pairs inside it are counted.")
    grids = [Grid(f"Leading terms of {result.name} as {symbol} grows", ["", *columns], rows, notes)]
    return [*grids, ratio_chart(result)]


def ratio_chart(result: ScaleResult) -> Grid:
    """One bar per term and value, its length proportional to the ratio to the first value."""
    from costcalc.render import Grid

    symbol = DIMENSIONS[result.dimension]
    top = max((r for term in TERMS for r in result.ratios(term) if r is not None), default=0)
    rows = []
    for term in TERMS:
        for value, ratio in zip(result.values[1:], result.ratios(term)[1:], strict=True):
            if ratio is None:
                rows.append([TERM_WORDS[term], f"{symbol}={value:,}", "-", ""])
                continue
            cells = round(ratio / top * BAR_WIDTH) if top else 0
            bar = "█" * cells
            rows.append([TERM_WORDS[term], f"{symbol}={value:,}", format_ratio(ratio) + "x", bar])
    first = result.values[0]
    title = f"Ratio to {symbol}={first:,}"
    return Grid(title, ["", symbol, "ratio", ""], rows, chart=True)
