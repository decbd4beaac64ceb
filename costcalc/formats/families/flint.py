"""Flint (transformers 5.24, ``models/flint/modeling_flint.py``): Qwen3-MoE's layout with a sink
logit per head, sliding-window attention on most layers and an ungated shared expert.

Per block: ``input_layernorm`` and ``post_attention_layernorm`` (RMSNorm, D); ``self_attn``:
``q_proj`` (D -> H d), ``k_proj``/``v_proj`` (D -> K d), ``o_proj`` (H d -> D), each with a bias
when ``attention_bias``, ``q_norm``/``k_norm`` (RMSNorm, d) and ``sinks`` (H); sliding layers
are rotary, full layers have no positions (no parameters either way). Sparse layers: ``mlp.gate``
(X x D, float32), ``mlp.experts`` (``gate_up_proj`` X x 2h x D, ``down_proj`` X x D x h, top k)
and ``mlp.shared_expert`` (SwiGLU of ``shared_expert_intermediate_size``, added without a gate);
dense layers: a SwiGLU ``mlp`` of ``intermediate_size``. ``embed_tokens``, a final ``norm`` and
an untied ``lm_head`` (V x D) by default.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout, sliding_window
from costcalc.formats.families.moe import routed_experts, sparse_layout
from costcalc.formats.hf_reader import Reader, attention_bias
from costcalc.formats.peft_names import ROUTER_GATE, llama_names

FLINT_SIZES: dict[str, Any] = {
    "vocab_size": 150144,
    "d_model": 2048,
    "n_layers": 49,
    "n_heads": 32,
    "context_length": 262144,
    "ffn_hidden": 6144,
}
"""``FlintConfig``'s defaults for the standard sizes."""

FULL_HEAD = 2
"""The first layers attend fully (and, by ``mlp_only_layers``' default, are dense)."""


def _ffn_runs(r: Reader, n: int, experts: Any) -> list[tuple[str, int]] | None:
    """Qwen3-MoE's rule (:func:`sparse_layout`: sparse on layer i unless i is in
    ``mlp_only_layers``, default the first two, or (i + 1) is no multiple of
    ``decoder_sparse_step``, 1); none sparse without experts; None: a problem."""
    if experts == 0:
        return [("dense", n)]
    step, dense = r.count("decoder_sparse_step", 1), r.data.get("mlp_only_layers")
    if dense is None and step == 1:
        return [("dense", min(FULL_HEAD, n)), ("moe", n - min(FULL_HEAD, n))]
    layout = sparse_layout(r, n, step, list(range(FULL_HEAD)) if dense is None else dense)
    return None if layout is None else hf_layers.unrolled(r, layout, n)


def flint(r: Reader) -> dict[str, Any]:
    """FlintForCausalLM, as above (defaults: 4 key/value heads, ``head_dim`` 128, 256 experts
    of 512, top 6, a shared expert of 1,024, ``mlp_only_layers`` the first two). Layers attend
    within ``sliding_window`` (513; null: none) as ``layer_types`` lists them, else fully on the
    first two, every layer i with i % 4 == 1 and the last; which FFNs are sparse:
    :func:`_ffn_runs`."""
    fields = llama_layout(r, kv_heads=4, head_dim=128, sizes=FLINT_SIZES)
    attention_bias(r, fields)
    fields.update(qk_norm="head", attention_sinks=True)
    moe = routed_experts(
        r, ("num_experts",), ("num_experts_per_tok",), (256, 6), (("moe_intermediate_size",), 512)
    )
    moe["moe_shared_ffn_hidden"] = r.value(
        "moe_shared_ffn_hidden", "shared_expert_intermediate_size", default=1024
    )
    window = sliding_window(r, default=513)
    n = hf_layers.count_of(fields["n_layers"])
    ffn = None if n is None else _ffn_runs(r, n, moe["moe_experts"])
    if n is None or ffn is None:
        return fields
    ffn_blocks = {"dense": {}, "moe": moe}
    attention = hf_layers.attention_windows(window)
    listed = hf_layers.layer_types(r, n)
    if listed is not None or window is None:
        if window is None:
            r.forget("sliding_window")
        runs = hf_layers.runs(listed) if listed is not None else [("full_attention", n)]
        hf_layers.combine(r, fields, hf_layers.Layout(runs), attention, ffn, ffn_blocks)
        return fields
    # Full on layers 0 and 1, then where i % 4 == 1 (from layer 2 on), and on the last layer.
    head, tail = min(FULL_HEAD, n), max(n - 1, FULL_HEAD)
    blocks = hf_layers.merged_blocks(attention, ffn_blocks)
    full = [("full_attention", n)]
    fields["layers"] = hf_layers.groups(hf_layers.merge(full, hf_layers.cut(ffn, 0, head)), blocks)
    every = hf_layers.Layout(
        [("sliding_attention", 1), ("full_attention", 1), ("sliding_attention", 2)], cycles=True
    )
    hf_layers.combine(r, fields, every, attention, hf_layers.cut(ffn, head, tail), ffn_blocks, head)
    fields["layers"] += hf_layers.groups(hf_layers.merge(full, hf_layers.cut(ffn, tail, n)), blocks)
    return fields


FAMILIES = {"flint": flint}


PEFT_NAMES = {
    "flint": llama_names(renames=ROUTER_GATE),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
