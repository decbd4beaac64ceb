"""Families built exactly like Llama, differing in their defaults and in which layers slide:
Ministral, SmolLM3 and ERNIE 4.5 (dense; also PaddleOCR-VL's text decoder,
``paddleocr_vl_text``, transformers 5.24 ``models/paddleocr_vl/modeling_paddleocr_vl.py``:
``PaddleOCRTextModel`` is ERNIE 4.5's decoder with the same configuration defaults, its
multimodal rotary positions holding no parameters). Their modeling code builds the shared layout of
:func:`~costcalc.formats.families.llama.llama_layout` and nothing else: SmolLM3's layers
without rotary positions (NoPE) hold no parameters of their own.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout, sliding_window
from costcalc.formats.hf_reader import Reader, attention_bias, linear_bias, mlp_bias
from costcalc.formats.peft_names import LLAMA


def ministral(r: Reader) -> dict[str, Any]:
    """MinistralForCausalLM: the shared layout, no biases, 8 key/value heads when
    ``num_key_value_heads`` is absent, untied by default; the layers ``layer_types`` marks
    ``sliding_attention`` attend within ``sliding_window`` (default 4,096), and without it every
    layer does (none when the window is null)."""
    fields = llama_layout(r, kv_heads=8)
    fields["n_kv_heads"] = r.nullable("n_kv_heads", "num_key_value_heads", 8)
    window = sliding_window(r, default=4096)
    hf_layers.attention_layers(
        r, fields, window, lambda n: hf_layers.Layout([("sliding_attention", n)])
    )
    return fields


def smollm3(r: Reader) -> dict[str, Any]:
    """SmolLM3ForCausalLM: the shared layout, q/k/v/o bias when ``attention_bias``, gate/up/down
    when ``mlp_bias`` (both default false), 4 key/value heads when ``num_key_value_heads`` is
    absent, tied by default. Every ``no_rope_layer_interval``-th layer (default 4) or those
    ``no_rope_layers`` marks 0 skip rotary positions (no parameters change). Windows on the
    layers ``layer_types`` marks ``sliding_attention`` when there is a ``sliding_window``
    (transformers' cache windows them whatever ``use_sliding_window`` says); without
    ``layer_types``, only with ``use_sliding_window``, on the layers without rotary positions."""
    fields = llama_layout(r, kv_heads=4, tie=True)
    fields["n_kv_heads"] = r.nullable("n_kv_heads", "num_key_value_heads", 4)
    attention_bias(r, fields)
    mlp_bias(r, fields)
    window = r.value("sliding_window", "sliding_window", default=None)
    if not r.flag("use_sliding_window", False) and r.data.get("layer_types") is None:
        window = None
    hf_layers.attention_layers(r, fields, window, lambda n: _no_rope_layers(r, n))
    return fields


def _no_rope_layers(r: Reader, n: int) -> hf_layers.Layout | None:
    """SmolLM3's windows without ``layer_types``: on the layers without rotary positions,
    ``no_rope_layers`` (one flag a layer, 0 for none) or every ``no_rope_layer_interval``-th."""
    nope = r.data.get("no_rope_layers")
    if nope is None:
        every = r.count("no_rope_layer_interval", 4)
        return hf_layers.every_nth(every, "sliding_attention", "full_attention")
    if not isinstance(nope, list) or len(nope) != n or not all(x in (0, 1) for x in nope):
        r.fail("no_rope_layers", f"expected {n:,} flags, 1 (rotary) or 0 (none), one a layer")
        return None
    r.key_names["layers"] = r.name("no_rope_layers")
    kinds = ["full_attention" if rope else "sliding_attention" for rope in nope]
    return hf_layers.Layout(hf_layers.runs(kinds), key="no_rope_layers")


def ernie4_5(r: Reader) -> dict[str, Any]:
    """Ernie4_5ForCausalLM (dense ERNIE 4.5): the shared layout with a bias on q/k/v/o and on
    gate/up/down when ``use_bias`` (default false), 2 key/value heads when
    ``num_key_value_heads`` is absent, ``head_dim`` 128 unless given (null: D / H); tied by
    default."""
    fields = llama_layout(r, kv_heads=2, head_dim=128, tie=True)
    fields["n_kv_heads"] = r.nullable("n_kv_heads", "num_key_value_heads", 2)
    fields["head_dim"] = r.nullable("head_dim", "head_dim", 128)
    linear_bias(r, fields, "use_bias", default=False)
    return fields


FAMILIES = {
    "ernie4_5": ernie4_5,
    "ministral": ministral,
    "paddleocr_vl_text": ernie4_5,
    "smollm3": smollm3,
}


PEFT_NAMES = dict.fromkeys(FAMILIES, LLAMA)
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
