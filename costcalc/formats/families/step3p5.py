"""Hugging Face family step3p5: the text decoder of Step-3.7-Flash (``step3p7``, read through its
``text_config``), as transformers 5.24 builds it (``models/step3p7/modeling_step3p7.py``:
Step3p7TextModel and Step3p7ForConditionalGeneration's ``lm_head``). transformers has no
causal-LM class for a stand-alone ``step3p5`` file (Step-3.5-Flash's checkpoint runs code of its
own); such a file is read as the same text decoder.

Tensors: ``embed_tokens`` (V x D); per block ``input_layernorm`` and ``post_attention_layernorm``
(RMSNorm, D); attention (LagunaAttention): ``q_proj`` (D x H d), ``k_proj``/``v_proj`` (D x K d),
``o_proj`` (H d x D), a bias on each when ``attention_bias``, RMSNorm ``q_norm``/``k_norm`` of d
and ``g_proj`` (D x H, no bias), a sigmoid gate per head; the MLP: a dense SwiGLU of
``intermediate_size`` (``gate_proj``, ``up_proj``, ``down_proj``) or the sparse block:
``mlp.gate.weight`` (router X x D; its ``e_score_correction_bias`` a buffer), ``mlp.experts``
(``gate_up_proj`` X x 2h x D, ``down_proj`` X x D x h) and ``mlp.shared_experts`` (SwiGLU of
``share_expert_dim``); a final ``norm``; ``lm_head`` (V x D). The SwiGLU clamps
(``swiglu_limits``) and the rotary settings per layer type hold no parameters; the
multi-token-prediction layers (``num_nextn_predict_layers``) are not built.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.glm4v import wrapper_tie
from costcalc.formats.families.llama import llama_layout
from costcalc.formats.families.moe import mlp_bias_not_experts, routed_experts
from costcalc.formats.hf_reader import Reader, attention_bias, is_whole
from costcalc.formats.peft_names import DEEPSEEK_NAMES

STEP3P5_SIZES: dict[str, Any] = {
    "vocab_size": 128_815,
    "d_model": 4096,
    "n_layers": 45,
    "n_heads": 64,
    "context_length": 128_000,
    "ffn_hidden": 11_264,
}
"""Step3p7TextConfig's defaults."""

DENSE_LAYERS = 3
"""Layers with a dense MLP before the sparse ones when the file names none (Step3p7TextConfig)."""


def _listed(r: Reader, key: str, n: int, extra: int) -> list[str] | None:
    """A per-layer list of kinds from the file: ``n`` entries, or ``n + extra`` whose last
    ``extra`` (the prediction layers') are dropped, as Step3p7TextConfig drops them."""
    listed = r.data.get(key)
    if listed is None:
        return None
    if isinstance(listed, list) and extra and len(listed) == n + extra:
        listed = listed[:n]
    if not (
        isinstance(listed, list) and len(listed) == n and all(isinstance(k, str) for k in listed)
    ):
        r.fail(
            key, f"expected a list of {n:,} layer types (or {n + extra:,} with the prediction's)"
        )
        return None
    r.key_names["layers"] = r.name(key)
    return listed


def _mlp_runs(r: Reader, n: int, extra: int) -> list[tuple[str, int]] | None:
    """Dense and sparse MLPs: as ``mlp_layer_types`` lists them, else sparse in the layers the
    legacy ``moe_layers_enum`` names (indices, comma-separated or a list), else dense in the
    first three layers."""
    listed = _listed(r, "mlp_layer_types", n, extra)
    if listed is not None:
        return hf_layers.runs(listed)
    named = r.data.get("moe_layers_enum")
    if named is None:
        head = min(DENSE_LAYERS, n)
        return [("dense", head), ("sparse", n - head)]
    items = named.split(",") if isinstance(named, str) else named
    try:
        sparse = {int(str(item).strip()) for item in items if str(item).strip()}
    except (TypeError, ValueError):
        r.fail("moe_layers_enum", "expected layer indices, comma-separated or a list")
        return None
    layers = hf_layers.by_rule(r, n, "moe_layers_enum")
    if layers is None:
        return None
    r.key_names["layers"] = r.name("moe_layers_enum")
    return hf_layers.runs(["sparse" if i in sparse else "dense" for i in layers])


def _saved_heads(r: Reader, n: int, heads: Any) -> list[tuple[str, int]] | None:
    """Query heads per layer from ``per_layer_config`` (as transformers saves the file): a
    layer's ``num_attention_heads`` where it gives one, else the model's."""
    saved = r.data["per_layer_config"]
    layers = hf_layers.by_rule(r, n, "per_layer_config")
    if not isinstance(saved, dict) or layers is None:
        r.fail("per_layer_config", "expected a mapping from layer indices to overrides")
        return None
    by_layer: dict[int, Any] = {}
    for key, entry in saved.items():
        index = int(key) if str(key).isdigit() else n
        if index >= n or not isinstance(entry, dict):
            r.fail("per_layer_config", f"entry {key!r}: expected a layer index below {n:,}")
            return None
        unknown = sorted(set(entry) - {"num_attention_heads"})
        if unknown:
            r.unsupported("per_layer_config", f"a layer's {unknown[0]} is not counted")
            return None
        by_layer[index] = entry.get("num_attention_heads", heads)
        if not is_whole(by_layer[index], 1):
            r.fail("per_layer_config", f"entry {key!r}: expected a whole number of heads")
            return None
    r.key_names["layers"] = r.name("per_layer_config")
    return hf_layers.runs([str(by_layer.get(i, heads)) for i in layers])


def _head_runs(
    r: Reader, n: int, attention: list[tuple[str, int]], heads: Any
) -> list[tuple[str, int]] | None:
    """Query heads per layer: ``per_layer_config``'s when the file has it, else
    ``num_sliding_attention_heads`` (or the legacy ``attention_other_setting``'s
    ``num_attention_heads``; default: the heads) in sliding layers and the heads elsewhere."""
    if r.data.get("per_layer_config") is not None:
        return _saved_heads(r, n, heads)
    sliding = r.data.get("num_sliding_attention_heads")
    other = r.data.get("attention_other_setting")
    key = "num_sliding_attention_heads"
    if sliding is None and isinstance(other, dict):
        sliding, key = (
            other.get("num_attention_heads"),
            "attention_other_setting.num_attention_heads",
        )
    if sliding is None:
        sliding = heads
    elif not is_whole(sliding, 1):
        r.fail(key, f"expected a whole number of heads (got {sliding!r})")
        return None
    return [(str(sliding if kind == "sliding_attention" else heads), c) for kind, c in attention]


def step3p5(r: Reader) -> dict[str, Any]:
    """Step3p7TextModel and Step3p7ForConditionalGeneration's ``lm_head``: the tensors above with
    Step3p7TextConfig's defaults: 64 heads, 8 key/value heads (``num_attention_groups`` names
    them too), ``head_dim`` 128, no biases, 288 experts (``moe_num_experts``) of 1,280, top 8
    (``moe_top_k``), a shared expert of 1,280 (``share_expert_dim``). Layers attend within
    ``sliding_window`` (default none) where ``layer_types`` says ``sliding_attention`` (default:
    every layer full), with their own head count (:func:`_head_runs`); which MLPs are sparse:
    :func:`_mlp_runs`. Per-layer lists may carry the prediction layers' entries at their end.
    Untied unless the wrapper's ``tie_word_embeddings`` ties it (the ``text_config``'s is not
    read under a wrapper). ``mlp_bias`` biases the dense and shared MLPs, not the experts."""
    fields = llama_layout(r, kv_heads=8, head_dim=128, sizes=STEP3P5_SIZES)
    fields["n_kv_heads"] = r.value(
        "n_kv_heads", "num_key_value_heads", "num_attention_groups", default=8
    )
    attention_bias(r, fields)
    fields.update(qk_norm="head", attention_head_gate=True)
    moe = routed_experts(
        r,
        ("n_routed_experts", "moe_num_experts"),
        ("num_experts_per_tok", "moe_top_k"),
        (288, 8),
        (("moe_intermediate_size",), 1280),
    )
    moe["moe_shared_ffn_hidden"] = r.value(
        "moe_shared_ffn_hidden", "share_expert_dim", "share_expert_dims", default=1280
    )
    mlp_bias_not_experts(r, fields, moe)
    wrapper_tie(r, fields, frozenset())
    n = hf_layers.count_of(fields["n_layers"])
    extra = r.data.get("num_nextn_predict_layers") or 0
    if not is_whole(extra, 0):
        r.fail("num_nextn_predict_layers", f"expected a whole number of layers (got {extra!r})")
        return fields
    if n is None or not is_whole(fields["n_heads"], 1):
        return fields  # reported where the sizes are read
    listed = _listed(r, "layer_types", n, extra)
    attention = hf_layers.runs(listed) if listed is not None else [("full_attention", n)]
    heads = _head_runs(r, n, attention, fields["n_heads"])
    ffn = _mlp_runs(r, n, extra)
    if heads is None or ffn is None:
        return fields
    window = r.value("sliding_window", "sliding_window", default=None)
    blocks = hf_layers.merged_blocks(
        hf_layers.attention_windows(window), {h: {"n_heads": int(h)} for h, _ in heads}
    )
    layout = hf_layers.Layout(hf_layers.merge(attention, heads))
    hf_layers.combine(r, fields, layout, blocks, ffn, {"dense": {}, "sparse": moe})
    return fields


FAMILIES = {"step3p5": step3p5}


PEFT_NAMES = {
    "step3p5": DEEPSEEK_NAMES,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
