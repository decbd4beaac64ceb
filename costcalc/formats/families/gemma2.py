"""Gemma 2 and Gemma 3 (text): Gemma's layout with sandwich norms (an RMSNorm before and after
the attention and before and after the MLP: ``input_layernorm``, ``post_attention_layernorm``,
``pre_feedforward_layernorm``, ``post_feedforward_layernorm``, D each) and layers that alternate
between a sliding window and full attention; Gemma 3 adds an RMSNorm of head_dim on queries and
keys (``q_norm``, ``k_norm``).

Also here: :func:`attention_kinds`, the sliding/full layers of a family from ``layer_types`` or
from the rule its configuration class fills ``layer_types`` with (Gemma 2/3, OLMo 3, EXAONE 4).
Logit soft-capping and the embedding scale (a buffer) hold no parameters.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import _sliding_window, llama_layout
from costcalc.formats.hf_reader import Reader


def attention_kinds(
    r: Reader,
    fields: dict[str, Any],
    window: Any,
    every: Any,
    rule_key: str | None = None,
) -> None:
    """Which layers attend within ``window``: those ``layer_types`` marks ``sliding_attention``,
    or (without it) every layer but each ``every``-th, transformers' rule
    ``(i + 1) % every != 0`` (``every`` read from ``rule_key`` when the family has one), as a
    cycling pattern in closed form. No window (null): every layer attends fully."""
    if window is None:
        r.key_names.pop("sliding_window", None)
        return
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return
    blocks = hf_layers.attention_windows(window)
    listed = hf_layers.layer_types(r, n)
    if listed is not None:
        hf_layers.apply(r, fields, hf_layers.runs(listed), blocks)
        return
    every_nth(r, fields, n, every, rule_key or "layer_types", blocks, nth="full_attention")


def every_nth(
    r: Reader,
    fields: dict[str, Any],
    n_layers: int,
    every: Any,
    key: str,
    blocks: dict[str, hf_layers.Block],
    nth: str,
) -> None:
    """Every ``every``-th layer (transformers' ``(i + 1) % every == 0``) is of kind ``nth``, the
    others of the other kind in ``blocks``: a cycling pattern in closed form, or flat fields when
    all layers are one kind. ``every`` comes from ``key``."""
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        r.fail(key, f"expected a whole number of layers, 1 or more (got {every!r})")
        return
    other = next(kind for kind in blocks if kind != nth)
    if every == 1 or n_layers < every:
        fields.update(blocks[nth if every == 1 else other])
    else:
        fields["layers"] = hf_layers.cycle(n_layers, [(other, every - 1), (nth, 1)], blocks)


def _gemma_sandwich(r: Reader, sizes: dict[str, Any] | None = None) -> dict[str, Any]:
    """Gemma 2/3's shared part: Gemma's layout with its GeGLU read from ``hidden_activation``,
    4 norms per block, q/k/v/o bias when ``attention_bias``; causal unless
    ``use_bidirectional_attention`` (not counted)."""
    fields = llama_layout(
        r,
        kv_heads=4,
        head_dim=256,
        tie=True,
        act="gelu_pytorch_tanh",
        act_key="hidden_activation",
        sizes=sizes,
    )
    fields["qkv_bias"] = fields["attn_out_bias"] = r.value(
        ("qkv_bias", "attn_out_bias"), "attention_bias", default=False
    )
    fields["norms_per_block"] = 4
    if r.flag("use_bidirectional_attention", False):
        r.unsupported("use_bidirectional_attention", "bidirectional attention within a window")
    return fields


def gemma2(r: Reader) -> dict[str, Any]:
    """Gemma2ForCausalLM: Gemma's layout with 4 RMSNorms per block, 4 key/value heads when
    ``num_key_value_heads`` is absent, ``head_dim`` 256; tied by default. Layers alternate:
    even layers attend within ``sliding_window`` (default 4,096), odd layers fully (or as
    ``layer_types`` says)."""
    fields = _gemma_sandwich(r)
    window = _sliding_window(r, default=4096)
    attention_kinds(r, fields, window, every=2)
    return fields


GEMMA3_SIZES: dict[str, Any] = {
    "vocab_size": 262_208,
    "d_model": 2304,
    "n_layers": 26,
    "n_heads": 8,
    "context_length": 131_072,
    "ffn_hidden": 9216,
}
"""Gemma3TextConfig's defaults: a multimodal Gemma 3 config's ``text_config`` leaves them out."""


def gemma3_text(r: Reader) -> dict[str, Any]:
    """Gemma3ForCausalLM (and the text decoder of Gemma3ForConditionalGeneration): Gemma 2's
    layout plus an RMSNorm of head_dim on queries and keys (``q_norm``, ``k_norm``). Every size
    has Gemma3TextConfig's default (``text_config`` files leave them out). Each
    ``sliding_window_pattern``-th layer (default 6) attends fully, the others within
    ``sliding_window`` (default 4,096), unless ``layer_types`` lists them."""
    fields = _gemma_sandwich(r, GEMMA3_SIZES)
    fields["qk_norm"] = "head"
    window = _sliding_window(r, default=4096)
    every = r.value("layers", "sliding_window_pattern", default=6)
    attention_kinds(r, fields, window, every, rule_key="sliding_window_pattern")
    return fields


FAMILIES = {"gemma2": gemma2, "gemma3_text": gemma3_text}
