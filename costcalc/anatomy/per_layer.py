"""Gemma 4's per-layer inputs, as transformers builds them: every layer reads a P-wide input of
its own, looked up per token in one table and projected from the token embedding.

- The model holds the table ``embed_tokens_per_layer`` (V' x L P, looked up: no MACs),
  ``per_layer_model_projection`` D -> L P (the token embedding's share of every layer's input)
  and its norm ``per_layer_projection_norm`` (P).
- Each block holds its branch: ``per_layer_input_gate`` D -> P, whose GELU output multiplies the
  layer's input, then ``per_layer_projection`` P -> D; its norm
  (``post_per_layer_input_norm``, D) is among the block's norms
  (:func:`costcalc.anatomy.norms.block_norms`).

None of them without ``per_layer_input_width`` P.
"""

from __future__ import annotations

from costcalc.anatomy.tensor import Block, Model, Tensor, linear, norm


def per_layer_input_tensors(spec: Block) -> list[Tensor]:
    """A block's per-layer input branch: ``per_layer_input_gate`` D -> P and
    ``per_layer_projection`` P -> D, no biases; none without per-layer inputs."""
    P = spec.per_layer_input_width
    if P is None:
        return []
    return [
        *linear("per_layer_input_gate", P, spec.d_model, False, "ffn"),
        *linear("per_layer_projection", spec.d_model, P, False, "ffn"),
    ]


def per_layer_table(spec: Model) -> list[Tensor]:
    """The per-layer input table ``embed_tokens_per_layer``: V' x L P, looked up (no MACs)."""
    P = spec.per_layer_input_width
    if P is None:
        return []
    shape = (spec.per_layer_rows, spec.n_layers * P)
    return [Tensor("embed_tokens_per_layer.weight", shape, "model", table=True)]


def per_layer_model_tensors(spec: Model) -> list[Tensor]:
    """Per-layer inputs at the model level: the table (:func:`per_layer_table`),
    ``per_layer_model_projection`` D -> L P and ``per_layer_projection_norm`` (P)."""
    P = spec.per_layer_input_width
    if P is None:
        return []
    return [
        *per_layer_table(spec),
        *linear("per_layer_model_projection", spec.n_layers * P, spec.d_model, False, "model"),
        *norm(spec, "per_layer_projection_norm", P, "model"),
    ]


def per_layer_measured(spec: Block) -> bool:
    """Whether the block's per-layer input was measured for backward
    (:mod:`costcalc.activations`): only a block without one."""
    return spec.per_layer_input_width is None
