"""Parameter counts, one pure integer function per quantity.

Convention: a tensor shared by two modules (tied embeddings) is counted once, as
``sum(p.numel() for p in model.parameters())`` counts it in PyTorch. The untied total adds the
output matrix a second time. Sources: GPT-2 (Radford et al. 2019) for the block layout
(12 d^2 + 13 d with biases and two LayerNorms); the families' modeling code in Hugging Face
``transformers`` for the variants (GQA, gated FFNs, RMSNorm, biases, offsets, projections).

Symbols: V vocabulary rows, D width, E token-table width, L layers, H query heads,
K key/value heads, d head width, h FFN hidden width, X experts, N context rows.

A block reused at several depths (``shared_weight_sets`` s) counts its weight sets once each
and each use's adapters once per layer: a kind of L such layers holds L x its layers' own part
+ min(s, L) x one set + L x one use's adapters. The per-block counts below are a layer's own
part; the rest is the kind's ``shared`` part (:func:`shared_params`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

from costcalc.anatomy.attention import head_expert_tensors
from costcalc.anatomy.ffn import ffn_part, modality_expert_tensors
from costcalc.anatomy.mixer import token_mixer
from costcalc.anatomy.model import rotary_scale_tensors
from costcalc.anatomy.per_layer import per_layer_model_tensors, per_layer_table
from costcalc.anatomy.residual import altup_projection_tensors, stream_collapse_tensors
from costcalc.blocks import BLOCK_FIELDS
from costcalc.spec import ModelSpec, per_spec
from costcalc.tensors import (
    Tensor,
    block_norm_tensors,
    ffn_tensors,
    mixer_tensors,
    stack_tensors,
)


def token_embedding_params(spec: ModelSpec) -> int:
    """Token table: V * E."""
    return spec.vocab_rows * spec.embed_width


def position_embedding_params(spec: ModelSpec) -> int:
    """Learned position table: (N + offset) * D; sinusoidal, rotary and none have no weights,
    but for a learned scale per rotary frequency (r / 2 with ``rotary_scale``)."""
    return spec.position_rows * spec.d_model + _sum(rotary_scale_tensors(spec))


def embedding_projection_params(spec: ModelSpec) -> int:
    """Projections in and out when the table is narrower than the model: 2 * E * D, no bias."""
    return 0 if spec.embed_width == spec.d_model else 2 * spec.embed_width * spec.d_model


def embedding_norm_params(spec: ModelSpec) -> int:
    """A norm on the token embeddings (BLOOM): E weights (+ E biases for LayerNorm)."""
    return norm_params(spec, spec.embed_width) if spec.embedding_norm else 0


def per_layer_embedding_params(spec: ModelSpec) -> int:
    """The per-layer input table (Gemma 4): V' * L * P; 0 without per-layer inputs."""
    return _sum(per_layer_table(spec))


def per_layer_projection_params(spec: ModelSpec) -> int:
    """The model's projection of the token embedding into every layer's input and its norm:
    D * L * P + P (RMSNorm); 0 without per-layer inputs."""
    return _sum(per_layer_model_tensors(spec)) - per_layer_embedding_params(spec)


def norm_params(spec: ModelSpec, width: int | None = None, bias: bool | None = None) -> int:
    """One norm over D (or ``width``): D weights, plus D biases when ``bias`` (default: the
    norms' ``has_norm_bias``)."""
    biased = spec.has_norm_bias if bias is None else bias
    return (width or spec.d_model) * (2 if biased else 1)


def _sum(tensors: list[Tensor]) -> int:
    """Elements of the tensors a layer holds itself (not those of a shared block's sets)."""
    return sum(t.elements for t in tensors if t.scope == "layer")


@per_spec
def shared_params(spec: ModelSpec) -> int:
    """A reused block's part of one stack, all its layers: min(s, L) weight sets + L uses'
    adapters; 0 when every block has weights of its own. Once per spec, as
    :func:`block_params`."""
    return sum(t.elements for t in stack_tensors(spec) if t.scope != "layer")


def attention_params(spec: ModelSpec) -> int:
    """The token mixer of one block. Attention: D*H*d + 2*D*K*d + H*d*D, plus biases, q/k norms
    (2 d or (H + K) d) and sinks (H); MLA: its low-rank paths (:mod:`costcalc.anatomy.mla`)."""
    return _sum(mixer_tensors(spec))


def expert_ffn_params(spec: ModelSpec) -> int:
    """One routed expert (or the dense FFN): plain D*h + h*D; gated (first projection 2h wide)
    2*D*h + h*D; plus biases; D is the latent width L for experts in a latent; 2 D for a
    product-key expert (one row of each table); the FFN's part's
    (:meth:`costcalc.anatomy.ffn.Ffn.expert_params`)."""
    return ffn_part(spec).expert_params(spec)


def ffn_params(spec: ModelSpec) -> int:
    """All FFN weights of one block: X experts, the router, the shared expert and its gate
    (X = 1 when dense)."""
    return _sum(ffn_tensors(spec))


def block_norm_params(spec: ModelSpec) -> int:
    """The norms inside one block: norms_per_block norms of D (one more with per-layer inputs)."""
    return _sum(block_norm_tensors(spec))


@per_spec
def block_params(spec: ModelSpec) -> int:
    """One block: attention + FFN + norms (12 D^2 + 13 D for a GPT-2 block). Computed once
    per spec: every report of a stack reads it again."""
    return attention_params(spec) + ffn_params(spec) + block_norm_params(spec)


def blocks_params(spec: ModelSpec) -> int:
    """All blocks: L * block + the shared part, summed over the stacks of a layered model."""
    return sum(stack.n_layers * block_params(stack) + shared_params(stack) for stack in spec.stacks)


def final_norm_params(spec: ModelSpec) -> int:
    """The norm after the last block, if there is one."""
    return norm_params(spec, bias=spec.has_final_norm_bias) if spec.final_norm else 0


def stream_collapse_params(spec: ModelSpec) -> int:
    """The last collapse of n residual streams into one: n x n D + n + 1 (0 with one stream)."""
    return _sum(stream_collapse_tensors(spec))


def altup_projection_params(spec: ModelSpec) -> int:
    """AltUp's projections into and out of its n streams: 2 (n - 1) D^2 (0 without AltUp)."""
    return _sum(altup_projection_tensors(spec))


def initial_state_params(spec: ModelSpec) -> int:
    """A second hidden stream's learned initial state: D (0 without one)."""
    return spec.d_model if spec.initial_state else 0


def lm_head_params(spec: ModelSpec) -> int:
    """Output matrix V' * E (0 when tied to the token table), plus V' biases if it has them and
    V' logit scales if it has those; V' the head's rows (V unless ``head_rows`` prunes them)."""
    weights = 0 if spec.tie_embeddings else spec.output_rows * spec.embed_width
    vectors = int(spec.lm_head_bias) + int(spec.logit_scale)
    return weights + vectors * spec.output_rows


@per_spec
def total_params(spec: ModelSpec) -> int:
    """Every parameter once: tables + projections + embedding norm + per-layer inputs + blocks
    + the residual streams' own tensors + final norm + a second stream's initial state + LM head.
    Computed once per spec: the untied and active totals, weight bytes, MACs and memory all
    start from it."""
    return (
        token_embedding_params(spec)
        + position_embedding_params(spec)
        + embedding_projection_params(spec)
        + embedding_norm_params(spec)
        + per_layer_embedding_params(spec)
        + per_layer_projection_params(spec)
        + blocks_params(spec)
        + stream_collapse_params(spec)
        + altup_projection_params(spec)
        + final_norm_params(spec)
        + initial_state_params(spec)
        + lm_head_params(spec)
    )


def untied_total_params(spec: ModelSpec) -> int:
    """The total with an output matrix of its own: tied total + V * E when tied."""
    extra = spec.vocab_rows * spec.embed_width if spec.tie_embeddings else 0
    return total_params(spec) + extra


def tying_saving_params(spec: ModelSpec) -> int:
    """What tying saves: the output matrix V * E a tied model would add untied (untied total -
    tied total), or, untied, the head's own matrix, which the token table would replace (V' * E
    for a head of V' rows)."""
    return spec.embed_width * (spec.vocab_rows if spec.tie_embeddings else spec.output_rows)


def idle_expert_params(spec: ModelSpec) -> int:
    """Experts one token skips, all blocks: per stack, L x (the routed FFN experts and the
    attention experts one block skips, and another modality's experts with their router,
    which a text token never uses)."""
    return sum(
        stack.n_layers * (idle_ffn_expert_params(stack) + idle_attention_expert_params(stack))
        + stack.n_layers * sum(t.elements for t in modality_expert_tensors(stack))
        for stack in spec.stacks
    )


def idle_ffn_expert_params(spec: ModelSpec) -> int:
    """Routed FFN experts one token skips, one block: (X - k) expert; 0 for a dense FFN."""
    if spec.moe_experts is None:
        return 0
    return (spec.experts - spec.experts_active) * expert_ffn_params(spec)


def idle_attention_expert_params(spec: ModelSpec) -> int:
    """A mixture of attention heads' query and output experts one token skips, one block:
    (X - H / K) (K d D + D K dv); 0 without one."""
    return sum(
        t.elements // t.shape[0] * (t.shape[0] - (t.active or 0))
        for t in head_expert_tensors(spec)
        if t.use == "experts"
    )


def active_params(spec: ModelSpec) -> int:
    """Parameters one token uses: the total less the experts it is not routed to."""
    return total_params(spec) - idle_expert_params(spec)


class StackReport(NamedTuple):
    """One kind of block of a layered model: how many layers, and its parts per block."""

    kind: str
    layers: int
    attention: int
    ffn: int
    norms: int
    per_block: int
    shared: int
    """Weight sets and adapters of a block reused by the kind's layers (0: none)."""
    blocks: int


FFN_KEYS = frozenset(
    name for name in BLOCK_FIELDS if name.startswith(("ffn", "moe_")) or name == "fused_gate_up"
)
MIXER_KEYS = frozenset(BLOCK_FIELDS) - FFN_KEYS - {"norms_per_block"}


def differing_keys(stacks: tuple[ModelSpec, ...]) -> frozenset[str]:
    """The block keys whose value is not the same in every stack: one pass over the stacks
    (none for a model of one stack)."""
    if len(stacks) == 1:
        return frozenset()
    first = stacks[0]
    return frozenset(
        name
        for name in BLOCK_FIELDS
        if any(getattr(s, name) != getattr(first, name) for s in stacks[1:])
    )


def stack_kind(stack: ModelSpec, keys: frozenset[str]) -> str:
    """What sets this kind of block apart from the others (``keys``: those not the same in all,
    :func:`differing_keys`), in words: its token mixer, its FFN (dense or experts), then any
    other key that differs."""
    differing = set(keys)
    words = []
    if "mixer" in differing:
        words.append(token_mixer(stack.mixer).words)
        differing -= MIXER_KEYS
    if differing & {"moe_experts", "ffn"}:
        words.append(ffn_part(stack).words(stack, "moe_experts" in differing))
        differing -= FFN_KEYS
    words += [
        _key_in_words(name, getattr(stack, name)) for name in BLOCK_FIELDS if name in differing
    ]
    return ", ".join(word for word in words if word) or "all blocks"


def _key_in_words(name: str, value: object) -> str:
    if name == "sliding_window":
        return "full attention" if value is None else f"sliding window {value:,}"
    if name == "attention_chunk":
        return "unchunked" if value is None else f"chunks of {value:,}"
    if name == "gated_cross_attention":
        return "gated cross-attention" if value else "self-attention"
    if value is None or value is False:
        return ""
    return name.replace("_", " ") if value is True else f"{name.replace('_', ' ')} {value}"


def stack_reports(spec: ModelSpec) -> tuple[StackReport, ...]:
    """Each kind of block with its count and parts."""
    stacks = spec.stacks
    differing = differing_keys(stacks)
    return tuple(
        StackReport(
            kind=stack_kind(stack, differing),
            layers=stack.n_layers,
            attention=attention_params(stack),
            ffn=ffn_params(stack),
            norms=block_norm_params(stack),
            per_block=block_params(stack),
            shared=shared_params(stack),
            blocks=stack.n_layers * block_params(stack) + shared_params(stack),
        )
        for stack in stacks
    )


OPTIONAL_PARTS = (
    "embedding_projection",
    "embedding_norm",
    "per_layer_embedding",
    "per_layer_projection",
    "stream_collapse",
    "altup_projections",
    "initial_state",
)
"""Parts of :class:`ParamReport` only some families have: tables, the JSON and the CSV show one
only where a model has it (not zero)."""


class ParamReport(NamedTuple):
    """Every parameter quantity of one model; the parts add up to ``total``.

    ``attention``, ``ffn``, ``norms`` and ``per_block`` are per block when every block is built
    alike, and None when they differ or reuse weight sets (``stacks`` gives each kind).
    """

    token_embedding: int
    position_embedding: int
    embedding_projection: int
    embedding_norm: int
    per_layer_embedding: int
    per_layer_projection: int
    attention: int | None
    ffn: int | None
    norms: int | None
    per_block: int | None
    blocks: int
    stream_collapse: int
    altup_projections: int
    final_norm: int
    initial_state: int
    lm_head: int
    total: int
    untied_total: int
    active: int
    stacks: tuple[StackReport, ...]
    tying_saving: int
    """Parameters tying saves, or would save in an untied model (:func:`tying_saving_params`)."""

    @property
    def untied_increase(self) -> Fraction:
        """How much larger the untied model is than the tied one, as a fraction of the tied
        total; the same whether this model is tied or not."""
        return Fraction(self.tying_saving, self.untied_total - self.tying_saving)

    @property
    def tying_share(self) -> Fraction:
        """The part of the untied model that tying saves: V * E / untied total."""
        return Fraction(self.tying_saving, self.untied_total)

    @property
    def non_embedding(self) -> int:
        """Kaplan et al.'s N as nanoGPT's ``get_num_params(non_embedding=True)`` reports it: the
        total minus the position table (a tied token table stays in, as the LM head) and minus
        the per-layer input table, which no token multiplies by (transformers'
        ``num_parameters(exclude_embeddings=True)`` leaves it out too)."""
        return self.total - self.position_embedding - self.per_layer_embedding

    @property
    def non_embedding_kaplan(self) -> int:
        """The non-embedding count of Kaplan et al. (2020) and of Qwen's reports (Qwen3-8B's
        6.95B): the total less every table a token is looked up in (token, position, per-layer)
        and the LM head (tied, it is the token table)."""
        return self.non_embedding - self.token_embedding - self.lm_head

    @property
    def active_non_embedding(self) -> int:
        """Parameters active per token less the tables a token is looked up in, as OpenAI's
        gpt-oss card counts active parameters (3.61B for gpt-oss-20b): the LM head, untied,
        stays in; a tied token table stays in as the LM head."""
        looked_up = self.position_embedding + self.per_layer_embedding
        return self.active - looked_up - (self.token_embedding if self.lm_head else 0)

    def parts(self) -> dict[str, int]:
        """The parts that add up to ``total``: tables, each part summed over all blocks, final
        norm, LM head."""
        return {
            "token_embedding": self.token_embedding,
            "position_embedding": self.position_embedding,
            "embedding_projection": self.embedding_projection,
            "embedding_norm": self.embedding_norm,
            "per_layer_embedding": self.per_layer_embedding,
            "per_layer_projection": self.per_layer_projection,
            "attention": sum(s.layers * s.attention for s in self.stacks),
            "ffn": sum(s.layers * s.ffn for s in self.stacks),
            "norms": sum(s.layers * s.norms for s in self.stacks),
            "shared_blocks": sum(s.shared for s in self.stacks),
            "stream_collapse": self.stream_collapse,
            "altup_projections": self.altup_projections,
            "final_norm": self.final_norm,
            "initial_state": self.initial_state,
            "lm_head": self.lm_head,
        }


def param_report(spec: ModelSpec) -> ParamReport:
    """All parameter counts of ``spec``."""
    stacks = stack_reports(spec)
    one = stacks[0] if len(stacks) == 1 and not stacks[0].shared else None
    return ParamReport(
        token_embedding=token_embedding_params(spec),
        position_embedding=position_embedding_params(spec),
        embedding_projection=embedding_projection_params(spec),
        embedding_norm=embedding_norm_params(spec),
        per_layer_embedding=per_layer_embedding_params(spec),
        per_layer_projection=per_layer_projection_params(spec),
        attention=None if one is None else one.attention,
        ffn=None if one is None else one.ffn,
        norms=None if one is None else one.norms,
        per_block=None if one is None else one.per_block,
        blocks=blocks_params(spec),
        stream_collapse=stream_collapse_params(spec),
        altup_projections=altup_projection_params(spec),
        final_norm=final_norm_params(spec),
        initial_state=initial_state_params(spec),
        lm_head=lm_head_params(spec),
        total=total_params(spec),
        untied_total=untied_total_params(spec),
        active=active_params(spec),
        stacks=stacks,
        tying_saving=tying_saving_params(spec),
    )
