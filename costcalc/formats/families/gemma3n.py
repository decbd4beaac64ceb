"""Gemma 3n's text decoder (transformers 5.24, ``models/gemma3n/modeling_gemma3n.py``:
``Gemma3nForCausalLM``, the language model of ``Gemma3nForConditionalGeneration``).

Every block (``Gemma3nTextDecoderLayer``) holds Gemma 3's sandwich norms
(``input_layernorm``, ``post_attention_layernorm``, ``pre_feedforward_layernorm``,
``post_feedforward_layernorm``, D each), ``q_proj`` (D x H d), ``k_proj``/``v_proj``
(D x K d), ``o_proj`` (H d x D), ``q_norm`` and ``k_norm`` (d each; ``v_norm`` has no weight)
and a GeGLU MLP (``gate_proj``, ``up_proj``, ``down_proj``) of ``intermediate_size`` (one
width, or one per layer); beside them:

- AltUp (``altup``: ``modality_router`` n x D, ``router_norm`` D, ``prediction_coefs``
  n^2 x n, ``correction_coefs`` n x n, ``correct_output_scale`` D; n ``altup_num_inputs``),
  and at the model level ``altup_projections`` and ``altup_unembed_projections``, n - 1 of
  D x D each;
- LAuReL (``laurel``: ``linear_left`` D -> r, ``linear_right`` r -> D, ``post_laurel_norm``
  D; r ``laurel_rank``);
- per-layer inputs as Gemma 4's: ``per_layer_input_gate`` (D -> P), ``per_layer_projection``
  (P -> D), ``post_per_layer_input_norm`` (D); at the model level ``embed_tokens_per_layer``
  (``vocab_size_per_layer_input`` x L P), ``per_layer_model_projection`` (D -> L P) and
  ``per_layer_projection_norm`` (P).

The last ``num_kv_shared_layers`` layers reuse the keys and values of the last earlier layer
of their attention type: no ``k_proj``, ``v_proj`` or ``k_norm``, nothing cached. The model
has ``embed_tokens`` (V x D, tied to the LM head by default) and a final ``norm``.
``activation_sparsity_pattern`` keeps the top of the gate's activations (a mean, a standard
deviation and a ReLU: no parameters, no matrix products) and ``final_logit_softcapping`` a
tanh of the logits: neither changes a count.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.gemma4 import per_layer_inputs
from costcalc.formats.families.llama import llama_layout
from costcalc.formats.hf_reader import Reader, attention_bias, is_whole
from costcalc.formats.peft_names import LLAMA

GEMMA3N_SIZES: dict[str, Any] = {
    "vocab_size": 262_400,
    "d_model": 2048,
    "n_layers": 35,
    "n_heads": 8,
    "context_length": 32_768,
    "ffn_hidden": 16_384,
}
"""Gemma3nTextConfig's defaults (E4B's sizes): a ``text_config`` may leave them out."""

OWN, SHARED = "own", "shared"
"""Layers that compute their keys and values, and layers that reuse an earlier layer's."""


def gemma3n_text(r: Reader) -> dict[str, Any]:
    """Gemma3nForCausalLM: the layout above with Gemma3nTextConfig's defaults (2 key/value
    heads, ``head_dim`` 256, 4 AltUp streams, LAuReL rank 64, per-layer inputs of 256 over
    262,144 rows, 15 shared layers, tied). Each 5th layer attends fully, the others within
    ``sliding_window`` (default 512), unless ``layer_types`` lists them."""
    fields = llama_layout(
        r,
        kv_heads=2,
        head_dim=256,
        tie=True,
        act="gelu_pytorch_tanh",
        act_key="hidden_activation",
        sizes=GEMMA3N_SIZES,
    )
    attention_bias(r, fields)
    fields.update(
        qk_norm="head",
        norms_per_block=4,
        altup_streams=r.value("altup_streams", "altup_num_inputs", default=4),
        laurel_rank=r.value("laurel_rank", "laurel_rank", default=64),
    )
    if r.data.get("hidden_size_per_layer_input") == 0:
        r.unsupported("hidden_size_per_layer_input", "per-layer inputs of width 0")
    per_layer_inputs(r, fields)
    _layers(r, fields)
    return fields


def _layers(r: Reader, fields: dict[str, Any]) -> None:
    """Layer groups by attention type (``layer_types`` or each 5th layer full), by whether the
    layer reuses keys and values (the last ``num_kv_shared_layers``) and by FFN width (a list
    ``intermediate_size`` gives one per layer), in closed form unless the file lists them."""
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return
    sparsity = r.data.get("activation_sparsity_pattern")
    if isinstance(sparsity, list) and len(sparsity) != n:
        r.fail(
            "activation_sparsity_pattern",
            f"lists {len(sparsity):,} layers, but the model has {n:,}: transformers refuses the "
            "file (Gemma3nTextConfig's __post_init__ takes one value for every layer)",
        )
        return
    shared = r.count("num_kv_shared_layers", 15, minimum=0)
    if shared >= n:
        r.fail("num_kv_shared_layers", "every layer would reuse keys and values none computes")
        return
    widths = _ffn_widths(r, fields, n)
    if widths is None:
        return
    listed = hf_layers.layer_types(r, n)
    if listed is not None:
        attention = hf_layers.Layout(hf_layers.runs(listed))
        computing, every = set(listed[: n - shared]), set(listed)
    else:
        period = 5
        attention = hf_layers.every_nth(period, "full_attention", "sliding_attention")
        computing = {"sliding_attention"} | ({"full_attention"} if n - shared >= period else set())
        every = {"sliding_attention"} | ({"full_attention"} if n >= period else set())
    if shared and computing != every:
        r.fail(
            "num_kv_shared_layers",
            "the shared layers read an attention type no earlier layer computes",
        )
        return
    ffn = hf_layers.runs([str(w) for w in widths]) if widths else [("", n)]
    kinds = hf_layers.merge([(OWN, n - shared), (SHARED, shared)], ffn)
    blocks = hf_layers.merged_blocks(
        {OWN: {}, SHARED: {"shares_kv": True}},
        {str(w): {"ffn_hidden": w} for w in widths} or {"": {}},
    )
    window = r.value("sliding_window", "sliding_window", default=512)
    hf_layers.combine(r, fields, attention, hf_layers.attention_windows(window), kinds, blocks)


def _ffn_widths(r: Reader, fields: dict[str, Any], n: int) -> list[int] | None:
    """``intermediate_size`` as one width per layer when the file lists them (then no single
    ``ffn_hidden``), else [] (one width for every layer); None on a problem, recorded."""
    listed = fields.get("ffn_hidden")
    if not isinstance(listed, list):
        return []
    del fields["ffn_hidden"]
    if len(listed) != n or not all(is_whole(w, 1) for w in listed):
        r.fail("intermediate_size", f"expected one whole width per layer ({n:,} of them)")
        return None
    return listed


FAMILIES = {"gemma3n_text": gemma3n_text}


PEFT_NAMES = {
    "gemma3n_text": LLAMA,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
