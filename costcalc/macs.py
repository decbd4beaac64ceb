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
``transformers`` masks those pairs but still computes the whole square.

Symbols: B sequences of T tokens, V vocabulary rows, D width, E token-table width, L layers,
H query heads, K key/value heads, d head width, h FFN hidden width, X experts, k active experts.
"""

from __future__ import annotations

from costcalc.spec import ModelSpec

TRAINING_MULTIPLIER = 3
"""Forward + backward: the backward pass costs 2x the forward (input and weight gradients)."""

RECOMPUTE_MODES: tuple[str, ...] = ("none", "flash", "selective", "full")
"""What a training step runs again in the backward pass instead of storing it."""

TRAINING_RULES: dict[str, str] = {
    "none": "3 x forward",
    "flash": "3 x forward + QK^T (half the attention pairs)",
    "selective": "3 x forward + attention pairs",
    "full": "4 x forward",
}


def flops(macs: int) -> int:
    """FLOPs = 2 x MACs: a multiply and an add."""
    return 2 * macs


def training_macs(forward: int, attention_pair: int, recompute: str = "none") -> int:
    """One training step: forward + backward = 3 x forward (the backward computes input and
    weight gradients, 2 x forward; Kaplan et al. 2020, Sec. 2.1), plus what recomputation runs
    again: ``full`` the whole forward (4 x forward); ``selective`` the attention core's products,
    QK^T and weights x V (Korthikanti et al. 2022, Sec. 5); ``flash`` the scores QK^T, which
    FlashAttention's backward recomputes from Q and K (Dao 2023, Algorithm 2): half the pairs."""
    again = {"none": 0, "flash": attention_pair // 2, "selective": attention_pair, "full": forward}
    return TRAINING_MULTIPLIER * forward + again[recompute]


# Per token: terms linear in the number of tokens.


def attention_projection_macs_per_token(spec: ModelSpec) -> int:
    """Q, K, V and output projections of all blocks, one token: L (D (H + 2K) d + H d D)."""
    D, H, K, d = spec.d_model, spec.n_heads, spec.kv_heads, spec.head_width
    return spec.n_layers * (D * (H + 2 * K) * d + H * d * D)


def ffn_macs_per_token(spec: ModelSpec) -> int:
    """FFNs of all blocks, one token: L k (D h + h D); a gated FFN's first projection is 2h wide.

    A mixture of experts runs only the k experts a token is routed to (k = 1 when dense).
    """
    D, h = spec.d_model, spec.ffn_width
    first = 2 * h if spec.gated else h
    return spec.n_layers * spec.experts_active * (D * first + h * D)


def router_macs_per_token(spec: ModelSpec) -> int:
    """Mixture-of-experts routers of all blocks, one token: L D X; 0 for dense blocks."""
    return spec.n_layers * spec.d_model * spec.moe_experts if spec.moe_experts is not None else 0


def embedding_projection_macs_per_token(spec: ModelSpec) -> int:
    """Project in (E -> D) and out (D -> E) when the token table is narrower: 2 E D, else 0."""
    return 0 if spec.embed_width == spec.d_model else 2 * spec.embed_width * spec.d_model


def lm_head_macs_per_token(spec: ModelSpec) -> int:
    """Logits for one token: E V, the same whether or not the matrix is tied to the table."""
    return spec.embed_width * spec.vocab_rows


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


def attention_pairs(length: int, causal: bool = False, window: int | None = None) -> int:
    """Query-key pairs of one sequence and one head.

    Full: T^2 (T W when a window W < T). Causal: T (T + 1) / 2, or with a window W < T the
    W (W + 1) / 2 pairs of the first W queries plus W for each of the other T - W.
    """
    T = length
    W = T if window is None else min(window, T)
    if not causal:
        return T * W
    return W * (W + 1) // 2 + (T - W) * W


def window_applies(spec: ModelSpec, length: int) -> bool:
    """Whether the spec's sliding window is shorter than the sequence and so drops pairs."""
    return spec.sliding_window is not None and spec.sliding_window < length


def attention_pair_macs(spec: ModelSpec, batch: int, length: int, causal: bool = False) -> int:
    """Q K^T and weights x V: 2 B L H d pairs(T); 2 B T^2 D per block for a plain block.

    Grouped key/value heads are repeated to H heads before the products, so H (not K) counts.
    """
    pairs = attention_pairs(length, causal, spec.sliding_window)
    return 2 * batch * spec.n_layers * spec.n_heads * spec.head_width * pairs


def embedding_projection_macs(spec: ModelSpec, batch: int, length: int) -> int:
    """B T 2 E D when the token table is narrower than the model, else 0."""
    return batch * length * embedding_projection_macs_per_token(spec)


def lm_head_macs(spec: ModelSpec, batch: int, length: int) -> int:
    """B T E V: logits for every position, tied or not."""
    return batch * length * lm_head_macs_per_token(spec)


def forward_macs(spec: ModelSpec, batch: int, length: int, causal: bool = False) -> int:
    """The whole forward pass: blocks + attention pairs + embedding projections + LM head."""
    return (
        projection_ffn_macs(spec, batch, length)
        + attention_pair_macs(spec, batch, length, causal)
        + embedding_projection_macs(spec, batch, length)
        + lm_head_macs(spec, batch, length)
    )


# Decoding with a KV cache.


def cached_keys(spec: ModelSpec, position: int) -> int:
    """Keys the token at ``position`` (0-based) attends to: itself and every earlier token,
    or the last W of them under a sliding window."""
    keys = position + 1
    return keys if spec.sliding_window is None else min(keys, spec.sliding_window)


def linear_macs_per_token(spec: ModelSpec) -> int:
    """Every matrix product whose cost is the same for each token (all but attention pairs)."""
    return (
        attention_projection_macs_per_token(spec)
        + ffn_macs_per_token(spec)
        + router_macs_per_token(spec)
        + embedding_projection_macs_per_token(spec)
        + lm_head_macs_per_token(spec)
    )


def decode_token_macs(spec: ModelSpec, position: int, batch: int = 1) -> int:
    """One token at ``position`` decoded with a KV cache, for each of B sequences:
    B (linear terms + 2 L H d keys(position))."""
    pairs = 2 * spec.n_layers * spec.n_heads * spec.head_width * cached_keys(spec, position)
    return batch * (linear_macs_per_token(spec) + pairs)


def decode_steps(generated: int) -> int:
    """Forward passes after the prefill: the prefill yields the first new token, each later
    one needs a pass over the token before it."""
    return generated - 1


def decode_macs(spec: ModelSpec, prompt: int, generated: int, batch: int = 1) -> int:
    """All decode steps after a prompt of P tokens: positions P .. P + N - 2, one token each.

    Closed form of the sum of ``decode_token_macs`` over those positions.
    """
    steps = decode_steps(generated)
    keys = _sum_of_min(prompt + 1, prompt + steps, spec.sliding_window)
    pairs = 2 * spec.n_layers * spec.n_heads * spec.head_width * keys
    return batch * (steps * linear_macs_per_token(spec) + pairs)


def _sum_of_min(first: int, last: int, cap: int | None) -> int:
    """sum(min(k, cap) for k in first..last), in closed form (0 for an empty range)."""
    if last < first:
        return 0
    below = last if cap is None else min(last, cap)
    uncapped = (first + below) * (below - first + 1) // 2 if below >= first else 0
    capped = 0 if cap is None else max(0, last - max(cap, first - 1)) * cap
    return uncapped + capped
