"""Gemma 2 and Gemma 3 (text): Gemma's layout with sandwich norms (an RMSNorm before and after
the attention and before and after the MLP: ``input_layernorm``, ``post_attention_layernorm``,
``pre_feedforward_layernorm``, ``post_feedforward_layernorm``, D each) and layers that alternate
between a sliding window and full attention; Gemma 3 adds an RMSNorm of head_dim on queries and
keys (``q_norm``, ``k_norm``). Logit soft-capping and the embedding scale (a buffer) hold no
parameters.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout, sliding_window
from costcalc.formats.hf_reader import Reader, attention_bias, is_whole
from costcalc.formats.peft_names import LLAMA


def _gemma_sandwich(r: Reader, sizes: dict[str, Any] | None = None) -> dict[str, Any]:
    """Gemma 2/3's shared part: Gemma's layout with its GeGLU read from ``hidden_activation``,
    4 norms per block, q/k/v/o bias when ``attention_bias``."""
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
    fields["norms_per_block"] = 4
    return fields


def gemma2(r: Reader) -> dict[str, Any]:
    """Gemma2ForCausalLM: Gemma's layout with 4 RMSNorms per block, 4 key/value heads when
    ``num_key_value_heads`` is absent, ``head_dim`` 256; tied by default. Layers alternate:
    even layers attend within ``sliding_window`` (default 4,096), odd layers fully (or as
    ``layer_types`` says); causal unless ``use_bidirectional_attention`` (not supported)."""
    fields = _gemma_sandwich(r)
    if r.flag("use_bidirectional_attention", False):
        r.unsupported("use_bidirectional_attention", "bidirectional attention within a window")
    window = sliding_window(r, default=4096)
    hf_layers.attention_layers(r, fields, window, hf_layers.full_every(r, 2))
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
    ``sliding_window`` (default 4,096), unless ``layer_types`` lists them; with
    ``use_bidirectional_attention`` as :func:`bidirectional_window` says."""
    fields = _gemma_sandwich(r, GEMMA3_SIZES)
    fields["qk_norm"] = "head"
    window = sliding_window(r, default=4096)
    if r.flag("use_bidirectional_attention", False):
        window = bidirectional_window(r, fields, window)
    rule = hf_layers.full_every(r, 6, "sliding_window_pattern")
    hf_layers.attention_layers(r, fields, window, rule)
    return fields


def bidirectional_window(r: Reader, fields: dict[str, Any], window: Any) -> Any:
    """Gemma 3 with ``use_bidirectional_attention``: the window :func:`halved_window` keeps,
    which the sliding layers and their KV cache keep. Gemma3TextModel (Gemma3ForCausalLM)
    masks both ways: full layers see every token, sliding ones the tokens fewer than
    W // 2 + 1 positions away on either side (``_bidirectional_window_overlay``). Gemma3Model,
    the multimodal model's, builds causal masks for text (``create_masks_for_generate``,
    without that overlay), so its text decoder attends causally under eager attention
    (models/gemma3/configuration_gemma3.py, modeling_gemma3.py)."""
    halved = halved_window(r, window)
    if not is_whole(halved, 1):
        return halved
    if r.prefix:
        how = (
            "Gemma3Model masks text causally (create_masks_for_generate, without "
            f"Gemma3TextModel's bidirectional overlay): causal within {halved:,} under eager "
            "attention (sdpa, skipping the full layers' mask, attends both ways there)"
        )
    else:
        fields["bidirectional_attention"] = True
        how = (
            f"bidirectional: sliding layers attend to keys fewer than {halved:,} positions away "
            f"on either side (up to {2 * halved - 1:,}), full layers to every token; "
            "decoding sees earlier tokens only"
        )
    r.note(f"{halving_words(r, window, halved)}; {how}.")
    return halved


def halved_window(r: Reader, window: Any) -> Any:
    """The window a configuration class with bidirectional attention keeps: Gemma 3's and
    Gemma 4's ``__post_init__`` halve it to W // 2 + 1 ("exclusive bounds" for flash
    attention, they say; 0 becomes 1). A null window fails there; anything else but a whole
    number is left for the window's own check to report."""
    if window is None:
        r.fail(
            "sliding_window",
            f"null, but use_bidirectional_attention halves it ({class_name(r)}: "
            "sliding_window // 2 + 1); give a window",
        )
        return None
    return window // 2 + 1 if is_whole(window, 0) else window


def halving_words(r: Reader, window: int, halved: int) -> str:
    """The start of the note saying how the window was halved."""
    return (
        f"{r.name('use_bidirectional_attention')}: {class_name(r)} halves the window, "
        f"sliding_window // 2 + 1 = {window:,} // 2 + 1 = {halved:,} (the KV cache keeps that "
        "window)"
    )


def class_name(r: Reader) -> str:
    """The name of the configuration class reading the file."""
    return r.config_class.name if r.config_class is not None else "the configuration class"


def vaultgemma(r: Reader) -> dict[str, Any]:
    """VaultGemmaForCausalLM: Gemma 2's layout and layers with TWO RMSNorms per block
    (``input_layernorm``, ``pre_feedforward_layernorm``: no norm after attention or MLP)."""
    fields = gemma2(r)
    fields["norms_per_block"] = 2
    return fields


FAMILIES = {"gemma2": gemma2, "gemma3_text": gemma3_text, "vaultgemma": vaultgemma}


PEFT_NAMES = dict.fromkeys(FAMILIES, LLAMA)
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
