"""Multi-head latent attention (DeepSeek-V2/V3, ``modeling_deepseek_v3.py``): low-rank query and
key/value paths, and the sparse-attention indexers built on them.

``q_a_proj`` (D -> q rank), ``q_a_layernorm``, ``q_b_proj`` (q rank -> H (nope + rope)) or one
``q_proj`` without a query rank; ``kv_a_proj_with_mqa`` (D -> kv rank + rope),
``kv_a_layernorm``, ``kv_b_proj`` (kv rank -> H (nope + v)); ``o_proj`` (H v -> D);
DeepSeek-V3.2 adds a sparse-attention indexer (``indexer.wq_b``, ``wk``, ``k_norm``,
``weights_proj``).
"""

from __future__ import annotations

from costcalc.anatomy.attention import gate_kind
from costcalc.anatomy.mixer import TokenMixer
from costcalc.anatomy.tensor import Block, Tensor, linear, norm


def query_scale_tensors(spec: Block, name: str, heads: int) -> list[Tensor]:
    """With ``query_position_scale``, a scale and a bias per query head (``scale``, ``bias``:
    heads each; Mistral Large 4's ``softmax_scaling``); none without."""
    if not spec.query_position_scale:
        return []
    return [Tensor(f"{name}.{kind}", (heads,), "mixer") for kind in ("scale", "bias")]


def indexer_tensors(spec: Block) -> list[Tensor]:
    """DeepSeek-V3.2's sparse-attention indexer (``DeepseekV32Indexer``), none without
    ``indexer_heads``: ``wq_b`` (q rank -> Hi di, from the query latent), ``wk`` (D -> di, one
    key head), ``k_norm`` (a LayerNorm of di with weight and bias, whatever the model's norms)
    and ``weights_proj`` (D -> Hi); Mistral Large 4's queries come from the block input instead
    (``indexer_query_norm``: ``q_input_norm``, a LayerNorm of D with bias, and ``wq_b``
    D -> Hi di), with a query scale (``query_position_scale``), and GLM-5.3-Flash pools the keys
    (``indexer_key_pool``)."""
    Hi, di = spec.indexer_heads, spec.indexer_head_dim
    if Hi is None or di is None:
        return []
    if spec.indexer_query_norm:
        D = spec.d_model
        queries = [
            Tensor("attn.indexer.q_input_norm.weight", (D,), "mixer"),
            Tensor("attn.indexer.q_input_norm.bias", (D,), "mixer"),
            *linear("attn.indexer.wq_b", Hi * di, D, False, "mixer"),
        ]
    elif spec.q_lora_rank is not None:
        queries = linear("attn.indexer.wq_b", Hi * di, spec.q_lora_rank, False, "mixer")
    else:
        return []
    return [
        *queries,
        *linear("attn.indexer.wk", di, spec.d_model, False, "mixer"),
        Tensor("attn.indexer.k_norm.weight", (di,), "mixer"),
        Tensor("attn.indexer.k_norm.bias", (di,), "mixer"),
        *linear("attn.indexer.weights_proj", Hi, spec.d_model, False, "mixer"),
        *query_scale_tensors(spec, "attn.indexer.softmax_scaling", Hi),
        *key_pool_tensors(spec, di),
    ]


def key_pool_tensors(spec: Block, width: int) -> list[Tensor]:
    """With ``indexer_key_pool`` m, GLM-5.3-Flash's pooling of the indexer's keys:
    ``index_kpool_compress_ape`` m x di (added to the gate scores) and
    ``index_kpool_compress_gate`` di x D (gate scores of each token); none without."""
    m = spec.indexer_key_pool
    if m is None:
        return []
    return [
        Tensor("attn.indexer.index_kpool_compress_ape", (m, width), "mixer"),
        Tensor("attn.indexer.index_kpool_compress_gate", (width, spec.d_model), "mixer", "matmul"),
    ]


def indexer_width(spec: Block) -> int:
    """MACs of the indexer per query and key it scores: Hi (di + 1), its scores q k over Hi
    heads of di, then their weighted sum over the heads (0 without)."""
    return (spec.indexer_heads or 0) * ((spec.indexer_head_dim or 0) + 1)


class LatentAttention(TokenMixer):
    kind = "mla"
    words = "latent attention (MLA)"

    def tensors(self, spec: Block) -> list[Tensor]:
        """q: D x rq + rq x H (n + r) with a norm of rq (or D x H (n + r) directly; 2 rq inputs
        with ``query_latent_both``); kv: D x (rkv + r), a norm of rkv (and one of r with
        ``rope_key_norm``), rkv x H (n + v); output H v x D; a gate per head H x D with
        ``attention_head_gate``; an output gate with ``attention_gate``, H v more outputs of the
        last query projection (A.X K2), or its own ``gate_proj`` H v x D with
        ``attention_gate_proj`` (HY V4); H sinks with ``attention_sinks``; a query scale
        (:func:`query_scale_tensors`) and the indexer (:func:`indexer_tensors`). n, r, v:
        no-rope, rope and value head dims."""
        D, H = spec.d_model, spec.n_heads or 0
        n, r, v = spec.qk_nope_head_dim or 0, spec.qk_rope_head_dim or 0, spec.v_head_dim or 0
        rkv, rq = spec.kv_lora_rank or 0, spec.q_lora_rank
        bias = spec.qkv_bias
        fused_gate, own_gate = gate_kind(spec)
        q = H * (n + r + (v if fused_gate else 0))
        if rq is None:
            tensors = linear("attn.q_proj", q, D, False, "mixer")
        else:
            q_inputs = (2 if spec.query_latent_both else 1) * rq
            tensors = [
                *linear("attn.q_a_proj", rq, D, bias, "mixer"),
                *norm(spec, "attn.q_a_layernorm", rq, "mixer"),
                *linear("attn.q_b_proj", q, q_inputs, False, "mixer"),
            ]
        return [
            *tensors,
            *linear("attn.kv_a_proj_with_mqa", rkv + r, D, bias, "mixer"),
            *norm(spec, "attn.kv_a_layernorm", rkv, "mixer"),
            *(norm(spec, "attn.k_rope_norm", r, "mixer") if spec.rope_key_norm else []),
            *linear("attn.kv_b_proj", H * (n + v), rkv, False, "mixer"),
            *linear("attn.o_proj", D, H * v, spec.attn_out_bias, "mixer"),
            *(linear("attn.g_proj", H, D, False, "mixer") if spec.attention_head_gate else []),
            *(linear("attn.gate_proj", H * v, D, spec.gate_proj_bias, "mixer") if own_gate else []),
            *([Tensor("attn.sinks", (H,), "mixer")] if spec.attention_sinks else []),
            *query_scale_tensors(spec, "attn.softmax_scaling", H),
            *indexer_tensors(spec),
        ]

    def pair_width(self, spec: Block) -> int:
        """H (n + r + v), plus the indexer's Hi (di + 1) per key it scores
        (:func:`indexer_width`; with pooled keys it scores those instead,
        :meth:`compressed_pair_width`); transformers' eager indexer scores every pair before
        keeping its top k."""
        indexer = 0 if spec.indexer_key_pool else indexer_width(spec)
        return indexer + (spec.n_heads or 0) * (
            (spec.qk_nope_head_dim or 0) + (spec.qk_rope_head_dim or 0) + (spec.v_head_dim or 0)
        )

    def compressed_pair_width(self, spec: Block) -> int:
        """With pooled indexer keys (``indexer_key_pool``), the indexer's Hi (di + 1) per query
        and pooled key; 0 without."""
        return indexer_width(spec) if spec.indexer_key_pool else 0

    def key_rate(self, spec: Block) -> int | None:
        """The indexer's ``indexer_key_pool``."""
        return spec.indexer_key_pool

    def cache_width(self, spec: Block) -> int:
        """As transformers caches it, the compressed latent before its expansion per head: the
        normed key/value latent (kv rank) and the shared rotary key (r), one head; plus the
        indexer's key (di; with pooled keys the key, the gate scores and a validity flag,
        2 di + 1) when the block has one."""
        di = spec.indexer_head_dim if spec.indexer_heads is not None else None
        indexer = 0 if di is None else 2 * di + 1 if spec.indexer_key_pool else di
        return (spec.kv_lora_rank or 0) + (spec.qk_rope_head_dim or 0) + indexer


PART = LatentAttention()
