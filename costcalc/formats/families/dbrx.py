"""DBRX (transformers 5.24, ``models/dbrx/modeling_dbrx.py``): keys under ``attn_config`` and
``ffn_config``, a fused query/key/value projection and LayerNorms without bias.

``transformer.wte`` (V x D); per block ``norm_attn_norm.norm_1`` and ``norm_2`` (LayerNorm
without bias, D), ``attn.Wqkv`` (D -> D + 2 K d, no bias; d = D // H, K =
``attn_config.kv_n_heads``), ``attn.out_proj`` (D x D, no bias); ``ffn.router.layer`` (X x D, no
bias) and ``ffn.experts.mlp`` with ``w1``, ``v1`` and ``w2`` (each X h x D: a gated FFN, SwiGLU
unless ``ffn_config.ffn_act_fn`` names a GELU), X = ``ffn_config.moe_num_experts``, h =
``ffn_config.ffn_hidden_size``, top ``ffn_config.moe_top_k``; final ``norm_f`` (LayerNorm without
bias); ``lm_head`` (V x D, no bias), untied by default; rotary positions.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.moe import routed_experts
from costcalc.formats.hf_reader import Reader, is_whole
from costcalc.formats.peft_names import llama_names

DBRX_KEYS: dict[str, tuple[str, ...]] = {
    "vocab_size": ("vocab_size",),
    "d_model": ("d_model",),
    "n_layers": ("n_layers",),
    "n_heads": ("n_heads",),
    "context_length": ("max_seq_len",),
}


def _part(r: Reader, key: str) -> Reader:
    """A reader of the nested configuration at ``key`` (an empty one when it is absent)."""
    if isinstance(r.data.get(key), dict):
        return Reader(r.doc, (*r.prefix, key))
    part = Reader(r.doc, r.prefix)
    part.data = {}
    return part


def dbrx(r: Reader) -> dict[str, Any]:
    """DbrxForCausalLM, as above (defaults: d_model 2,048, 16 heads, 24 layers, 2,048
    positions, 1 key/value head, h 3,584, 4 experts, top 1)."""
    fields = {
        field: r.value(field, *keys, default=default)
        for (field, keys), default in zip(
            DBRX_KEYS.items(), (32000, 2048, 24, 16, 2048), strict=True
        )
    }
    attn, ffn = _part(r, "attn_config"), _part(r, "ffn_config")
    act = ffn.data.get("ffn_act_fn")
    name = act.get("name", "silu") if isinstance(act, dict) else "silu"
    fields.update(
        n_kv_heads=attn.value("n_kv_heads", "kv_n_heads", default=1),
        position="rotary",
        ffn="geglu" if isinstance(name, str) and name.startswith("gelu") else "swiglu",
        ffn_hidden=ffn.value("ffn_hidden", "ffn_hidden_size", default=3584),
        norm="layernorm",
        norm_bias=False,
        qkv_bias=False,
        attn_out_bias=False,
        ffn_bias=False,
        fused_qkv=True,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=False),
    )
    fields.update(routed_experts(ffn, ("moe_num_experts",), ("moe_top_k",), (4, 1)))
    _experts_width(r, fields)
    _floored_heads(r, fields)
    if fields["tie_embeddings"] is True:  # DbrxConfig.validate_architecture
        r.fail("tie_word_embeddings", "transformers refuses it: DBRX's LM head is never tied")
    for part in (attn, ffn):
        r.key_names.update(part.key_names)
        r.problems.extend(part.problems)
    return fields


def _experts_width(r: Reader, fields: dict[str, Any]) -> None:
    """``DbrxConfig.__post_init__`` sizes the experts and the router by ``d_model`` as the
    file's ``d_model`` key (or its default, 2,048) gives it (``ffn_config.hidden_size =
    self.d_model``), and only then sets the aliases (``hidden_size`` -> ``d_model``): a width
    given as ``hidden_size`` alone, or beside another ``d_model``, leaves the experts and the
    router at the other width (``moe_width``, with a note), and the forward fails on it."""
    width, experts = fields["d_model"], r.data.get("d_model", 2048)
    if "hidden_size" not in r.data or experts == width or not is_whole(width, 1):
        return
    if not is_whole(experts, 1):
        r.unsupported(
            "hidden_size",
            f"{width!r} under its alias: DbrxConfig sizes the experts and the router by "
            f"d_model {experts!r} before it reads hidden_size",
        )
        return
    fields["moe_width"] = experts
    r.key_names["moe_width"] = r.name("d_model")
    r.note(
        f"hidden_size {width:,} under its alias: DbrxConfig sizes the experts and the router "
        f"by d_model {experts:,} (the file's d_model, else the class default) before it sets "
        f"d_model from hidden_size: transformers builds them {experts:,} wide, and its forward, "
        f"which feeds them {width:,}, fails; counted as built, the forward figures as if they "
        f"read {experts:,}."
    )


def _floored_heads(r: Reader, fields: dict[str, Any]) -> None:
    """``DbrxAttention``: ``head_dim = d_model // n_heads``, a floor, but ``Wqkv`` D -> D + 2 K d
    and ``out_proj`` D x D, the queries D wide: where H does not divide D, ``head_dim`` D // H
    and ``query_width`` D, with a note (the forward, which splits the queries into heads of d,
    fails)."""
    d, h = fields["d_model"], fields["n_heads"]
    if not (is_whole(d, 1) and is_whole(h, 1)) or d % h == 0 or d < h:
        return
    fields.update(head_dim=d // h, query_width=d)
    r.key_names["head_dim"] = r.key_names["query_width"] = r.name("n_heads")
    r.note(
        f"d_model {d:,} does not split into {h:,} equal heads; DbrxConfig takes it and "
        f"DbrxAttention floors head_dim to {d // h:,} (the heads span {h * (d // h):,}) but "
        f"builds the queries in Wqkv and out_proj {d:,} wide: transformers' forward, which "
        f"splits the queries into heads of {d // h:,}, fails; counted as built, the forward "
        "figures as if the queries were that wide."
    )


FAMILIES = {"dbrx": dbrx}


PEFT_NAMES = {
    "dbrx": llama_names(
        {"attn": "norm_attn_norm.attn", "mlp": "ffn"},
        {
            "attn.qkv_proj": "norm_attn_norm.attn.Wqkv",
            "attn.o_proj": "norm_attn_norm.attn.out_proj",
            "mlp.router": "ffn.router.layer",
            "embed_tokens": "wte",
        },
        router_linear=True,
        stacked_experts=False,
    ),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
