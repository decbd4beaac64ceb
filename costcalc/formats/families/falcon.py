"""Falcon (transformers 5.24, ``models/falcon/modeling_falcon.py``): ``falcon``, and the
RefinedWeb files it was ported from (:func:`refined_web`).

``word_embeddings`` (V x D); per block ``self_attention.query_key_value`` (fused, D x (H + 2K) d)
and ``self_attention.dense`` (D x D), ``mlp.dense_h_to_4h`` (D x h) and ``mlp.dense_4h_to_h``
(h x D, a plain MLP whatever ``activation``), every linear layer with a bias when ``bias``
(default false); the block's LayerNorms (weight and bias): ``input_layernorm`` and
``post_attention_layernorm`` without ``parallel_attn``, else ``ln_attn`` and ``ln_mlp`` when
``num_ln_in_parallel_attn`` is 2 (the default with ``new_decoder_architecture``), else one
``input_layernorm``; final ``ln_f``; ``lm_head`` (V x D, no bias), tied by default. Rotary
positions on the whole head, or ALiBi (``alibi``) with no parameters. A null switch is false
(FalconConfig takes ``bool | None``; the model tests ``if config.parallel_attn:`` and the like).

Key/value heads K: with ``new_decoder_architecture`` ``num_kv_heads`` (default H); else 1 with
``multi_query`` (default), else H. With ``new_decoder_architecture``, ``FalconAttention``
broadcasts the keys and values to all H query heads (``_split_heads``) before
``layer_past.update``: the cache holds H heads, not K.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.hf_reader import Reader, linear_bias
from costcalc.formats.peft_names import NEOX_MLP, llama_names

FALCON_SIZES: dict[str, tuple[tuple[str, ...], int]] = {
    "vocab_size": (("vocab_size",), 65024),
    "d_model": (("n_embed", "hidden_size"), 4544),
    "n_layers": (("num_hidden_layers",), 32),
    "n_heads": (("num_attention_heads",), 71),
    "context_length": (("max_position_embeddings",), 2048),
}
"""``FalconConfig``'s sizes and defaults (the old ``n_embed`` wins over ``hidden_size``, as in
its ``__post_init__``)."""


def falcon(r: Reader) -> dict[str, Any]:
    """FalconForCausalLM, as above."""
    fields = {f: r.value(f, *keys, default=default) for f, (keys, default) in FALCON_SIZES.items()}
    new = r.truth("new_decoder_architecture", False)
    parallel = r.truth("parallel_attn", True)
    linear_bias(r, fields, "bias", default=False)
    fields.update(
        ffn="mlp",
        ffn_hidden=r.value("ffn_hidden", "ffn_hidden_size", default=None),
        fused_qkv=True,
        norm="layernorm",
        position="none" if r.truth("alibi", False) else "rotary",
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=True),
    )
    kv_heads = r.value("n_kv_heads", "num_kv_heads", default=None)
    if new:
        fields["n_kv_heads"] = kv_heads
        fields["kv_cache_heads"] = fields["n_heads"]
        r.key_names["kv_cache_heads"] = r.name("new_decoder_architecture")
    elif r.truth("multi_query", True):
        fields["n_kv_heads"] = 1
        r.key_names["n_kv_heads"] = r.name("multi_query")
    elif kv_heads is not None and kv_heads != fields["n_heads"]:
        r.unsupported("num_kv_heads", "without multi_query the fused projection holds H heads")
    fields["norms_per_block"] = _norms(r, new, parallel)
    return fields


def _norms(r: Reader, new: bool, parallel: bool) -> int:
    """LayerNorms per block, as ``FalconDecoderLayer.__init__`` builds them."""
    count = r.value("norms_per_block", "num_ln_in_parallel_attn", default=2 if new else None)
    if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
        r.fail("num_ln_in_parallel_attn", f"expected a whole number (got {count!r})")
        return 1
    if not parallel:
        r.key_names["norms_per_block"] = r.name("parallel_attn")
        return 2
    return 2 if count == 2 else 1


RW_FLAGS = ("multi_query", "parallel_attn", "bias", "alibi")
"""RWConfig's switches, each false by default."""


def refined_web(r: Reader) -> dict[str, Any]:
    """Falcon's first files, ``model_type`` RefinedWebModel (Falcon-7B's) or RefinedWeb
    (Falcon-40B's), written for the remote class ``RWForCausalLM``: read as transformers'
    FalconForCausalLM, its port (the same tensors), from RWConfig's keys: ``vocab_size``,
    ``hidden_size`` (or ``n_embed``), ``n_layer`` and ``n_head`` (its ``attribute_map``),
    required (RWConfig's defaults are a toy's); ``multi_query``, ``parallel_attn``, ``bias``,
    ``alibi`` false by default. RefinedWeb's decoder is the new architecture: ``n_head_kv``
    key/value heads (default ``n_head``), ``ln_attn`` and ``ln_mlp``, the cache holding every
    query head's keys and values."""
    fields: dict[str, Any] = {
        "vocab_size": r.size("vocab_size", "vocab_size"),
        "d_model": r.size("d_model", "n_embed", "hidden_size"),
        "n_layers": r.size("n_layers", "n_layer"),
        "n_heads": r.size("n_heads", "n_head"),
        "context_length": FALCON_SIZES["context_length"][1],
        "ffn": "mlp",
        "fused_qkv": True,
        "norm": "layernorm",
        "position": "none" if r.flag("alibi", False) else "rotary",
        "tie_embeddings": r.value("tie_embeddings", "tie_word_embeddings", default=True),
    }
    linear_bias(r, fields, "bias", default=False)
    new = r.data.get("model_type") == "RefinedWeb"
    if new:
        fields["n_kv_heads"] = r.value("n_kv_heads", "n_head_kv", default=fields["n_heads"])
        fields["kv_cache_heads"] = fields["n_heads"]
        fields["norms_per_block"] = 2
    else:
        fields["n_kv_heads"] = 1 if r.flag("multi_query", False) else None
        fields["norms_per_block"] = 1 if r.flag("parallel_attn", False) else 2
    r.note(
        f"model_type {r.data.get('model_type')} is Falcon's remote code (RWForCausalLM); read "
        "as transformers' FalconForCausalLM, its port, with the remote config's key names "
        "(n_head, n_layer" + (", n_head_kv; the new decoder architecture)" if new else ")")
    )
    return fields


FAMILIES = {"falcon": falcon}

PORTED = {"RWForCausalLM": refined_web}
"""Remote classes this family's transformers class is the port of, and how their files read."""


_FALCON_NAMES = llama_names(
    {"attn": "self_attention"},
    {
        "attn.qkv_proj": "self_attention.query_key_value",
        "attn.o_proj": "self_attention.dense",
        "embed_tokens": "word_embeddings",
        **NEOX_MLP,
    },
)
PEFT_NAMES = {"falcon": _FALCON_NAMES}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
