"""DeepSeek-V2, DeepSeek-V3, DeepSeek-V3.2, GLM-4.7-Flash and Mistral Small 4: multi-head latent
attention (MLA) and a mixture of experts after dense layers (transformers 5.24,
``models/deepseek_v2``, ``deepseek_v3``, ``deepseek_v32``, ``glm4_moe_lite``, ``mistral4``: V3's
modules renamed); Youtu-LLM and MiniCPM3: the same
attention with a dense MLP in every layer (``models/youtu``, ``models/minicpm3``).

Per block: ``input_layernorm`` and ``post_attention_layernorm`` (RMSNorm, D); ``self_attn``:
``q_a_proj`` (D -> q rank, bias when ``attention_bias``), ``q_a_layernorm`` (q rank),
``q_b_proj`` (q rank -> H (n + r)), or one ``q_proj`` (D -> H (n + r)) when ``q_lora_rank`` is
null; ``kv_a_proj_with_mqa`` (D -> kv rank + r, bias when ``attention_bias``),
``kv_a_layernorm`` (kv rank), ``kv_b_proj`` (kv rank -> H (n + v)), ``o_proj`` (H v -> D, bias
when ``attention_bias``); n, r, v = ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``.
The first ``first_k_dense_replace`` layers hold a SwiGLU ``mlp`` of ``intermediate_size``; the
others ``mlp.gate`` (router X x D, no bias: V3's ``e_score_correction_bias`` is a buffer, not a
parameter), ``mlp.experts`` (X SwiGLU experts of ``moe_intermediate_size``, stacked) and
``mlp.shared_experts`` (one SwiGLU MLP of ``moe_intermediate_size`` x ``n_shared_experts``).
The cache keeps the latent, not per-head keys: kv rank + r per token and layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout
from costcalc.formats.families.moe import (
    first_dense,
    listed_sparse,
    mlp_bias_not_experts,
    routed_experts,
    shared_experts,
)
from costcalc.formats.hf_reader import Reader, attention_bias, is_whole, mlp_bias
from costcalc.formats.peft_names import DEEPSEEK, DEEPSEEK_NAMES, LLAMA, llama_names

MLA_DEFAULTS: dict[str, int | None] = {
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
}
"""The attention sizes' defaults, the same in ``DeepseekV2Config``, ``DeepseekV3Config`` and
``DeepseekV32Config``."""

SparseLayers = Callable[[Reader, dict[str, Any], dict[str, Any]], None]
"""Which layers hold the sparse block (given the reader, the fields and the sparse block)."""


def mla_layout(
    r: Reader,
    tie: bool = False,
    mla: dict[str, int | None] = MLA_DEFAULTS,
    sizes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The shared layout with MLA instead of Llama's attention: the sizes ``mla`` with their
    defaults, biases as ``attention_bias`` says, a dense SwiGLU MLP of ``intermediate_size``
    (the standard ``sizes`` defaulted as ``llama_layout`` does)."""
    fields = llama_layout(r, tie=tie, sizes=sizes)
    for name in ("n_kv_heads", "head_dim"):  # MLA has no per-head keys of its own
        fields.pop(name)
    r.forget("n_kv_heads", "head_dim")
    attention_bias(r, fields)
    fields["mixer"] = "mla"
    fields["q_lora_rank"] = r.nullable("q_lora_rank", "q_lora_rank", mla["q_lora_rank"])
    for field in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
        fields[field] = r.value(field, field, default=mla[field])
    return fields


def deepseek_layout(
    r: Reader,
    experts: tuple[int, int | None],
    moe_hidden: int,
    shared: int,
    layers: SparseLayers,
    mla: dict[str, int | None] = MLA_DEFAULTS,
    shared_keys: tuple[str, ...] = ("n_shared_experts",),
    sizes: dict[str, Any] | None = None,
    biased_mlps: bool = False,
) -> dict[str, Any]:
    """The layout every version shares, with each version's MoE defaults (experts and top-k,
    expert width, shared experts), its rule for the sparse layers, its MLA sizes and its
    standard sizes' defaults; with ``biased_mlps``, the dense and shared MLPs carry biases when the
    file's ``mlp_bias`` says (the experts never do)."""
    fields = mla_layout(r, mla=mla, sizes=sizes)
    moe = routed_experts(
        r,
        ("n_routed_experts", "num_local_experts", "num_experts"),
        ("num_experts_per_tok",),
        experts,
        (("moe_intermediate_size",), moe_hidden),
    )
    shared_experts(r, moe, shared_keys, shared)
    if biased_mlps:
        mlp_bias_not_experts(r, fields, moe)
    layers(r, fields, moe)
    return fields


def _first_dense(dense: int) -> SparseLayers:
    """Dense FFNs in the first ``first_k_dense_replace`` layers (default ``dense``)."""
    return lambda r, fields, moe: first_dense(r, fields, moe, dense)


def deepseek_v3(r: Reader) -> dict[str, Any]:
    """DeepseekV3ForCausalLM: the layout above with V3's defaults (q rank 1,536, kv rank 512,
    r 64, n 128, v 128; 256 experts of 2,048, top 8, one shared; 3 dense layers); untied by
    default. The multi-token-prediction layers (``num_nextn_predict_layers``) are not built."""
    return deepseek_layout(r, experts=(256, 8), moe_hidden=2048, shared=1, layers=_first_dense(3))


def deepseek_v2(r: Reader) -> dict[str, Any]:
    """DeepseekV2ForCausalLM: the layout above with V2's defaults (q rank 1,536, kv rank 512,
    r 64, n 128, v 128; 64 experts of 1,407, two shared; no dense layers); ``num_experts_per_tok``
    has no default and is required; ``mlp_bias`` biases the dense and shared MLPs."""
    return deepseek_layout(
        r, experts=(64, None), moe_hidden=1407, shared=2, layers=_first_dense(0), biased_mlps=True
    )


def deepseek_v32(r: Reader) -> dict[str, Any]:
    """DeepseekV32ForCausalLM (DeepSeek-V3.2-Exp): V3's layout and defaults, the queries always
    through the low-rank path (a null ``q_lora_rank`` is not supported), dense layers where
    ``mlp_layer_types`` says ``dense`` (default: the first ``first_k_dense_replace``, 3), and in
    every attention block the sparse-attention indexer of ``index_n_heads`` (64) heads of
    ``index_head_dim`` (128): ``self_attn.indexer.wq_b`` (q rank -> Hi di), ``wk`` (D -> di),
    ``k_norm`` (LayerNorm of di, weight and bias), ``weights_proj`` (D -> Hi). The indexer
    scores every cached token and keeps the top ``index_topk``; its key (di per token) is cached
    beside the latent. ``mlp_bias`` is read by no module. The multi-token-prediction layer is
    not built."""
    fields = _sparse_attention_layout(r, "DeepSeek-V3.2", MLA_DEFAULTS)
    fields["indexer_heads"] = r.value("indexer_heads", "index_n_heads", default=64)
    fields["indexer_head_dim"] = r.value("indexer_head_dim", "index_head_dim", default=128)
    return fields


def _sparse_attention_layout(r: Reader, model: str, mla: dict[str, int | None]) -> dict[str, Any]:
    """The layout DeepSeek-V3.2 and GLM-5 share around their indexers: the queries always
    through the latent (a null ``q_lora_rank`` is not supported), 256 experts of 2,048, top 8,
    one shared, dense layers where ``mlp_layer_types`` says ``dense`` (default: the first
    ``first_k_dense_replace``, 3); ``mla`` the attention's sizes."""
    if "q_lora_rank" in r.data and r.data["q_lora_rank"] is None:
        r.unsupported("q_lora_rank", f"{model}'s attention always has a query latent")
    return deepseek_layout(
        r,
        experts=(256, 8),
        moe_hidden=2048,
        shared=1,
        layers=lambda r, fields, moe: listed_sparse(r, fields, moe, 3, "first_k_dense_replace"),
        mla=mla,
    )


GLM4_MOE_LITE_MLA: dict[str, int | None] = {
    "q_lora_rank": 768,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 192,
    "v_head_dim": 256,
}
"""``Glm4MoeLiteConfig``'s attention sizes (GLM-4.7-Flash)."""


def glm4_moe_lite(r: Reader) -> dict[str, Any]:
    """Glm4MoeLiteForCausalLM (GLM-4.7-Flash): the layout above with its own defaults (q rank
    768, or a direct ``q_proj`` when null; kv rank 512, r 64, n 192, v 256; 64 experts of 1,536,
    top 4, one shared); dense layers where ``mlp_layer_types`` says ``dense``, else only the
    first (the class reads no ``first_k_dense_replace``); untied by default. The
    multi-token-prediction layer is not built."""
    return deepseek_layout(
        r,
        experts=(64, 4),
        moe_hidden=1536,
        shared=1,
        layers=lambda r, fields, moe: listed_sparse(r, fields, moe, 1, None),
        mla=GLM4_MOE_LITE_MLA,
    )


def sarvam_mla(r: Reader) -> dict[str, Any]:
    """SarvamMLAForCausalLM (Sarvam-105B; built by transformers as DeepseekV3ForCausalLM): V3's
    layout with SarvamMLAConfig's defaults: no query latent (``q_lora_rank`` null: one
    ``q_proj``), kv rank 512, r 64, n 128, v 128; 128 experts of 2,048, top 8, one shared
    (``num_shared_experts`` names it too); one dense layer; untied by default."""
    mla = {**MLA_DEFAULTS, "q_lora_rank": None}
    return deepseek_layout(
        r,
        experts=(128, 8),
        moe_hidden=2048,
        shared=1,
        layers=_first_dense(1),
        mla=mla,
        shared_keys=("n_shared_experts", "num_shared_experts"),
    )


MISTRAL4_MLA: dict[str, int | None] = {
    "q_lora_rank": 1024,
    "kv_lora_rank": 256,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 64,
    "v_head_dim": 128,
}
"""``Mistral4Config``'s attention sizes (Mistral Small 4)."""

MISTRAL4_SIZES: dict[str, Any] = {
    "vocab_size": 131072,
    "d_model": 4096,
    "n_layers": 36,
    "n_heads": 32,
    "context_length": 1048576,
    "ffn_hidden": 12288,
}
"""``Mistral4Config``'s defaults for the standard sizes."""


def mistral4(r: Reader) -> dict[str, Any]:
    """Mistral4ForCausalLM (Mistral Small 4; transformers 5.24, ``models/mistral4``, DeepSeek-V3's
    modules under new names): V3's layout with ``Mistral4Config``'s defaults (vocabulary 131,072,
    width 4,096, 36 layers, 32 heads, 1,048,576 positions, dense MLP 12,288; q rank 1,024, or a
    direct ``q_proj`` when null; kv rank 256, r 64, n 64, v 128; 128 experts of 2,048, top 4, one
    shared; no dense layers); untied by default. Its router has no correction bias and its
    queries are scaled by position (Llama 4's scaling), which changes no count."""
    return deepseek_layout(
        r,
        experts=(128, 4),
        moe_hidden=2048,
        shared=1,
        layers=_first_dense(0),
        mla=MISTRAL4_MLA,
        sizes=MISTRAL4_SIZES,
    )


GLM_MOE_DSA_MLA: dict[str, int | None] = {
    "q_lora_rank": 2048,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 192,
    "v_head_dim": 256,
}
"""``GlmMoeDsaConfig``'s attention sizes (GLM-5)."""


def glm_moe_dsa(r: Reader) -> dict[str, Any]:
    """GlmMoeDsaForCausalLM (GLM-5): DeepSeek-V3.2's layout with GlmMoeDsaConfig's defaults (q
    rank 2,048, kv rank 512, r 64, n 192, v 256; 256 experts of 2,048, top 8, one shared; dense
    where ``mlp_layer_types`` says, default the first ``first_k_dense_replace`` (3)) and an
    indexer of ``index_n_heads`` (32) heads of ``index_head_dim`` (128) in the layers
    ``indexer_types`` marks ``full``; a ``shared`` layer reuses the previous full layer's
    selection and holds no indexer (nor caches its key). Without ``indexer_types``: the
    ``index_topk_pattern`` string (``F``/``S`` per layer), else a layer is full when
    max(i - ``index_skip_topk_offset`` (2) + 1, 0) is a multiple of ``index_topk_freq`` (1)."""
    fields = _sparse_attention_layout(r, "GLM-5", GLM_MOE_DSA_MLA)
    indexer = {
        "indexer_heads": r.value("indexer_heads", "index_n_heads", default=32),
        "indexer_head_dim": r.value("indexer_head_dim", "index_head_dim", default=128),
    }
    n = hf_layers.count_of(fields["n_layers"])
    kinds = indexer_kinds(r, n) if n is not None else None
    if kinds is None or all(kind == "full" for kind, _ in kinds):
        fields.update(indexer)
        return fields
    blocks = {"full": indexer, "shared": {}}
    if any(kind not in blocks for kind, _ in kinds):
        hf_layers.apply(r, fields, kinds, blocks, "indexer_types")  # reports the unknown kind
        return fields
    groups = fields.pop("layers", None) or [{"count": n}]
    ffn = [(str(i), group["count"]) for i, group in enumerate(groups)]
    ffn_blocks = {
        str(i): {k: v for k, v in g.items() if k != "count"} for i, g in enumerate(groups)
    }
    merged = hf_layers.merged_blocks(blocks, ffn_blocks)
    hf_layers.apply(r, fields, hf_layers.merge(kinds, ffn), merged, "indexer_types")
    return fields


def indexer_kinds(r: Reader, n: int) -> list[tuple[str, int]] | None:
    """Runs of ``full`` and ``shared`` indexer layers, as ``indexer_types`` lists them, as the
    ``index_topk_pattern`` string spells them, or by the frequency rule (None: a problem)."""
    listed = hf_layers.layer_types(r, n, "indexer_types")
    if listed is not None:
        return hf_layers.runs(listed)
    pattern = r.data.get("index_topk_pattern")
    if pattern is not None:
        if not isinstance(pattern, str) or set(pattern) - {"F", "S"} or len(pattern) != n:
            r.fail("index_topk_pattern", f"expected {n:,} letters F (full) or S (shared)")
            return None
        r.key_names["layers"] = r.name("index_topk_pattern")
        return hf_layers.runs(["full" if c == "F" else "shared" for c in pattern])
    freq = max(r.count("index_topk_freq", 1), 1)
    offset = r.count("index_skip_topk_offset", 2, minimum=0)
    if freq == 1:
        return [("full", n)]
    layers = hf_layers.by_rule(r, n, "index_topk_freq")
    if layers is None:
        return None
    return hf_layers.runs(
        ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in layers]
    )


def axk1(r: Reader) -> dict[str, Any]:
    """AXK1ForCausalLM (A.X K1): DeepSeek-V3's layout with AXK1Config's defaults (q rank 1,536,
    kv rank 512, r 64, n 128, v 128; 192 experts of 2,048, top 8, one shared), the queries
    always through the low-rank path (a null ``q_lora_rank`` is not supported), and in every
    sparse block ``mlp.post_mlp_layernorm`` (RMSNorm, D) on the sum of the experts and the shared
    expert: three norms in the sparse layers. Dense where ``mlp_layer_types`` says, else the
    first ``first_k_dense_replace`` (1) layers and those not a multiple of ``moe_layer_freq``
    (1). Untied by default."""
    if "q_lora_rank" in r.data and r.data["q_lora_rank"] is None:
        r.unsupported("q_lora_rank", "A.X K1's attention always has a query latent")

    def layers(r: Reader, fields: dict[str, Any], moe: dict[str, Any]) -> None:
        sparse = {**moe, "norms_per_block": 3}
        listed_sparse(r, fields, sparse, 1, "first_k_dense_replace", freq=True)

    return deepseek_layout(r, experts=(192, 8), moe_hidden=2048, shared=1, layers=layers)


AXK2_MLA: dict[str, int | None] = {
    "q_lora_rank": 384,
    "kv_lora_rank": 128,
    "qk_rope_head_dim": 32,
    "qk_nope_head_dim": 64,
    "v_head_dim": 64,
}
"""``AXK2Config``'s attention sizes."""


def axk2(r: Reader) -> dict[str, Any]:
    """AXK2ForCausalLM (A.X K2): DeepSeek-V3's layout with AXK2Config's defaults (q rank 384, kv
    rank 128, r 32, n 64, v 64; 128 experts of 512, top 8, one shared; dense where
    ``mlp_layer_types`` says, else the first ``first_k_dense_replace`` (1) layers and those not
    a multiple of ``moe_layer_freq`` (1)), untied by default, and:
    ``self_attn.q_gate_proj`` in place of ``q_b_proj``, reading the query latent after and
    before ``q_a_layernorm`` (2 q rank -> H (n + r + v): the queries and a sigmoid gate of the
    heads' outputs); DeepSeek-V3.2's indexer of ``index_n_heads`` (16) heads of
    ``index_head_dim`` (128) in every layer; ``input_layernorm`` gated (``AXK2GatedRMSNorm``:
    ``mlp.fc1`` D -> r, ``mlp.fc2`` r -> D, r = ``gated_norm_rank``, 16), and
    ``post_attention_layernorm`` gated alike in the sparse layers only. The queries always pass
    through the latent (a null ``q_lora_rank`` is refused, as the class refuses it). Grouped
    routing as AXK2Config's ``validate_architecture`` takes it (configuration_axk2.py, lines
    161-172): ``n_group`` and ``topk_group`` set together, the groups dividing the experts,
    ``topk_group`` at most ``n_group``."""
    if "q_lora_rank" in r.data and r.data["q_lora_rank"] is None:
        r.unsupported("q_lora_rank", "A.X K2's attention always has a query latent")
    _axk2_groups(r)
    rank = r.value("norm_gate_rank", "gated_norm_rank", default=16)

    def layers(r: Reader, fields: dict[str, Any], moe: dict[str, Any]) -> None:
        sparse = {**moe, "ffn_norm_gate_rank": rank}
        listed_sparse(r, fields, sparse, 1, "first_k_dense_replace", freq=True)

    fields = deepseek_layout(
        r, experts=(128, 8), moe_hidden=512, shared=1, layers=layers, mla=AXK2_MLA
    )
    fields.update(norm_gate_rank=rank, attention_gate=True, query_latent_both=True)
    fields["indexer_heads"] = r.value("indexer_heads", "index_n_heads", default=16)
    fields["indexer_head_dim"] = r.value("indexer_head_dim", "index_head_dim", default=128)
    return fields


def _axk2_groups(r: Reader) -> None:
    """AXK2Config's rules for grouped routing (see :func:`axk2`)."""
    groups, top, experts = (r.setting(k) for k in ("n_group", "topk_group", "n_routed_experts"))
    if (groups is None) != (top is None):
        r.refused_by_class(
            "n_group" if top is None else "topk_group",
            f"n_group {groups!r} beside topk_group {top!r}: the two are set together (both "
            "null for routing without groups)",
        )
    elif is_whole(groups, 1) and is_whole(experts) and experts % groups:
        r.refused_by_class("n_group", f"{groups:,} groups do not divide {experts:,} experts")
    elif is_whole(groups, 1) and is_whole(top) and top > groups:
        r.refused_by_class("topk_group", f"{top:,} exceeds n_group {groups:,}")


def youtu(r: Reader) -> dict[str, Any]:
    """YoutuForCausalLM (Youtu-LLM): DeepSeek-V3's attention (the same MLA sizes and defaults;
    ``rope_interleave`` changes no parameter) and a dense SwiGLU ``mlp`` of
    ``intermediate_size`` in every layer; tied by default."""
    return mla_layout(r, tie=True)


MINICPM3_MLA: dict[str, int | None] = {
    "q_lora_rank": 768,
    "kv_lora_rank": 256,
    "qk_rope_head_dim": 32,
    "qk_nope_head_dim": 64,
    "v_head_dim": None,
}
"""MiniCPM3Config's attention sizes (MiniCPM3-4B); ``v_head_dim`` defaults to D / H."""


def minicpm3(r: Reader) -> dict[str, Any]:
    """MiniCPM3ForCausalLM (``models/minicpm3``): DeepSeek-V2's attention with MiniCPM3Config's
    sizes (q rank 768, kv rank 256, r 32, n 64, v = D / H unless given) and a dense SwiGLU
    ``mlp`` of ``intermediate_size`` in every layer, gate/up/down with a bias when ``mlp_bias``;
    tied by default. ``scale_emb``, ``scale_depth`` and ``dim_model_base`` scale activations and
    hold no parameters."""
    fields = mla_layout(r, tie=True, mla=MINICPM3_MLA)
    mlp_bias(r, fields)
    d, h = fields.get("d_model"), fields.get("n_heads")
    if fields["v_head_dim"] is None and is_whole(d, 1) and is_whole(h, 1):
        fields["v_head_dim"] = d // h
    return fields


FAMILIES = {
    "deepseek_v2": deepseek_v2,
    "minicpm3": minicpm3,
    "deepseek_v3": deepseek_v3,
    "youtu": youtu,
    "deepseek_v32": deepseek_v32,
    "glm4_moe_lite": glm4_moe_lite,
    "glm_moe_dsa": glm_moe_dsa,
    "sarvam_mla": sarvam_mla,
    "mistral4": mistral4,
    "axk1": axk1,
    "axk2": axk2,
}


AXK2_NAMES = llama_names(
    renames={
        **DEEPSEEK.renames,
        "attn.q_b_proj": "self_attn.q_gate_proj",
        **{
            f"{generic}_norm_gate.{fc}": f"{norm}.mlp.{fc}"
            for generic, norm in (("attn", "input_layernorm"), ("mlp", "post_attention_layernorm"))
            for fc in ("fc1", "fc2")
        },
    }
)
"""A.X K2's: DeepSeek's, the query projection ``q_gate_proj`` and the gated norms' ``mlp.fc1``
and ``mlp.fc2``."""
PEFT_NAMES = {
    **dict.fromkeys(
        (
            "deepseek_v2",
            "deepseek_v3",
            "deepseek_v32",
            "glm4_moe_lite",
            "glm_moe_dsa",
            "sarvam_mla",
        ),
        DEEPSEEK,
    ),
    "mistral4": DEEPSEEK_NAMES,
    **dict.fromkeys(("minicpm3", "youtu"), LLAMA),
    "axk1": DEEPSEEK_NAMES,
    "axk2": AXK2_NAMES,
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
