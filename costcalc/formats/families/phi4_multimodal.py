"""Hugging Face family of Phi-4-multimodal's text decoder (``phi4_multimodal``, transformers 5.24,
``models/phi4_multimodal/modeling_phi4_multimodal.py``): Phi4MultimodalForCausalLM's decoder
layers, ``embed_tokens``, final ``norm`` and ``lm_head``, built as Phi-3's
(:func:`~costcalc.formats.families.llama.phi3`: ``self_attn.qkv_proj`` D x (H + 2K) d and
``o_proj``, ``mlp.gate_up_proj`` D x 2h and ``down_proj``, no biases, RMSNorms of D). The text
keys sit at the top level of the file, beside ``vision_config`` and ``audio_config``. The image
and audio encoders and their projections (``model.embed_tokens_extend.image_embed`` and
``audio_embed``) run only on image or audio input and are not counted. transformers builds no
LoRA adapters into the decoder.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.llama import phi3
from costcalc.formats.hf_reader import Reader
from costcalc.formats.peft_names import LLAMA

PHI4_MULTIMODAL_SIZES: dict[str, Any] = {
    "vocab_size": 200_064,
    "d_model": 3072,
    "n_layers": 32,
    "n_heads": 32,
    "context_length": 131_072,
    "ffn_hidden": 8192,
}
"""Phi4MultimodalConfig's defaults."""


def phi4_multimodal(r: Reader) -> dict[str, Any]:
    """Phi4MultimodalConfig: Phi-3's layout with the class's sizes, 8 key/value heads when
    ``num_key_value_heads`` is absent (null: one per query head), untied by default."""
    return phi3(r, kv_heads=8, sizes=PHI4_MULTIMODAL_SIZES)


FAMILIES = {"phi4_multimodal": phi4_multimodal}


PEFT_NAMES = {
    "phi4_multimodal": LLAMA,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
