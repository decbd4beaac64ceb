"""Hugging Face HRM-Text (hrm_text): two transformer stacks run in a nested recurrence, each
layer a block reused at several depths.

The translator reads the keys of ``HrmTextConfig`` with that class's defaults and its docstring
names the tensors the modeling code builds (transformers 5.24, ``modeling_hrm_text.py``). The
forward runs the low-level stack ``L_cycles`` times, then the high-level stack, ``H_cycles``
times over: every use of a layer runs its weights and caches its keys and values in a slot of
its own (``num_hidden_layers`` is the count of uses), while ``parameters()`` holds each
layer's weights once (costcalc: ``shared_weight_sets``).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats.families.llama import llama_layout
from costcalc.formats.hf_reader import Reader, attention_bias, is_whole, mlp_bias
from costcalc.formats.peft_names import llama_names

SIZES = {
    "vocab_size": 151808,
    "d_model": 1536,
    "n_layers": 16,
    "n_heads": 12,
    "context_length": 2048,
    "ffn_hidden": 4096,
}
"""``HrmTextConfig``'s defaults of the standard sizes."""


def _stack_layers(r: Reader) -> Any:
    """Layers per stack: ``num_layers_per_stack`` as a saved file gives it (its
    ``num_hidden_layers`` then counts the uses), else ``num_hidden_layers`` (the class's first
    construction, or a legacy file, 16)."""
    if r.data.get("num_layers_per_stack") is not None:
        return r.value("n_layers", "num_layers_per_stack", default=None)
    return r.value("n_layers", "num_hidden_layers", default=16)


def _cycles(r: Reader, key: str, default: int) -> int | None:
    """A cycle count of the recurrence: a whole number, 1 or more (0 runs a stack never, which
    costcalc cannot count)."""
    value = r.data.get(key, default)
    if not is_whole(value, 1):
        r.fail(key, f"expected a whole number of cycles, 1 or more (got {value!r})")
        return None
    return value


def hrm_text(r: Reader) -> dict[str, Any]:
    """HrmTextForCausalLM: ``embed_tokens`` (V x D); two stacks (``L_module``, ``H_module``) of
    n ``num_layers_per_stack`` layers, each ``self_attn`` (``q_proj``, ``k_proj``, ``v_proj``
    and the sigmoid output gate ``gate_proj``, D -> H d each: every head has keys and values of
    its own; ``o_proj`` H d -> D; biases when ``attention_bias``; rotary) and a SwiGLU ``mlp``
    (``gate_proj``, ``up_proj`` D -> h, ``down_proj``; biases when ``mlp_bias``); every RMSNorm
    (two per layer, each stack's ``final_norm``) without weights; ``z_L_init`` (D), the low
    stream's start; ``lm_head`` untied by default. D ``hidden_size`` (1,536), H
    ``num_attention_heads`` (12), d ``head_dim`` (128), h ``intermediate_size`` (4,096).
    Uses: per high cycle, the low stack ``L_cycles`` (3) times, then the high stack, for
    ``H_cycles`` (2) cycles: n H_cycles L_cycles uses of the low stack's n weight sets and
    n H_cycles of the high stack's, n H_cycles (L_cycles + 1) layers in all."""
    fields = llama_layout(r, head_dim=128, sizes=SIZES)
    attention_bias(r, fields)
    mlp_bias(r, fields)
    d, heads = fields["d_model"], fields["n_heads"]
    if is_whole(d, 1) and is_whole(heads, 1) and d % heads:
        r.fail("num_attention_heads", f"{heads:,} heads do not divide hidden_size {d:,}")
    n = _stack_layers(r)
    fields.update(
        n_kv_heads=None,
        attention_gate=True,
        attention_gate_proj=True,
        norms_per_block=0,
        final_norm=False,
        initial_state=True,
    )
    high, low = _cycles(r, "H_cycles", 2), _cycles(r, "L_cycles", 3)
    if not is_whole(n, 1) or high is None or low is None:
        fields["n_layers"] = n
        return fields
    fields["n_layers"] = n * high * (low + 1)
    if high > 1:  # both stacks run more than once: 2 n weight sets, used in turn
        fields["layers"] = [{"count": fields["n_layers"], "shared_weight_sets": 2 * n}]
    elif low > 1:  # the low stack alone runs several times
        fields["layers"] = [
            {"count": n * low, "shared_weight_sets": n},
            {"count": n},
        ]
    return fields


FAMILIES = {"hrm_text": hrm_text}


PEFT_NAMES = {
    "hrm_text": llama_names(module_per_set=True),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
