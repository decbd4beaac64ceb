"""Hugging Face families of the GPT-2 generation with LayerNorm and a plain MLP: gptj, codegen,
gpt_neo, gpt_bigcode, bloom and mpt.

Each function reads the keys its ``transformers`` configuration class defines, with that class's
defaults, and its docstring names the tensors the family's modeling code builds (transformers
5.24, ``models/<family>/modeling_<family>.py``). D is the width, h the MLP width, V the
vocabulary, H heads, d = D / H.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.layernorm import GPT_KEYS
from costcalc.formats.hf_reader import Reader, cross_attention, is_whole, standard_sizes
from costcalc.formats.peft_names import GPT2, GPT2_MLP, NEOX_MLP, llama_names


def gptj(r: Reader) -> dict[str, Any]:
    """GPTJForCausalLM: ``wte`` (V x D); per block ONE ``ln_1`` (attention and MLP run in
    parallel on it), ``attn.q_proj``/``k_proj``/``v_proj``/``out_proj`` (D x D, no biases),
    ``mlp.fc_in`` (D x h + h, h = ``n_inner`` or 4D), ``mlp.fc_out`` (h x D + D); ``ln_f``;
    ``lm_head`` (V x D) WITH a bias, untied by default. Rotary on ``rotary_dim`` (default 64)
    dimensions of each head."""
    fields = standard_sizes(r, GPT_KEYS)
    fields.update(
        position="rotary",
        ffn_hidden=r.value("ffn_hidden", "n_inner", default=None),
        qkv_bias=False,
        attn_out_bias=False,
        fused_qkv=False,
        norms_per_block=1,
        lm_head_bias=True,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=False),
    )
    fields["rotary_dim"] = r.value("rotary_dim", "rotary_dim", default=64)
    return fields


def codegen(r: Reader) -> dict[str, Any]:
    """CodeGenForCausalLM: GPT-J's layout (one ``ln_1`` per block, ``fc_in``/``fc_out`` with
    biases, ``lm_head`` WITH a bias, untied by default, rotary on ``rotary_dim``, default 64)
    with q/k/v fused into ``attn.qkv_proj`` (D x 3D, no bias)."""
    fields = gptj(r)
    fields["fused_qkv"] = True
    return fields


NEO_KEYS: dict[str, tuple[str, ...]] = {
    "vocab_size": ("vocab_size",),
    "d_model": ("hidden_size",),
    "n_layers": ("num_layers", "num_hidden_layers"),
    "n_heads": ("num_heads", "num_attention_heads"),
    "context_length": ("max_position_embeddings",),
}
"""GPT-Neo's keys; the second names are its ``attribute_map`` aliases."""


def gpt_neo(r: Reader) -> dict[str, Any]:
    """GPTNeoForCausalLM: ``wte`` (V x D), ``wpe`` (max_position_embeddings x D); per block
    ``ln_1``, ``attn.attention.q_proj``/``k_proj``/``v_proj`` (D x D, no bias),
    ``out_proj`` (D x D + D), ``ln_2``, ``mlp.c_fc`` (D x h + h, h = ``intermediate_size`` or
    4D), ``mlp.c_proj`` (h x D + D); ``ln_f``; ``lm_head`` tied by default. ``attention_types``
    (default ``[[["global", "local"], 12]]``) lists runs of layer kinds: each item repeats its
    kinds; ``local`` layers attend within ``window_size`` (default 256) positions, a mask on the
    causal ``bias`` buffer: ``GPTNeoConfig`` names no ``sliding_window`` or ``layer_types``, so
    the ``DynamicCache`` it builds keeps every token in every layer, local ones too."""
    fields = standard_sizes(r, NEO_KEYS)
    fields.update(
        ffn_hidden=r.value("ffn_hidden", "intermediate_size", default=None),
        qkv_bias=False,
        fused_qkv=False,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=True),
    )
    window = r.value("sliding_window", "window_size", default=256)
    types = r.value("layers", "attention_types", default=[[["global", "local"], 12]])
    n = hf_layers.count_of(fields["n_layers"])
    items = _neo_items(r, types)
    if n is None or items is None:
        return fields
    listed = _neo_listed(r, n)
    total = sum(len(kinds) * repeat for kinds, repeat in items)
    if listed is None and total != n:
        r.fail("attention_types", f"gives {total:,} layers, but the model has {n:,}")
        return fields
    expanded = [kind for kinds, repeat in items for kind in kinds * repeat]
    key = "attention_types" if listed in (None, expanded) else "attention_layers"
    kinds = set(expanded if key == "attention_types" else listed or ())
    blocks = {"global": {}, "local": {"sliding_window": window, "kv_cache_all_tokens": True}}
    if not kinds <= set(blocks):
        unknown = sorted(kinds - set(blocks))[0]
        r.fail(key, f"unknown attention type {unknown!r}; expected global, local")
    elif len(kinds) == 1:
        hf_layers.apply(r, fields, [(kinds.pop(), n)], blocks, key)
    elif key == "attention_layers":
        fields["layers"] = hf_layers.groups(hf_layers.runs(listed or ()), blocks)
    else:
        fields["layers"] = [
            hf_layers.cycle(len(item) * repeat, hf_layers.runs(item), blocks)[0]
            for item, repeat in items
            if repeat
        ]
    return fields


def _neo_listed(r: Reader, n: int) -> list[str] | None:
    """The file's ``attention_layers``, if it gives one: ``GPTNeoConfig`` derives its own from
    ``attention_types``, then sets the file's over it (a key that is no field), and each block
    reads its kind there; ``validate_architecture`` refuses a list whose length is not the
    layer count (whatever ``attention_types`` gives), and a null."""
    listed = r.data.get("attention_layers")
    if listed is None:  # absent, or a null (refused with the class's refusals)
        return None
    if not (isinstance(listed, list) and all(isinstance(kind, str) for kind in listed)):
        r.fail("attention_layers", "expected a list of layer kinds (global, local)")
        return None
    if len(listed) != n:
        r.fail(
            "attention_layers",
            f"lists {len(listed):,} layers, but the model has {n:,}: GPTNeoConfig's "
            "validate_architecture refuses the file",
        )
    return listed


def _neo_items(r: Reader, types: Any) -> list[tuple[list[str], int]] | None:
    """``attention_types`` checked: a list of [list of kinds, repeat count] pairs."""
    items: list[tuple[list[str], int]] = []
    pairs: list[Any] = types if isinstance(types, list) else [None]
    for item in pairs:
        kinds, repeat = item if isinstance(item, list | tuple) and len(item) == 2 else (None, None)
        if not (
            isinstance(kinds, list)
            and kinds
            and all(isinstance(kind, str) for kind in kinds)
            and isinstance(repeat, int)
            and not isinstance(repeat, bool)
            and repeat >= 0
        ):
            r.fail("attention_types", "expected a list of [[layer kinds...], repeat] pairs")
            return None
        items.append((kinds, repeat))
    return items


def gpt_bigcode(r: Reader) -> dict[str, Any]:
    """GPTBigCodeForCausalLM (SantaCoder, StarCoder): GPT-2's layout (``wte``, ``wpe``,
    ``ln_1``, ``attn.c_attn``, ``attn.c_proj``, ``ln_2``, ``mlp.c_fc``, ``mlp.c_proj``, ``ln_f``,
    all with biases), but with ``multi_query`` (default true) the fused ``c_attn`` holds the
    queries and ONE key/value head: D x (D + 2 d) + (D + 2 d); tied by default. With
    ``add_cross_attention`` each block adds GPT-2's ``crossattention`` and ``ln_cross_attn``,
    which transformers cannot build beside ``multi_query`` (``GPTBigCodeBlock`` raises
    NotImplementedError): refused there."""
    fields = standard_sizes(r, GPT_KEYS)
    multi_query = r.flag("multi_query", True)
    if multi_query and r.flag("add_cross_attention", False):
        r.unsupported(
            "add_cross_attention",
            "cross-attention beside multi_query, which transformers cannot build "
            "(GPTBigCodeBlock: Cross-attention not implemented for MQA)",
        )
    cross_attention(r, fields)
    if multi_query:
        fields["n_kv_heads"] = 1
        r.key_names["n_kv_heads"] = r.name("multi_query")
    fields.update(
        ffn_hidden=r.value("ffn_hidden", "n_inner", default=None),
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=True),
    )
    return fields


BLOOM_KEYS: dict[str, tuple[str, ...]] = {
    "vocab_size": ("vocab_size",),
    "d_model": ("hidden_size", "n_embed"),
    "n_layers": ("n_layer", "num_hidden_layers"),
    "n_heads": ("n_head", "num_attention_heads"),
}
"""BLOOM's keys; ``n_embed`` is the old name transformers still accepts."""

BLOOM_CONTEXT = 2048
"""BLOOM's training sequence length (BLOOM paper, Table 3). Its config names no length and ALiBi
keeps no position table, so this is only the default sequence length of costs that need one."""


def bloom(r: Reader) -> dict[str, Any]:
    """BloomForCausalLM: ``word_embeddings`` (V x D) followed by
    ``word_embeddings_layernorm``; per block ``input_layernorm``,
    ``self_attention.query_key_value`` (D x 3D + 3D), ``self_attention.dense`` (D x D + D),
    ``post_attention_layernorm``, ``mlp.dense_h_to_4h`` (D x 4D + 4D), ``mlp.dense_4h_to_h``
    (4D x D + D); ``ln_f``; ``lm_head`` tied by default. ALiBi positions: no parameters. The
    context is ``seq_length`` when given, else BLOOM's 2,048 (no key limits it)."""
    fields = standard_sizes(r, BLOOM_KEYS)
    fields.update(
        context_length=r.value("context_length", "seq_length", default=BLOOM_CONTEXT),
        position="none",
        embedding_norm=True,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=True),
    )
    return fields


MPT_KEYS: dict[str, tuple[str, ...]] = {
    "vocab_size": ("vocab_size",),
    "d_model": ("d_model", "hidden_size"),
    "n_layers": ("n_layers", "num_hidden_layers"),
    "n_heads": ("n_heads", "num_attention_heads"),
    "context_length": ("max_seq_len",),
}
"""MPT's keys; the second names are its ``attribute_map`` aliases."""


def mpt(r: Reader) -> dict[str, Any]:
    """MptForCausalLM: ``wte`` (V x D); per block ``norm_1``, ``attn.Wqkv`` (D x 3D),
    ``attn.out_proj`` (D x D), ``norm_2``, ``ffn.up_proj`` (D x 4D), ``ffn.down_proj``
    (4D x D), no linear biases; ``norm_f``; every LayerNorm a weight without bias; ``lm_head``
    tied by default. ALiBi positions: no parameters (``learned_pos_emb`` builds nothing).
    transformers builds exactly this whatever ``expansion_ratio``, ``attn_config.qk_ln`` and
    ``no_bias`` say: no module of transformers' MPT reads them (counted as built, with a
    note)."""
    fields = standard_sizes(r, MPT_KEYS)
    ratio = r.data.get("expansion_ratio")
    if ratio is not None and not is_whole(ratio, 0):
        r.fail("expansion_ratio", f"expected a whole number (got {ratio!r}): MptConfig types it so")
    elif ratio is not None and ratio != 4:
        r.note(
            f"expansion_ratio is {ratio}, but transformers' MPT always builds a 4 x MLP (its "
            "MptMLP reads no such key; a checkpoint of another width does not load): counted "
            "as built, 4 x"
        )
    if not r.flag("no_bias", True):
        r.note(
            "no_bias is false, but transformers' MPT reads no such key and builds no biases "
            "(a checkpoint's biases are left unloaded): counted without them"
        )
    attn = r.data.get("attn_config")
    if isinstance(attn, dict) and attn.get("qk_ln"):
        r.note(
            "attn_config.qk_ln is set, but transformers' MPT builds no query/key norms (a "
            "checkpoint's are left unloaded): counted without them"
        )
    fields.update(
        position="none",
        norm_bias=False,
        qkv_bias=False,
        attn_out_bias=False,
        ffn_bias=False,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=True),
    )
    return fields


FAMILIES = {
    "bloom": bloom,
    "codegen": codegen,
    "gpt_bigcode": gpt_bigcode,
    "gpt_neo": gpt_neo,
    "gptj": gptj,
    "mpt": mpt,
}


PEFT_NAMES = {
    "bloom": llama_names(
        {"attn": "self_attention"},
        {
            "attn.qkv_proj": "self_attention.query_key_value",
            "attn.o_proj": "self_attention.dense",
            "embed_tokens": "word_embeddings",
            **NEOX_MLP,
        },
    ),
    **dict.fromkeys(
        ("codegen", "gptj"),
        llama_names(
            {"attn": "attn"},
            {
                "attn.o_proj": "attn.out_proj",
                "mlp.up_proj": "mlp.fc_in",
                "mlp.down_proj": "mlp.fc_out",
                "embed_tokens": "wte",
            },
        ),
    ),
    "gpt_bigcode": GPT2,
    "gpt_neo": llama_names(
        {"attn": "attn.attention"},
        {
            "attn.o_proj": "attn.attention.out_proj",
            **GPT2_MLP,
            "embed_tokens": "wte",
            "embed_positions": "wpe",
        },
    ),
    "mpt": llama_names(
        {"attn": "attn", "mlp": "ffn"},
        {"attn.qkv_proj": "attn.Wqkv", "attn.o_proj": "attn.out_proj", "embed_tokens": "wte"},
    ),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
