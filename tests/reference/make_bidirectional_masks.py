"""Generate tests/golden/bidirectional_masks.json: what Gemma 3's and Gemma 4's bidirectional
attention keeps.

Run by hand (it needs torch and transformers; costcalc never imports them):

    nice python tests/reference/make_bidirectional_masks.py

For each family and case (T tokens, ``sliding_window`` W as a config file gives it, and for
Gemma 4 the value of ``use_bidirectional_attention``), a tiny model with two layers (one
``sliding_attention``, one ``full_attention``) runs one forward of T tokens on the CPU with eager
attention and a cache, built as the family's causal LM and as its multimodal model (text only).
Recorded per model and layer type: the query-key pairs the attention mask each layer receives
keeps (``pairs``; a layer given no mask attends every key) and the tokens its cache layer holds
afterwards (``cached``); and the window the configuration class keeps (``window``, after its
``__post_init__``). ``text_config``: the text config's keys but the window (and Gemma 4's
``use_bidirectional_attention``, which each case gives).
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import (
    Gemma3Config,
    Gemma3ForCausalLM,
    Gemma3ForConditionalGeneration,
    Gemma3TextConfig,
    Gemma4Config,
    Gemma4ForCausalLM,
    Gemma4ForConditionalGeneration,
    Gemma4TextConfig,
    Gemma4UnifiedConfig,
    Gemma4UnifiedForCausalLM,
    Gemma4UnifiedForConditionalGeneration,
    Gemma4UnifiedTextConfig,
)

OUTPUT = Path(__file__).resolve().parents[1] / "golden" / "bidirectional_masks.json"
WINDOWS = [(12, 6), (12, 7), (40, 10), (9, 30), (16, 2), (5, 1), (6, 0)]
"""(T, sliding_window): windows shorter and longer than T, even and odd, the smallest, and 0
(which halving makes 1)."""
GEMMA4_CASES = [(T, W, m) for T, W in WINDOWS for m in ("all", "vision") if W or m == "all"]
"""Gemma 4's cases: each window with either value of use_bidirectional_attention (a window of 0
only halved: unhalved, transformers' forward fails on it)."""
LAYERS = ["sliding_attention", "full_attention"]
SIZES = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 16,
    "vocab_size": 300,
    "layer_types": LAYERS,
}
GEMMA3_TEXT = {**SIZES, "use_bidirectional_attention": True}
GEMMA4_TEXT = {**SIZES, "global_head_dim": 16, "hidden_size_per_layer_input": 0}
GEMMA3_VISION = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "image_size": 28,
    "patch_size": 14,
}
GEMMA4_VISION = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "head_dim": 16,
}


def kept(mask: torch.Tensor | None, queries: int) -> int:
    """Pairs a mask keeps: True entries of a boolean mask, zeros of an additive one; every
    query-key pair without a mask (one forward from an empty cache: T keys)."""
    if mask is None:
        return queries * queries
    return int(mask.sum() if mask.dtype == torch.bool else (mask == 0).sum())


def run(model: torch.nn.Module, layers: torch.nn.ModuleList, length: int) -> dict[str, dict]:
    """Pairs kept and tokens cached by each layer type in one forward of ``length`` tokens."""
    pairs: dict[int, int] = {}

    def hook(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        queries = kwargs["hidden_states"].shape[1]
        pairs[module.layer_idx] = kept(kwargs["attention_mask"], queries)

    for layer in layers:
        layer.self_attn.register_forward_pre_hook(hook, with_kwargs=True)
    with torch.no_grad():
        out = model(torch.ones((1, length), dtype=torch.long), use_cache=True)
    return {
        kind: {"pairs": pairs[i], "cached": int(out.past_key_values.layers[i].keys.shape[2])}
        for i, kind in enumerate(LAYERS)
    }


def gemma3(length: int, window: int) -> dict[str, Any]:
    text = Gemma3TextConfig(**GEMMA3_TEXT, sliding_window=window, attn_implementation="eager")
    causal_lm = Gemma3ForCausalLM(text)
    config = Gemma3Config(
        text_config={**GEMMA3_TEXT, "sliding_window": window},
        vision_config=GEMMA3_VISION,
        mm_tokens_per_image=4,
        attn_implementation="eager",
    )
    multimodal = Gemma3ForConditionalGeneration(config)
    return {
        "seq_len": length,
        "sliding_window": window,
        "window": text.sliding_window,
        "Gemma3ForCausalLM": run(causal_lm, causal_lm.model.layers, length),
        "Gemma3ForConditionalGeneration": run(
            multimodal, multimodal.model.language_model.layers, length
        ),
    }


def gemma4(
    length: int,
    window: int,
    mode: str,
    classes: tuple[type, type, type, type],
    vision: dict[str, Any] | None,
) -> dict[str, Any]:
    """A Gemma 4 (or Gemma 4 Unified) case: ``classes`` are the text config, the causal LM,
    the multimodal config and the multimodal model."""
    text_class, causal_class, config_class, multimodal_class = classes
    keys = {**GEMMA4_TEXT, "sliding_window": window, "use_bidirectional_attention": mode}
    text = text_class(**keys, attn_implementation="eager")
    causal_lm = causal_class(text)
    config = config_class(text_config=keys, vision_config=vision, attn_implementation="eager")
    multimodal = multimodal_class(config)
    return {
        "seq_len": length,
        "sliding_window": window,
        "use_bidirectional_attention": mode,
        "window": text.sliding_window,
        causal_class.__name__: run(causal_lm, causal_lm.model.layers, length),
        multimodal_class.__name__: run(multimodal, multimodal.model.language_model.layers, length),
    }


GEMMA4 = (Gemma4TextConfig, Gemma4ForCausalLM, Gemma4Config, Gemma4ForConditionalGeneration)
GEMMA4_UNIFIED = (
    Gemma4UnifiedTextConfig,
    Gemma4UnifiedForCausalLM,
    Gemma4UnifiedConfig,
    Gemma4UnifiedForConditionalGeneration,
)


def main() -> None:
    torch.manual_seed(0)
    data = {
        "generator": "tests/reference/make_bidirectional_masks.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "date": datetime.date.today().isoformat(),
        "families": {
            "gemma3_text": {
                "text_config": GEMMA3_TEXT,
                "cases": [gemma3(T, W) for T, W in WINDOWS],
            },
            "gemma4_text": {
                "text_config": GEMMA4_TEXT,
                "cases": [gemma4(*case, GEMMA4, GEMMA4_VISION) for case in GEMMA4_CASES],
            },
            "gemma4_unified_text": {
                "text_config": GEMMA4_TEXT,
                "cases": [gemma4(*case, GEMMA4_UNIFIED, None) for case in GEMMA4_CASES[:6]],
            },
        },
    }
    OUTPUT.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
