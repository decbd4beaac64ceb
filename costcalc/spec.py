"""The canonical description of a decoder-only transformer: :class:`ModelSpec`.

Every loader (presets, costcalc YAML/JSON, nanoGPT-style and Hugging Face files) produces one of
these. Validation happens here, once: a ``ModelSpec`` that exists describes a model that can be
built, so the formulas trust it. Nothing is corrected behind the user's back: a head count that
does not divide the width is an error, not a silently changed head count.

The defaults describe a GPT-2 block: learned positions, LayerNorm with bias, a plain 4x MLP,
biases on every linear layer but the LM head, tied embeddings (12 d^2 + 13 d per block).
"""

from __future__ import annotations

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


def structural_problems(spec: ModelSpec) -> list[tuple[str, str]]:
    """Rules a buildable model must satisfy, as (field, message) pairs; empty when it is valid."""
    problems: list[tuple[str, str]] = []
    d, h = spec.d_model, spec.n_heads
    if spec.head_dim is None and d % h:
        nearest = _nearest_divisors(d, h)
        problems.append(
            (
                "n_heads",
                f"d_model {d} does not split into {h} equal heads ({d} % {h} = {d % h}); "
                f"heads that divide {d}: {', '.join(map(str, nearest))}, "
                "or give head_dim explicitly",
            )
        )
    if spec.kv_heads > h or h % spec.kv_heads:
        problems.append(
            (
                "n_kv_heads",
                f"{h} query heads cannot be grouped over {spec.kv_heads} key/value heads "
                "(n_heads must be a multiple of n_kv_heads)",
            )
        )
    if (
        spec.ffn_hidden is not None
        and spec.ffn_mult is not None
        and spec.ffn_hidden != spec.ffn_mult * d
    ):
        problems.append(
            (
                "ffn_hidden",
                f"ffn_hidden {spec.ffn_hidden} contradicts ffn_mult {spec.ffn_mult} "
                f"(which means {spec.ffn_mult * d}); give one of them",
            )
        )
    if spec.fused_gate_up and not spec.gated:
        problems.append(("fused_gate_up", f"a plain {spec.ffn} FFN has no gate to fuse"))
    if spec.norm == "rmsnorm" and spec.norm_bias:
        problems.append(("norm_bias", "RMSNorm has no bias; use norm: layernorm"))
    if spec.position != "learned" and spec.position_offset:
        problems.append(("position_offset", "an offset only applies to a learned position table"))
    if spec.rotary_dim is not None:
        if spec.position != "rotary":
            problems.append(("rotary_dim", "rotary_dim is given but position is not rotary"))
        elif spec.rotary_dim > spec.head_width:
            problems.append(
                ("rotary_dim", f"rotary_dim {spec.rotary_dim} exceeds head_dim {spec.head_width}")
            )
    rotary = spec.rotary_width
    heads_divide = spec.head_dim is not None or d % h == 0
    if rotary is not None and rotary % 2 and heads_divide:
        problems.append(
            ("head_dim", f"rotary positions rotate pairs of dimensions; {rotary} is odd")
        )
    if (spec.moe_experts is None) != (spec.moe_top_k is None):
        problems.append(("moe_top_k", "a mixture of experts needs both moe_experts and moe_top_k"))
    elif (
        spec.moe_experts is not None
        and spec.moe_top_k is not None
        and spec.moe_top_k > spec.moe_experts
    ):
        problems.append(
            (
                "moe_top_k",
                f"cannot route to {spec.moe_top_k} of {spec.moe_experts} experts",
            )
        )
    return problems


def _nearest_divisors(d: int, h: int, count: int = 4) -> list[int]:
    """Head counts that divide d, nearest to h first."""
    divisors = [k for k in range(1, min(d, 4 * h + 64) + 1) if d % k == 0]
    return sorted(sorted(divisors, key=lambda k: (abs(k - h), k))[:count])
