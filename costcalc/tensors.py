"""Parameter tensors: the shapes PyTorch holds, what each is for and how the forward pass uses it.

This is the anatomy every count is read from: parameters are the tensors' elements, MACs per
token are the elements of the tensors a token multiplies by (``use``), optimizer state follows the
tensors one by one. A tensor repeated ``copies`` times (a block's norms, every block of a stack) is
listed once with its multiplicity, so nothing grows with the number of layers or norms.

Conventions, from the Hugging Face ``transformers`` modeling code (transformers 5.24):

- The token mixers are parts of their own (:mod:`costcalc.anatomy.mixer`): attention and its
  sub-parts (:mod:`costcalc.anatomy.attention`), multi-head latent attention
  (:mod:`costcalc.anatomy.mla`), and the recurrent mixers (Mamba-2, Mamba, Gated DeltaNet,
  LFM2's short convolution, ...: :mod:`costcalc.anatomy.recurrent`).
- The FFN is a part of its own (:mod:`costcalc.anatomy.ffn`): dense, a mixture of experts, or
  none. A gated cross-attention block (Llama 3.2 Vision's ``MllamaCrossAttentionDecoderLayer``)
  keeps a scalar gate on its FFN branch (``cross_attn_mlp_gate``; its attention's are the
  attention part's).
- A learned activation keeps its scalars as one-element tensors (Apertus' xIELU: ``alpha_p``,
  ``alpha_n``), ``ffn_act_params`` of them per FFN.
- A block reused at several depths (Zamba's shared transformer, ``shared_weight_sets``) holds
  its attention, FFN and first two norms once per weight set, its adapters (``Sequential`` of two
  bias-free linears, down then up) once per use, and each layer's own parts once per layer.
- A tied LM head is the token table itself (no tensor of its own), as ``parameters()`` yields a
  shared tensor once.

Matrices are written (out, in), as ``nn.Linear`` stores them; GPT-2's ``Conv1D`` stores the
transpose, which changes no count here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import wraps

from costcalc.anatomy.attention import attention_input
from costcalc.anatomy.ffn import ffn_part
from costcalc.anatomy.mixer import token_mixer
from costcalc.anatomy.norms import block_norms, in_set
from costcalc.anatomy.recurrent import recurrent_mixer
from costcalc.anatomy.tensor import Part, Shape, Tensor, elements, linear, norm
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


def adapter_tensors(spec: ModelSpec, name: str, out: int, inp: int, part: Part) -> list[Tensor]:
    """One use's low-rank adapter of rank r (``adapter_rank``) beside a projection inp -> out:
    ``name.0`` r x inp, then ``name.1`` out x r, no biases (added to the projection's output)."""
    r = spec.adapter_rank or 0
    return [
        Tensor(f"{name}.0.weight", (r, inp), part, "matmul", scope="use"),
        Tensor(f"{name}.1.weight", (out, r), part, "matmul", scope="use"),
    ]


def qkv_adapter_tensors(spec: ModelSpec) -> list[Tensor]:
    """Adapters on q, k and v (``qkv_adapters``): each input -> r -> input, whatever the
    key/value heads (Zamba 2's ``linear_{q,k,v}_adapter_list``: ``attention_hidden_size`` both
    ways)."""
    if not spec.qkv_adapters:
        return []
    inp = attention_input(spec)
    return [
        tensor
        for name in ("q", "k", "v")
        for tensor in adapter_tensors(spec, f"attn.{name}_adapter", inp, inp, "mixer")
    ]


def hyper_connection_tensors(spec: ModelSpec, name: str, part: Part) -> list[Tensor]:
    """One hyper-connection over n = ``residual_streams`` copies of the residual stream
    (DeepSeek-V4's ``DeepseekV4HyperConnection``): ``fn`` (2 + n) n x n D (a matmul of the
    flattened streams giving n collapse, n expand and n x n mixing weights), ``base``
    (2 + n) n, ``scale`` (3); without ``stream_mixing`` (HY V4's ``HYV4HyperConnection``)
    ``fn`` 2 n x n D, ``base`` 2 n, ``scale`` (2); none with one stream."""
    n = spec.residual_streams
    if n == 1:
        return []
    if spec.stream_rank is not None:
        return low_rank_stream_tensors(spec, name, part, inject=True)
    if spec.stream_mixing:
        return _stream_weights(spec, name, part, (2 + n) * n, 3)
    return _stream_weights(spec, name, part, 2 * n, 2)


def low_rank_stream_tensors(spec: ModelSpec, name: str, part: Part, inject: bool) -> list[Tensor]:
    """A gated low-rank hyper-connection of rank r = ``stream_rank`` over n streams of D
    (Qwen4-Exp's ``Qwen4ExpTextGatedResidual``): ``hc_norm`` (n D), ``input_mix_weight_down``
    r x n D, ``input_mix_weight_up`` n D x r and, with ``inject``, ``block_inject_weight``
    n x n D."""
    nD, r = spec.residual_streams * spec.d_model, spec.stream_rank or 0
    tensors = [
        *norm(spec, f"{name}.hc_norm", nD, part),
        Tensor(f"{name}.input_mix_weight_down.weight", (r, nD), part, "matmul"),
        Tensor(f"{name}.input_mix_weight_up.weight", (nD, r), part, "matmul"),
    ]
    if inject:
        n = spec.residual_streams
        tensors.append(Tensor(f"{name}.block_inject_weight.weight", (n, nD), part, "matmul"))
    return tensors


def stream_collapse_tensors(spec: ModelSpec) -> list[Tensor]:
    """The last collapse of n ``residual_streams`` into one before the final norm
    (``DeepseekV4HyperHead``): ``hc_fn`` n x n D, ``hc_base`` n, ``hc_scale`` 1; with
    ``stream_rank`` a low-rank one without injection (``hyper_connection_mixer``); none with one
    stream or when it is their mean (``stream_collapse``, GLM-5.3-Flash's)."""
    n = spec.residual_streams
    if n == 1 or spec.stream_collapse == "mean":
        return []
    if spec.stream_rank is not None:
        return low_rank_stream_tensors(spec, "hyper_connection_mixer", "model", inject=False)
    return _stream_weights(spec, "hc_head", "model", n, 1)


def _stream_weights(
    spec: ModelSpec, name: str, part: Part, outputs: int, scales: int
) -> list[Tensor]:
    """Weights computed from the flattened streams: a matrix outputs x n D, a bias, scales."""
    n = spec.residual_streams
    return [
        Tensor(f"{name}.fn", (outputs, n * spec.d_model), part, "matmul"),
        Tensor(f"{name}.base", (outputs,), part),
        Tensor(f"{name}.scale", (scales,), part),
    ]


def altup_projection_tensors(spec: ModelSpec) -> list[Tensor]:
    """AltUp's streams at the model level (``Gemma3nTextModel``): ``altup_projections.i``
    (i < n - 1, D x D each: the embedding into each further stream) and
    ``altup_unembed_projections.i`` (each stream back before the final norm), modules of their
    own in a list; none without AltUp or with one stream."""
    n, D = spec.altup_streams or 1, spec.d_model
    return [
        Tensor(f"altup_{name}projections.{i}.weight", (D, D), "model", "matmul")
        for name in ("", "unembed_")
        for i in range(n - 1)
    ]


@built_once
def mixer_tensors(spec: ModelSpec) -> list[Tensor]:
    """The token mixer of one block (its part, :mod:`costcalc.anatomy.mixer`), with the
    hyper-connection before it (several
    ``residual_streams``) and q/k/v adapters; the Mamba (Zamba) or Mamba-2 (Falcon-H1) mixer
    beside its attention when ``parallel_mamba`` or ``parallel_mamba2`` (each layer's own in a
    reused block); the block's AltUp and LAuReL matrices (Gemma 3n); the gate of its input
    norm (``norm_gate_rank``)."""
    tensors = token_mixer(spec.mixer).tensors(spec)
    tensors += hyper_connection_tensors(spec, "attn_hc", "mixer") if tensors else []
    tensors = in_set(spec, tensors + norm_gate_tensors(spec, "mixer")) + qkv_adapter_tensors(spec)
    recurrent = spec.recurrent_mixer
    if spec.has_attention and recurrent is not None:  # a Mamba mixer beside the attention
        tensors += recurrent_mixer(recurrent).tensors(spec)
    return tensors + altup_tensors(spec) + laurel_tensors(spec)


def altup_tensors(spec: ModelSpec) -> list[Tensor]:
    """A block's AltUp over n = ``altup_streams`` streams (``Gemma3nTextAltUp``):
    ``modality_router`` n x D, ``prediction_coefs`` n^2 x n, ``correction_coefs`` n x n and
    ``correct_output_scale`` (D); its ``router_norm`` (D) is among the block's norms. None
    without AltUp."""
    n = spec.altup_streams
    if n is None:
        return []
    return [
        Tensor("altup.modality_router.weight", (n, spec.d_model), "mixer", "matmul"),
        Tensor("altup.prediction_coefs.weight", (n * n, n), "mixer", "matmul"),
        Tensor("altup.correction_coefs.weight", (n, n), "mixer", "matmul"),
        Tensor("altup.correct_output_scale", (spec.d_model,), "mixer"),
    ]


def norm_gate_tensors(spec: ModelSpec, part: Part) -> list[Tensor]:
    """The low-rank gate on the input norm of the token mixer (``norm_gate_rank``) or of the FFN
    (``ffn_norm_gate_rank``), A.X K2's ``AXK2GatedRMSNorm``: ``fc1`` D -> r, ``fc2`` r -> D, no
    biases; none without a rank. Held with the mixer or the FFN (in a reused block's weight set,
    as the norm it gates)."""
    name, r = ("attn", spec.norm_gate_rank) if part == "mixer" else ("mlp", spec.ffn_norm_gate_rank)
    if r is None:
        return []
    return [
        *linear(f"{name}_norm_gate.fc1", r, spec.d_model, False, part),
        *linear(f"{name}_norm_gate.fc2", spec.d_model, r, False, part),
    ]


def laurel_tensors(spec: ModelSpec) -> list[Tensor]:
    """LAuReL's low-rank path (``Gemma3nTextLaurelBlock``): ``linear_left`` D -> r and
    ``linear_right`` r -> D; its ``post_laurel_norm`` (D) is among the block's norms."""
    r = spec.laurel_rank
    if r is None:
        return []
    return [
        *linear("laurel.linear_left", r, spec.d_model, False, "mixer"),
        *linear("laurel.linear_right", spec.d_model, r, False, "mixer"),
    ]


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


def ffn_adapter_tensors(spec: ModelSpec) -> list[Tensor]:
    """Each use's adapter on the dense FFN's first projection (``adapter_rank`` r): D -> r ->
    2h (gated) or h, Zamba 2's ``gate_up_proj_adapter_list``; none without a rank."""
    if spec.adapter_rank is None:
        return []
    first = 2 * spec.ffn_width if spec.gated else spec.ffn_width
    return adapter_tensors(spec, "mlp.gate_up_proj_adapter", first, spec.d_model, "ffn")


def use_projection_tensors(spec: ModelSpec) -> list[Tensor]:
    """A layer's own D x D projection of the shared block's output (``use_projection``,
    Zamba's ``linear``)."""
    return linear("linear", spec.d_model, spec.d_model, False, "ffn") if spec.use_projection else []


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
    return [replace(t, copies=t.copies * held[t.scope]) for t in block_tensors(spec)]


def parameter_tensors(spec: ModelSpec) -> list[Tensor]:
    """Every parameter tensor of the model with its multiplicity: the model's own, then each
    stack's block tensors (:func:`stack_tensors`)."""
    return model_tensors(spec) + [t for stack in spec.stacks for t in stack_tensors(stack)]


def tensor_count(spec: ModelSpec) -> int:
    """How many tensors ``model.parameters()`` yields: 12 L + 4 for GPT-2, 12 L + 2 for Qwen2."""
    return sum(t.copies for t in parameter_tensors(spec))
