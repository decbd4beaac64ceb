"""Post-norm Llama variants: OLMo 2, OLMo 3 and EXAONE 4. Each block normalises the outputs of
its attention and of its MLP (``post_attention_layernorm``, ``post_feedforward_layernorm``:
RMSNorm, D each) instead of their inputs, and normalises queries and keys: over the whole
projection in OLMo (``q_norm`` H d, ``k_norm`` K d), per head in EXAONE 4 (head_dim each).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout, sliding_window
from costcalc.formats.hf_reader import Reader, attention_bias
from costcalc.formats.peft_names import LLAMA


def olmo2(r: Reader) -> dict[str, Any]:
    """Olmo2ForCausalLM: the shared layout with the two norms after attention and MLP, q/k
    norms over the full projections (H d, K d), q/k/v/o bias when ``attention_bias`` (default
    false); key/value heads default to the heads; untied by default."""
    fields = llama_layout(r)
    attention_bias(r, fields)
    fields["qk_norm"] = "full"
    return fields


def olmo3(r: Reader) -> dict[str, Any]:
    """Olmo3ForCausalLM: OLMo 2's layout; every 4th layer attends fully, the others within
    ``sliding_window`` (default 4,096), unless ``layer_types`` lists them."""
    fields = olmo2(r)
    window = sliding_window(r, default=4096)
    hf_layers.attention_layers(r, fields, window, hf_layers.full_every(r, 4))
    return fields


def exaone4(r: Reader) -> dict[str, Any]:
    """Exaone4ForCausalLM: the shared layout with the two norms after attention and MLP, q/k
    norms of head_dim, no biases, 32 key/value heads when ``num_key_value_heads`` is absent;
    untied by default. Layers from ``layer_types``, or: each ``sliding_window_pattern``-th
    (default 4) attends fully, the others within ``sliding_window`` (default 4,096; null: no
    window anywhere)."""
    fields = llama_layout(r, kv_heads=32)
    fields["qk_norm"] = "head"
    window = sliding_window(r, default=4096)
    rule = hf_layers.full_every(r, 4, "sliding_window_pattern")
    hf_layers.attention_layers(r, fields, window, rule)
    return fields


FAMILIES = {"exaone4": exaone4, "olmo2": olmo2, "olmo3": olmo3}


PEFT_NAMES = dict.fromkeys(FAMILIES, LLAMA)
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
