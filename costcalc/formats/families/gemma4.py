"""Gemma 4 (text) and Gemma 4 Unified's text decoder: Gemma 3's sandwich layout whose
full-attention layers are built differently from its sliding ones (transformers 5.24,
``models/gemma4/modeling_gemma4.py``, ``models/gemma4_unified/modeling_gemma4_unified.py``).

Every block holds ``input_layernorm``, ``post_attention_layernorm``, ``pre_feedforward_layernorm``
and ``post_feedforward_layernorm`` (RMSNorm, D each), ``q_proj`` (D x H d), ``q_norm`` and
``k_norm`` (RMSNorm, d each; ``v_norm`` has no weight), ``k_proj``/``v_proj`` (D x K d),
``o_proj`` (H d x D) and a GeGLU MLP (``gate_proj``, ``up_proj``, ``down_proj``); the model
``embed_tokens`` (V x D, tied by default) and a final ``norm``. ``layer_scalar`` is a buffer.
Full-attention layers use ``global_head_dim`` (default 512) as d and, with ``attention_k_eq_v``,
``num_global_key_value_heads`` as K and no ``v_proj`` (the values are the key projection, then
normalised on their own).

Per-layer inputs (``hidden_size_per_layer_input`` P > 0, the default 256; E2B, E4B): the model's
``embed_tokens_per_layer`` (``vocab_size_per_layer_input`` x L P), ``per_layer_model_projection``
(D -> L P) and ``per_layer_projection_norm`` (P); in every block ``per_layer_input_gate`` (D -> P),
``per_layer_projection`` (P -> D) and ``post_per_layer_input_norm`` (D). The last
``num_kv_shared_layers`` layers read the keys and values of the last earlier layer of their
attention type: no ``k_proj``, ``v_proj`` or ``k_norm``, nothing cached; with
``use_double_wide_mlp`` their MLP is 2 ``intermediate_size`` wide.

The mixture-of-experts block (``enable_moe_block``; 26B-A4B): beside the MLP, ``router`` (``proj``
X x D, a weightless ``norm``, ``scale`` D, ``per_expert_scale`` X), ``experts`` (``gate_up_proj``
X x 2h x D, ``down_proj`` X x D x h) and 3 more RMSNorms (``post_feedforward_layernorm_1``,
``post_feedforward_layernorm_2``, ``pre_feedforward_layernorm_2``).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.gemma2 import class_name, halved_window, halving_words
from costcalc.formats.families.llama import llama_layout
from costcalc.formats.hf_reader import Reader, attention_bias, is_whole
from costcalc.formats.peft_names import DOWN, GATE_UP, llama_names

GEMMA4_SIZES: dict[str, Any] = {
    "vocab_size": 262_144,
    "d_model": 2304,
    "n_layers": 30,
    "n_heads": 8,
    "context_length": 131_072,
    "ffn_hidden": 9216,
}
"""Gemma4TextConfig's defaults: a multimodal Gemma 4 config's ``text_config`` may leave them out."""

SHARED = "+shared"
"""Suffix of a layer kind whose attention reads an earlier layer's keys and values."""

CYCLE = [("sliding_attention", 5), ("full_attention", 1)]
"""Gemma4TextConfig's default layers: 5 sliding, then 1 full."""


def gemma4_text(r: Reader) -> dict[str, Any]:
    """Gemma4ForCausalLM (and the text decoder of Gemma4ForConditionalGeneration): the layout
    above with Gemma4TextConfig's defaults (4 key/value heads, ``head_dim`` 256, GeGLU from
    ``hidden_activation``, tied). Each 6th layer attends fully, the others within
    ``sliding_window`` (default 512), unless ``layer_types`` lists them; the last layer always
    attends fully (transformers forces it); ``use_bidirectional_attention`` as
    :func:`_sliding_attention` reads it."""
    fields = _gemma4_layout(r, GEMMA4_SIZES)
    per_layer_inputs(r, fields)
    if r.flag("enable_moe_block", False):
        _moe_block(r, fields)
    _attention_layers(r, fields, window=512)
    return fields


def gemma4_unified_text(r: Reader) -> dict[str, Any]:
    """Gemma4UnifiedForCausalLM (and the text decoder of Gemma4UnifiedForConditionalGeneration,
    ``models/gemma4_unified``): Gemma 4's layers, shared keys and values and full-attention
    sizes without per-layer inputs or the mixture-of-experts block, with
    Gemma4UnifiedTextConfig's defaults (262,144 positions, ``sliding_window`` 1,024)."""
    fields = _gemma4_layout(r, {**GEMMA4_SIZES, "context_length": 262_144})
    _attention_layers(r, fields, window=1024)
    return fields


def _gemma4_layout(r: Reader, sizes: dict[str, Any]) -> dict[str, Any]:
    """The blocks both Gemma 4 configurations build, with their shared defaults."""
    fields = llama_layout(
        r,
        kv_heads=4,
        head_dim=256,
        tie=True,
        act="gelu_pytorch_tanh",
        act_key="hidden_activation",
        sizes=sizes,
    )
    attention_bias(r, fields)
    fields.update(qk_norm="head", norms_per_block=4)
    return fields


def _attention_layers(r: Reader, fields: dict[str, Any], window: int) -> None:
    """Sliding and full layers from ``layer_types`` or the default cycle, the last layer full,
    the last ``num_kv_shared_layers`` reading earlier keys and values."""
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return
    blocks: dict[str, dict[str, Any]] = {
        "sliding_attention": _sliding_attention(r, fields, window),
        "full_attention": _full_attention(r, fields),
    }
    shared = min(r.count("num_kv_shared_layers", 0, minimum=0), n)
    listed = hf_layers.layer_types(r, n)
    kinds = None if listed is None else [*listed[:-1], "full_attention"]
    _per_layer_sizes(r, fields, n, kinds, blocks)
    if kinds is not None:
        if shared and not set(kinds) - set(blocks):
            _share_last(r, fields, blocks, shared)
            first = n - shared
            _check_producers(r, set(kinds[:first]), set(kinds[first:]))
            kinds = kinds[:first] + [kind + SHARED for kind in kinds[first:]]
        hf_layers.apply(r, fields, hf_layers.runs(kinds), blocks)
    elif shared:
        _share_last(r, fields, blocks, shared)
        _default_layers_sharing(r, fields, n, shared, blocks)
    else:
        _every_sixth_full(r, fields, n, blocks)


BIDIRECTIONAL_MODES = ("all", "vision", None)
"""The values Gemma4TextConfig's ``use_bidirectional_attention`` takes (its strict type)."""


def _sliding_attention(r: Reader, fields: dict[str, Any], default: int) -> dict[str, Any]:
    """The block keys of a sliding layer: ``sliding_window`` (default ``default``), as
    ``use_bidirectional_attention`` leaves it. "all": the configuration class halves the
    window (:func:`halved_window`, W' = W // 2 + 1), which the KV cache keeps, and sets
    ``is_causal`` false, so the text model's masks (also the multimodal model's for text,
    ``create_masks_for_generate`` on the text config) are masking_utils' bidirectional ones:
    every key in full layers, in sliding ones the keys at most W' positions away on either
    side (``sliding_window_bidirectional_overlay``, |i - j| <= W'), ``bidirectional_window``
    W' + 1. "vision": only image and video tokens attend both ways; text attends causally
    (models/gemma4/configuration_gemma4.py, modeling_gemma4.py, masking_utils.py)."""
    window = r.value("sliding_window", "sliding_window", default=default)
    mode = r.data.get("use_bidirectional_attention")
    if mode not in BIDIRECTIONAL_MODES:
        r.fail(
            "use_bidirectional_attention",
            f'expected "all", "vision" or null (got {mode!r}): transformers refuses the file '
            f"({class_name(r)}'s strict types)",
        )
    if mode == "vision":
        r.note(
            f'{r.name("use_bidirectional_attention")}: "vision": only image and video tokens '
            "attend both ways (the multimodal model's mask over mm_token_type_ids); text-only "
            "input, as counted, attends causally."
        )
    if mode != "all":
        return {"sliding_window": window}
    fields["bidirectional_attention"] = True
    halved = halved_window(r, window)
    if not is_whole(halved, 1):
        return {"sliding_window": halved}
    r.key_names["bidirectional_window"] = r.name("sliding_window")
    r.note(
        f"{halving_words(r, window, halved)}; bidirectional (is_causal false): sliding layers "
        f"attend to keys at most {halved:,} positions away on either side (up to "
        f"{2 * halved + 1:,}: bidirectional_window {halved + 1:,}), full layers to every "
        "token; decoding sees earlier tokens only."
    )
    return {"sliding_window": halved, "bidirectional_window": halved + 1}


def per_layer_inputs(r: Reader, fields: dict[str, Any]) -> None:
    """``hidden_size_per_layer_input`` (default 256; 0 builds none) and its table's rows,
    ``vocab_size_per_layer_input`` (default 262,144, whatever ``vocab_size`` is)."""
    width = r.value("per_layer_input_width", "hidden_size_per_layer_input", default=256)
    if width:
        fields["per_layer_input_width"] = width
        fields["per_layer_vocab"] = r.value(
            "per_layer_vocab", "vocab_size_per_layer_input", default=262_144
        )


def _moe_block(r: Reader, fields: dict[str, Any]) -> None:
    """``enable_moe_block``: the dense MLP runs for every token beside ``num_experts`` routed
    experts of ``moe_intermediate_size`` (top ``top_k_experts``), as a shared expert does; the
    router's ``scale`` (D) and ``per_expert_scale`` (X), and 3 more norms of D."""
    fields.update(
        moe_experts=r.size("moe_experts", "num_experts"),
        moe_top_k=r.size("moe_top_k", "top_k_experts"),
        moe_ffn_hidden=r.size("moe_ffn_hidden", "moe_intermediate_size"),
        moe_shared_ffn_hidden=fields.get("ffn_hidden"),
        moe_router_scales=True,
        norms_per_block=7,
    )


def _share_last(
    r: Reader, fields: dict[str, Any], blocks: dict[str, dict[str, Any]], shared: int
) -> None:
    """Add the shared kinds of block: ``shares_kv``, and with ``use_double_wide_mlp`` an MLP
    twice ``intermediate_size`` wide."""
    if shared >= fields["n_layers"]:
        r.fail("num_kv_shared_layers", "every layer would reuse keys and values none computes")
    wide = r.flag("use_double_wide_mlp", False) and isinstance(fields.get("ffn_hidden"), int)
    dense = "moe_shared_ffn_hidden" if "moe_experts" in fields else "ffn_hidden"
    for kind in list(blocks):
        block = {**blocks[kind], "shares_kv": True}
        if wide:
            block[dense] = 2 * fields["ffn_hidden"]
        blocks[kind + SHARED] = block


def _check_producers(r: Reader, producing: set[str], reading: set[str]) -> None:
    """transformers refuses a model whose shared layers read an attention type no earlier
    layer computes."""
    missing = sorted(reading - producing)
    if missing:
        r.fail(
            "num_kv_shared_layers",
            f"the shared layers read {missing[0]} keys and values no earlier layer computes",
        )


def _default_layers_sharing(
    r: Reader, fields: dict[str, Any], n: int, shared: int, blocks: dict[str, dict[str, Any]]
) -> None:
    """The default layers (5 sliding, 1 full, the last full) when the last ``shared`` share
    keys and values, in closed form: the first n - shared cycle from the start, the shared
    ones but the last cycle from where those stopped, then the last layer."""
    first = n - shared
    producing = {kind for kind, _ in CYCLE[: 1 if first < 6 else 2]} if first else set()
    _check_producers(r, producing, {"full_attention", "sliding_attention"} - _only_full(n, first))
    tail = [(kind + SHARED, count) for kind, count in _rotated(CYCLE, first % 6)]
    fields["layers"] = [
        *hf_layers.cycle(first, CYCLE, blocks),
        *(hf_layers.cycle(n - 1 - first, tail, blocks) if n - 1 > first else []),
        *hf_layers.groups([("full_attention" + SHARED, 1)], blocks),
    ]


def _only_full(n: int, first: int) -> set[str]:
    """{"sliding_attention"} when no shared layer slides: the shared layers are the last
    one alone, or the last two with the one before it full by the cycle (index 6 k - 1)."""
    alone = n - 1 == first or (n - 2 == first and (first + 1) % 6 == 0)
    return {"sliding_attention"} if alone else set()


def _rotated(pattern: list[tuple[str, int]], phase: int) -> list[tuple[str, int]]:
    """A cycle of runs started ``phase`` layers in: 5 sliding, 1 full from 3 is 2 sliding,
    1 full, 3 sliding."""
    out, start = [], 0
    for kind, count in pattern:
        if start + count > phase:
            out.append((kind, start + count - max(phase, start)))
        start += count
    before, start = [], 0
    for kind, count in pattern:
        if start < phase:
            before.append((kind, min(count, phase - start)))
        start += count
    return out + before


def _full_attention(r: Reader, fields: dict[str, Any]) -> dict[str, Any]:
    """The block keys of a full-attention layer: ``global_head_dim``, and with
    ``attention_k_eq_v`` the values from the keys and ``num_global_key_value_heads``; a file
    with ``per_layer_config`` gives the sizes there instead (``__post_init__`` derives it from
    those two keys only when it is absent: :func:`_per_layer_sizes`)."""
    listed = r.data.get("per_layer_config") is not None
    block: dict[str, Any] = {}
    if not listed and "global_head_dim" in r.data and r.data["global_head_dim"] is None:
        r.fail(
            "global_head_dim",
            "null: transformers refuses the file (Gemma4TextConfig's __post_init__ gives the "
            "full-attention layers (the last layer is always one) this head_dim, which takes "
            "no null; leave the key out for 512)",
        )
    if not listed:
        block["head_dim"] = r.value("head_dim", "global_head_dim", default=512)
    if r.flag("attention_k_eq_v", False):
        block["keys_as_values"] = True
        global_kv = (
            None if listed else r.value("n_kv_heads", "num_global_key_value_heads", default=None)
        )
        if global_kv is not None:
            block["n_kv_heads"] = global_kv
    return block


PER_LAYER_KEYS = {"head_dim": "head_dim", "num_key_value_heads": "n_kv_heads"}
"""What Gemma4TextAttention reads of ``config.per_layer_config[layer_idx]``, and its block key."""


def _per_layer_sizes(
    r: Reader,
    fields: dict[str, Any],
    n: int,
    kinds: list[str] | None,
    blocks: dict[str, dict[str, Any]],
) -> None:
    """``per_layer_config`` as transformers' heterogeneous configs read it (keys layer indices,
    ints or zero-padded strings as ``to_dict()`` writes them; values the attributes that differ
    from the global config, those equal to it dropped): each layer's ``head_dim`` and
    ``num_key_value_heads``. Set in the block of each layer type (``kinds``, the listed types
    with the last layer full; None: the default cycle) when every layer of the type has the
    same; sizes that differ within a type, or another attribute, are refused."""
    given = r.data.get("per_layer_config")
    if given is None:
        return
    indices = hf_layers.by_rule(r, n, "per_layer_config")
    if indices is None:
        return
    if not isinstance(given, dict) or not all(
        isinstance(v, dict) and str(k).isdigit() and int(k) < n for k, v in given.items()
    ):
        r.fail("per_layer_config", f"expected a mapping of layer indices below {n:,} to settings")
        return
    other = sorted({key for v in given.values() for key in v} - set(PER_LAYER_KEYS))
    if other:
        r.unsupported("per_layer_config", f"per-layer {other[0]}")
        return
    overrides = {int(k): v for k, v in given.items()}
    sizes: dict[str, set[tuple[tuple[str, Any], ...]]] = {}
    for i in indices:
        kind = kinds[i] if kinds is not None else _default_kind(i, n)
        layer = {
            PER_LAYER_KEYS[key]: value
            for key, value in overrides.get(i, {}).items()
            if value != fields.get(PER_LAYER_KEYS[key])
        }
        sizes.setdefault(kind, set()).add(tuple(sorted(layer.items())))
    for kind, found in sizes.items():
        if len(found) > 1:
            r.unsupported("per_layer_config", f"sizes that differ between {kind} layers")
        elif kind in blocks:
            blocks[kind].update(dict(next(iter(found))))


def _default_kind(i: int, n: int) -> str:
    """Layer i's type by Gemma4TextConfig's default: every 6th and the last full."""
    return "full_attention" if (i + 1) % 6 == 0 or i == n - 1 else "sliding_attention"


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


FAMILIES = {"gemma4_text": gemma4_text, "gemma4_unified_text": gemma4_unified_text}


PEFT_NAMES = dict.fromkeys(
    FAMILIES,
    llama_names(
        renames={
            "mlp.router": "router.proj",
            GATE_UP: "experts.gate_up_proj",
            DOWN: "experts.down_proj",
            **{f"mlp.shared_expert.{p}": f"mlp.{p}" for p in ("gate_proj", "up_proj", "down_proj")},
        },
        router_linear=True,
    ),
)
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
