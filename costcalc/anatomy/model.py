"""The tensors outside the blocks, as transformers builds them: the token table (and a learned
position table), the embedding's projections and norm, Gemma 4's per-layer inputs
(:mod:`costcalc.anatomy.per_layer`), what several residual streams add at the model level
(:mod:`costcalc.anatomy.residual`), the final norm, a second stream's initial state and the LM
head. A tied LM head is the token table itself (no tensor of its own), as ``parameters()``
yields a shared tensor once. Also what a training forward saves outside the blocks.
"""

from __future__ import annotations

from costcalc.anatomy.per_layer import per_layer_model_tensors
from costcalc.anatomy.residual import altup_projection_tensors, stream_collapse_tensors
from costcalc.anatomy.saved import Term, norm_terms, projection_inputs
from costcalc.anatomy.tensor import Model, Tensor, linear, norm


def model_tensors(spec: Model) -> list[Tensor]:
    """Every tensor outside the blocks: tables, embedding projections and norm, final norm,
    a second stream's learned initial state, LM head (``output_rows`` x E; none when tied: the
    token table serves), each shared tensor once."""
    V, E, D = spec.vocab_rows, spec.embed_width, spec.d_model
    tensors = [Tensor("embed_tokens.weight", (V, E), "model", table=True)]
    if spec.position_rows:
        positions = (spec.position_rows, D)
        tensors.append(Tensor("embed_positions.weight", positions, "model", table=True))
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
        tensors += norm(spec, "norm", D, "model", bias=spec.has_final_norm_bias)
    if spec.initial_state:
        tensors.append(Tensor("initial_state", (D,), "model"))
    if not spec.tie_embeddings:
        tensors.append(Tensor("lm_head.weight", (spec.output_rows, E), "model", "matmul"))
    if spec.lm_head_bias:
        tensors.append(Tensor("lm_head.bias", (spec.output_rows,), "model"))
    if spec.logit_scale:
        tensors.append(Tensor("lm_head.logit_scale", (spec.output_rows,), "model"))
    return tensors


def sinusoidal_table_elements(spec: Model) -> int:
    """A sinusoidal position table's values, rows x D: a non-persistent buffer, no parameter, so
    outside ``parameters()`` and every count of them. XGLM and Kosmos-2 make (context + 2) x D
    in the default dtype (``XGLMSinusoidalPositionalEmbedding``, modeling_xglm.py;
    ``Kosmos2TextSinusoidalPositionalEmbedding``, modeling_kosmos2.py: the offset 2 fairseq
    keeps) and grow it when a forward runs past it; CTRL makes ``pos_encoding``, n_positions x
    D, in fp32 (modeling_ctrl.py). 0 for other position schemes."""
    return spec.sinusoidal_rows * spec.d_model


def rotary_scale_tensors(spec: Model) -> list[Tensor]:
    """With ``rotary_scale``, ``rotary_emb.alpha``: one learned scale per rotary frequency, r / 2
    for r rotary dimensions (``qk_rope_head_dim`` on MLA); none without."""
    if not spec.rotary_scale:
        return []
    r = spec.qk_rope_head_dim if spec.mixer == "mla" else spec.rotary_width
    return [Tensor("rotary_emb.alpha", ((r or 0) // 2,), "model")]


def model_saved(spec: Model, e: int, batch: int, length: int) -> list[Term]:
    """What a training forward saves outside the blocks, but the logits, at e bytes per
    activation (measured with the blocks, :mod:`costcalc.activations`): the final norm and its
    output (saved by the LM head), the int64 token ids (embedding), 8 N, and targets (loss: the
    labels padded by one position and shifted, copied to 8 N when B > 1, a view of 8 (T + 1)
    bytes when B = 1); learned positions' int64 ids, 8 T; rotary cos and sin, 2 e T r, made
    once and shared by every layer; the loss's fp32 normalizer, 4."""
    N, D = batch * length, spec.d_model
    terms = []
    if spec.final_norm:
        terms = norm_terms(spec.norm, e, (N, "N"), (D, "D"), 1, "final norm")
        terms.append(projection_inputs(e, N, D, 1, "final norm output"))
    terms.append(Term("8 N", "token ids, int64", 8 * N))
    if batch == 1:  # a view of the labels padded by one position
        terms.append(Term("8 (T + 1)", "targets, int64", 8 * (length + 1)))
    else:
        terms.append(Term("8 N", "targets, int64 (a contiguous copy)", 8 * N))
    if spec.position == "learned":
        terms.append(Term("8 T", "position ids, int64", 8 * length))
    if spec.rotary_width:
        terms.append(Term("2 e T r", "rotary cos and sin", 2 * e * length * spec.rotary_width))
    return [*terms, Term("4", "loss normalizer, fp32", 4)]
