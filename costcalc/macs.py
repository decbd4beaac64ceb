"""Multiply-accumulates (MACs), one pure integer function per quantity.

One MAC is one multiplication and the addition that accumulates it; FLOPs = 2 x MACs (stated
here once, and nowhere else). Only matrix products are counted: bias adds, norms, activations,
softmax, rotary rotations and embedding lookups cost 0 MACs. This is what PyTorch's
``torch.utils.flop_counter.FlopCounterMode`` counts (mm, addmm, bmm; halved), for a
``transformers`` model run with eager attention. Sources: seed 000 for the leading terms
((4 + 2r) B T D^2, 2 B T^2 D, B T D V); the families' modeling code for GQA, gated FFNs, mixture of
experts and embedding projections.

Convention for attention: by default the full T x T square of query-key pairs, as eager attention
computes it (the causal mask is applied after the products). ``causal=True`` counts only the
T (T + 1) / 2 pairs a causal mask keeps. A sliding window W < T keeps only the pairs inside the
window in both conventions (T W full, W (W + 1) / 2 + (T - W) W causal); eager attention in
``transformers`` masks those pairs but still computes the whole square. A bidirectional block
(no causal mask) keeps the pairs fewer than W positions apart on either side in both.

Text-only input, token ids and nothing else, is what is counted: a gated cross-attention block
(over another modality's states) is skipped by it, as transformers' Mllama skips it, and another
modality's experts (ERNIE 4.5 VL's vision experts) run on no text token: both cost 0.

Symbols: B sequences of T tokens, V vocabulary rows, D width, E token-table width, L layers,
H query heads, K key/value heads, d head width, h FFN hidden width, X experts, k active experts.
"""

from __future__ import annotations

from costcalc.anatomy.mixer import token_mixer
from costcalc.anatomy.per_layer import per_layer_model_tensors
from costcalc.anatomy.recurrent import recurrent_mixer
from costcalc.anatomy.residual import (
    altup_projection_tensors,
    stream_collapse_tensors,
    stream_mixing_macs,
)
from costcalc.errors import UsageError, check_choice
from costcalc.option_names import option
from costcalc.spec import ModelSpec
from costcalc.tensors import ffn_tensors, mixer_tensors

TRAINING_MULTIPLIER = 3
"""Forward + backward: the backward pass costs 2x the forward (input and weight gradients)."""

RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "full")
"""What a training step runs again in the backward pass instead of storing it."""

ATTENTION_KERNELS: tuple[str, ...] = ("eager", "sdpa", "flash")
"""How attention runs (transformers' ``attn_implementation``): ``eager`` computes and keeps the
T x T scores; ``sdpa`` (PyTorch's fused flash or memory-efficient kernels) and ``flash``
(FlashAttention) keep none and recompute them in the backward pass."""

TRAINING_RULES: dict[str, str] = {
    "none": "3 x forward",
    "selective": "3 x forward + attention pairs",
    "full": "4 x forward",
}
FUSED_RULE = "QK^T (half the attention pairs)"
"""What a fused attention kernel's backward adds: the scores QK^T, recomputed from Q and K."""


def check_recompute(mode: str) -> str:
    """``mode`` if it is a recompute mode; ``flash`` is named as the attention kernel it is."""
    if mode == "flash":
        raise UsageError(
            f"flash is an attention kernel, not a recompute mode: use "
            f"{option('--attention', 'flash')}"
        )
    return check_choice(mode, RECOMPUTE_MODES, "recompute mode")


def check_attention(kernel: str) -> str:
    """``kernel`` if it is one of :data:`ATTENTION_KERNELS`."""
    return check_choice(kernel, ATTENTION_KERNELS, "attention kernel")


def stores_scores(kernel: str) -> bool:
    """Whether attention keeps the T x T scores for the backward: only eager attention."""
    return kernel == "eager"


def training_rule(recompute: str, kernel: str = "eager") -> str:
    """A training step in words: '3 x forward', '3 x forward + QK^T (half the attention pairs)'."""
    rule = TRAINING_RULES[recompute]
    return rule if stores_scores(kernel) else f"{rule} + {FUSED_RULE}"


def flops(macs: int) -> int:
    """FLOPs = 2 x MACs: a multiply and an add."""
    return 2 * macs


def training_macs(
    forward: int, attention_pair: int, recompute: str = "none", kernel: str = "eager"
) -> int:
    """One training step: forward + backward = 3 x forward (the backward computes input and
    weight gradients, 2 x forward; Kaplan et al. 2020, Sec. 2.1), plus what recomputation runs
    again: ``full`` the whole forward (4 x forward); ``selective`` the attention core's products,
    QK^T and weights x V (Korthikanti et al. 2022, Sec. 5). A fused kernel (``sdpa``, ``flash``)
    also recomputes the scores QK^T from Q and K in its backward (Dao 2023, Algorithm 2; what
    ``torch.utils.flop_counter.sdpa_backward_flop_count`` counts): half the attention pairs."""
    again = {"none": 0, "selective": attention_pair, "full": forward}[recompute]
    fused = 0 if stores_scores(kernel) else attention_pair // 2
    return TRAINING_MULTIPLIER * forward + again + fused


# Per token: terms linear in the number of tokens.


def _stack_macs_per_token(spec: ModelSpec, parts: tuple[str, ...], uses: tuple[str, ...]) -> int:
    """MACs one token spends on the block tensors of ``parts`` used as ``uses``, all layers
    that text-only input runs."""
    return sum(
        stack.n_layers * t.macs_per_token(stack.experts_active)
        for stack in spec.stacks
        if stack.runs_on_text
        for part in parts
        for t in (mixer_tensors(stack) if part == "mixer" else ffn_tensors(stack))
        if t.use in uses
    )


def attention_projection_macs_per_token(spec: ModelSpec) -> int:
    """Q, K, V and output projections of all blocks, one token: L (D (H + 2K) d + H d D)
    (every matrix of the token mixer, MLA's low-rank paths included; of a mixture of attention
    heads, the H / K query and output experts a token runs)."""
    return _stack_macs_per_token(spec, ("mixer",), ("matmul", "experts"))


def ffn_macs_per_token(spec: ModelSpec) -> int:
    """FFNs of all blocks, one token: L k (D h + h D); a gated FFN's first projection is 2h wide.

    A mixture of experts runs only the k experts a token is routed to (k = 1 when dense), and
    its shared expert.
    """
    return _stack_macs_per_token(spec, ("ffn",), ("matmul", "experts"))


def router_macs_per_token(spec: ModelSpec) -> int:
    """Mixture-of-experts routers of all blocks (the FFN's and a mixture of attention heads'),
    one token: L D X each; 0 for dense blocks."""
    return _stack_macs_per_token(spec, ("mixer", "ffn"), ("router",))


def embedding_projection_macs_per_token(spec: ModelSpec) -> int:
    """Project in (E -> D) and out (D -> E) when the token table is narrower: 2 E D, else 0;
    plus the projection of the token embedding into every layer's input: D L P (Gemma 4)."""
    narrow = 0 if spec.embed_width == spec.d_model else 2 * spec.embed_width * spec.d_model
    return narrow + sum(t.macs_per_token(1) for t in per_layer_model_tensors(spec))


def lm_head_macs_per_token(spec: ModelSpec) -> int:
    """Logits for one token: E V' (V' the head's rows), tied to the table or not."""
    return spec.embed_width * spec.output_rows


# Full-sequence forward of B sequences of T tokens, no KV cache.


def attention_projection_macs(spec: ModelSpec, batch: int, length: int) -> int:
    """B T L (D (H + 2K) d + H d D); 4 B T D^2 per block for multi-head attention."""
    return batch * length * attention_projection_macs_per_token(spec)


def ffn_macs(spec: ModelSpec, batch: int, length: int) -> int:
    """B T L k (D h + h D); 2 r B T D^2 per block for a plain r x MLP."""
    return batch * length * ffn_macs_per_token(spec)


def router_macs(spec: ModelSpec, batch: int, length: int) -> int:
    """B T L D X (mixture of experts only)."""
    return batch * length * router_macs_per_token(spec)


def projection_ffn_macs(spec: ModelSpec, batch: int, length: int) -> int:
    """Every weight matrix inside the blocks: projections + FFN + router.

    (4 + 2r) B T D^2 per block for a GPT-2 block (seed 000).
    """
    return (
        attention_projection_macs(spec, batch, length)
        + ffn_macs(spec, batch, length)
        + router_macs(spec, batch, length)
    )


def attention_pairs(
    length: int,
    causal: bool = False,
    window: int | None = None,
    chunk: int | None = None,
    bidirectional: bool = False,
) -> int:
    """Query-key pairs of one sequence and one head.

    Full: T^2 (T W when a window W < T). Causal: T (T + 1) / 2, or with a window W < T the
    W (W + 1) / 2 pairs of the first W queries plus W for each of the other T - W. Chunked
    attention (chunks of C) keeps the pairs inside each chunk: q C^2 + R^2 (full) or
    q C (C + 1) / 2 + R (R + 1) / 2 (causal), T = q C + R. Bidirectional (no causal mask,
    either convention): the pairs |i - j| < W, T (2m + 1) - m (m + 1) with m = min(W, T) - 1
    (T^2 without a window), the mask transformers' Gemma3TextModel builds from
    ``_bidirectional_window_overlay`` (models/gemma3/modeling_gemma3.py).
    """
    T = length
    causal = causal and not bidirectional
    if chunk is not None and chunk < T:
        q, rest = divmod(T, chunk)
        return q * attention_pairs(chunk, causal) + attention_pairs(rest, causal)
    W = T if window is None else min(window, T)
    if bidirectional:
        m = W - 1
        return T * (2 * m + 1) - m * (m + 1)
    if not causal:
        return T * W
    return W * (W + 1) // 2 + (T - W) * W


def pair_window(spec: ModelSpec) -> int | None:
    """The window a block's forward keeps pairs within: ``bidirectional_window`` where a
    bidirectional block gives one (Gemma 4 masks keys at most W away, W + 1 in this
    convention, and caches W: masking_utils' ``sliding_window_bidirectional_overlay``), else
    ``sliding_window``, which its KV cache and decoding keep too."""
    if spec.bidirectional_attention and spec.bidirectional_window is not None:
        return spec.bidirectional_window
    return spec.sliding_window


def stack_pairs(spec: ModelSpec, length: int, causal: bool = False) -> int:
    """:func:`attention_pairs` of one block of ``spec``: its window, chunk and mask."""
    return attention_pairs(
        length, causal, pair_window(spec), spec.attention_chunk, spec.bidirectional_attention
    )


def windows_below(spec: ModelSpec, length: int) -> dict[str, set[int]]:
    """The sliding windows and attention chunks of ``spec``'s attention stacks shorter than the
    sequence (the spans that drop query-key pairs), by kind."""
    attending = [stack for stack in spec.stacks if stack.has_attention]
    windows = {w for s in attending if (w := pair_window(s)) is not None}
    chunks = {s.attention_chunk for s in attending if s.attention_chunk is not None}
    found = {"Sliding window": windows, "Attention chunk": chunks}
    return {kind: {n for n in spans if n < length} for kind, spans in found.items()}


def window_applies(spec: ModelSpec, length: int) -> bool:
    """Whether a sliding window or attention chunk shorter than the sequence drops pairs."""
    return any(windows_below(spec, length).values())


def pair_width(spec: ModelSpec) -> int:
    """MACs of one query-key pair over all heads of one block, its token mixer's
    (:meth:`costcalc.anatomy.mixer.TokenMixer.pair_width`): 2 H d for attention (H (d + dv)
    with values of their own width, twice for differential attention, plus a sparse-attention
    indexer's scores), H (n + r + v) for MLA (plus its indexer's Hi (di + 1)); transformers'
    eager indexers score every pair before keeping their top k; 0 without attention, and 0 for a
    gated cross-attention block (text-only input skips it)."""
    return token_mixer(spec.mixer).pair_width(spec)


def block_indexer_width(spec: ModelSpec) -> int:
    """MACs of one query and one pooled block of keys: Hi di for an indexer that scores blocks
    of ``indexer_block`` keys, else 0."""
    return token_mixer(spec.mixer).block_indexer_width(spec)


def indexer_blocks(spec: ModelSpec, first: int, last: int) -> int:
    """Complete blocks of ``indexer_block`` m keys the queries at positions first..last score:
    floor((p + 1) / m) each, the keys a query sees (its own mask, causal however the attention
    is counted); 0 without pooled blocks or for an empty range."""
    m = spec.indexer_block
    if m is None or last < first:
        return 0
    return compressed_keys_below(last + 1, m) - compressed_keys_below(first, m)


def key_rate(spec: ModelSpec) -> int | None:
    """Tokens pooled into one key besides the block's own keys: the key compressor's
    ``kv_compress_rate``, or the MLA indexer's ``indexer_key_pool`` (None: neither)."""
    return token_mixer(spec.mixer).key_rate(spec)


def skipped_layers(spec: ModelSpec) -> int:
    """Layers text-only input skips: the gated cross-attention blocks (0 for most models)."""
    return sum(stack.n_layers for stack in spec.stacks if not stack.runs_on_text)


SKIPPED_WORDS = (
    "gated cross-attention layers (over another modality's states, such as image features) "
    "are counted in the parameters; text-only input skips them, as transformers does"
)
"""How the notes name what text-only input skips, after the number of those layers."""


def attention_pair_macs(spec: ModelSpec, batch: int, length: int, causal: bool = False) -> int:
    """Q K^T and weights x V: 2 B L H d pairs(T); 2 B T^2 D per block for a plain block; plus
    the pairs with compressed keys (:func:`compressed_pairs`) and an indexer's pooled blocks
    (:func:`indexer_blocks`).

    Grouped key/value heads are repeated to H heads before the products, so H (not K) counts.
    """
    return batch * sum(
        stack.n_layers
        * (
            pair_width(stack) * stack_pairs(stack, length, causal)
            + compressed_pair_width(stack) * compressed_pairs(stack, length, causal)
            + block_indexer_width(stack) * indexer_blocks(stack, 0, length - 1)
        )
        for stack in spec.stacks
    )


def compressed_pair_width(spec: ModelSpec) -> int:
    """MACs of one query and one compressed key over all heads: the attention's H (d + dv), plus
    the indexer's Hi di scores when the block has one (their weighted sum over the heads is no
    matrix product); with pooled indexer keys on MLA (``indexer_key_pool``) the indexer's
    Hi (di + 1) per query and pooled key; 0 without either."""
    return token_mixer(spec.mixer).compressed_pair_width(spec)


def compressed_pairs(spec: ModelSpec, length: int, causal: bool = False) -> int:
    """Query-compressed-key pairs of one sequence and one head, m = ``kv_compress_rate``: T
    floor(T / m) as transformers' eager attention scores them (every query against every
    compressed key, masked after); causal: the sum over queries t of the floor((t + 1) / m) keys
    whose windows closed by t; m = ``indexer_key_pool`` for pooled indexer keys (every
    complete pool). 0 without either."""
    m = key_rate(spec)
    if m is None:
        return 0
    return compressed_keys_below(length, m) if causal else length * (length // m)


def compressed_keys_below(n: int, rate: int) -> int:
    """sum(floor(k / m) for k in 1..n) in closed form, n = q m + r: m q (q - 1) / 2 + q (r + 1)."""
    q, r = divmod(n, rate)
    return rate * q * (q - 1) // 2 + q * (r + 1)


def residual_stream_macs_per_token(spec: ModelSpec) -> int:
    """Products of several residual streams beyond the weight matrices counted with the blocks:
    L x each block's mixing (:func:`costcalc.anatomy.residual.stream_mixing_macs`: 2 n^2 D for
    hyper-connections that mix, n^2 D + n D for AltUp), the last collapse of the
    hyper-connections' streams (n x n D; 2 r n D with ``stream_rank``) and AltUp's projections
    into and out of its streams (2 (n - 1) D^2). 0 with one stream and no AltUp."""
    model = stream_collapse_tensors(spec) + altup_projection_tensors(spec)
    return spec.n_layers * stream_mixing_macs(spec) + sum(t.macs_per_token(1) for t in model)


def residual_stream_macs(spec: ModelSpec, batch: int, length: int) -> int:
    """B T x the hyper-connections' mixing and last collapse (0 with one stream)."""
    return batch * length * residual_stream_macs_per_token(spec)


def embedding_projection_macs(spec: ModelSpec, batch: int, length: int) -> int:
    """B T 2 E D when the token table is narrower than the model, else 0."""
    return batch * length * embedding_projection_macs_per_token(spec)


def lm_head_macs(spec: ModelSpec, batch: int, length: int) -> int:
    """B T E V: logits for every position, tied or not."""
    return batch * length * lm_head_macs_per_token(spec)


def conv_macs(spec: ModelSpec, batch: int, length: int) -> int:
    """A recurrent mixer's depthwise causal conv, one block: B C k (T + k - 1), since the
    conv is padded by k - 1 on both sides and sliced to T afterwards; 0 for other mixers (and
    for lightning attention, which has no conv)."""
    kind = spec.recurrent_mixer
    if kind is None:
        return 0
    conv = recurrent_mixer(kind).conv(spec)
    return batch * conv.channels * conv.kernel * (length + conv.kernel - 1)


def scan_macs(spec: ModelSpec, batch: int, length: int) -> int:
    """The products of one block's scan, as transformers runs it on CPU (no kernels): each
    recurrent mixer's own (:meth:`costcalc.anatomy.recurrent.RecurrentMixer.scan_macs`); 0 for
    attention, whose pairs are counted apart."""
    kind = spec.recurrent_mixer
    return 0 if kind is None else recurrent_mixer(kind).scan_macs(spec, batch, length)


def mixer_sequence_macs(spec: ModelSpec, batch: int, length: int) -> int:
    """Recurrent mixers' products that are not per-token matrices, all layers: the depthwise
    convs and the scans (0 for a model of attention blocks only)."""
    return sum(
        stack.n_layers * (conv_macs(stack, batch, length) + scan_macs(stack, batch, length))
        for stack in spec.stacks
    )


def forward_macs(spec: ModelSpec, batch: int, length: int, causal: bool = False) -> int:
    """The whole forward pass: blocks + attention pairs + recurrent mixers' convs and scans +
    embedding projections + LM head."""
    return (
        projection_ffn_macs(spec, batch, length)
        + attention_pair_macs(spec, batch, length, causal)
        + mixer_sequence_macs(spec, batch, length)
        + residual_stream_macs(spec, batch, length)
        + embedding_projection_macs(spec, batch, length)
        + lm_head_macs(spec, batch, length)
    )


# Decoding with a KV cache.


def cached_keys(spec: ModelSpec, position: int) -> int:
    """Keys the token at ``position`` (0-based) attends to in a block of ``spec``: itself and
    every earlier token, the last W of them under a sliding window, or those of its own chunk."""
    keys = position + 1
    if spec.attention_chunk is not None:
        return position % spec.attention_chunk + 1
    return keys if spec.sliding_window is None else min(keys, spec.sliding_window)


def linear_macs_per_token(spec: ModelSpec) -> int:
    """Every matrix product whose cost is the same for each token (all but attention pairs)."""
    return (
        attention_projection_macs_per_token(spec)
        + ffn_macs_per_token(spec)
        + router_macs_per_token(spec)
        + residual_stream_macs_per_token(spec)
        + embedding_projection_macs_per_token(spec)
        + lm_head_macs_per_token(spec)
    )


def decode_token_macs(spec: ModelSpec, position: int, batch: int = 1) -> int:
    """One token at ``position`` decoded with a KV cache, for each of B sequences:
    B (linear terms + 2 L H d keys(position))."""
    refuse_recurrent_decode(spec)
    pairs = sum(
        stack.n_layers
        * (
            pair_width(stack) * cached_keys(stack, position)
            + compressed_pair_width(stack) * _compressed_over(stack, position, position)
            + block_indexer_width(stack) * indexer_blocks(stack, position, position)
        )
        for stack in spec.stacks
    )
    return batch * (linear_macs_per_token(spec) + pairs)


def decode_steps(generated: int) -> int:
    """Forward passes after the prefill: the prefill yields the first new token, each later
    one needs a pass over the token before it."""
    return generated - 1


def decode_macs(spec: ModelSpec, prompt: int, generated: int, batch: int = 1) -> int:
    """All decode steps after a prompt of P tokens: positions P .. P + N - 2, one token each.

    Closed form of the sum of ``decode_token_macs`` over those positions.
    """
    refuse_recurrent_decode(spec)
    steps = decode_steps(generated)
    last = prompt + steps - 1
    pairs = sum(
        stack.n_layers
        * (
            pair_width(stack) * _keys_over(stack, prompt, last)
            + compressed_pair_width(stack) * _compressed_over(stack, prompt, last)
            + block_indexer_width(stack) * indexer_blocks(stack, prompt, last)
        )
        for stack in spec.stacks
    )
    return batch * (steps * linear_macs_per_token(spec) + pairs)


def _compressed_over(spec: ModelSpec, first: int, last: int) -> int:
    """Compressed keys the tokens at positions first..last meet: floor((p + 1) / m) each, the
    windows closed by then (0 without a compressor or pooled keys, or for an empty range)."""
    m = key_rate(spec)
    if m is None or last < first:
        return 0
    return compressed_keys_below(last + 1, m) - compressed_keys_below(first, m)


def refuse_recurrent_decode(spec: ModelSpec) -> None:
    """Cached decoding of recurrent mixers (conv and state updates) is not modelled: refuse
    rather than count their projections alone."""
    kinds = sorted({stack.recurrent_mixer or "" for stack in spec.stacks if stack.recurrent})
    if kinds:
        raise UsageError(
            f"decoding MACs of {', '.join(kinds)} blocks (cached conv and state updates) are not "
            "modelled; the full-sequence forward (prefill) is"
        )


def _keys_over(spec: ModelSpec, first: int, last: int) -> int:
    """sum(cached_keys(spec, p) for p in first..last), in closed form."""
    C = spec.attention_chunk
    if C is None:
        return _sum_of_min(first + 1, last + 1, spec.sliding_window)
    return _chunk_keys_below(last + 1, C) - _chunk_keys_below(first, C)


def _chunk_keys_below(n: int, chunk: int) -> int:
    """sum(p % C + 1 for p in 0..n-1): whole chunks C (C + 1) / 2 each, then R (R + 1) / 2."""
    q, rest = divmod(n, chunk)
    return q * chunk * (chunk + 1) // 2 + rest * (rest + 1) // 2


def _sum_of_min(first: int, last: int, cap: int | None) -> int:
    """sum(min(k, cap) for k in first..last), in closed form (0 for an empty range)."""
    if last < first:
        return 0
    below = last if cap is None else min(last, cap)
    uncapped = (first + below) * (below - first + 1) // 2 if below >= first else 0
    capped = 0 if cap is None else max(0, last - max(cap, first - 1)) * cap
    return uncapped + capped
