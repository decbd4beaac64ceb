"""How the leading cost terms of the embedding notes' cost example grow when one dimension of a
model grows.

Six terms, named as in the embedding notes' ``leading_cost``: the token and position tables, the
block weight matrices, and the forward MACs of the projections + FFN, the attention token pairs
and the LM head. For a plain block they are V D, N D, (4 + 2r) D^2 L, (4 + 2r) B T D^2 L,
2 B T^2 D L and B T D V, so doubling D doubles four of them and quadruples two. Ratios are
exact fractions to the first value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from costcalc import macs
from costcalc.params import position_embedding_params, token_embedding_params
from costcalc.spec import ModelSpec
from costcalc.tensors import stack_tensors

if TYPE_CHECKING:
    from costcalc.render import Grid

TERMS = (
    "token_parameters",
    "position_parameters",
    "block_matrix_parameters",
    "projection_ffn_macs",
    "attention_pair_macs",
    "lm_head_macs",
)

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


def ratios(values: Sequence[int]) -> list[Fraction]:
    """Each value over the first, exactly. A term that is 0 at the first value (no learned
    position table) is 0 at every value; its ratios count as 1."""
    first = values[0]
    return [Fraction(v, first) if first else Fraction(1) for v in values]


def format_ratio(ratio: Fraction) -> str:
    """A ratio with the fewest decimals (1 to 3) that show it exactly, else ~ and 3 decimals."""
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

    def ratios(self, term: str) -> list[Fraction]:
        return ratios(self.terms[term])

    def to_dict(self) -> dict[str, Any]:
        """``{dimension: values, "terms": {term: {"values", "ratios"}}}``; a ratio is an exact
        ratio object (:func:`costcalc.render.ratio_dict`)."""
        from costcalc.render import ratio_dict

        workload: dict[str, Any] = {"batch": self.batch}
        if self.length is not None:
            workload["length"] = self.length
        return {
            self.dimension: self.values,
            "terms": {
                term: {
                    "values": values,
                    "ratios": [ratio_dict(r) for r in self.ratios(term)],
                }
                for term, values in self.terms.items()
            },
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
                "ratios": {term: ratio_dict(self.ratios(term)[index]) for term in self.terms},
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
    return ScaleResult(name, dimension, values, batch, length, causal, terms, windowed)


def scale_grids(result: ScaleResult, setting: str) -> list[Grid]:
    """The values-and-ratios table and the bar chart of the ratios (shown in a terminal)."""
    from costcalc.render import Grid

    symbol = DIMENSIONS[result.dimension]
    first = result.values[0]
    columns = [f"{symbol}={v:,}" for v in result.values]
    columns += [f"ratio {symbol}={v:,}/{first:,}" for v in result.values[1:]]
    rows = [
        [
            term,
            *(f"{v:,}" for v in result.terms[term]),
            *(format_ratio(r) for r in result.ratios(term)[1:]),
        ]
        for term in TERMS
    ]
    attention = "causal T(T+1)/2 pairs" if result.causal else "the full T^2 square"
    notes = [setting, f"Attention pairs count {attention}; MACs are forward, FLOPs = 2 x MACs."]
    if result.windowed:
        notes.append("A sliding window shorter than T: only pairs inside it are counted.")
    grids = [Grid(f"Leading terms of {result.name} as {symbol} grows", ["", *columns], rows, notes)]
    return [*grids, ratio_chart(result)]


def ratio_chart(result: ScaleResult) -> Grid:
    """One bar per term and value, its length proportional to the ratio to the first value."""
    from costcalc.render import Grid

    symbol = DIMENSIONS[result.dimension]
    top = max(max(result.ratios(term)) for term in TERMS)
    rows = []
    for term in TERMS:
        for value, ratio in zip(result.values[1:], result.ratios(term)[1:], strict=True):
            cells = round(ratio / top * BAR_WIDTH) if top else 0
            rows.append([term, f"{symbol}={value:,}", format_ratio(ratio) + "x", "█" * cells])
    first = result.values[0]
    title = f"Ratio to {symbol}={first:,}"
    return Grid(title, ["", symbol, "ratio", ""], rows, chart=True)
