"""Parameter tensors: the shapes PyTorch holds, what each is for and how the forward pass uses it.

This is the anatomy every count is read from: parameters are the tensors' elements, MACs per
token are the elements of the tensors a token multiplies by (``use``), optimizer state follows the
tensors one by one. A tensor repeated ``copies`` times (a block's norms, every block of a stack) is
listed once with its multiplicity, so nothing grows with the number of layers or norms.

Conventions, from the Hugging Face ``transformers`` modeling code (transformers 5.24):

- A block is assembled from its parts (:mod:`costcalc.anatomy`): its token mixer
  (:mod:`costcalc.anatomy.mixer`: attention and its sub-parts, multi-head latent attention, the
  recurrent mixers), its FFN (:mod:`costcalc.anatomy.ffn`: dense, a mixture of experts, or
  none), its norms (:mod:`costcalc.anatomy.norms`), what it adds to its residual path
  (:mod:`costcalc.anatomy.residual`: hyper-connections, AltUp, LAuReL) and, when it is reused at
  several depths, its weight sets and each use's adapters (:mod:`costcalc.anatomy.reuse`).
- A gated cross-attention block (Llama 3.2 Vision's ``MllamaCrossAttentionDecoderLayer``) keeps
  a scalar gate on its FFN branch (``cross_attn_mlp_gate``; its attention's are the attention
  part's).
- A learned activation keeps its scalars as one-element tensors (Apertus' xIELU: ``alpha_p``,
  ``alpha_n``), ``ffn_act_params`` of them per FFN.
- A tied LM head is the token table itself (no tensor of its own), as ``parameters()`` yields a
  shared tensor once.

Matrices are written (out, in), as ``nn.Linear`` stores them; GPT-2's ``Conv1D`` stores the
transpose, which changes no count here.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from costcalc.anatomy.ffn import ffn_part
from costcalc.anatomy.mixer import token_mixer
from costcalc.anatomy.norms import block_norms, norm_gate_tensors
from costcalc.anatomy.recurrent import recurrent_mixer
from costcalc.anatomy.residual import (
    altup_projection_tensors,
    altup_tensors,
    hyper_connection_tensors,
    laurel_tensors,
    stream_collapse_tensors,
)
from costcalc.anatomy.reuse import (
    ffn_adapter_tensors,
    in_set,
    qkv_adapter_tensors,
    use_projection_tensors,
)
from costcalc.anatomy.tensor import Shape, Tensor, elements, linear, norm
from costcalc.spec import ModelSpec, per_spec

__all__ = ["Shape", "Tensor", "elements"]  # the tensor record, read from here by every quantity

Build = Callable[[ModelSpec], list[Tensor]]


def built_once(function: Build) -> Build:
    """``function`` computed once per spec object (:func:`~costcalc.spec.per_spec`: a layered
    model's counts read each kind of block's tensors many times); each caller gets a list of
    its own."""
    cached = per_spec(lambda spec: tuple(function(spec)))

    @wraps(function)
    def fresh(spec: ModelSpec) -> list[Tensor]:
        return list(cached(spec))

    return fresh


# --------------------------------------------------------------------------- token mixers


@built_once
def mixer_tensors(spec: ModelSpec) -> list[Tensor]:
    """The token mixer of one block (its part, :mod:`costcalc.anatomy.mixer`), with the
    hyper-connection before it (several ``residual_streams``) and q/k/v adapters; the Mamba
    (Zamba) or Mamba-2 (Falcon-H1) mixer beside its attention when ``parallel_mamba`` or
    ``parallel_mamba2`` (each layer's own in a reused block); the block's AltUp and LAuReL
    matrices (Gemma 3n, :mod:`costcalc.anatomy.residual`); the gate of its input norm
    (``norm_gate_rank``)."""
    tensors = token_mixer(spec.mixer).tensors(spec)
    tensors += hyper_connection_tensors(spec, "attn_hc", "mixer") if tensors else []
    tensors = in_set(spec, tensors + norm_gate_tensors(spec, "mixer")) + qkv_adapter_tensors(spec)
    recurrent = spec.recurrent_mixer
    if spec.has_attention and recurrent is not None:  # a Mamba mixer beside the attention
        tensors += recurrent_mixer(recurrent).tensors(spec)
    return tensors + altup_tensors(spec) + laurel_tensors(spec)


# --------------------------------------------------------------------------- feed-forward


def per_layer_input_tensors(spec: ModelSpec) -> list[Tensor]:
    """A block's per-layer input branch (Gemma 4): ``per_layer_input_gate`` D -> P, its GELU
    output times the layer's P-wide input, then ``per_layer_projection`` P -> D; none without
    per-layer inputs. Its norm (``post_per_layer_input_norm``, D) is among the block's norms."""
    P = spec.per_layer_input_width
    if P is None:
        return []
    return [
        *linear("per_layer_input_gate", P, spec.d_model, False, "ffn"),
        *linear("per_layer_projection", spec.d_model, P, False, "ffn"),
    ]


@built_once
def ffn_tensors(spec: ModelSpec) -> list[Tensor]:
    """The FFN of one block (its part, :mod:`costcalc.anatomy.ffn`): dense, a mixture of
    experts, or none; with the per-layer input branch, a small gated feed-forward path of
    its own; a gated cross-attention block's gate on its FFN branch is one scalar
    (``cross_attn_mlp_gate``); the gate of its input norm (``ffn_norm_gate_rank``); in a reused
    block, each use's adapter and the layer's own output projection."""
    tensors = per_layer_input_tensors(spec)
    if spec.ffn == "none":
        return tensors + use_projection_tensors(spec)
    tensors = ffn_part(spec).tensors(spec) + tensors + norm_gate_tensors(spec, "ffn")
    if spec.residual_scales:
        tensors.append(Tensor("ffn_residual_scale", (spec.d_model,), "ffn"))
    if spec.ffn_act_params:
        tensors.append(Tensor("mlp.act_fn.scalar", (1,), "ffn", copies=spec.ffn_act_params))
    if spec.gated_cross_attention:
        tensors.append(Tensor("cross_attn_mlp_gate", (1,), "ffn"))
    tensors = in_set(spec, tensors + hyper_connection_tensors(spec, "ffn_hc", "ffn"))
    return tensors + ffn_adapter_tensors(spec) + use_projection_tensors(spec)


# --------------------------------------------------------------------------- blocks and model


@built_once
def block_norm_tensors(spec: ModelSpec) -> list[Tensor]:
    """The norms of one block, their part's (:func:`costcalc.anatomy.norms.block_norms`)."""
    return block_norms(spec)


@built_once
def block_tensors(spec: ModelSpec) -> list[Tensor]:
    """One block of a uniform stack: its norms, token mixer and FFN."""
    return block_norm_tensors(spec) + mixer_tensors(spec) + ffn_tensors(spec)


def model_tensors(spec: ModelSpec) -> list[Tensor]:
    """Every tensor outside the blocks: tables, embedding projections and norm, final norm,
    a second stream's learned initial state, LM head (``output_rows`` x E; none when tied: the
    token table serves), each shared tensor once."""
    V, E, D = spec.vocab_rows, spec.embed_width, spec.d_model
    tensors = [Tensor("embed_tokens.weight", (V, E), "model")]
    if spec.position_rows:
        tensors.append(Tensor("embed_positions.weight", (spec.position_rows, D), "model"))
    tensors += rotary_scale_tensors(spec)
    if E != D:
        tensors += linear("project_in", D, E, False, "model")
        tensors += linear("project_out", E, D, False, "model")
    if spec.embedding_norm:
        tensors += norm(spec, "embed_norm", E, "model")
    tensors += per_layer_model_tensors(spec)
    tensors += stream_collapse_tensors(spec)
    tensors += altup_projection_tensors(spec)
    if spec.final_norm:
        tensors += norm(spec, "norm", D, "model")
    if spec.initial_state:
        tensors.append(Tensor("initial_state", (D,), "model"))
    if not spec.tie_embeddings:
        tensors.append(Tensor("lm_head.weight", (spec.output_rows, E), "model", "matmul"))
    if spec.lm_head_bias:
        tensors.append(Tensor("lm_head.bias", (spec.output_rows,), "model"))
    if spec.logit_scale:
        tensors.append(Tensor("lm_head.logit_scale", (spec.output_rows,), "model"))
    return tensors


def rotary_scale_tensors(spec: ModelSpec) -> list[Tensor]:
    """With ``rotary_scale``, ``rotary_emb.alpha``: one learned scale per rotary frequency, r / 2
    for r rotary dimensions (``qk_rope_head_dim`` on MLA); none without."""
    if not spec.rotary_scale:
        return []
    r = spec.qk_rope_head_dim if spec.mixer == "mla" else spec.rotary_width
    return [Tensor("rotary_emb.alpha", ((r or 0) // 2,), "model")]


def per_layer_table(spec: ModelSpec) -> list[Tensor]:
    """The per-layer input table ``embed_tokens_per_layer``: V' x L P, looked up (no MACs)."""
    P = spec.per_layer_input_width
    if P is None:
        return []
    shape = (spec.per_layer_rows, spec.n_layers * P)
    return [Tensor("embed_tokens_per_layer.weight", shape, "model")]


def per_layer_model_tensors(spec: ModelSpec) -> list[Tensor]:
    """Per-layer inputs at the model level (Gemma 4): the table, ``per_layer_model_projection``
    D -> L P (the token embedding's share of every layer's input) and
    ``per_layer_projection_norm`` (P)."""
    P = spec.per_layer_input_width
    if P is None:
        return []
    return [
        *per_layer_table(spec),
        *linear("per_layer_model_projection", spec.n_layers * P, spec.d_model, False, "model"),
        *norm(spec, "per_layer_projection_norm", P, "model"),
    ]


def weight_sets(spec: ModelSpec) -> int:
    """Weight sets the layers of a reused block hold: min(s, L) of ``shared_weight_sets`` s."""
    return min(spec.shared_weight_sets or spec.n_layers, spec.n_layers)


def adapters_in_sets(spec: ModelSpec) -> int:
    """Adapters the weight sets of a reused block hold in all: set b of s holds g_b, one per
    use i < G (``adapter_slots``, L by default) with i mod s = b (Zamba 2's adapter lists:
    ``nn.Sequential`` where ``i % num_mem_blocks == block_id``, ``nn.Identity`` elsewhere);
    over the min(s, L) sets, k q + min(k, r) for k sets and (q, r) = divmod(G, s). L with
    the default slots."""
    n = spec.n_layers
    s, g = spec.shared_weight_sets or n, spec.adapter_slots or n
    k, (q, r) = min(s, n), divmod(g, s)
    return k * q + min(k, r)


def adapters_in_layers(spec: ModelSpec) -> int:
    """Adapters the L layers hold when each builds its weight set's block anew: layer j holds
    g_(j mod s) (:func:`adapters_in_sets`), so sum over b of u_b g_b, u_b the layers running set
    b; closed form from (Q, R) = divmod(L, s) and (q, r) = divmod(G, s): s Q q + Q r + q R +
    min(R, r). With the default slots, u_1^2 + ... + u_s^2."""
    n = spec.n_layers
    s, g = spec.shared_weight_sets or n, spec.adapter_slots or n
    (big_q, big_r), (q, r) = divmod(n, s), divmod(g, s)
    return s * big_q * q + big_q * r + q * big_r + min(big_r, r)


@built_once
def stack_tensors(spec: ModelSpec) -> list[Tensor]:
    """The block tensors of a stack with their multiplicity: a weight set's tensor once per
    set (:func:`weight_sets`) and an adapter as the sets hold them (:func:`adapters_in_sets`);
    with ``weight_sets_untied`` both once per layer's copy (:func:`adapters_in_layers`); every
    other once per layer."""
    layers = spec.n_layers
    if spec.weight_sets_untied:
        held = {"layer": layers, "set": layers, "use": adapters_in_layers(spec)}
    else:
        held = {"layer": layers, "set": weight_sets(spec), "use": adapters_in_sets(spec)}
    return [t.times(held[t.scope]) for t in block_tensors(spec)]


def parameter_tensors(spec: ModelSpec) -> list[Tensor]:
    """Every parameter tensor of the model with its multiplicity: the model's own, then each
    stack's block tensors (:func:`stack_tensors`)."""
    return model_tensors(spec) + [t for stack in spec.stacks for t in stack_tensors(stack)]


def tensor_count(spec: ModelSpec) -> int:
    """How many tensors ``model.parameters()`` yields: 12 L + 4 for GPT-2, 12 L + 2 for Qwen2."""
    return sum(t.copies for t in parameter_tensors(spec))
