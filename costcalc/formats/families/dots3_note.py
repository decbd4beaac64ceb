"""Hugging Face family dots3_note_text (Dots 3 Note's language model, the ``text_config`` of
``dots3_note``; transformers 5.24, ``models/dots3_note/modeling_dots3_note.py``): DeepSeek's
multi-head latent attention with a per-head output gate and a norm on the rotary key, the
sparse-attention indexer on the full layers, narrower sliding-window layers between them, and a
sparse MoE with shared experts after a dense first layer."""

from __future__ import annotations

import json
from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.deepseek import mla_layout
from costcalc.formats.families.moe import routed_experts
from costcalc.formats.hf_reader import Reader, blocks, is_whole
from costcalc.formats.peft_names import DEEPSEEK_NAMES

DOTS3_MLA: dict[str, int | None] = {
    "q_lora_rank": 1024,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
}
"""``Dots3NoteTextConfig``'s attention sizes (its full and indexed layers)."""

SLIDING_KEYS: dict[str, tuple[str, int]] = {
    "n_heads": ("swa_num_attention_heads", 64),
    "q_lora_rank": ("swa_q_lora_rank", 1024),
    "kv_lora_rank": ("swa_kv_lora_rank", 1024),
    "qk_nope_head_dim": ("swa_qk_nope_head_dim", 192),
    "v_head_dim": ("swa_v_head_dim", 128),
}
"""The sliding layers' own attention sizes: the ``swa_*`` keys and their defaults."""


def _sliding_block(r: Reader, window: Any) -> dict[str, Any]:
    """A sliding layer's attention: its window and the ``swa_*`` sizes; the rotary part
    ``swa_qk_rope_head_dim`` defaults to ``swa_head_dim`` (256) - the no-rope part."""
    block = {field: r.value(field, key, default=d) for field, (key, d) in SLIDING_KEYS.items()}
    for field in SLIDING_KEYS:
        r.forget(field)
    nope = block["qk_nope_head_dim"]
    head = r.data.get("swa_head_dim", 256)
    rope_default = head - nope if isinstance(head, int) and isinstance(nope, int) else None
    block["qk_rope_head_dim"] = r.value(
        "qk_rope_head_dim", "swa_qk_rope_head_dim", default=rope_default
    )
    r.forget("qk_rope_head_dim")
    return {**block, "sliding_window": window}


PER_LAYER_KEYS: dict[str, str] = {
    "num_attention_heads": "n_heads",
    "q_lora_rank": "q_lora_rank",
    "kv_lora_rank": "kv_lora_rank",
    "qk_nope_head_dim": "qk_nope_head_dim",
    "qk_rope_head_dim": "qk_rope_head_dim",
    "v_head_dim": "v_head_dim",
}
"""The attention sizes ``per_layer_config`` may override, and their spec fields; it may also
name ``num_key_value_heads`` (MLA keeps no per-head keys) and ``head_dim`` (it sets only the
rotary share), which size nothing here."""


def _full_kind(r: Reader) -> str:
    """The kind of the layers that attend fully: ``indexed_attention`` unless ``use_dsa`` is
    false."""
    return "full_attention" if r.data.get("use_dsa") is False else "indexed_attention"


def _overrides(r: Reader, n: int) -> dict[int, dict[str, Any]] | None:
    """``per_layer_config``: attention sizes by layer index (a mapping from the file)."""
    listed = r.data["per_layer_config"]
    if not isinstance(listed, dict):
        r.fail("per_layer_config", "expected a mapping from layer indices to overrides")
        return None
    out: dict[int, dict[str, Any]] = {}
    for key, values in listed.items():
        index = int(key) if isinstance(key, str) and key.isdigit() else None
        if index is None or index >= n or not isinstance(values, dict):
            r.fail("per_layer_config", f"entry {key!r}: expected a layer index below {n:,}")
            return None
        unknown = sorted(set(values) - set(PER_LAYER_KEYS) - {"num_key_value_heads", "head_dim"})
        if unknown:
            r.unsupported("per_layer_config", f"a layer's {unknown[0]} is not counted")
            return None
        out[index] = {PER_LAYER_KEYS[k]: v for k, v in values.items() if k in PER_LAYER_KEYS}
    r.key_names["layers"] = r.name("per_layer_config")
    return out


def _per_layer(
    r: Reader,
    fields: dict[str, Any],
    n: int,
    kinds: dict[str, dict[str, Any]],
    ffn: list[tuple[str, int]],
    ffn_blocks: dict[str, dict[str, Any]],
) -> None:
    """Layers whose attention ``per_layer_config`` overrides: each layer's kind (listed, or the
    rule evaluated layer by layer) with its overrides, as runs of equal layers."""
    overrides = _overrides(r, n)
    layers = hf_layers.by_rule(r, n, "per_layer_config")
    if overrides is None or layers is None:
        return
    listed = hf_layers.layer_types(r, n)
    if listed is None:
        sliding = r.flag("use_sliding_window", True)
        full = _full_kind(r)
        listed = [
            full if not sliding or i < 2 or i % 4 == 1 else "sliding_attention" for i in layers
        ]
    elif "use_dsa" in r.data:
        listed = _renamed(r, listed)
    names = [
        f"{kind} {json.dumps(overrides.get(i, {}), sort_keys=True)}"
        for i, kind in enumerate(listed)
    ]
    blocks = {
        name: {**kinds.get(kind, {}), **overrides.get(i, {})}
        for i, (name, kind) in enumerate(zip(names, listed, strict=True))
    }
    unknown = sorted(set(listed) - set(kinds))
    if unknown:
        r.fail(
            "layer_types", f"unknown layer type {unknown[0]!r}; expected one of {', '.join(kinds)}"
        )
        return
    layout = hf_layers.Layout(hf_layers.runs(names))
    hf_layers.combine(r, fields, layout, blocks, ffn, ffn_blocks)


def _renamed(r: Reader, listed: list[str]) -> list[str]:
    """``use_dsa`` true names full layers indexed, false the other way round."""
    full = _full_kind(r)
    old = "indexed_attention" if full == "full_attention" else "full_attention"
    return [full if kind == old else kind for kind in listed]


def _attention_kinds(r: Reader, n: int) -> hf_layers.Layout | None:
    """``layer_types`` as listed (``use_dsa`` renames full and indexed layers), else the rule:
    the first two layers and each with i % 4 == 1 attend fully, the others within the window
    (all fully without ``use_sliding_window``); the rule as a pattern from layer 1 on."""
    full = _full_kind(r)
    listed = hf_layers.layer_types(r, n)
    if listed is not None:
        if "use_dsa" in r.data:
            listed = _renamed(r, listed)
        return hf_layers.Layout(hf_layers.runs(listed))
    if not r.flag("use_sliding_window", True):
        return hf_layers.Layout([(full, n)])
    return hf_layers.Layout(
        [("sliding_attention", 1), (full, 1), ("sliding_attention", 2)], cycles=True
    )


def _ffn_kinds(r: Reader, n: int) -> list[tuple[str, int]] | None:
    """``mlp_layer_types`` as listed, else the first ``first_k_dense_replace`` (1) layers dense
    (a ``moe_layer_freq`` other than 1 is refused)."""
    listed = hf_layers.layer_types(r, n, "mlp_layer_types")
    if listed is not None:
        return hf_layers.runs(listed)
    if r.data.get("moe_layer_freq", 1) != 1:
        r.unsupported("moe_layer_freq", "dense layers among the sparse ones by a frequency")
        return None
    return hf_layers.split_at(r, n, "first_k_dense_replace", 1, "dense", "sparse")


ADAPTERS = ("vision_config", "audio_config")
"""Dots3NoteConfig's towers whose ``adapter_out_dim`` (default 5,120) must be the text width."""


def _dots3_rules(r: Reader) -> None:
    """Dots3NoteTextConfig's and Dots3NoteConfig's rules (see :func:`dots3_note_text`)."""
    groups, top, experts = (r.setting(k) for k in ("n_group", "topk_group", "n_routed_experts"))
    if is_whole(groups) and is_whole(experts) and (groups < 1 or experts % groups):
        r.refused_by_class("n_group", f"{groups:,} groups do not split {experts:,} experts")
    elif is_whole(groups, 1) and is_whole(experts) and experts // groups < 2:
        r.refused_by_class("n_group", f"{groups:,} groups of {experts:,} experts: 2 or more each")
    elif is_whole(groups) and is_whole(top) and not 1 <= top <= groups:
        r.refused_by_class("topk_group", f"{top:,}: expected 1 to n_group ({groups:,})")
    heads, kv = r.setting("num_attention_heads"), r.setting("num_key_value_heads")
    if r.data.get("per_layer_config") is None and is_whole(heads) and is_whole(kv) and heads != kv:
        r.refused_by_class(
            "num_key_value_heads", f"{kv:,} beside {heads:,} heads: the two must be equal"
        )
    width = r.setting("hidden_size")
    if r.doc.data.get("model_type") != "dots3_note" or not is_whole(width):
        return
    for tower in ADAPTERS:
        config = r.doc.data.get(tower)
        out = config.get("adapter_out_dim") if isinstance(config, dict) else None
        out = 5120 if out is None else out
        if is_whole(out) and out != width:
            r.refused_by_class(
                "hidden_size", f"{width:,}, but {tower}.adapter_out_dim is {out:,}: they must match"
            )


def dots3_note_text(r: Reader) -> dict[str, Any]:
    """Dots3NoteForCausalLM (text): DeepSeek's MLA layout (q rank 1,024, kv rank 512, r 64,
    n 128, v 128; H ``num_attention_heads`` 128; biases on ``q_a_proj``, ``kv_a_proj_with_mqa``,
    ``o_proj`` when ``attention_bias``) with ``g_proj`` (D -> H, a sigmoid gate per head) and
    ``k_rope_only_layernorm`` (RMSNorm of r, costcalc's ``rope_key_norm``) in every layer.
    ``indexed_attention`` layers hold DeepSeek-V3.2's indexer (``index_n_heads`` 64 heads of
    ``index_head_dim`` 128: ``wq_b``, ``wk``, LayerNorm ``k_norm``, ``weights_proj``);
    ``sliding_attention`` layers attend within ``sliding_window`` (default
    ``sliding_window_size``, 512) with their own sizes (``swa_num_attention_heads`` 64,
    ``swa_q_lora_rank`` 1,024, ``swa_kv_lora_rank`` 1,024, ``swa_qk_nope_head_dim`` 192,
    ``swa_qk_rope_head_dim`` 64, ``swa_v_head_dim`` 128) and no indexer. Dense SwiGLU ``mlp``
    (``intermediate_size``, no bias whatever ``mlp_bias`` says) where ``mlp_layer_types`` says
    ``dense``, else ``mlp.gate`` (X x D, ``e_score_correction_bias`` a buffer), X =
    ``n_routed_experts`` (256) SwiGLU experts of ``moe_intermediate_size`` (1,536), top 8, and
    ``shared_experts`` (SwiGLU of ``shared_experts_intermediate_size`` (1,536) x
    ``n_shared_experts`` (1)); untied by default. A file with ``per_layer_config`` (as
    transformers saves one) gives each layer's attention sizes there, by layer index (heads,
    ranks, head dims; the ``swa_*`` keys then do not apply). Refused as the configuration
    classes' ``validate_architecture`` refuses them (configuration_dots3_note.py, lines 365-378
    and 411-414): expert groups that do not split the experts in groups of 2 or more,
    ``topk_group`` outside [1, ``n_group``], key/value heads other than the heads, indexed
    layers whose ``qk_rope_head_dim`` exceeds ``index_head_dim`` (lines 380-381), and under a
    ``dots3_note`` file a width other than its vision and audio adapters' ``adapter_out_dim``
    (5,120)."""
    fields = _dots3_layout(r)
    rope, index = r.setting("qk_rope_head_dim"), r.setting("index_head_dim")
    indexed = any("indexer_heads" in block for _, block in blocks(fields))
    listed = r.data.get("per_layer_config") is not None  # may size the indexed layers apart
    if indexed and not listed and is_whole(rope) and is_whole(index) and rope > index:
        r.refused_by_class(
            "index_head_dim", f"{index:,}, below qk_rope_head_dim {rope:,} in the indexed layers"
        )
    return fields


def _dots3_layout(r: Reader) -> dict[str, Any]:
    """The fields :func:`dots3_note_text` describes, its classes' rules checked but the one on
    the indexed layers' rotary width."""
    _dots3_rules(r)
    fields = mla_layout(r, mla=DOTS3_MLA)
    fields.update(attention_head_gate=True, rope_key_norm=True)
    moe = routed_experts(
        r,
        ("n_routed_experts", "num_local_experts"),
        ("num_experts_per_tok",),
        (256, 8),
        (("moe_intermediate_size",), 1536),
    )
    width = r.value(
        "moe_shared_ffn_hidden",
        "moe_shared_expert_intermediate_size",
        "shared_experts_intermediate_size",
        default=1536,
    )
    count = r.value("moe_shared_ffn_hidden", "n_shared_experts", default=1)
    if isinstance(width, int) and isinstance(count, int) and count >= 1:
        moe["moe_shared_ffn_hidden"] = width * count
    window = r.data.get("sliding_window")
    if window is None:
        window = r.value("sliding_window", "sliding_window_size", default=512)
    else:
        window = r.value("sliding_window", "sliding_window", default=512)
    indexed = {
        "indexer_heads": r.value("indexer_heads", "index_n_heads", default=64),
        "indexer_head_dim": r.value("indexer_head_dim", "index_head_dim", default=128),
    }
    n = hf_layers.count_of(fields["n_layers"])
    ffn = None if n is None else _ffn_kinds(r, n)
    if n is None or ffn is None:
        return fields
    ffn_blocks = {"dense": {}, "sparse": moe}
    if r.data.get("per_layer_config") is not None:
        kinds = {
            "indexed_attention": indexed,
            "full_attention": {},
            "sliding_attention": {"sliding_window": window},
        }
        _per_layer(r, fields, n, kinds, ffn, ffn_blocks)
        return fields
    blocks = {
        "indexed_attention": indexed,
        "full_attention": {},
        "sliding_attention": _sliding_block(r, window),
    }
    attention = _attention_kinds(r, n)
    if attention is None:
        return fields
    if not attention.cycles:
        hf_layers.combine(r, fields, attention, blocks, ffn, ffn_blocks)
        return fields
    # The first layer attends fully; from the second on, the pattern above.
    first, *rest = [(kind, count) for kind, count in ffn if count]
    fields["layers"] = [{"count": 1, **blocks[_full_kind(r)], **ffn_blocks[first[0]]}]
    rest = [(first[0], first[1] - 1), *rest]
    hf_layers.combine(r, fields, attention, blocks, rest, ffn_blocks, offset=1)
    return fields


FAMILIES = {"dots3_note_text": dots3_note_text}


PEFT_NAMES = {
    "dots3_note_text": DEEPSEEK_NAMES,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
