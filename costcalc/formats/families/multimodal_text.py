"""Text decoders of multimodal Hugging Face families built like Llama: Aria's (``aria_text``,
transformers 5.24 ``models/aria/modeling_aria.py``) and Emu3's (``emu3_text_model``,
``models/emu3/modeling_emu3.py``). Their files usually sit under a ``text_config``; the vision
parts are not counted.

Both build :func:`~costcalc.formats.families.llama.llama_layout`'s tensors: ``embed_tokens``
(V x D); per block ``input_layernorm``, ``post_attention_layernorm`` (RMSNorm, D), ``q_proj``
(D x H d), ``k_proj``/``v_proj`` (D x K d), ``o_proj`` (H d x D), q/k/v/o with a bias when
``attention_bias``; a final ``norm``; ``lm_head`` (V x D, untied by default). Emu3's MLP is
``gate_proj``, ``up_proj``, ``down_proj`` (SwiGLU); Aria's every layer holds a sparse block
instead: ``mlp.router`` (X x D, a bare weight), ``mlp.experts`` (``gate_up_proj`` X x D x 2h,
``down_proj`` X x h x D, SwiGLU) and ``mlp.shared_experts`` (one SwiGLU MLP of h x
``moe_num_shared_experts``, gate/up/down with a bias when ``mlp_bias``).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.llama import llama_layout
from costcalc.formats.families.moe import mlp_bias_not_experts, routed_experts, shared_experts
from costcalc.formats.hf_reader import Reader, attention_bias, mlp_bias
from costcalc.formats.peft_names import LLAMA, SHARED_EXPERTS, llama_names

ARIA_SIZES: dict[str, Any] = {
    "vocab_size": 32_000,
    "d_model": 4096,
    "n_layers": 32,
    "n_heads": 32,
    "context_length": 2048,
    "ffn_hidden": 4096,
}
"""AriaTextConfig's defaults."""

EMU3_SIZES: dict[str, Any] = {
    "vocab_size": 184_622,
    "d_model": 4096,
    "n_layers": 32,
    "n_heads": 32,
    "context_length": 9216,
    "ffn_hidden": 14_336,
}
"""Emu3TextConfig's defaults (Emu3-Chat)."""


def aria_text(r: Reader) -> dict[str, Any]:
    """AriaTextForCausalLM (and the text decoder of AriaForConditionalGeneration): the layout
    above with AriaTextConfig's defaults (key/value heads = heads); experts X =
    ``moe_num_experts`` (8) of ``intermediate_size``, top ``moe_topk`` (2), and a shared MLP
    ``moe_num_shared_experts`` (2) times as wide; ``mlp_bias`` biases the shared MLP, not the
    experts."""
    fields = llama_layout(r, sizes=ARIA_SIZES)
    attention_bias(r, fields)
    moe = routed_experts(r, ("moe_num_experts",), ("moe_topk",), (8, 2))
    moe["moe_ffn_hidden"] = fields["ffn_hidden"]
    shared_experts(r, moe, "moe_num_shared_experts", 2)
    mlp_bias_not_experts(r, fields, moe)
    moe.pop("moe_ffn_hidden")
    fields.update(moe)
    return fields


def emu3_text(r: Reader) -> dict[str, Any]:
    """Emu3ForCausalLM (and the text decoder of Emu3ForConditionalGeneration): the layout above
    with Emu3TextConfig's defaults (8 key/value heads), gate/up/down with a bias when
    ``mlp_bias``; untied by default."""
    fields = llama_layout(r, kv_heads=8, sizes=EMU3_SIZES)
    attention_bias(r, fields)
    mlp_bias(r, fields)
    return fields


FAMILIES = {"aria_text": aria_text, "emu3_text_model": emu3_text}


PEFT_NAMES = {
    "aria_text": llama_names(renames=SHARED_EXPERTS),
    "emu3_text_model": LLAMA,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
