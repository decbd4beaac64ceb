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
  several depths, its weight sets and each use's adapters (:mod:`costcalc.anatomy.reuse`);
  Gemma 4's per-layer input branch is :mod:`costcalc.anatomy.per_layer`'s. The tensors outside
  the blocks are :mod:`costcalc.anatomy.model`'s.
- A gated cross-attention block (Llama 3.2 Vision's ``MllamaCrossAttentionDecoderLayer``) keeps
  a scalar gate on its FFN branch (``cross_attn_mlp_gate``; its attention's are the attention
  part's).
- A learned activation keeps its scalars as one-element tensors (Apertus' xIELU: ``alpha_p``,
  ``alpha_n``), ``ffn_act_params`` of them per FFN.

Matrices are written (out, in), as ``nn.Linear`` stores them; GPT-2's ``Conv1D`` stores the
transpose, which changes no count here.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from costcalc.anatomy.ffn import ffn_part
from costcalc.anatomy.mixer import token_mixer
from costcalc.anatomy.model import model_tensors
from costcalc.anatomy.norms import block_norms, norm_gate_tensors
from costcalc.anatomy.per_layer import per_layer_input_tensors
from costcalc.anatomy.recurrent import recurrent_mixer
from costcalc.anatomy.residual import altup_tensors, hyper_connection_tensors, laurel_tensors
from costcalc.anatomy.reuse import (
    ffn_adapter_tensors,
    in_set,
    qkv_adapter_tensors,
    use_projection_tensors,
)
from costcalc.anatomy.tensor import Shape, Tensor, elements
from costcalc.spec import ModelSpec, per_spec

__all__ = ["Shape", "Tensor", "elements", "model_tensors"]  # read from here by every quantity

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
