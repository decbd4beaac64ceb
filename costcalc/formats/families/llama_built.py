"""Families transformers builds as Llama (``LlamaForCausalLM`` itself, or a copy of its layers):
internlm3, exaone (EXAONE 3), iquestcoder, cwm, ministral3, granite_swa, hunyuan_v1_dense and
hunyuan_vl_text (HunyuanOCR's text decoder).
Each is the shared layout of :func:`~costcalc.formats.families.llama.llama_layout` and nothing
else, except that GraniteSWA's attention keeps a learned sink logit per query head
(``self_attn.sinks``, H) and Hunyuan's normalises queries and keys per head. They
differ in their defaults, in the names of their bias switches and in which layers slide
(transformers 5.24, ``models/<family>/configuration_<family>.py``).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout
from costcalc.formats.hf_reader import Reader, attention_bias, head_width, is_whole, mlp_bias
from costcalc.formats.hf_unbuilt import ROPE_KEYS, rotary_settings
from costcalc.formats.peft_names import LLAMA


def _biases(
    r: Reader, fields: dict[str, Any], attention: str = "attention_bias", mlp: str = "mlp_bias"
) -> None:
    """q/k/v/o carry a bias when ``attention_bias`` (or the family's alias ``attention``) says so,
    gate/up/down when ``mlp_bias`` (or ``mlp``) does; both default false (LlamaForCausalLM)."""
    attention_bias(r, fields, attention)
    mlp_bias(r, fields, mlp)


def internlm3(r: Reader) -> dict[str, Any]:
    """InternLM3 (LlamaForCausalLM with InternLM3Config): 2 key/value heads and ``head_dim`` 128
    unless given (null: D / H); q/k/v/o bias when ``qkv_bias`` (``attention_bias``), gate/up/down
    when ``bias`` (``mlp_bias``), both default false, and refused when they differ
    (InternLM3Config's ``validate_architecture``, transformers/models/internlm3/
    configuration_internlm3.py, line 99); untied by default."""
    fields = llama_layout(r, kv_heads=2)
    fields["head_dim"] = r.nullable("head_dim", "head_dim", 128)
    _biases(r, fields, "qkv_bias", "bias")
    attention, mlp = fields["qkv_bias"], fields["ffn_bias"]
    if isinstance(attention, bool) and isinstance(mlp, bool) and attention != mlp:
        r.fail(
            r.spelling("mlp_bias"),
            f"{str(mlp).lower()} beside {r.spelling('attention_bias')} {str(attention).lower()}: "
            "transformers refuses the file (InternLM3Config's validate_architecture: the "
            "attention and MLP biases must agree)",
        )
    return fields


EXAONE_SIZES: dict[str, Any] = {
    "vocab_size": 102_400,
    "d_model": 4096,
    "n_layers": 32,
    "n_heads": 32,
    "context_length": 4096,
    "ffn_hidden": 14_336,
}
"""ExaoneConfig's defaults (EXAONE-3.0-7.8B)."""


def exaone(r: Reader) -> dict[str, Any]:
    """EXAONE 3 / 3.5 (LlamaForCausalLM with ExaoneConfig): the layer count may be
    ``num_layers`` and the activation ``activation_function``; 8 key/value heads unless given,
    ``head_dim`` D / H unless given; no biases unless ``attention_bias``/``mlp_bias``; untied by
    default. Every size has ExaoneConfig's default."""
    fields = llama_layout(r, kv_heads=8, act_key="activation_function", sizes=EXAONE_SIZES)
    fields["n_layers"] = r.value("n_layers", "num_hidden_layers", "num_layers", default=32)
    _biases(r, fields)
    return fields


def iquestcoder(r: Reader) -> dict[str, Any]:
    """IQuestCoder (LlamaForCausalLM with IQuestCoderConfig): 8 key/value heads and ``head_dim``
    128 unless given (null: D / H); q/k/v/o bias when ``attention_bias``, gate/up/down when
    ``mlp_bias`` (both default false); untied by default."""
    fields = llama_layout(r, kv_heads=8)
    fields["head_dim"] = r.nullable("head_dim", "head_dim", 128)
    _biases(r, fields)
    return fields


def _full_first_of_four(n: int) -> hf_layers.Layout:
    """Layer i attends fully when i % 4 == 0, else within the window (CWM, GraniteSWA)."""
    return hf_layers.Layout([("full_attention", 1), ("sliding_attention", 3)], cycles=True)


def every_fourth_full_windows(r: Reader, fields: dict[str, Any], default: int) -> None:
    """``sliding_window`` (the family's default; null or 0: none) on the layers ``layer_types``
    marks sliding, else on all but every 4th from the first."""
    window = r.nullable("sliding_window", "sliding_window", default) or None
    hf_layers.attention_layers(r, fields, window, _full_first_of_four)


def cwm(r: Reader) -> dict[str, Any]:
    """CwmForCausalLM (Code World Model): 8 key/value heads and ``head_dim`` 128 unless given,
    gate/up/down bias when ``mlp_bias`` (default false), no attention bias; untied by default.
    Windows of ``sliding_window`` (default 8,192) as ``layer_types`` says, else every layer but
    each 4th from the first."""
    fields = llama_layout(r, kv_heads=8, head_dim=128)
    mlp_bias(r, fields)
    every_fourth_full_windows(r, fields, 8192)
    return fields


def ministral3(r: Reader) -> dict[str, Any]:
    """Ministral3ForCausalLM (Ministral 3): 8 key/value heads and ``head_dim`` 128 unless given
    (null: D / H), no biases, untied by default; every layer attends within ``sliding_window``
    when it is set (default none; ``layer_types`` is not read by this model)."""
    fields = llama_layout(r, kv_heads=8)
    fields["head_dim"] = r.nullable("head_dim", "head_dim", 128)
    fields["sliding_window"] = r.value("sliding_window", "sliding_window", default=None)
    return fields


def granite_swa(r: Reader) -> dict[str, Any]:
    """GraniteSWAForCausalLM: Granite's layout (q/k/v/o bias when ``attention_bias``,
    gate/up/down when ``mlp_bias``; its multipliers hold no parameters) with a learned sink
    logit per query head in every attention, 4 key/value heads unless given, tied by default.
    Windows of ``sliding_window`` (default 128) as ``layer_types`` says, else every layer but
    each 4th from the first."""
    fields = llama_layout(r, kv_heads=4, tie=True)
    _biases(r, fields)
    fields["attention_sinks"] = True
    every_fourth_full_windows(r, fields, 128)
    return fields


def hunyuan_v1_dense(r: Reader, tie: bool = False) -> dict[str, Any]:
    """HunYuanDenseV1ForCausalLM (Hunyuan-MT, Hunyuan dense): the shared layout plus an RMSNorm
    of head_dim on queries and on keys (``query_layernorm``, ``key_layernorm``); q/k/v/o bias
    when ``attention_bias`` (default false), none in the MLP; key/value heads default to the
    heads, ``head_dim`` to D / H; untied by default. Its rotary scaling holds no parameters."""
    fields = llama_layout(r, tie=tie)
    attention_bias(r, fields)
    fields["qk_norm"] = "head"
    return fields


def hunyuan_vl_text(r: Reader) -> dict[str, Any]:
    """The text decoder of HunYuanVLForConditionalGeneration (HunyuanOCR; ``HunYuanVLTextModel``,
    ``models/hunyuan_vl/modeling_hunyuan_vl.py``): Hunyuan dense's layers and defaults, tied by
    default (HunYuanVLTextConfig); its multimodal rotary positions hold no parameters, but the
    class refuses sections that do not split the head (:func:`_rotary_sections`)."""
    fields = hunyuan_v1_dense(r, tie=True)
    _rotary_sections(r, fields)
    return fields


def _rotary_sections(r: Reader, fields: dict[str, Any]) -> None:
    """HunYuanVLTextConfig's ``__post_init__`` (``_validate_mrope_section``) refuses rotary
    sections (the rotary settings' ``mrope_section``, else the legacy ``xdrope_section``) that
    are not whole numbers summing to ``head_dim // 2`` (head_dim, else D // H)."""
    rope = rotary_settings(r.data)
    if rope is None:
        return
    name = "mrope_section" if rope.get("mrope_section") is not None else "xdrope_section"
    sections: Any = rope.get(name)
    head = head_width(fields)
    numbers = isinstance(sections, list) and all(
        isinstance(s, int | float) and not isinstance(s, bool) and float(s).is_integer()
        for s in sections
    )
    if numbers and is_whole(head) and sum(int(s) for s in sections) != head // 2:
        key = next(k for k in ROPE_KEYS if r.data.get(k) is rope)
        r.fail(
            f"{key}.{name}",
            f"{sections} does not split the {head:,}-wide head: transformers refuses the file "
            f"(HunYuanVLTextConfig's __post_init__ wants whole sections summing to {head // 2:,})",
        )


FAMILIES = {
    "cwm": cwm,
    "exaone": exaone,
    "granite_swa": granite_swa,
    "hunyuan_v1_dense": hunyuan_v1_dense,
    "hunyuan_vl_text": hunyuan_vl_text,
    "internlm3": internlm3,
    "iquestcoder": iquestcoder,
    "ministral3": ministral3,
}


PEFT_NAMES = dict.fromkeys(FAMILIES, LLAMA)
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
