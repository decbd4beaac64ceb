"""Llama 4 (transformers 5.24, ``models/llama4/modeling_llama4.py``): the text decoder
(``llama4_text``; the multimodal ``llama4`` config is read through its ``text_config``).

Per block: ``input_layernorm`` and ``post_attention_layernorm`` (RMSNorm, D); ``self_attn``:
``q_proj`` (D -> H d), ``k_proj`` and ``v_proj`` (D -> K d), ``o_proj`` (H d -> D), biases when
``attention_bias``; the query/key L2 norm (``use_qk_norm``) has no weights. A MoE layer holds
``feed_forward.router`` (X x D, no bias), ``feed_forward.experts`` (``gate_up_proj`` X x D x 2h,
stored transposed, ``down_proj`` X x h x D; h = ``intermediate_size``) and
``feed_forward.shared_expert`` (a SwiGLU MLP of ``intermediate_size``, no gate); a dense layer a
SwiGLU MLP of ``intermediate_size_mlp``. MoE layers: ``moe_layers``, else every
``interleave_moe_layer_step``-th layer. Layers with rotary positions (``no_rope_layers``, else
all but every ``no_rope_layer_interval``-th) attend within chunks of ``attention_chunk_size``
(``chunked_attention``); the NoPE layers attend to everything (``layer_types`` may list them).

Forward MACs count the routed compute: per token the top-k experts, the shared expert and the
router. transformers' ``Llama4TextMoe.forward`` instead runs every token through all X experts
(``Llama4TextExperts``, one ``bmm`` over the stacked experts; the unchosen ones weighted by zero),
so FlopCounterMode counts X experts per token; the difference is exactly the X - k idle experts.
"""

from __future__ import annotations

from collections.abc import Callable
from math import lcm
from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout
from costcalc.formats.families.moe import routed_experts
from costcalc.formats.hf_reader import Reader, attention_bias, is_whole
from costcalc.formats.peft_names import FEED_FORWARD, llama_names

TEXT_SIZES: dict[str, Any] = {
    "vocab_size": 202048,
    "d_model": 5120,
    "n_layers": 48,
    "n_heads": 40,
    "context_length": 4096 * 32,
    "ffn_hidden": 8192,
}
"""``Llama4TextConfig``'s defaults for the standard sizes (a ``text_config`` may leave them out)."""


def _listed(r: Reader, key: str, empty_is_absent: bool) -> list[int] | None:
    """A per-layer list the file gives (None when absent; an empty list too when
    ``empty_is_absent``, as ``no_rope_layers``: transformers tests it for truth, ``moe_layers``
    for None)."""
    value = r.data.get(key)
    if value is None or (empty_is_absent and value == []):
        return None
    if not isinstance(value, list) or not all(is_whole(i) for i in value):
        r.fail(key, "expected a list of whole numbers")
        return None
    r.key_names["layers"] = r.name(key)
    return value


def llama4_text(r: Reader) -> dict[str, Any]:
    """Llama4ForCausalLM, as above (defaults: 8 key/value heads, head_dim 128, 16 experts,
    top 1, every layer MoE, every 4th layer NoPE, chunks of 8,192); untied by default. A null
    ``num_key_value_heads`` means H, a null ``head_dim`` D / H (``__post_init__``)."""
    fields = llama_layout(r, sizes=TEXT_SIZES)
    fields["n_kv_heads"] = r.nullable("n_kv_heads", "num_key_value_heads", 8)
    fields["head_dim"] = r.nullable("head_dim", "head_dim", 128)
    fields["ffn_hidden"] = r.value("ffn_hidden", "intermediate_size_mlp", default=16384)
    attention_bias(r, fields)
    moe = routed_experts(
        r, ("num_local_experts",), ("num_experts_per_tok",), (16, 1), (("intermediate_size",), 8192)
    )
    moe["moe_shared_ffn_hidden"] = moe["moe_ffn_hidden"]
    chunk = r.nullable("attention_chunk", "attention_chunk_size", 8192)
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields

    moe_listed = _listed(r, "moe_layers", empty_is_absent=False)
    step = r.count("interleave_moe_layer_step", 1)
    rope_listed = _listed(r, "no_rope_layers", empty_is_absent=True)
    interval = r.count("no_rope_layer_interval", 4)
    types = hf_layers.layer_types(r, n)

    sparse_listed = None if moe_listed is None else set(moe_listed)

    def ffn_kind(i: int) -> str:
        sparse = i in sparse_listed if sparse_listed is not None else (i + 1) % step == 0
        return "moe" if sparse else "dense"

    def attention_kind(i: int) -> str:
        if types is not None:
            return types[i]
        rope = rope_listed[i] if rope_listed is not None else (i + 1) % interval != 0
        return "chunked_attention" if rope and chunk is not None else "full_attention"

    def kind(i: int) -> str:
        return f"{ffn_kind(i)}/{attention_kind(i)}"

    attention = {"full_attention": {}, "chunked_attention": {"attention_chunk": chunk}}
    blocks = {
        f"{f}/{a}": {**ffn, **attn}
        for f, ffn in (("dense", {}), ("moe", moe))
        for a, attn in attention.items()
    }
    if rope_listed is not None and len(rope_listed) != n:
        r.fail("no_rope_layers", f"lists {len(rope_listed):,} layers, but the model has {n:,}")
        return fields
    if moe_listed is not None or rope_listed is not None or types is not None:
        _apply_per_layer(r, fields, n, kind, blocks)
    else:
        period = min(lcm(step, interval), n)
        if hf_layers.by_rule(r, period, "interleave_moe_layer_step") is None:
            return fields
        pattern = hf_layers.runs([kind(i) for i in range(period)])
        if len({k for k, _ in pattern}) == 1:
            fields.update(blocks[pattern[0][0]])
        else:
            fields["layers"] = hf_layers.cycle(n, pattern, blocks)
    return fields


def _apply_per_layer(
    r: Reader,
    fields: dict[str, Any],
    n: int,
    kind: Callable[[int], str],
    blocks: dict[str, dict[str, Any]],
) -> None:
    """The file lists layers: each layer's kind, as runs."""
    indices = hf_layers.by_rule(r, n, "layer_types")
    if indices is not None:
        hf_layers.apply(r, fields, hf_layers.runs([kind(i) for i in indices]), blocks)


FAMILIES = {"llama4_text": llama4_text}


PEFT_NAMES = {
    "llama4_text": llama_names(FEED_FORWARD, router_linear=True),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
