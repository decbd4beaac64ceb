"""One parameter tensor as PyTorch holds it, and the shapes of the layers blocks are made of.

Matrices are written (out, in), as ``nn.Linear`` stores them; GPT-2's ``Conv1D`` stores the
transpose, which changes no count.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod
from typing import Literal, Protocol

Shape = tuple[int, ...]
Part = Literal["mixer", "ffn", "norms", "model"]
Use = Literal["matmul", "router", "experts", "none"]
"""How a token uses a tensor: ``matmul`` (and a MoE ``router``) multiplies by all of it;
``experts`` by the top-k of its X stacked matrices; ``none`` by none of it (norms, biases, tables
looked up, sinks)."""
Scope = Literal["layer", "set", "use"]
"""Who holds a block tensor: each ``layer`` its own; a weight ``set``, one of those the layers
of a kind reuse in turn (``shared_weight_sets``); a shared block's part for each ``use`` (an
adapter), held with the set but one per layer. Every layer multiplies by all three."""


class Block(Protocol):
    """What a part reads of the block it is in (one stack of :class:`costcalc.spec.ModelSpec`),
    besides its own sizes (the block key of its name): the fields of
    :class:`costcalc.blocks.BlockFields` and the resolved values of the spec that the parts
    read, so that no part imports the spec."""

    @property
    def d_model(self) -> int: ...

    @property
    def kv_heads(self) -> int: ...

    @property
    def head_width(self) -> int: ...

    @property
    def key_width(self) -> int: ...

    @property
    def n_heads(self) -> int | None: ...

    @property
    def v_head_dim(self) -> int | None: ...

    @property
    def kv_cache_heads(self) -> int | None: ...

    @property
    def query_width(self) -> int | None: ...

    @property
    def attention_experts(self) -> int | None: ...

    @property
    def query_rank(self) -> int | None: ...

    @property
    def out_groups(self) -> int | None: ...

    @property
    def out_rank(self) -> int | None: ...

    @property
    def kv_compress_rate(self) -> int | None: ...

    @property
    def indexer_heads(self) -> int | None: ...

    @property
    def indexer_head_dim(self) -> int | None: ...

    @property
    def indexer_block(self) -> int | None: ...

    @property
    def indexer_key_pool(self) -> int | None: ...

    @property
    def q_lora_rank(self) -> int | None: ...

    @property
    def kv_lora_rank(self) -> int | None: ...

    @property
    def qk_rope_head_dim(self) -> int | None: ...

    @property
    def qk_nope_head_dim(self) -> int | None: ...

    @property
    def mixer(self) -> str: ...

    @property
    def ffn(self) -> str: ...

    @property
    def qk_norm(self) -> str: ...

    @property
    def has_norm_bias(self) -> bool: ...

    @property
    def runs_on_text(self) -> bool: ...

    @property
    def qkv_bias(self) -> bool: ...

    @property
    def attn_out_bias(self) -> bool: ...

    @property
    def fused_qkv(self) -> bool: ...

    @property
    def concat_embeddings(self) -> bool: ...

    @property
    def concat_width(self) -> int | None: ...

    @property
    def shares_kv(self) -> bool: ...

    @property
    def keys_as_values(self) -> bool: ...

    @property
    def attention_sinks(self) -> bool: ...

    @property
    def attention_gate(self) -> bool: ...

    @property
    def attention_gate_proj(self) -> bool: ...

    @property
    def attention_gate_bias(self) -> bool: ...

    @property
    def gate_proj_bias(self) -> bool: ...

    @property
    def attention_head_gate(self) -> bool: ...

    @property
    def differential_attention(self) -> bool: ...

    @property
    def gated_cross_attention(self) -> bool: ...

    @property
    def encoder_attention(self) -> bool: ...

    @property
    def dynamic_mask(self) -> bool: ...

    @property
    def ngpt_scales(self) -> bool: ...

    @property
    def residual_scales(self) -> bool: ...

    @property
    def kv_compress_overlap(self) -> bool: ...

    @property
    def query_latent_both(self) -> bool: ...

    @property
    def rope_key_norm(self) -> bool: ...

    @property
    def query_position_scale(self) -> bool: ...

    @property
    def indexer_query_norm(self) -> bool: ...

    @property
    def ffn_width(self) -> int: ...

    @property
    def expert_width(self) -> int: ...

    @property
    def experts(self) -> int: ...

    @property
    def experts_active(self) -> int: ...

    @property
    def moe_experts(self) -> int | None: ...

    @property
    def moe_latent(self) -> int | None: ...

    @property
    def moe_width(self) -> int | None: ...

    @property
    def moe_modality_ffn_hidden(self) -> int | None: ...

    @property
    def moe_shared_ffn_hidden(self) -> int | None: ...

    @property
    def gated(self) -> bool: ...

    @property
    def ffn_bias(self) -> bool: ...

    @property
    def expert_bias(self) -> bool: ...

    @property
    def fused_gate_up(self) -> bool: ...

    @property
    def ffn_inner_norm(self) -> bool: ...

    @property
    def moe_router_bias(self) -> bool: ...

    @property
    def moe_router_scales(self) -> bool: ...

    @property
    def moe_output_bias(self) -> bool: ...

    @property
    def moe_shared_gate(self) -> bool: ...

    @property
    def moe_product_keys(self) -> bool: ...

    @property
    def norms_per_block(self) -> int: ...

    @property
    def per_layer_input_width(self) -> int | None: ...

    @property
    def altup_streams(self) -> int | None: ...

    @property
    def laurel_rank(self) -> int | None: ...

    @property
    def shared_weight_sets(self) -> int | None: ...

    @property
    def norm(self) -> str: ...

    @property
    def position(self) -> str: ...

    @property
    def rotary_width(self) -> int | None: ...

    @property
    def residual_streams(self) -> int: ...

    @property
    def stream_rank(self) -> int | None: ...

    @property
    def stream_mixing(self) -> bool: ...

    @property
    def stream_collapse(self) -> str: ...

    @property
    def norm_gate_rank(self) -> int | None: ...

    @property
    def ffn_norm_gate_rank(self) -> int | None: ...

    @property
    def adapter_rank(self) -> int | None: ...

    @property
    def qkv_adapters(self) -> bool: ...

    @property
    def use_projection(self) -> bool: ...


class Model(Block, Protocol):
    """What the parts outside the blocks read of the model (:class:`costcalc.spec.ModelSpec`)
    besides a block's fields: its tables, its embedding and its head."""

    @property
    def n_layers(self) -> int: ...

    @property
    def vocab_rows(self) -> int: ...

    @property
    def embed_width(self) -> int: ...

    @property
    def position_rows(self) -> int: ...

    @property
    def sinusoidal_rows(self) -> int: ...

    @property
    def per_layer_rows(self) -> int: ...

    @property
    def output_rows(self) -> int: ...

    @property
    def rotary_scale(self) -> bool: ...

    @property
    def embedding_norm(self) -> bool: ...

    @property
    def final_norm(self) -> bool: ...

    @property
    def has_final_norm_bias(self) -> bool: ...

    @property
    def initial_state(self) -> bool: ...

    @property
    def tie_embeddings(self) -> bool: ...

    @property
    def lm_head_bias(self) -> bool: ...

    @property
    def logit_scale(self) -> bool: ...


@dataclass(frozen=True)
class Tensor:
    """One parameter tensor, repeated ``copies`` times."""

    name: str
    shape: Shape
    part: Part
    use: Use = "none"
    copies: int = 1
    active: int | None = None
    """Of ``experts`` tensors, how many of the X a token runs when it is not the block's
    ``moe_top_k`` (a mixture of attention heads: H / K)."""
    scope: Scope = "layer"
    text: bool = True
    """Text-only input uses it (False: another modality's experts, ERNIE 4.5 VL's vision set)."""
    table: bool = False
    """An ``nn.Embedding``, whose rows a token looks up (the token, position and per-layer
    tables, product-key experts' tables), not a layer it multiplies by."""

    def times(self, n: int) -> Tensor:
        """This tensor repeated ``n`` times over (``copies`` x ``n``)."""
        return replace(self, copies=self.copies * n)

    @property
    def elements(self) -> int:
        """Elements of all copies: copies x the product of the dimensions."""
        return self.copies * prod(self.shape)

    def macs_per_token(self, top_k: int) -> int:
        """Multiply-accumulates one token spends on this tensor (all copies): every element of
        a matrix it multiplies by; top_k of X stacked experts; 0 for what it does not, and 0
        for what only another modality's tokens use."""
        if not self.text:
            return 0
        if self.use == "experts":
            return self.elements // self.shape[0] * (top_k if self.active is None else self.active)
        return self.elements if self.use in ("matmul", "router") else 0


def elements(shape: Shape) -> int:
    """Elements of one tensor: the product of its dimensions."""
    return prod(shape)


def linear(name: str, out: int, inp: int, bias: bool, part: Part) -> list[Tensor]:
    """An ``nn.Linear(inp, out)``: weight (out, inp), and bias (out) when it has one."""
    weight = Tensor(f"{name}.weight", (out, inp), part, "matmul")
    return [weight, Tensor(f"{name}.bias", (out,), part)] if bias else [weight]


def norm(
    spec: Block, name: str, width: int, part: Part, copies: int = 1, bias: bool | None = None
) -> list[Tensor]:
    """One norm over ``width``: a weight, plus a bias when ``bias`` (default: the block's
    ``has_norm_bias``)."""
    biased = spec.has_norm_bias if bias is None else bias
    shapes = [("weight", (width,))] + ([("bias", (width,))] if biased else [])
    return [Tensor(f"{name}.{kind}", shape, part, copies=copies) for kind, shape in shapes]


def conv(name: str, channels: int, kernel: int, bias: bool) -> list[Tensor]:
    """A depthwise ``nn.Conv1d(C, C, k, groups=C)``: weight (C, 1, k), bias (C) when it has one.
    Its MACs depend on the sequence (T + k - 1 outputs per channel), so none are per token."""
    weight = Tensor(f"{name}.weight", (channels, 1, kernel), "mixer")
    return [weight, Tensor(f"{name}.bias", (channels,), "mixer")] if bias else [weight]
