"""GraniteMoE SWA: GraniteMoE-Shared's sparse blocks with Granite SWA's attention (transformers
5.24, ``models/granitemoe_swa/modeling_granitemoe_swa.py``).

Per block ``input_layernorm`` and ``post_attention_layernorm`` (RMSNorm, D); ``self_attn``:
``q_proj`` (D x H d), ``k_proj``/``v_proj`` (D x K d), ``o_proj`` (H d x D), all with a bias
when ``attention_bias``, and ``sinks`` (a learned logit per query head, H);
``block_sparse_moe``: ``router.layer`` (X x D, no bias) and X SwiGLU experts of
``intermediate_size`` (``gate_up_proj`` X x 2h x D, ``down_proj`` X x D x h); ``shared_mlp``
(``input_linear`` D -> 2 s, ``output_linear`` s -> D) when ``shared_intermediate_size`` s > 0.
``embed_tokens`` (V x D), a final ``norm``, ``lm_head`` (V x D, untied by default).
``layer_rope_theta`` (0: a layer without positions) and the multipliers hold no parameters.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.llama_built import every_fourth_full_windows
from costcalc.formats.families.moe import granitemoeshared
from costcalc.formats.hf_reader import Reader
from costcalc.formats.peft_names import GRANITE_SHARED_MLP, llama_names


def granitemoe_swa(r: Reader) -> dict[str, Any]:
    """GraniteMoeSWAForCausalLM: the layout above with GraniteMoeSWAConfig's defaults (8
    experts, top 2; key/value heads = heads); windows of ``sliding_window`` (default 128; null:
    none) on the layers ``layer_types`` marks sliding, else on all but every 4th from the
    first."""
    fields = granitemoeshared(r)
    fields["attention_sinks"] = True
    every_fourth_full_windows(r, fields, 128)
    return fields


FAMILIES = {"granitemoe_swa": granitemoe_swa}


PEFT_NAMES = {
    "granitemoe_swa": llama_names({"mlp": "block_sparse_moe"}, GRANITE_SHARED_MLP),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
