"""The canonical description of a decoder-only transformer: :class:`ModelSpec`.

Every loader (presets, costcalc YAML/JSON, nanoGPT-style and Hugging Face files) produces one of
these. Validation happens here, once: a ``ModelSpec`` that exists describes a model that can be
built, so the formulas trust it. Nothing is corrected behind the user's back: a head count that
does not divide the width is an error, not a silently changed head count.

The defaults describe a GPT-2 block: learned positions, LayerNorm with bias, a plain 4x MLP,
biases on every linear layer but the LM head, tied embeddings (12 d^2 + 13 d per block).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from math import isqrt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# Sizes are strict positive integers: a YAML `true` is not 1 and `768.0` is not 768.
# The upper bound keeps absurd values (a typo with extra digits) from passing as a model.
MAX_SIZE = 2**31 - 1
Size = Annotated[int, Field(strict=True, ge=1, le=MAX_SIZE)]
Count = Annotated[int, Field(strict=True, ge=0, le=MAX_SIZE)]
Flag = Annotated[bool, Field(strict=True)]

PositionScheme = Literal["learned", "sinusoidal", "rotary", "none"]
FfnKind = Literal["mlp", "swiglu", "geglu"]
NormKind = Literal["layernorm", "rmsnorm"]

GATED_FFNS: frozenset[str] = frozenset({"swiglu", "geglu"})


class StructureError(ValueError):
    """Field values that are each fine but do not make a buildable model together."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{field}: {message}" for field, message in problems))


class ModelSpec(BaseModel):
    """A decoder-only transformer, as far as its size and cost are concerned."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    vocab_size: Size = Field(description="Tokens in the vocabulary (rows of the token table).")
    vocab_pad_multiple: Size | None = Field(
        default=None,
        description="Pad the table's rows to a multiple of this (nanoGPT: 50,257 -> 50,304).",
    )
    d_model: Size = Field(description="Width D of the residual stream.")
    n_layers: Size = Field(description="Number of transformer blocks L.")
    n_heads: Size = Field(description="Attention (query) heads H.")
    n_kv_heads: Size | None = Field(
        default=None, description="Key/value heads (GQA/MQA); default: n_heads."
    )
    head_dim: Size | None = Field(
        default=None,
        description="Width of one head; default d_model / n_heads, which must then divide exactly.",
    )
    context_length: Size = Field(description="Longest sequence (rows of a learned position table).")
    position: PositionScheme = Field(default="learned", description="Position scheme.")
    position_offset: Count = Field(
        default=0, description="Extra rows of a learned position table (OPT keeps 2)."
    )
    rotary_dim: Size | None = Field(
        default=None,
        description="Rotary dimensions per head (partial rotary); default: head_dim.",
    )
    embedding_dim: Size | None = Field(
        default=None,
        description="Width of the token table when it differs from d_model (projected in and out).",
    )
    ffn: FfnKind = Field(default="mlp", description="Feed-forward kind: plain MLP or gated.")
    ffn_mult: Size | None = Field(
        default=None,
        description=(
            "FFN hidden width as a multiple r of d_model (default 4). For a gated FFN the first "
            "projection's output width doubles (2 r D)."
        ),
    )
    ffn_hidden: Size | None = Field(
        default=None, description="FFN hidden width, when it is not a whole multiple of d_model."
    )
    moe_experts: Size | None = Field(
        default=None, description="Experts per block (mixture of experts); default: dense."
    )
    moe_top_k: Size | None = Field(default=None, description="Experts each token is routed to.")
    norm: NormKind = Field(default="layernorm", description="Normalisation kind.")
    norm_bias: Flag | None = Field(
        default=None, description="LayerNorm carries a bias (default: yes; RMSNorm never does)."
    )
    norms_per_block: Count = Field(default=2, description="Norms in each block.")
    final_norm: Flag = Field(default=True, description="A norm after the last block.")
    qkv_bias: Flag = Field(default=True, description="Bias on the query/key/value projections.")
    fused_qkv: Flag = Field(
        default=True,
        description=(
            "Q, K and V are one tensor (GPT-2's c_attn); false for separate q/k/v projections "
            "(Llama, Qwen). Changes the tensor count, not the parameter count."
        ),
    )
    fused_gate_up: Flag = Field(
        default=False,
        description=(
            "A gated FFN's gate and up projections are one tensor (Phi-3's gate_up_proj). "
            "Changes the tensor count, not the parameter count."
        ),
    )
    attn_out_bias: Flag = Field(default=True, description="Bias on the attention output.")
    ffn_bias: Flag = Field(default=True, description="Bias on the FFN projections.")
    lm_head_bias: Flag = Field(default=False, description="Bias on the LM head.")
    tie_embeddings: Flag = Field(
        default=True, description="The LM head reuses the token table (no matrix of its own)."
    )
    sliding_window: Size | None = Field(
        default=None, description="Each token attends to at most this many positions."
    )

    @model_validator(mode="after")
    def _check_structure(self) -> ModelSpec:
        problems = structural_problems(self)
        if problems:
            raise StructureError(problems)
        return self

    # Resolved values: the defaults above, filled in.

    @property
    def vocab_rows(self) -> int:
        """Rows of the token table: vocab_size, padded up to vocab_pad_multiple."""
        m = self.vocab_pad_multiple
        return self.vocab_size if m is None else -(-self.vocab_size // m) * m

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def head_width(self) -> int:
        """head_dim, or d_model / n_heads (divisibility was checked)."""
        return self.head_dim if self.head_dim is not None else self.d_model // self.n_heads

    @property
    def ffn_width(self) -> int:
        """FFN hidden width h: ffn_hidden, or r * d_model."""
        if self.ffn_hidden is not None:
            return self.ffn_hidden
        return (4 if self.ffn_mult is None else self.ffn_mult) * self.d_model

    @property
    def gated(self) -> bool:
        return self.ffn in GATED_FFNS

    @property
    def embed_width(self) -> int:
        """Width of the token table (d_model unless embedding_dim says otherwise)."""
        return self.d_model if self.embedding_dim is None else self.embedding_dim

    @property
    def has_norm_bias(self) -> bool:
        return self.norm == "layernorm" and self.norm_bias is not False

    @property
    def rotary_width(self) -> int | None:
        if self.position != "rotary":
            return None
        return self.head_width if self.rotary_dim is None else self.rotary_dim

    @property
    def experts(self) -> int:
        return 1 if self.moe_experts is None else self.moe_experts

    @property
    def experts_active(self) -> int:
        return 1 if self.moe_top_k is None else self.moe_top_k

    @property
    def position_rows(self) -> int:
        """Rows of the learned position table (context plus offset); 0 for other schemes."""
        return self.context_length + self.position_offset if self.position == "learned" else 0

    def resolved(self) -> dict[str, object]:
        """Every field with its default filled in, as the model is actually built."""
        data = self.model_dump()
        data.update(
            n_kv_heads=self.kv_heads,
            head_dim=self.head_width,
            ffn_hidden=self.ffn_width,
            embedding_dim=self.embed_width,
            norm_bias=self.has_norm_bias,
            rotary_dim=self.rotary_width,
        )
        data.pop("ffn_mult")
        return data


Rule = Callable[[ModelSpec], Iterator[tuple[str, str]]]

RULES: list[tuple[frozenset[str], Rule]] = []
"""Each structural rule with the fields it reads."""


def _rule(*fields: str) -> Callable[[Rule], Rule]:
    def register(check: Rule) -> Rule:
        RULES.append((frozenset(fields), check))
        return check

    return register


def structural_problems(
    spec: ModelSpec, usable: Collection[str] | None = None
) -> list[tuple[str, str]]:
    """Rules a buildable model must satisfy, as (field, message) pairs; empty when it is valid.

    With ``usable``, only the rules that read nothing but those fields run: a file whose other
    fields are invalid still hears about every rule its valid fields break.
    """
    return [
        problem
        for fields, check in RULES
        if usable is None or fields <= set(usable)
        for problem in check(spec)
    ]


def divisors(n: int) -> list[int]:
    """Every divisor of ``n``, ascending (sqrt(n) steps)."""
    small = [k for k in range(1, isqrt(n) + 1) if n % k == 0]
    return small + [n // k for k in reversed(small) if k * k != n]


def nearest_head_counts(d: int, h: int, kv_heads: int | None = None) -> list[int]:
    """The valid equal-split head counts of width ``d`` nearest ``h``, one below and one above
    (multiples of ``kv_heads`` when given)."""
    valid = [k for k in divisors(d) if kv_heads is None or k % kv_heads == 0]
    return [k for k in valid if k < h][-1:] + [k for k in valid if k > h][:1]


def split_problem(d: int, h: int) -> str | None:
    """Seed 000: an implicit head_dim is D / H, so H must divide D (never corrected)."""
    if d % h == 0:
        return None
    return f"d_model {d:,} does not split into {h:,} equal heads ({d:,} % {h:,} = {d % h:,})"


def grouping_problem(h: int, k: int) -> str | None:
    """GQA/MQA: each key/value head serves a whole group of query heads."""
    if k <= h and h % k == 0:
        return None
    return (
        f"{h:,} query heads cannot be grouped over {k:,} key/value heads "
        "(n_heads must be a multiple of n_kv_heads)"
    )


@_rule("d_model", "n_heads", "head_dim")
def _equal_head_split(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    problem = None if spec.head_dim is not None else split_problem(spec.d_model, spec.n_heads)
    if problem is not None:
        nearest = ", ".join(f"{k:,}" for k in nearest_head_counts(spec.d_model, spec.n_heads))
        yield (
            "n_heads",
            f"{problem}; nearest valid head counts: {nearest}; or give head_dim explicitly",
        )


@_rule("n_heads", "n_kv_heads")
def _kv_grouping(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    problem = grouping_problem(spec.n_heads, spec.kv_heads)
    if problem is not None:
        yield ("n_kv_heads", problem)


@_rule("ffn_hidden", "ffn_mult", "d_model")
def _one_ffn_width(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    hidden, mult, d = spec.ffn_hidden, spec.ffn_mult, spec.d_model
    if hidden is not None and mult is not None and hidden != mult * d:
        yield (
            "ffn_hidden",
            f"ffn_hidden {hidden} contradicts ffn_mult {mult} (which means {mult * d}); "
            "give one of them",
        )


@_rule("ffn", "fused_gate_up")
def _gate_to_fuse(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.fused_gate_up and not spec.gated:
        yield ("fused_gate_up", f"a plain {spec.ffn} FFN has no gate to fuse")


@_rule("norm", "norm_bias")
def _rmsnorm_without_bias(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.norm == "rmsnorm" and spec.norm_bias:
        yield ("norm_bias", "RMSNorm has no bias; use norm: layernorm")


@_rule("position", "position_offset")
def _offset_needs_table(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.position != "learned" and spec.position_offset:
        yield ("position_offset", "an offset only applies to a learned position table")


@_rule("position", "rotary_dim", "head_dim", "d_model", "n_heads")
def _rotary_dims(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """Rotary positions rotate pairs of dimensions within one head."""
    if spec.position != "rotary":
        if spec.rotary_dim is not None:
            yield ("rotary_dim", "rotary_dim is given but position is not rotary")
        return
    if spec.head_dim is None and spec.d_model % spec.n_heads:
        return  # no head width until the equal split is fixed (reported above)
    head, rotary = spec.head_width, spec.rotary_width
    field = "rotary_dim" if spec.rotary_dim is not None else "head_dim"
    if rotary is not None and rotary > head:
        yield (field, f"rotary_dim {rotary} exceeds head_dim {head}")
    elif rotary is not None and rotary % 2:
        yield (field, f"rotary positions rotate pairs of dimensions; {rotary} is odd")


@_rule("moe_experts", "moe_top_k")
def _expert_routing(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    experts, top_k = spec.moe_experts, spec.moe_top_k
    if (experts is None) != (top_k is None):
        yield ("moe_top_k", "a mixture of experts needs both moe_experts and moe_top_k")
    elif experts is not None and top_k is not None and top_k > experts:
        yield ("moe_top_k", f"cannot route to {top_k} of {experts} experts")
