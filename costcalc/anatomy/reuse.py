"""A block reused at several depths (Zamba's shared transformer, ``shared_weight_sets``): it
holds its attention, FFN and first two norms once per weight set, its adapters (``Sequential``
of two bias-free linears, down then up) once per use, and each layer's own parts once per
layer."""

from __future__ import annotations

from dataclasses import replace

from costcalc.anatomy.attention import attention_input
from costcalc.anatomy.tensor import Block, Part, Tensor, linear


def in_set(spec: Block, tensors: list[Tensor]) -> list[Tensor]:
    """``tensors`` as one weight set's when the block is reused (``shared_weight_sets``)."""
    if spec.shared_weight_sets is None:
        return tensors
    return [replace(t, scope="set") for t in tensors]


def adapter_tensors(spec: Block, name: str, out: int, inp: int, part: Part) -> list[Tensor]:
    """One use's low-rank adapter of rank r (``adapter_rank``) beside a projection inp -> out:
    ``name.0`` r x inp, then ``name.1`` out x r, no biases (added to the projection's output)."""
    r = spec.adapter_rank or 0
    return [
        Tensor(f"{name}.0.weight", (r, inp), part, "matmul", scope="use"),
        Tensor(f"{name}.1.weight", (out, r), part, "matmul", scope="use"),
    ]


def qkv_adapter_tensors(spec: Block) -> list[Tensor]:
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


def ffn_adapter_tensors(spec: Block) -> list[Tensor]:
    """Each use's adapter on the dense FFN's first projection (``adapter_rank`` r): D -> r ->
    2h (gated) or h, Zamba 2's ``gate_up_proj_adapter_list``; none without a rank."""
    if spec.adapter_rank is None:
        return []
    first = 2 * spec.ffn_width if spec.gated else spec.ffn_width
    return adapter_tensors(spec, "mlp.gate_up_proj_adapter", first, spec.d_model, "ffn")


def use_projection_tensors(spec: Block) -> list[Tensor]:
    """A layer's own D x D projection of the shared block's output (``use_projection``,
    Zamba's ``linear``)."""
    return linear("linear", spec.d_model, spec.d_model, False, "ffn") if spec.use_projection else []
