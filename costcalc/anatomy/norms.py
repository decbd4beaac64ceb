"""The norms of a block, as transformers builds them: ``norms_per_block`` norms over D (2 pre- or
post-norm, 4 sandwich, 1 parallel), each an RMSNorm weight or a LayerNorm weight (and bias), and
the norms of the block's other branches (Gemma's per-layer input, AltUp, LAuReL)."""

from __future__ import annotations

from dataclasses import replace

from costcalc.anatomy.tensor import Block, Tensor, norm


def in_set(spec: Block, tensors: list[Tensor]) -> list[Tensor]:
    """``tensors`` as one weight set's when the block is reused (``shared_weight_sets``)."""
    if spec.shared_weight_sets is None:
        return tensors
    return [replace(t, scope="set") for t in tensors]


def norm_words(spec: Block) -> str:
    """One norm's weights, in symbols then numbers: 2D for LayerNorm with bias (weight and
    bias), D for RMSNorm or LayerNorm without bias (weight only)."""
    D = f"{spec.d_model:,}"
    if spec.has_norm_bias:
        return f"{spec.norm} weight and bias, 2D = 2 x {D}"
    return f"{spec.norm} weight, D = {D}"


def block_norms(spec: Block) -> list[Tensor]:
    """The norms of one block: ``norms_per_block`` copies of a norm over D, the first over 2 D
    when the attention reads the concatenated embeddings; the first two in the weight set when
    the block is reused, the others each layer's own. Plus the per-layer input branch's
    ``post_per_layer_input_norm`` (D) when the model has per-layer inputs, and AltUp's
    ``router_norm`` and LAuReL's ``post_laurel_norm`` (D each) with those."""
    n, D = spec.norms_per_block, spec.d_model
    shared = min(n, 2) if spec.shared_weight_sets is not None else 0
    wide = 1 if spec.concat_embeddings and n else 0
    tensors = []
    if wide:
        tensors += norm(spec, "input_norm", 2 * D, "norms")
    if shared > wide:
        tensors += norm(spec, "norm", D, "norms", shared - wide)
    tensors = in_set(spec, tensors)
    if n > max(shared, wide):
        name = "own_norm" if shared else "norm"
        tensors += norm(spec, name, D, "norms", n - max(shared, wide))
    if spec.per_layer_input_width is not None:
        tensors += norm(spec, "post_per_layer_input_norm", D, "norms")
    if spec.altup_streams is not None:
        tensors += norm(spec, "altup.router_norm", D, "norms")
    if spec.laurel_rank is not None:
        tensors += norm(spec, "laurel.post_laurel_norm", D, "norms")
    return tensors


def block_norms_formula(spec: Block, count: int) -> str | None:
    """The block's norm parameters ``count`` as n norms of one norm's weights, when that gives
    ``count`` (no norm of another width or of another branch); None: the sum of the tensors
    says it."""
    n, one = spec.norms_per_block, spec.d_model * (2 if spec.has_norm_bias else 1)
    if n * one != count:
        return None
    return f"{n} norms, each {norm_words(spec)} => {n} x {one:,} = {count:,}"
