"""The text decoder of ERNIE 4.5 VL (``ernie4_5_vl_moe_text``, transformers 5.24
``models/ernie4_5_vl_moe/modeling_ernie4_5_vl_moe.py``; the wrapper ``ernie4_5_vl_moe`` holds it
under ``text_config``).

ERNIE 4.5 MoE's layers (:func:`~costcalc.formats.families.moe.ernie4_5_moe`) with modality-isolated
experts: each sparse layer (``Ernie4_5_VLMoeMoeBlock``) holds ``mlp.text_moe`` (``gate`` X x D
with ``moe_statics.e_score_correction_bias`` of X; ``experts.gate_up_proj`` X x 2h x D,
``experts.down_proj`` X x D x h), ``mlp.vision_moe`` (the same with the vision width h') and
``mlp.shared_experts`` (one SwiGLU MLP of h x ``moe_num_shared_experts``); h, h' =
``moe_intermediate_size``. Text tokens run the text experts only (without image or video tokens
the block never calls ``vision_moe``): the vision set is ``moe_modality_ffn_hidden``.
``mlp_layer_types`` marks each layer ``dense`` (a SwiGLU MLP of ``intermediate_size``) or
``sparse``.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.moe import ernie_sparse_block, shared_experts
from costcalc.formats.hf_reader import Reader, is_whole
from costcalc.formats.peft_names import SHARED_EXPERTS, llama_names

EXPERT_WIDTHS = (1536, 512)
"""Ernie4_5_VLMoeTextConfig's ``moe_intermediate_size`` when absent: text, vision."""


def ernie4_5_vl_moe_text(r: Reader) -> dict[str, Any]:
    """Ernie4_5_VLMoeForConditionalGeneration's text decoder: the layout above with
    Ernie4_5_VLMoeTextConfig's defaults (X 64, top 6, 2 shared experts, widths 1,536 and 512,
    the first layer dense and the others sparse); tied by default."""
    fields, moe = ernie_sparse_block(r, None)
    widths = r.value("moe_ffn_hidden", "moe_intermediate_size", default=list(EXPERT_WIDTHS))
    if not (isinstance(widths, list) and len(widths) == 2 and all(is_whole(w, 1) for w in widths)):
        r.fail("moe_intermediate_size", "expected two expert widths, text and vision")
        widths = list(EXPERT_WIDTHS)
    moe.update(moe_ffn_hidden=widths[0], moe_modality_ffn_hidden=widths[1])
    r.key_names["moe_modality_ffn_hidden"] = r.name("moe_intermediate_size")
    shared_experts(r, moe, "moe_num_shared_experts", 2)
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return fields
    listed = hf_layers.layer_types(r, n, "mlp_layer_types")
    kinds = hf_layers.runs(listed) if listed is not None else [("dense", 1), ("sparse", n - 1)]
    hf_layers.apply(r, fields, kinds, {"dense": {}, "sparse": moe}, "mlp_layer_types")
    return fields


FAMILIES = {"ernie4_5_vl_moe_text": ernie4_5_vl_moe_text}


ERNIE_VL_RENAMES = {
    "mlp.router": "mlp.text_moe.gate",
    "mlp.experts.gate_up_proj": "mlp.text_moe.experts.gate_up_proj",
    "mlp.experts.down_proj": "mlp.text_moe.experts.down_proj",
    "mlp.vision_moe.router": "mlp.vision_moe.gate",
    **SHARED_EXPERTS,
}
"""ERNIE 4.5 VL's sparse block: the text experts under ``text_moe``, the vision ones under
``vision_moe``, each routed by its own ``gate``."""
PEFT_NAMES = {
    "ernie4_5_vl_moe_text": llama_names(renames=ERNIE_VL_RENAMES),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
