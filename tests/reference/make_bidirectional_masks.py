"""Generate tests/golden/bidirectional_masks.json: what Gemma 3's use_bidirectional_attention keeps.

Run by hand (it needs torch and transformers; costcalc never imports them):

    nice python tests/reference/make_bidirectional_masks.py

For each case (T tokens, ``sliding_window`` W as a config file gives it), a tiny Gemma 3 with
``use_bidirectional_attention`` and two layers (one ``sliding_attention``, one
``full_attention``) runs one forward of T tokens on the CPU with eager attention and a cache,
built as Gemma3ForCausalLM and as Gemma3ForConditionalGeneration (text only). Recorded per
model and layer type: the query-key pairs the attention mask each layer receives keeps
(``pairs``) and the tokens its cache layer holds afterwards (``cached``); and the window the
configuration class keeps (``window``, after its ``__post_init__``). ``text_config``: the
text config's keys but the window.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import torch
import transformers
from transformers import (
    Gemma3Config,
    Gemma3ForCausalLM,
    Gemma3ForConditionalGeneration,
    Gemma3TextConfig,
)

OUTPUT = Path(__file__).resolve().parents[1] / "golden" / "bidirectional_masks.json"
CASES = [(12, 6), (12, 7), (40, 10), (9, 30), (16, 2), (5, 1)]
"""(T, sliding_window): windows shorter and longer than T, even and odd, and the smallest."""
LAYERS = ["sliding_attention", "full_attention"]
TEXT = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 16,
    "vocab_size": 300,
    "layer_types": LAYERS,
    "use_bidirectional_attention": True,
}
VISION = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "image_size": 28,
    "patch_size": 14,
}


def kept(mask: torch.Tensor) -> int:
    """Pairs a mask keeps: True entries of a boolean mask, zeros of an additive one."""
    return int(mask.sum() if mask.dtype == torch.bool else (mask == 0).sum())


def run(model: torch.nn.Module, layers: torch.nn.ModuleList, length: int) -> dict[str, dict]:
    """Pairs kept and tokens cached by each layer type in one forward of ``length`` tokens."""
    pairs: dict[int, int] = {}

    def hook(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        pairs[module.layer_idx] = kept(kwargs["attention_mask"])

    for layer in layers:
        layer.self_attn.register_forward_pre_hook(hook, with_kwargs=True)
    with torch.no_grad():
        out = model(torch.ones((1, length), dtype=torch.long), use_cache=True)
    return {
        kind: {"pairs": pairs[i], "cached": int(out.past_key_values.layers[i].keys.shape[2])}
        for i, kind in enumerate(LAYERS)
    }


def case(length: int, window: int) -> dict:
    text = Gemma3TextConfig(**TEXT, sliding_window=window, attn_implementation="eager")
    causal_lm = Gemma3ForCausalLM(text)
    config = Gemma3Config(
        text_config={**TEXT, "sliding_window": window},
        vision_config=VISION,
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


def main() -> None:
    torch.manual_seed(0)
    data = {
        "generator": "tests/reference/make_bidirectional_masks.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "date": datetime.date.today().isoformat(),
        "text_config": TEXT,
        "cases": [case(length, window) for length, window in CASES],
    }
    OUTPUT.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
