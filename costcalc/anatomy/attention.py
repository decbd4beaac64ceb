"""Attention (MHA, GQA, MQA) as transformers builds it, from its sub-parts.

A block's attention is its projections (Q, K, V and the output, or a mixture of attention heads)
followed by the sub-parts its fields add, each a function of the block giving its tensors, in
the order :data:`SUB_PARTS` lists them: q/k norms, sinks, the output gates, differential
attention's lambdas, nGPT's scales, Doge's dynamic mask, the residual scale, DeepSeek-V4's key
compressor, a sparse-attention indexer and the attention over an encoder's states.
Conventions, from transformers 5.24's modeling code:

- Q, K and V are one tensor when ``fused_qkv`` (GPT-2's ``c_attn``, GPT-NeoX, Phi-3, nanoGPT),
  three otherwise (Llama, Qwen2, Mistral, OPT, Phi); each bias likewise. q/k norms are RMSNorm
  (or LayerNorm) weights of head_dim each (``qk_norm: head``) or of the whole projection width
  (``full``). Attention sinks are one logit per query head.
- A gated cross-attention block (Llama 3.2 Vision's ``MllamaCrossAttentionDecoderLayer``) names
  its attention ``cross_attn.*`` and keeps a scalar gate on its attention branch
  (``cross_attn_attn_gate``); text-only input skips it: no pairs, no cache.

A new attention feature is one sub-part here (its tensors, and its pairs or cache where it
changes them) plus its field in :class:`costcalc.blocks.BlockFields`, which the block protocol
(:class:`costcalc.anatomy.tensor.Block`) names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from costcalc.anatomy.mixer import TokenMixer
from costcalc.anatomy.saved import Step, Term, norm_terms
from costcalc.anatomy.tensor import Block, Tensor, linear, norm

SubPart = Callable[[Block], list[Tensor]]
SavedSubPart = Callable[[Block, Step], list[Term]]


def value_width(spec: Block) -> int:
    """Width of one attention head's values: ``v_head_dim``, or the head width."""
    return spec.head_width if spec.v_head_dim is None else spec.v_head_dim


def attention_input(spec: Block) -> int:
    """Width the attention's q, k and v read: D, or over the hidden state concatenated with
    the token embeddings (``concat_embeddings``) 2 D, or the ``concat_width`` they are built
    for."""
    if not spec.concat_embeddings:
        return spec.d_model
    return 2 * spec.d_model if spec.concat_width is None else spec.concat_width


def cached_heads(spec: Block) -> int:
    """Heads an attention block's cache holds: its key/value heads, or ``kv_cache_heads``
    (Falcon's new architecture caches keys and values expanded to every query head)."""
    return spec.kv_heads if spec.kv_cache_heads is None else spec.kv_cache_heads


# --------------------------------------------------------------------------- projections


def gate_kind(spec: Block) -> tuple[bool, bool]:
    """Where the output gate (``attention_gate``) is: (in the query projection, its own
    projection ``attention_gate_proj``); neither without a gate."""
    return spec.attention_gate and not spec.attention_gate_proj, spec.attention_gate_proj


def projection_tensors(spec: Block) -> list[Tensor]:
    """Q, K, V (fused into one (H + 2K) d x D matrix, or three; no V when the values reuse the
    keys; no K or V when the block reads an earlier block's keys and values) and the output
    D x H dv. An output gate in the query projection doubles it (2 H d). Values of another width
    dv (``v_head_dim``) make V K dv x D. With ``attention_experts`` the query and output
    projections are experts (:func:`head_expert_tensors`) and K and V stay (one ``kv_proj``
    when fused). A ``query_width`` Q makes the queries Q and the output D x Q."""
    D, H, K, d = attention_input(spec), spec.n_heads or 0, spec.kv_heads, spec.head_width
    dv = value_width(spec)
    fused_gate, _ = gate_kind(spec)
    q = (2 if fused_gate else 1) * H * d if spec.query_width is None else spec.query_width
    bias = spec.qkv_bias
    kv = 0 if spec.shares_kv else K * d + (0 if spec.keys_as_values else K * dv)
    experts = head_expert_tensors(spec)
    if experts and spec.fused_qkv:
        tensors = linear("attn.kv_proj", kv, D, bias, "mixer")
    elif spec.fused_qkv:
        tensors = linear("attn.qkv_proj", q + kv, D, bias, "mixer")
    else:
        tensors = [] if experts else query_tensors(spec, q)
        if not spec.shares_kv:
            tensors += linear("attn.k_proj", K * d, D, bias, "mixer")
        if not (spec.keys_as_values or spec.shares_kv):
            tensors += linear("attn.v_proj", K * dv, D, bias, "mixer")
    out = H * dv if spec.query_width is None else spec.query_width
    return tensors + (experts or output_tensors(spec, out))


def head_expert_tensors(spec: Block) -> list[Tensor]:
    """A mixture of attention heads (``attention_experts`` X; JetMoE's ``JetMoeMoA``): the
    query experts ``input_linear`` X x K d x D and output experts ``output_linear`` X x D x K dv,
    each token running H / K of them, the router ``router.layer`` X x D and, with
    ``attn_out_bias``, one ``bias`` of D; none without experts (the keys and values stay
    shared: K heads, as in :func:`projection_tensors`)."""
    X = spec.attention_experts
    if X is None:
        return []
    D, K, active = spec.d_model, spec.kv_heads, (spec.n_heads or 0) // (spec.kv_heads or 1)
    q, out = K * spec.head_width, K * value_width(spec)
    tensors = [
        Tensor("attn.experts.input_linear.weight", (X, q, D), "mixer", "experts", active=active),
        Tensor("attn.experts.output_linear.weight", (X, D, out), "mixer", "experts", active=active),
        Tensor("attn.experts.router.layer.weight", (X, D), "mixer", "router"),
    ]
    if spec.attn_out_bias:
        tensors.append(Tensor("attn.experts.bias", (D,), "mixer"))
    return tensors


def query_tensors(spec: Block, width: int) -> list[Tensor]:
    """The query projection: D -> ``width`` directly, or through ``query_rank`` rq: D -> rq
    (``q_a_proj``), an RMSNorm of rq, rq -> ``width`` (``q_b_proj``)."""
    D, rq, bias = attention_input(spec), spec.query_rank, spec.qkv_bias
    if rq is None:
        return linear("attn.q_proj", width, D, bias, "mixer")
    return [
        *linear("attn.q_a_proj", rq, D, bias, "mixer"),
        *norm(spec, "attn.q_a_norm", rq, "mixer"),
        *linear("attn.q_b_proj", width, rq, bias, "mixer"),
    ]


def output_tensors(spec: Block, width: int) -> list[Tensor]:
    """The output projection of the heads' ``width`` (H dv): one D x H dv matrix, or grouped
    (``out_groups`` g, ``out_rank`` r): ``o_a_proj`` g r x H dv / g (each group's slice of the
    heads to r on its own: r H dv elements and MACs) and ``o_b_proj`` D x g r."""
    g, r, D = spec.out_groups, spec.out_rank, spec.d_model
    if g is None or r is None:
        return linear("attn.o_proj", D, width, spec.attn_out_bias, "mixer")
    return [
        Tensor("attn.o_a_proj.weight", (g * r, width // g), "mixer", "matmul"),
        *linear("attn.o_b_proj", D, g * r, spec.attn_out_bias, "mixer"),
    ]


# --------------------------------------------------------------------------- sub-parts


def qk_norm_tensors(spec: Block) -> list[Tensor]:
    """Norms on queries and keys (``qk_norm``): of head_dim d each (``head``), over the whole
    projections H d and K d (``full``), of d on the keys only (``key``), or one of d for each
    of the H query and K key heads (``per_head``, :func:`per_head_norm_tensors`); no k norm
    when the block reads an earlier block's keys."""
    d, H, K = spec.head_width, spec.n_heads or 0, spec.kv_heads
    if spec.qk_norm == "key":
        return norm(spec, "attn.k_norm", d, "mixer")
    if spec.qk_norm == "none":
        return []
    if spec.qk_norm == "per_head":
        return per_head_norm_tensors(spec)
    q_width, k_width = (d, d) if spec.qk_norm == "head" else (H * d, K * d)
    tensors = norm(spec, "attn.q_norm", q_width, "mixer")
    return tensors if spec.shares_kv else tensors + norm(spec, "attn.k_norm", k_width, "mixer")


def per_head_norm_tensors(spec: Block) -> list[Tensor]:
    """StableLM 2's ``StableLmLayerNormPerHead`` on queries and on keys: ``norms``, a list of
    ``nn.LayerNorm(d, bias=False)``, one per head: H weights of d (``q_layernorm``) and K
    (``k_layernorm``), whatever the bias of the block's norms."""
    d, H, K = spec.head_width, spec.n_heads or 0, spec.kv_heads
    heads = [("q", H)] if spec.shares_kv else [("q", H), ("k", K)]
    return [Tensor(f"attn.{qk}_norm.norms.weight", (d,), "mixer", copies=n) for qk, n in heads]


def sink_tensors(spec: Block) -> list[Tensor]:
    """With ``attention_sinks``, one learned sink logit per query head (gpt-oss): H."""
    return [Tensor("attn.sinks", (spec.n_heads or 0,), "mixer")] if spec.attention_sinks else []


def gate_tensors(spec: Block) -> list[Tensor]:
    """The output gates beside the query projection: its own ``gate_proj`` H d x D with
    ``attention_gate_proj`` (its bias ``gate_proj_bias``: as the queries unless
    ``attention_gate_proj_bias`` says), a bias of H with
    ``attention_gate_bias``, and a gate per head ``g_proj`` H x D (``attention_head_gate``)."""
    H, D, d = spec.n_heads or 0, attention_input(spec), spec.head_width
    own_gate = gate_kind(spec)[1]
    tensors = linear("attn.gate_proj", H * d, D, spec.gate_proj_bias, "mixer") if own_gate else []
    if spec.attention_gate_bias:
        tensors.append(Tensor("attn.gate_bias", (H,), "mixer"))
    if spec.attention_head_gate:
        tensors += linear("attn.g_proj", H, D, False, "mixer")
    return tensors


def differential_tensors(spec: Block) -> list[Tensor]:
    """Differential attention's lambdas (DiffLlama): 4 vectors of head_dim."""
    if not spec.differential_attention:
        return []
    return [Tensor("attn.lambda", (spec.head_width,), "mixer", copies=4)]


def ngpt_tensors(spec: Block) -> list[Tensor]:
    """nGPT's scales on the queries and the output gate (``sqk``, ``s_gate``: H d each)."""
    if not spec.ngpt_scales:
        return []
    width = (spec.n_heads or 0) * spec.head_width
    return [Tensor(f"attn.{name}", (width,), "mixer") for name in ("sqk", "s_gate")]


def dynamic_mask_tensors(spec: Block) -> list[Tensor]:
    """Doge's dynamic mask: a learned ``A`` (K) and ``dt_proj`` K dv -> K (biased as the
    queries are)."""
    if not spec.dynamic_mask:
        return []
    K = spec.kv_heads
    return [
        Tensor("attn.A", (K,), "mixer"),
        *linear("attn.dt_proj", K, K * value_width(spec), spec.qkv_bias, "mixer"),
    ]


def encoder_attention_tensors(spec: Block) -> list[Tensor]:
    """With ``encoder_attention``, the attention over an encoder's states (D wide) after the
    self-attention: GPT-2's ``crossattention`` (``q_attn`` D x D, ``c_attn`` D x 2D for keys and
    values, ``c_proj``; ``ln_cross_attn``), XGLM's and Kosmos-2's ``encoder_attn`` (``q_proj``,
    ``k_proj``, ``v_proj``, ``out_proj``; ``encoder_attn_layer_norm``): q H d x D, k and v
    K d x D (one ``kv_proj`` 2 K d x D when ``fused_qkv``, as GPT-2's and GPT-BigCode's
    ``c_attn``, the module LoRA adapts), the output D x H d, biased as the self-attention's,
    and its norm of D. Text-only input has no encoder states and skips it: no MACs (``text``
    false)."""
    if not spec.encoder_attention:
        return []
    D, H, K, d = spec.d_model, spec.n_heads or 0, spec.kv_heads, spec.head_width
    bias = spec.qkv_bias
    if spec.fused_qkv:
        keys_values = linear("cross_attn.kv_proj", 2 * K * d, D, bias, "mixer")
    else:
        keys_values = [
            *linear("cross_attn.k_proj", K * d, D, bias, "mixer"),
            *linear("cross_attn.v_proj", K * d, D, bias, "mixer"),
        ]
    tensors = [
        *norm(spec, "cross_attn_norm", D, "norms"),
        *linear("cross_attn.q_proj", H * d, D, bias, "mixer"),
        *keys_values,
        *linear("cross_attn.o_proj", D, H * d, spec.attn_out_bias, "mixer"),
    ]
    return [replace(t, text=False) for t in tensors]


def residual_scale_tensors(spec: Block) -> list[Tensor]:
    """With ``residual_scales``, the learned scale of D on the attention's residual branch."""
    return [Tensor("attn_residual_scale", (spec.d_model,), "mixer")] if spec.residual_scales else []


def compressor_tensors(spec: Block) -> list[Tensor]:
    """The key compressor of a block with ``kv_compress_rate`` m (DeepSeek-V4's
    ``DeepseekV4HCACompressor`` / ``DeepseekV4CSACompressor``): ``kv_proj`` and ``gate_proj``
    D -> c d, ``position_bias`` m x c d, ``kv_norm`` (d); c = 2 with ``kv_compress_overlap``
    (two series), else 1. With ``indexer_heads`` Hi of ``indexer_head_dim`` di, its indexer
    (``DeepseekV4Indexer``): a compressor of its own at di (``kv_proj``, ``gate_proj`` D -> c di,
    ``position_bias`` m x c di, ``kv_norm`` di), ``q_b_proj`` (query rank -> Hi di) and
    ``scorer.weights_proj`` (D -> Hi)."""
    m = spec.kv_compress_rate
    if m is None:
        return []
    c = 2 if spec.kv_compress_overlap else 1
    tensors = _pooling_tensors(spec, "attn.compressor", spec.head_width, m, c)
    Hi, di, rq = spec.indexer_heads, spec.indexer_head_dim, spec.query_rank
    if Hi is not None and di is not None and rq is not None:
        tensors += [
            *_pooling_tensors(spec, "attn.compressor.indexer", di, m, c),
            *linear("attn.compressor.indexer.q_b_proj", Hi * di, rq, False, "mixer"),
            *linear("attn.compressor.indexer.weights_proj", Hi, spec.d_model, False, "mixer"),
        ]
    return tensors


def _pooling_tensors(spec: Block, name: str, width: int, rate: int, series: int) -> list[Tensor]:
    """One compressor's tensors: kv and gate projections D -> series x width, a position bias
    rate x series x width, a norm of width."""
    return [
        *linear(f"{name}.kv_proj", series * width, spec.d_model, False, "mixer"),
        *linear(f"{name}.gate_proj", series * width, spec.d_model, False, "mixer"),
        Tensor(f"{name}.position_bias", (rate, series * width), "mixer"),
        *norm(spec, f"{name}.kv_norm", width, "mixer"),
    ]


def key_indexer(spec: Block) -> tuple[int, int]:
    """(Hi, di) of the block's own indexer over its keys (MiniMax M3's), else (0, 0): none
    without ``indexer_heads``, and with compressed keys the indexer is the compressor's
    (:func:`compressor_tensors`)."""
    Hi, di = spec.indexer_heads, spec.indexer_head_dim
    if spec.kv_compress_rate is not None or Hi is None or di is None:
        return 0, 0
    return Hi, di


def indexer_tensors(spec: Block) -> list[Tensor]:
    """MiniMax M3's sparse-attention indexer (``MiniMaxM3VLIndexer``): ``q_proj`` (D -> Hi di),
    ``k_proj`` (D -> di, one key head) and a norm of di on each (the model's norm), the two
    projections one ``qk_proj`` (D -> (Hi + 1) di) when it scores pooled blocks of keys
    (``indexer_block``, Qwen4-Exp's ``Qwen4ExpTextQSAIndexer``); none without
    ``indexer_heads``, and with compressed keys the indexer is the compressor's."""
    Hi, di = key_indexer(spec)
    if not Hi:
        return []
    D = spec.d_model
    if spec.indexer_block is not None:  # Qwen4-Exp's index_qk_proj
        projections = linear("attn.indexer.qk_proj", (Hi + 1) * di, D, False, "mixer")
    else:
        projections = [
            *linear("attn.indexer.q_proj", Hi * di, D, False, "mixer"),
            *linear("attn.indexer.k_proj", di, D, False, "mixer"),
        ]
    return [
        *projections,
        *norm(spec, "attn.indexer.q_norm", di, "mixer"),
        *norm(spec, "attn.indexer.k_norm", di, "mixer"),
    ]


SUB_PARTS: tuple[SubPart, ...] = (
    projection_tensors,
    qk_norm_tensors,
    sink_tensors,
    gate_tensors,
    differential_tensors,
    ngpt_tensors,
    dynamic_mask_tensors,
    residual_scale_tensors,
    compressor_tensors,
    indexer_tensors,
    encoder_attention_tensors,
)
"""The attention's sub-parts, in the order its tensors are listed."""


# --------------------------------------------------------------------------- saved for backward


def qk_norm_saved(spec: Block, step: Step) -> list[Term]:
    """Query and key norms, of head_dim shared by the heads (Qwen3, Gemma 3: rows N H and N K
    of width d), over whole projections (OLMo 2: rows N of width H d and K d), or one
    ``nn.LayerNorm`` per head (StableLM 2's ``StableLmLayerNormPerHead``: each head's slice of
    the projection, rows N H and N K of width d, whatever the block's norms are; the slices are
    views of one storage, saved once); their outputs go to the rotation, which saves none of
    them."""
    H, K, d, e, N = spec.n_heads or 0, spec.kv_heads, spec.head_width, step.e, step.tokens
    kind = "layernorm" if spec.qk_norm == "per_head" else spec.norm
    if spec.qk_norm in ("head", "per_head"):
        q = norm_terms(kind, e, (N * H, "N H"), (d, "d"), 1, "query norm")
        return q + norm_terms(kind, e, (N * K, "N K"), (d, "d"), 1, "key norm")
    if spec.qk_norm == "full":
        q = norm_terms(kind, e, (N, "N"), (H * d, "H d"), 1, "query norm")
        return q + norm_terms(kind, e, (N, "N"), (K * d, "K d"), 1, "key norm")
    return []


def head_major(spec: Block) -> bool:
    """Whether the queries reach the attention kernel head-major ((B, H, T, d) contiguous)
    rather than as views of the projection's (B, T, H, d): a rotary narrower than the head
    concatenates the rotated and the passed dimensions (``torch.cat((q_rot, q_pass), -1)``,
    StableLM, Phi, GPT-NeoX), and per-head norms concatenate the heads."""
    narrow = spec.position == "rotary" and (spec.rotary_width or 0) < spec.head_width
    return narrow or spec.qk_norm == "per_head"


def projection_saved(spec: Block, step: Step) -> list[Term]:
    """The projections' outputs the attention keeps, and its output. Eager
    (``eager_attention_forward``): queries and the keys and values ``repeat_kv`` expands to H
    heads (copies for the matmuls), 3 e N H d. SDPA (PyTorch's flash kernel, GQA without
    expansion) and flash: queries, keys, values (rotated ones are new tensors; unrotated ones,
    and rotary values of a fused projection, keep the projection's storage). Then the output,
    e N H d: made contiguous for the output projection (eager), or read by it in place. SDPA's
    output is laid out as its queries: when they are head-major (:func:`head_major`),
    ``transpose(1, 2).contiguous()`` copies it for the output projection, which saves the copy
    while the kernel keeps its own, e N H d more (flash-attn takes token-major views and
    writes a token-major output)."""
    H, K, d, e, N = spec.n_heads or 0, spec.kv_heads, spec.head_width, step.e, step.tokens
    out = [Term("e N H d", "attention output", e * N * H * d)]
    if step.kernel == "eager":
        return [Term("3 e N H d", "queries, keys and values (H heads)", 3 * e * N * H * d), *out]
    if step.kernel == "sdpa" and head_major(spec):
        out.append(Term("e N H d", "its token-major copy", e * N * H * d))
    what = "fused q/k/v output" if spec.fused_qkv else "queries, keys, values"
    fused = Term("e N (H + 2K) d", what, e * N * (H + 2 * K) * d)
    if spec.position != "rotary":
        return [fused, *out]
    qk = Term("e N (H + K) d", "rotated queries and keys", e * N * (H + K) * d)
    return [qk, fused if spec.fused_qkv else Term("e N K d", "values", e * N * K * d), *out]


def softmax_saved(spec: Block, step: Step) -> list[Term]:
    """The softmax. Eager: the s x s output, in fp32 in Llama-derived code (4 B H T^2, then
    its copy in the dtype e B H T^2 unless that is fp32), in the dtype in GPT-2's (learned
    positions; e B H T^2); with attention sinks (gpt-oss's code) in the dtype over the scores
    and the sink logit, e B H T (T + 1), after subtracting the row maximum, whose int64 indices
    are saved, 8 B H T. SDPA and flash (with sinks too): an fp32 log-sum-exp per query and
    head, 4 B H T."""
    H, e, B, T = spec.n_heads or 0, step.e, step.batch, step.length
    if step.kernel != "eager":
        return [Term("4 B H T", "log-sum-exp, fp32", 4 * B * H * T)]
    if spec.attention_sinks:
        probs = e * B * H * T * (T + 1)
        return [
            Term("e B H T (T + 1)", "probabilities with the sink column", probs, True),
            Term("8 B H T", "row maximum indices, int64", 8 * B * H * T),
        ]
    if spec.position == "learned":
        return [Term("e B H T^2", "attention probabilities", e * B * H * T * T, True)]
    terms = [Term("4 B H T^2", "softmax output, fp32", 4 * B * H * T * T, True)]
    if e != 4:
        terms.append(Term("e B H T^2", "probabilities in the dtype", e * B * H * T * T, True))
    return terms


SAVED_SUB_PARTS: tuple[SavedSubPart, ...] = (qk_norm_saved, projection_saved, softmax_saved)
"""What the measured sub-parts save for backward, in the order their terms are listed."""

SAVED_QK_NORMS = frozenset({"none", "head", "full", "per_head"})
"""The query/key norms :func:`qk_norm_saved` covers; any other kind is not measured."""


class Attention(TokenMixer):
    kind = "attention"
    words = "attention"
    saved_keys = frozenset(
        {
            "mixer",
            "n_heads",
            "n_kv_heads",
            "head_dim",
            "kv_cache_heads",
            "qkv_bias",
            "attn_out_bias",
            "fused_qkv",
            "qk_norm",
            "attention_sinks",
            "sliding_window",
            "kv_cache_all_tokens",
            "bidirectional_attention",
            "bidirectional_window",
            "attention_chunk",
        }
    )
    """Plain attention with sinks and q/k norms: no other sub-part was measured."""

    def measured(self, spec: Block) -> bool:
        """Its q/k norms are of a measured kind (:data:`SAVED_QK_NORMS`)."""
        return spec.qk_norm in SAVED_QK_NORMS

    def saved(self, spec: Block, step: Step) -> list[Term]:
        """Every measured sub-part's saved tensors (:data:`SAVED_SUB_PARTS`)."""
        return [term for sub_part in SAVED_SUB_PARTS for term in sub_part(spec, step)]

    def saved_by_convention(self, spec: Block) -> bool:
        """Sinks (gpt-oss) and whole-projection q/k norms (OLMo 2) come from families whose
        norms and rotary tables keep tensors in other dtypes than Llama's."""
        return spec.attention_sinks or spec.qk_norm == "full"

    def tensors(self, spec: Block) -> list[Tensor]:
        """Every sub-part's tensors (:data:`SUB_PARTS`); a gated cross-attention block names
        them ``cross_attn.*`` and adds the scalar gate of its attention branch
        (``cross_attn_attn_gate``)."""
        tensors = [t for sub_part in SUB_PARTS for t in sub_part(spec)]
        if spec.gated_cross_attention:  # transformers' cross_attn.q_proj, ...
            cross = [replace(t, name=f"cross_{t.name}") for t in tensors]
            return [*cross, Tensor("cross_attn_attn_gate", (1,), "mixer")]
        return tensors

    def pair_width(self, spec: Block) -> int:
        """H (d + dv): 2 H d, H (d + dv) with values of their own width (d the key width: a
        head 1 wide broadcasts to its rotary width, ``ModelSpec.key_width``); twice that for
        differential attention (two maps, each applied to the values); plus the indexer's
        Hi di per key it scores (max-pooled per block of keys; with ``indexer_block`` it
        scores pooled blocks instead, :meth:`block_indexer_width`; transformers' eager indexer
        scores every pair before keeping its top k); 0 for a gated cross-attention block
        (text-only input skips it)."""
        if not spec.runs_on_text:
            return 0
        maps = 2 if spec.differential_attention else 1
        per_key = 0 if spec.indexer_block is not None else math.prod(key_indexer(spec))
        return per_key + maps * (spec.n_heads or 0) * (spec.key_width + value_width(spec))

    def compressed_pair_width(self, spec: Block) -> int:
        """With a key compressor, the attention's pair width plus the compressor's indexer's
        Hi di scores when the block has one (their weighted sum over the heads is no matrix
        product); 0 without a compressor."""
        if spec.kv_compress_rate is None:
            return 0
        return self.pair_width(spec) + (spec.indexer_heads or 0) * (spec.indexer_head_dim or 0)

    def key_rate(self, spec: Block) -> int | None:
        """The key compressor's ``kv_compress_rate``."""
        return spec.kv_compress_rate

    def block_indexer_width(self, spec: Block) -> int:
        """Hi di for an indexer that scores blocks of ``indexer_block`` keys, else 0."""
        return 0 if spec.indexer_block is None else math.prod(key_indexer(spec))

    def cache_width(self, spec: Block) -> int:
        """Keys and values 2 K d (K key/value heads, not H, or ``kv_cache_heads``,
        :func:`cached_heads`; K (d + dv) with values of their own width, d the key width as
        :meth:`pair_width` takes it), plus the indexer's
        key di; the keys alone when a compressed cache's values are its keys; 0 for a block
        that reads an earlier block's keys and values (``shares_kv``: that block's cache
        serves it) and for a gated cross-attention block, which text-only input skips (it
        would cache the other modality's keys and values)."""
        if not spec.runs_on_text or spec.shares_kv:
            return 0
        if spec.keys_as_values and spec.kv_compress_rate is not None:
            return cached_heads(spec) * spec.head_width
        _, indexer = key_indexer(spec)  # its one key head; a compressor's indexer caches elsewhere
        return cached_heads(spec) * (spec.key_width + value_width(spec)) + indexer

    def pooled_cache(self, spec: Block, length: int) -> int:
        """What the key compressor keeps in its cache layer after T tokens, as DeepSeek-V4's
        ``DeepseekV4HCACache`` / ``DeepseekV4CSACache`` hold it, with m = ``kv_compress_rate``,
        c = 2 with ``kv_compress_overlap`` (else 1), w = d plus the indexer's di when the block
        has one: the compressed keys floor(T / m) w; the tokens of the window not yet closed,
        their projections and gates, 2 (T mod m) c w; with overlap, once a window has closed,
        the last window's first series and its gates, 2 m w. 0 without a compressor."""
        m = spec.kv_compress_rate
        if m is None:
            return 0
        indexer = spec.indexer_head_dim if spec.indexer_heads is not None else None
        width = spec.head_width + (indexer or 0)
        series = 2 if spec.kv_compress_overlap else 1
        windows, waiting = divmod(length, m)
        overlap = 2 * m * width if spec.kv_compress_overlap and windows else 0
        return windows * width + 2 * waiting * series * width + overlap

    def formula(self, spec: Block, count: int) -> str | None:
        """Plain attention (q, k, v and output projections and their biases, nothing else):
        D x (H + 2K) x d + H x d x D + biases, when that gives ``count``."""
        if not _plain(spec):
            return None
        D, H, K, d = spec.d_model, spec.n_heads or 0, spec.kv_heads, spec.head_width
        qkv = (H + 2 * K) * d
        bias = (qkv if spec.qkv_bias else 0) + (D if spec.attn_out_bias else 0)
        if D * qkv + H * d * D + bias != count:  # more in the block's mixer row than these
            return None
        return (
            f"D x (H + 2K) x d + H x d x D + biases, H = {H}, K = {K}, d = {d} => "
            f"{D:,} x ({H} + 2 x {K}) x {d:,} + {H} x {d:,} x {D:,} + {bias:,} = {count:,}"
        )


def _plain(spec: Block) -> bool:
    """No sub-part that changes the projections' formula: values of the head width, no q/k
    norms, sinks, gates, shared keys and values or differential maps."""
    return (
        spec.v_head_dim is None
        and spec.qk_norm == "none"
        and not (
            spec.attention_sinks
            or spec.attention_gate
            or spec.attention_head_gate
            or spec.keys_as_values
            or spec.differential_attention
            or spec.encoder_attention
        )
    )


PART = Attention()
