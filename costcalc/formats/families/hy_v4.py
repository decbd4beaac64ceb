"""HY V4 (Hy4; transformers 5.24, ``models/hy_v4``) and the text decoder of HY V4 VL
(``models/hy_v4_vl``, ``hy_v4_vl_text``): GLM-5's multi-head latent attention with a sigmoid
output gate and attention sinks, a sparse-attention indexer shared across layers, and
independent hyper-connections over several copies of the residual stream.

Per block (``HYV4DecoderLayer``): ``input_layernorm`` and ``post_attention_layernorm``
(RMSNorm, D); ``attn_hc`` and ``ffn_hc`` (``HYV4HyperConnection``: ``fn`` 2 n x n D, ``base``
2 n, ``scale`` 2; n = ``hc_mult``: a collapse and an expansion of the streams, no mixing
matrix); ``self_attn``: ``q_a_proj`` (D -> q rank, bias when ``attention_bias``),
``q_a_layernorm`` (q rank), ``q_b_proj`` (q rank -> H (n + r)), ``kv_a_proj_with_mqa``
(D -> kv rank + r, bias when ``attention_bias``), ``kv_a_layernorm`` (kv rank), ``kv_b_proj``
(kv rank -> H (n + v)), ``o_proj`` (H v -> D, bias when ``attention_bias``), ``gate_proj``
(D -> H v, the output gate), ``sinks`` (H); in the layers ``indexer_types`` marks ``full``
``indexer`` (``wq_b`` q rank -> Hi di, ``wk`` D -> di, ``k_norm`` LayerNorm of di with a bias,
``weights_proj`` D -> Hi; Hi = ``index_n_heads``, di = ``index_head_dim``), a ``shared`` layer
reusing the previous full layer's selection; ``mlp``: a SwiGLU MLP of ``intermediate_size``
where ``mlp_layer_types`` says ``dense``, else ``gate`` (X x D; its
``e_score_correction_bias`` is a buffer), ``experts`` (X SwiGLU experts of
``moe_intermediate_size``, stacked) and ``shared_experts`` (one SwiGLU MLP of
``moe_intermediate_size`` x ``n_shared_experts``). Outside the blocks: ``embed_tokens``,
``hc_head`` (``hc_fn`` n x n D, ``hc_base`` n, ``hc_scale`` 1), ``norm``, ``lm_head``. The
cache keeps the latent (kv rank + r per token) and, in full layers, the indexer's key (di).
The multi-token-prediction layers are not built.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.deepseek import mla_layout
from costcalc.formats.families.moe import routed_experts, shared_experts
from costcalc.formats.hf_reader import Reader, is_whole
from costcalc.formats.peft_names import DEEPSEEK_NAMES

Defaults = dict[str, Any]

HY_V4: Defaults = {
    "sizes": {
        "vocab_size": 120832,
        "d_model": 2816,
        "n_layers": 34,
        "n_heads": 32,
        "context_length": 262144,
        "ffn_hidden": 6912,
    },
    "mla": {
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 192,
        "v_head_dim": 256,
    },
    "moe_hidden": 768,
    "indexer_heads": 16,
}
"""``HYV4Config``'s defaults."""

HY_V4_VL_TEXT: Defaults = {
    "sizes": {
        **HY_V4["sizes"],
        "d_model": 6144,
        "n_layers": 78,
        "n_heads": 64,
        "ffn_hidden": 18432,
    },
    "mla": {**HY_V4["mla"], "q_lora_rank": 2048},
    "moe_hidden": 2048,
    "indexer_heads": 32,
}
"""``HYV4VLTextConfig``'s defaults."""


def hy_v4(r: Reader) -> dict[str, Any]:
    """HYV4ForCausalLM: the tensors above with ``HYV4Config``'s defaults (D 2,816, 34 layers,
    32 heads, q rank 1,536, kv rank 512, r 64, n 192, v 256; 256 experts of 768, top 8, one
    shared; the first layer dense; an indexer of 16 heads of 128; 4 residual streams); untied
    by default."""
    return _hy_v4(r, HY_V4)


def hy_v4_vl_text(r: Reader) -> dict[str, Any]:
    """HY V4 VL's text decoder (``HYV4VLTextModel`` and the LM head): HY V4's layout with
    ``HYV4VLTextConfig``'s defaults (D 6,144, 78 layers, 64 heads, q rank 2,048, 256 experts of
    2,048, an indexer of 32 heads of 128); ``mrope_section`` changes no parameter, but
    HYV4VLTextConfig's ``validate_architecture`` refuses one that is not three entries summing
    to ``qk_rope_head_dim`` // 2 (configuration_hy_v4_vl.py, lines 206-211; default
    [12, 10, 10])."""
    rope = r.data.get("rope_parameters")
    sections = rope.get("mrope_section", MROPE) if isinstance(rope, dict) else MROPE
    rotary = r.setting("qk_rope_head_dim")
    whole = isinstance(sections, list) and all(is_whole(n) for n in sections)
    if whole and is_whole(rotary) and (len(sections) != 3 or sum(sections) != rotary // 2):
        r.refused_by_class(
            "rope_parameters.mrope_section"
            if rope and "mrope_section" in rope
            else "qk_rope_head_dim",
            f"mrope_section {sections} beside qk_rope_head_dim {rotary:,}: three entries "
            f"summing to {rotary // 2:,} expected",
        )
    return _hy_v4(r, HY_V4_VL_TEXT)


MROPE = [12, 10, 10]
"""HYV4VLTextConfig's default ``mrope_section``."""


def _hy_v4(r: Reader, defaults: Defaults) -> dict[str, Any]:
    """The layout both classes build, with their defaults. ``num_key_value_heads`` and
    ``head_dim`` are overwritten by the configuration class (MLA has no key heads of its own);
    a null ``q_lora_rank`` is not supported (the attention always has a query latent)."""
    if "q_lora_rank" in r.data and r.data["q_lora_rank"] is None:
        r.unsupported("q_lora_rank", "HY V4's attention always has a query latent")
    fields = mla_layout(r, mla=defaults["mla"], sizes=defaults["sizes"])
    moe = routed_experts(
        r,
        ("n_routed_experts", "num_local_experts"),
        ("num_experts_per_tok",),
        (256, 8),
        (("moe_intermediate_size",), defaults["moe_hidden"]),
    )
    shared_experts(r, moe, "n_shared_experts", 1)
    fields.update(
        attention_gate=True,
        attention_gate_proj=True,
        attention_sinks=True,
        residual_streams=r.value("residual_streams", "hc_mult", default=4),
        stream_mixing=False,
    )
    heads = defaults["indexer_heads"]
    indexer = {
        "indexer_heads": r.value("indexer_heads", "index_n_heads", default=heads),
        "indexer_head_dim": r.value("indexer_head_dim", "index_head_dim", default=128),
    }
    _layers(r, fields, moe, indexer)
    return fields


def _layers(r: Reader, fields: dict[str, Any], moe: dict[str, Any], indexer: Any) -> None:
    """Dense and sparse FFNs as ``mlp_layer_types`` lists them (default: the first layer
    dense), and the indexer where ``indexer_types`` says ``full``; without it, in the first
    layer and every 4th from the second (``__post_init__``'s rule, a cycling pattern from
    layer 1)."""
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return
    listed = hf_layers.layer_types(r, n, "mlp_layer_types")
    ffn = hf_layers.runs(listed) if listed is not None else [("dense", 1), ("sparse", n - 1)]
    ffn_blocks = {"dense": {}, "sparse": moe}
    if any(kind not in ffn_blocks for kind, _ in ffn):
        hf_layers.apply(r, fields, ffn, ffn_blocks, "mlp_layer_types")  # reports the unknown kind
        return
    blocks = {"full": indexer, "shared": {}}
    kinds = hf_layers.layer_types(r, n, "indexer_types")
    if kinds is not None:
        layout = hf_layers.Layout(hf_layers.runs(kinds), key="indexer_types")
        hf_layers.combine(r, fields, layout, blocks, ffn, ffn_blocks)
        return
    first = ffn[0][0]
    fields["layers"] = [{"count": 1, **ffn_blocks[first], **indexer}]
    pattern = hf_layers.Layout([("full", 1), ("shared", 3)], cycles=True, key="indexer_types")
    hf_layers.combine(r, fields, pattern, blocks, hf_layers.cut(ffn, 1, n), ffn_blocks)


FAMILIES = {"hy_v4": hy_v4, "hy_v4_vl_text": hy_v4_vl_text}


PEFT_NAMES = dict.fromkeys(FAMILIES, DEEPSEEK_NAMES)
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
