"""Gemma 4 (text): Gemma 3's sandwich layout whose full-attention layers are built differently
from its sliding ones (transformers 5.24, ``models/gemma4/modeling_gemma4.py``).

Every block holds ``input_layernorm``, ``post_attention_layernorm``, ``pre_feedforward_layernorm``
and ``post_feedforward_layernorm`` (RMSNorm, D each), ``q_proj`` (D x H d), ``q_norm`` and
``k_norm`` (RMSNorm, d each; ``v_norm`` has no weight), ``k_proj``/``v_proj`` (D x K d),
``o_proj`` (H d x D) and a GeGLU MLP (``gate_proj``, ``up_proj``, ``down_proj``); the model
``embed_tokens`` (V x D, tied by default) and a final ``norm``. ``layer_scalar`` is a buffer.
Full-attention layers use ``global_head_dim`` (default 512) as d and, with ``attention_k_eq_v``,
``num_global_key_value_heads`` as K and no ``v_proj`` (the values are the key projection, then
normalised on their own). Not counted, refused: per-layer embeddings
(``hidden_size_per_layer_input`` > 0: a V' x L P table, a D -> L P projection and a gate, a
projection and a norm in every block), layers reading another layer's keys and values
(``num_kv_shared_layers`` > 0) and the mixture-of-experts block (``enable_moe_block``: a dense MLP
and routed experts side by side, with three more norms and a scaled router).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout
from costcalc.formats.hf_reader import Reader, attention_bias

GEMMA4_SIZES: dict[str, Any] = {
    "vocab_size": 262_144,
    "d_model": 2304,
    "n_layers": 30,
    "n_heads": 8,
    "context_length": 131_072,
    "ffn_hidden": 9216,
}
"""Gemma4TextConfig's defaults: a multimodal Gemma 4 config's ``text_config`` may leave them out."""

REFUSED = (
    ("hidden_size_per_layer_input", 256, "per-layer input embeddings"),
    ("num_kv_shared_layers", 0, "layers that reuse another layer's keys and values"),
)


def gemma4_text(r: Reader) -> dict[str, Any]:
    """Gemma4ForCausalLM (and the text decoder of Gemma4ForConditionalGeneration): the layout
    above with Gemma4TextConfig's defaults (4 key/value heads, ``head_dim`` 256, GeGLU from
    ``hidden_activation``, tied). Each 6th layer attends fully, the others within
    ``sliding_window`` (default 512), unless ``layer_types`` lists them; the last layer always
    attends fully (transformers forces it)."""
    fields = llama_layout(
        r,
        kv_heads=4,
        head_dim=256,
        tie=True,
        act="gelu_pytorch_tanh",
        act_key="hidden_activation",
        sizes=GEMMA4_SIZES,
    )
    attention_bias(r, fields)
    fields.update(qk_norm="head", norms_per_block=4)
    _refuse_unsupported(r)
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    blocks = {
        "sliding_attention": {
            "sliding_window": r.value("sliding_window", "sliding_window", default=512)
        },
        "full_attention": _full_attention(r, fields),
    }
    listed = hf_layers.layer_types(r, n)
    if listed is not None:
        hf_layers.apply(r, fields, hf_layers.runs([*listed[:-1], "full_attention"]), blocks)
    else:
        _every_sixth_full(r, fields, n, blocks)
    return fields


def _full_attention(r: Reader, fields: dict[str, Any]) -> dict[str, Any]:
    """The block keys of a full-attention layer: ``global_head_dim``, and with
    ``attention_k_eq_v`` the values from the keys and ``num_global_key_value_heads``."""
    block: dict[str, Any] = {"head_dim": r.value("head_dim", "global_head_dim", default=512)}
    if r.flag("attention_k_eq_v", False):
        block["keys_as_values"] = True
        global_kv = r.value("n_kv_heads", "num_global_key_value_heads", default=None)
        if global_kv is not None:
            block["n_kv_heads"] = global_kv
    return block


def _every_sixth_full(
    r: Reader, fields: dict[str, Any], n: int, blocks: dict[str, dict[str, Any]]
) -> None:
    """Gemma4TextConfig's default layers: 5 sliding, then 1 full, repeated; the last layer is
    full whatever the cycle says (a cycle over the first n - 1 layers, then that one)."""
    if n % 6 == 0:
        hf_layers.set_layers(
            r, fields, n, hf_layers.every_nth(6, "full_attention", "sliding_attention"), blocks
        )
        return
    head = n - 1
    pattern = [("sliding_attention", 5), ("full_attention", 1)]
    if head >= 6:
        fields["layers"] = [
            *hf_layers.cycle(head, pattern, blocks),
            *hf_layers.groups([("full_attention", 1)], blocks),
        ]
    else:
        hf_layers.apply(r, fields, [("sliding_attention", head), ("full_attention", 1)], blocks)


def _refuse_unsupported(r: Reader) -> None:
    """Per-layer embeddings, shared key/value layers and the MoE block are not counted."""
    for key, default, what in REFUSED:
        value = r.data.get(key, default)
        if value:
            r.unsupported(key, f"{what} ({key} {value!r}; 0 builds none)")
    if r.flag("enable_moe_block", False):
        r.unsupported("enable_moe_block", "Gemma 4's dense MLP and routed experts side by side")
    if r.data.get("use_bidirectional_attention") == "all":
        r.unsupported("use_bidirectional_attention", "bidirectional attention within a window")
    if r.data.get("per_layer_config") is not None:
        r.unsupported("per_layer_config", "per-layer attention sizes listed one by one")


FAMILIES = {"gemma4_text": gemma4_text}
