"""Families built exactly like Llama, differing in their defaults and in which layers slide:
Ministral, SmolLM3 and ERNIE 4.5 (dense). Their modeling code builds the shared layout of
:func:`~costcalc.formats.families.llama.llama_layout` and nothing else: SmolLM3's layers
without rotary positions (NoPE) hold no parameters of their own.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.gemma2 import every_nth
from costcalc.formats.families.llama import _sliding_window, llama_layout
from costcalc.formats.hf_reader import Reader


def _null_is_default(r: Reader, fields: dict[str, Any], field: str, key: str) -> None:
    """A key the configuration class sets to costcalc's own default when it is ``null``
    (``head_dim``: D / H; ``num_key_value_heads``: the heads), not to the class's default."""
    if key in r.data and r.data[key] is None:
        fields[field] = None


def ministral(r: Reader) -> dict[str, Any]:
    """MinistralForCausalLM: the shared layout, no biases, 8 key/value heads when
    ``num_key_value_heads`` is absent, untied by default; the layers ``layer_types`` marks
    ``sliding_attention`` attend within ``sliding_window`` (default 4,096), and without it every
    layer does (none when the window is null)."""
    fields = llama_layout(r, kv_heads=8)
    _null_is_default(r, fields, "n_kv_heads", "num_key_value_heads")
    window = _sliding_window(r, default=4096)
    if window is None:
        r.key_names.pop("sliding_window", None)
        return fields
    n = hf_layers.count_of(fields["n_layers"])
    listed = hf_layers.layer_types(r, n) if n is not None else None
    kinds = hf_layers.runs(listed) if listed is not None else [("sliding_attention", 1)]
    hf_layers.apply(r, fields, kinds, hf_layers.attention_windows(window))
    return fields


def smollm3(r: Reader) -> dict[str, Any]:
    """SmolLM3ForCausalLM: the shared layout, q/k/v/o bias when ``attention_bias``, gate/up/down
    when ``mlp_bias`` (both default false), 4 key/value heads when ``num_key_value_heads`` is
    absent, tied by default. Every ``no_rope_layer_interval``-th layer (default 4) or those
    ``no_rope_layers`` marks 0 skip rotary positions (no parameters change). Windows only with
    ``use_sliding_window`` and a ``sliding_window``: then on the layers ``layer_types`` marks, or
    (without it) on the layers without rotary positions."""
    fields = llama_layout(r, kv_heads=4, tie=True)
    _null_is_default(r, fields, "n_kv_heads", "num_key_value_heads")
    fields["qkv_bias"] = fields["attn_out_bias"] = r.value(
        ("qkv_bias", "attn_out_bias"), "attention_bias", default=False
    )
    fields["ffn_bias"] = r.value("ffn_bias", "mlp_bias", default=False)
    window = r.value("sliding_window", "sliding_window", default=None)
    n = hf_layers.count_of(fields["n_layers"])
    if not r.flag("use_sliding_window", False) or window is None or n is None:
        r.key_names.pop("sliding_window", None)
        return fields
    blocks = hf_layers.attention_windows(window)
    listed = hf_layers.layer_types(r, n)
    if listed is not None:
        hf_layers.apply(r, fields, hf_layers.runs(listed), blocks)
        return fields
    nope = r.data.get("no_rope_layers")
    if nope is not None:
        if not isinstance(nope, list) or len(nope) != n or not all(x in (0, 1) for x in nope):
            r.fail("no_rope_layers", f"expected {n:,} flags, 1 (rotary) or 0 (none), one a layer")
            return fields
        r.key_names["layers"] = r.name("no_rope_layers")
        kinds = ["full_attention" if rope else "sliding_attention" for rope in nope]
        hf_layers.apply(r, fields, hf_layers.runs(kinds), blocks, "no_rope_layers")
        return fields
    every = r.value("layers", "no_rope_layer_interval", default=4)
    every_nth(r, fields, n, every, "no_rope_layer_interval", blocks, nth="sliding_attention")
    return fields


def ernie4_5(r: Reader) -> dict[str, Any]:
    """Ernie4_5ForCausalLM (dense ERNIE 4.5): the shared layout with a bias on q/k/v/o and on
    gate/up/down when ``use_bias`` (default false), 2 key/value heads when
    ``num_key_value_heads`` is absent, ``head_dim`` 128 unless given (null: D / H); tied by
    default."""
    fields = llama_layout(r, kv_heads=2, head_dim=128, tie=True)
    _null_is_default(r, fields, "n_kv_heads", "num_key_value_heads")
    _null_is_default(r, fields, "head_dim", "head_dim")
    bias = r.value(("qkv_bias", "attn_out_bias", "ffn_bias"), "use_bias", default=False)
    fields.update(qkv_bias=bias, attn_out_bias=bias, ffn_bias=bias)
    return fields


FAMILIES = {"ernie4_5": ernie4_5, "ministral": ministral, "smollm3": smollm3}
