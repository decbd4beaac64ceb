"""The norms of a block, as transformers builds them: ``norms_per_block`` norms over D (2 pre- or
post-norm, 4 sandwich, 1 parallel), each an RMSNorm weight or a LayerNorm weight (and bias), the
norms of the block's other branches (Gemma's per-layer input, AltUp, LAuReL), and the low-rank
gates on the mixer's and the FFN's input norms (A.X K2)."""

from __future__ import annotations

from costcalc.anatomy.attention import attention_input
from costcalc.anatomy.reuse import in_set
from costcalc.anatomy.saved import Step, Term, norm_terms
from costcalc.anatomy.tensor import Block, Part, Tensor, linear, norm

SAVED_KEYS = frozenset({"norms_per_block"})
"""The block keys whose every value :func:`block_norms_saved` covers, when measured."""


def norm_words(spec: Block, bias: bool | None = None) -> str:
    """One norm's weights, in symbols then numbers: 2D with a bias (weight and bias; default:
    the block's ``has_norm_bias``), D without (weight only)."""
    D = f"{spec.d_model:,}"
    if spec.has_norm_bias if bias is None else bias:
        return f"{spec.norm} weight and bias, 2D = 2 x {D}"
    return f"{spec.norm} weight, D = {D}"


def block_norms(spec: Block) -> list[Tensor]:
    """The norms of one block: ``norms_per_block`` copies of a norm over D, the first over the
    attention's input (:func:`~costcalc.anatomy.attention.attention_input`, 2 D) when it reads
    the concatenated embeddings; the first two in the weight set when the block is reused, the
    others each layer's own. Plus the per-layer input branch's
    ``post_per_layer_input_norm`` (D) when the model has per-layer inputs, and AltUp's
    ``router_norm`` and LAuReL's ``post_laurel_norm`` (D each) with those."""
    n, D = spec.norms_per_block, spec.d_model
    shared = min(n, 2) if spec.shared_weight_sets is not None else 0
    wide = 1 if spec.concat_embeddings and n else 0
    tensors = []
    if wide:
        tensors += norm(spec, "input_norm", attention_input(spec), "norms")
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


def block_norms_measured(spec: Block) -> bool:
    """Whether the block's norms were measured: 2 (pre- or post-norm) or 4 (sandwich)."""
    return spec.norms_per_block in (2, 4)


def block_norms_saved(spec: Block, step: Step) -> list[Term]:
    """What the block's ``norms_per_block`` norms over D save for backward, on N rows
    (:func:`costcalc.anatomy.saved.norm_terms`)."""
    N, n = step.tokens, spec.norms_per_block
    return norm_terms(spec.norm, step.e, (N, "N"), (spec.d_model, "D"), n, "norm")


def block_norms_by_convention(spec: Block) -> bool:
    """Sandwich norms come from families (Gemma 2/3) whose norms keep tensors in other dtypes
    than Llama's."""
    return spec.norms_per_block == 4


def block_norms_formula(spec: Block, count: int) -> str | None:
    """The block's norm parameters ``count`` as n norms of one norm's weights, when that gives
    ``count`` (no norm of another width or of another branch); None: the sum of the tensors
    says it."""
    n, one = spec.norms_per_block, spec.d_model * (2 if spec.has_norm_bias else 1)
    if n * one != count:
        return None
    return f"{n} norms, each {norm_words(spec)} => {n} x {one:,} = {count:,}"


def norm_gate_tensors(spec: Block, part: Part) -> list[Tensor]:
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
