"""Families whose norms learn nothing: OLMo (1) and nanochat. Their LayerNorm or RMSNorm has no
weight and no bias, so a block holds only its projections and the model no final norm tensor
(transformers 5.24, ``models/olmo/modeling_olmo.py``, ``models/nanochat/modeling_nanochat.py``).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.llama import llama_layout
from costcalc.formats.hf_reader import Reader, attention_bias
from costcalc.formats.peft_names import LLAMA, llama_names

NO_NORM_WEIGHTS = {"norms_per_block": 0, "final_norm": False}
"""The block and final norms normalise without parameters."""


def olmo(r: Reader) -> dict[str, Any]:
    """OlmoForCausalLM (OLMo 1): Llama's projections (``q_proj``, ``k_proj``, ``v_proj``,
    ``o_proj``, q/k/v/o bias when ``attention_bias``, default false; SwiGLU ``gate_proj``,
    ``up_proj``, ``down_proj`` without bias), ``OlmoLayerNorm`` without weights (2 per block and
    a final one); key/value heads default to the heads, ``clip_qkv`` holds no parameters;
    untied by default."""
    fields = llama_layout(r)
    attention_bias(r, fields)
    fields.update(NO_NORM_WEIGHTS)
    return fields


def nanochat(r: Reader) -> dict[str, Any]:
    """NanoChatForCausalLM: ``q_proj`` (D x H d), ``k_proj``/``v_proj`` (D x K d), ``o_proj``
    (H d x D), q/k/v/o bias when ``attention_bias`` (default false); a plain MLP ``fc1`` (D x h)
    and ``fc2`` (h x D) without bias (relu2); every RMSNorm (2 per block, on queries and keys,
    final) without weights; key/value heads default to the heads; untied by default."""
    fields = llama_layout(r, act="relu2")
    attention_bias(r, fields)
    fields["ffn"] = "mlp"
    fields.update(NO_NORM_WEIGHTS)
    return fields


FAMILIES = {"nanochat": nanochat, "olmo": olmo}


PEFT_NAMES = {
    "nanochat": llama_names(renames={"mlp.up_proj": "mlp.fc1", "mlp.down_proj": "mlp.fc2"}),
    "olmo": LLAMA,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
