"""RWKV-4 (transformers 5.24, ``models/rwkv/modeling_rwkv.py``): blocks of a time mix (a linear
recurrence in place of attention) and a channel mix, no positions.

``rwkv.embeddings`` (V x D); per block (``RwkvBlock``) LayerNorms ``ln1`` and ``ln2`` (weight
and bias, D each; layer 0 also ``pre_ln``, the norm of the embeddings, held by that block), the
time mix ``attention`` (``time_decay``, ``time_first``: A each; ``time_mix_key``,
``time_mix_value``, ``time_mix_receptance``: 1 x 1 x D each; ``key``, ``value``,
``receptance`` D -> A and ``output`` A -> D, no biases) and the channel mix ``feed_forward``
(``time_mix_key``, ``time_mix_receptance``: 1 x 1 x D each; ``key`` D -> h, ``receptance``
D -> D, ``value`` h -> D, no biases); final LayerNorm ``ln_out``; ``head`` (V x D), untied by
default. The returned ``state`` is five B x D x L tensors: each layer's previous input to the
channel mix and to the time mix, and the WKV numerator, denominator and running maximum.
D = ``hidden_size``, A = ``attention_hidden_size`` (default D), h = ``intermediate_size``
(default 4 D). ``rescale_every`` halves the hidden states at inference (no parameters, no
MACs); ``context_length`` bounds the CUDA kernel only.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.hf_reader import Reader, is_whole
from costcalc.formats.peft_names import llama_names

RWKV_DEFAULTS: dict[str, tuple[str, int]] = {
    "vocab_size": ("vocab_size", 50277),
    "d_model": ("hidden_size", 4096),
    "n_layers": ("num_hidden_layers", 32),
    "context_length": ("context_length", 1024),
}
"""``RwkvConfig``'s keys and defaults for the standard sizes."""


def rwkv(r: Reader) -> dict[str, Any]:
    """RwkvForCausalLM, as above: layer 0 holds one norm more (``pre_ln``) than the others."""
    fields: dict[str, Any] = {
        field: r.value(field, key, default=default)
        for field, (key, default) in RWKV_DEFAULTS.items()
    }
    D = fields["d_model"]
    whole = is_whole(D, 1)
    fields.update(
        position="none",
        norm="layernorm",
        mixer="rwkv",
        rwkv={
            "attention_width": r.value(
                "rwkv", "attention_hidden_size", default=D if whole else None
            )
        },
        ffn="channel_mix",
        ffn_hidden=r.value("ffn_hidden", "intermediate_size", default=4 * D if whole else None),
        ffn_bias=False,
        tie_embeddings=r.value("tie_embeddings", "tie_word_embeddings", default=False),
    )
    n_layers = hf_layers.count_of(fields["n_layers"])
    if n_layers is not None:
        blocks = {"first": {"norms_per_block": 3}, "rest": {}}
        hf_layers.apply(r, fields, [("first", 1), ("rest", n_layers - 1)], blocks)
    return fields


FAMILIES = {"rwkv": rwkv}


PEFT_NAMES = {
    "rwkv": llama_names(
        {"attn": "attention", "mlp": "feed_forward"},
        {"embed_tokens": "embeddings", "lm_head": "head"},
    ),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
