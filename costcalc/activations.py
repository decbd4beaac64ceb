"""Activation memory of a training step: the tensors autograd saves for the backward pass.

For the block kinds that were measured (tests/golden/activation_reference.json: small GPT-2,
Llama, Qwen3, Mixtral, Qwen3-MoE, Gemma 2, Gemma 3, OLMo 2, Qwen2-MoE and gpt-oss models run
forward with their loss under ``torch.autograd.graph.saved_tensors_hooks``, each storage counted
once), the bytes are what transformers' modeling code saves, term by term: exact for that
implementation in the training dtype, but the conventions below. A block is measured when its
mixer is plain attention (sinks allowed; no MLA, output or per-head gate, low-rank queries,
grouped output, key compressor, shared keys and values, per-layer inputs or residual streams),
it has 2 norms (pre- or post-norm) or 4 (sandwich), its query/key norms (if any) are one weight
for all heads or over whole projections, and its values are as wide as the keys (no
``v_head_dim``, no ``keys_as_values``); its FFN may be a plain MLP, a gated FFN or routed experts,
with or without a shared expert (and its sigmoid gate). Other blocks keep the Korthikanti et al.
2022 estimate, and the output says so.

Symbols: N = B T tokens, e bytes per activation (the training dtype), D width, H query heads,
K key/value heads, d head width, F FFN width, S shared expert width, E experts, k experts per
token, R = N k routed rows, V vocabulary rows, r rotary width. Integer formulas only.

Conventions: dropout off and no KV cache in the training forward (``use_cache=False``); the plain
MLP's activation is GPT-2's ``gelu_new`` written out (4 saved tensors; ``F.gelu`` or ReLU save
1); the eager softmax is taken in the activation dtype for learned positions (GPT-2's code)
and in fp32 otherwise (Llama-derived code); LayerNorm's mean and rstd in the activation dtype, as
on CPU (CUDA keeps them in fp32, 4 N bytes more per norm in 16-bit); the routed experts are
transformers' default ``grouped_mm`` implementation. What the spec does not tell apart, counted
as the most common code does: RMSNorm applies its weight after casting back to the dtype
(Llama; Gemma, OLMo 2 and gpt-oss multiply in fp32 and keep the normalized input in fp32,
(4 - e) n w more per norm, Gemma's 1 + w another 4 w); the router is Mixtral's (fp32 softmax
over E, top-k weights divided by their sum); the gated activation is a plain SwiGLU or GeGLU
(gpt-oss's clamped SwiGLU saves 3 e R F more); no logit soft-capping (Gemma 2 keeps the tanh
of the scores under eager attention, e B H T^2, and of the logits, e N V); one rotary table of
width r in the dtype (Gemma 3 builds a second one for its local layers, OLMo 2 keeps its cos and
sin in fp32, gpt-oss's are r / 2 wide).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from costcalc.blocks import BLOCK_FIELDS
from costcalc.spec import ModelSpec
from costcalc.units import DTYPE_BITS

MEASURED_SOURCE = (
    "measured: the tensors transformers 5.24's modeling code saves for backward under torch "
    "2.13, each storage once (tests/golden/activation_reference.json; docs/memory.md lists the "
    "layouts measured and the code details counted by convention)"
)
CONVENTION_SOURCE = (
    "sandwich norms, sinks, whole-projection query/key norms and shared experts counted with "
    "Llama's and Mixtral's dtypes: Gemma 2/3, OLMo 2 and gpt-oss save 11-24% more in bf16, "
    "an ESTIMATE"
)
KORTHIKANTI_SOURCE = (
    "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, "
    "Sec. 4 (16-bit activations, no parallelism)"
)


@dataclass(frozen=True)
class Term:
    """Bytes one kind of saved tensor takes: ``symbols`` (with N, e, D ...), what it is, and
    whether it is an s x s tensor of eager attention (dropped by selective recomputation)."""

    symbols: str
    what: str
    bytes: int
    scores: bool = False


def activation_width(dtype: str) -> int:
    """e: bytes per activation element of the training dtype."""
    return DTYPE_BITS[dtype] // 8


MEASURED_KEYS = frozenset(
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
        "attention_chunk",
        "ffn",
        "ffn_mult",
        "ffn_hidden",
        "ffn_bias",
        "fused_gate_up",
        "ffn_act_params",
        "moe_experts",
        "moe_top_k",
        "moe_ffn_hidden",
        "moe_shared_ffn_hidden",
        "moe_shared_gate",
        "moe_router_bias",
        "norms_per_block",
    }
)
"""The block keys whose every value the measured terms cover; any other block key away from its
default (a new kind of block among them) makes the block unmeasured."""


MEASURED_QK_NORMS = frozenset({"none", "head", "full"})
"""The query/key norms the measured terms cover (:func:`qk_norm_terms`); any other kind makes
the block unmeasured."""


def measured(spec: ModelSpec) -> bool:
    """Whether a block of ``spec`` is of a measured kind (see the module docstring): attention
    with 2 or 4 norms and query/key norms of a measured kind, the other block keys at their
    defaults, one residual stream, no AltUp and no per-layer inputs."""
    fields = type(spec).model_fields
    return (
        spec.mixer == "attention"
        and spec.norms_per_block in (2, 4)
        and spec.qk_norm in MEASURED_QK_NORMS
        and all(
            getattr(spec, name) == fields[name].default
            for name in BLOCK_FIELDS
            if name not in MEASURED_KEYS
        )
        and spec.residual_streams == 1
        and spec.altup_streams is None
        and spec.per_layer_input_width is None
    )


def _times(count: int, symbols: str) -> str:
    return symbols if count == 1 else f"{count} x {symbols}"


# --------------------------------------------------------------------------- norms


def norm_terms(
    spec: ModelSpec, e: int, rows: tuple[int, str], width: tuple[int, str], norms: int, label: str
) -> list[Term]:
    """``norms`` norms over ``rows`` rows of ``width`` (value, symbols). RMSNorm
    (``x.to(float32)``, ``pow(2)``, ``rsqrt``, ``weight * x.to(dtype)``) saves the fp32 input
    4 n w, the rsqrt 4 n and the normalized input e n w; LayerNorm (``native_layer_norm``) the
    input e n w and its mean and rstd 2 e n."""
    (n, n_sym), (w, w_sym) = rows, width
    if spec.norm == "rmsnorm":
        return [
            Term(_times(norms, f"4 {n_sym} {w_sym}"), f"{label} inputs in fp32", norms * 4 * n * w),
            Term(_times(norms, f"4 {n_sym}"), f"{label} rsqrt, fp32", norms * 4 * n),
            Term(_times(norms, f"e {n_sym} {w_sym}"), f"{label} normalized", norms * e * n * w),
        ]
    return [
        Term(_times(norms, f"e {n_sym} {w_sym}"), f"{label} inputs", norms * e * n * w),
        Term(_times(norms, f"2 e {n_sym}"), f"{label} mean and rstd", norms * 2 * e * n),
    ]


def projection_inputs(e: int, N: int, D: int, count: int, what: str) -> Term:
    """A norm's output, saved by the projection that reads it: e N D each."""
    return Term(_times(count, "e N D"), what, count * e * N * D)


def qk_norm_terms(spec: ModelSpec, e: int, N: int) -> list[Term]:
    """Query and key norms, per head (Qwen3, Gemma 3: rows N H and N K of width d) or over
    whole projections (OLMo 2: rows N of width H d and K d); their outputs go to the rotation,
    which saves none of them."""
    H, K, d = spec.n_heads or 0, spec.kv_heads, spec.head_width
    if spec.qk_norm == "head":
        q = norm_terms(spec, e, (N * H, "N H"), (d, "d"), 1, "query norm")
        return q + norm_terms(spec, e, (N * K, "N K"), (d, "d"), 1, "key norm")
    if spec.qk_norm == "full":
        q = norm_terms(spec, e, (N, "N"), (H * d, "H d"), 1, "query norm")
        return q + norm_terms(spec, e, (N, "N"), (K * d, "K d"), 1, "key norm")
    return []


# --------------------------------------------------------------------------- attention


def attention_terms(spec: ModelSpec, e: int, batch: int, length: int, kernel: str) -> list[Term]:
    """What attention saves. Eager (``eager_attention_forward``): queries and the keys and
    values ``repeat_kv`` expands to H heads (copies for the matmuls), 3 e N H d; the s x s
    softmax output, in fp32 in Llama-derived code (4 B H T^2, then its copy in the dtype
    e B H T^2 unless that is fp32), in the dtype in GPT-2's (learned positions; e B H T^2); the
    output made contiguous for the output projection, e N H d. With attention sinks (gpt-oss's
    code) the softmax runs in the dtype over the scores and the sink logit, e B H T (T + 1),
    after subtracting the row maximum, whose int64 indices are saved, 8 B H T. SDPA (PyTorch's
    flash kernel, GQA without expansion) and flash (with sinks too): queries, keys, values
    (rotated ones are new tensors; unrotated ones, and rotary values of a fused projection, keep
    the projection's storage), the output e N H d (the output projection reads it in place) and
    an fp32 log-sum-exp per query and head, 4 B H T."""
    H, K, d = spec.n_heads or 0, spec.kv_heads, spec.head_width
    B, T, N = batch, length, batch * length
    out = Term("e N H d", "attention output", e * N * H * d)
    rotary = spec.position == "rotary"
    if kernel == "eager":
        terms = [Term("3 e N H d", "queries, keys and values (H heads)", 3 * e * N * H * d), out]
        if spec.attention_sinks:
            probs = e * B * H * T * (T + 1)
            return [
                *terms,
                Term("e B H T (T + 1)", "probabilities with the sink column", probs, True),
                Term("8 B H T", "row maximum indices, int64", 8 * B * H * T),
            ]
        if spec.position == "learned":
            return [*terms, Term("e B H T^2", "attention probabilities", e * B * H * T * T, True)]
        terms.append(Term("4 B H T^2", "softmax output, fp32", 4 * B * H * T * T, True))
        if e != 4:
            terms.append(Term("e B H T^2", "probabilities in the dtype", e * B * H * T * T, True))
        return terms
    what = "fused q/k/v output" if spec.fused_qkv else "queries, keys, values"
    fused = Term("e N (H + 2K) d", what, e * N * (H + 2 * K) * d)
    if not rotary:
        qkv = [fused]
    else:
        qk = Term("e N (H + K) d", "rotated queries and keys", e * N * (H + K) * d)
        qkv = [qk, fused if spec.fused_qkv else Term("e N K d", "values", e * N * K * d)]
    return [*qkv, out, Term("4 B H T", "log-sum-exp, fp32", 4 * B * H * T)]


# --------------------------------------------------------------------------- FFN and experts


def ffn_terms(
    spec: ModelSpec, e: int, rows: tuple[int, str], width: tuple[int, str], label: str = ""
) -> list[Term]:
    """A gated FFN (``down(act(gate(x)) * up(x))``): gate and up outputs, the activation's
    output and the product, 4 e n F; a plain MLP (GPT-2's ``gelu_new``: its input, tanh
    output, 0.5 x and 1 + tanh, and the down projection's input), 5 e n F."""
    (n, n_sym), (f, f_sym) = rows, width
    if spec.ffn == "none":
        return []
    if spec.gated:
        what = f"{label}gate, up, activation, product"
        return [Term(f"4 e {n_sym} {f_sym}", what, 4 * e * n * f)]
    return [Term(f"5 e {n_sym} {f_sym}", f"{label}MLP (gelu_new) tensors", 5 * e * n * f)]


def shared_expert_terms(spec: ModelSpec, e: int, N: int) -> list[Term]:
    """The shared expert every token runs, of width S: its FFN on N rows (:func:`ffn_terms`);
    with a sigmoid gate (Qwen2-MoE, ``sigmoid(gate(x)) * shared(x)``) the product saves the
    shared expert's output and the gate, e N D + e N."""
    S = spec.moe_shared_ffn_hidden
    if S is None:
        return []
    terms = ffn_terms(spec, e, (N, "N"), (S, "S"), "shared expert: ")
    if spec.moe_shared_gate:
        what = "shared expert output and its sigmoid gate"
        terms.append(Term("e N (D + 1)", what, e * N * (spec.d_model + 1)))
    return terms


def expert_terms(spec: ModelSpec, e: int, N: int) -> list[Term]:
    """Routed experts as transformers' ``grouped_mm`` runs them, R = N k rows: each expert's
    FFN on its rows (:func:`ffn_terms`); the sorted token copies and the experts' outputs,
    2 e R D; the fp32 router weight per row, 4 R (Mixtral's router; Qwen3-MoE's casts it to the
    dtype, e R); int64 indices (sort permutation, token index,
    inverse permutation, top-k expert ids), 32 R; the router's fp32 softmax, top-k weights and
    their sum, 4 N (E + k + 1); int32 offsets per expert, 4 E."""
    E, k, D = spec.experts, spec.experts_active, spec.d_model
    R = N * k
    return [
        *ffn_terms(spec, e, (R, "R"), (spec.expert_width, "F")),
        Term("2 e R D", "routed token copies and expert outputs", 2 * e * R * D),
        Term("4 R", "router weight per routed token, fp32", 4 * R),
        Term("32 R", "int64 routing indices", 32 * R),
        Term("4 N (E + k + 1)", "router softmax, top-k, sum, fp32", 4 * N * (E + k + 1)),
        Term("4 E", "int32 expert offsets", 4 * E),
    ]


# --------------------------------------------------------------------------- one layer


def measured_layer_terms(
    spec: ModelSpec, e: int, batch: int, length: int, kernel: str
) -> list[Term]:
    """Every tensor one measured block saves: its norms, attention, and the FFN or routed
    experts (with a shared expert). The attention and FFN projections save their inputs,
    2 e N D: the pre-norms' outputs, or the residual stream where the block normalizes only
    outputs (OLMo 2); sandwich blocks' (Gemma 2/3) post-norm outputs are added to the residual
    stream, which saves nothing."""
    N, D = batch * length, spec.d_model
    terms = norm_terms(spec, e, (N, "N"), (D, "D"), spec.norms_per_block, "norm")
    terms.append(projection_inputs(e, N, D, 2, "norm outputs"))
    terms += qk_norm_terms(spec, e, N)
    terms += attention_terms(spec, e, batch, length, kernel)
    if spec.experts > 1:
        return terms + expert_terms(spec, e, N) + shared_expert_terms(spec, e, N)
    return terms + ffn_terms(spec, e, (N, "N"), (spec.ffn_width, "F"))


def korthikanti_score_bytes(spec: ModelSpec, batch: int, length: int) -> int:
    """Eager attention's s x s scores as Korthikanti et al. 2022 (Sec. 4.1) count them,
    5 a s^2 b bytes: the softmax input and 16-bit output (2 a s^2 b each) and the dropout mask;
    0 for a block without attention."""
    a = (spec.n_heads or 0) if spec.has_attention else 0
    return 5 * a * length * length * batch


def korthikanti_terms(spec: ModelSpec, batch: int, length: int, recompute: str) -> list[Term]:
    """The ESTIMATE for blocks not measured (Korthikanti et al. 2022, Sec. 4): 34 s b h, or
    2 s b h with full recomputation, and eager attention's s x s scores
    (:func:`korthikanti_score_bytes`)."""
    s, b, h = length, batch, spec.d_model
    if recompute == "full":
        return [Term("2 s b h", "layer input (estimate)", 2 * s * b * h)]
    layer = Term("34 s b h", "layer (estimate)", 34 * s * b * h)
    scores = korthikanti_score_bytes(spec, batch, length)
    return [layer, Term("5 a s^2 b", "attention scores (estimate)", scores, True)]


def layer_terms(
    spec: ModelSpec, batch: int, length: int, recompute: str, kernel: str, dtype: str
) -> list[Term]:
    """One layer's saved tensors under a recompute mode. Full recomputation (activation
    checkpointing) keeps each layer's input, e N D; selective recomputation (Korthikanti et al.
    2022, Sec. 5, the Megatron-LM convention) runs the attention core again, so the s x s
    tensors go; fused kernels never store them. Blocks not measured: the estimate."""
    e = activation_width(dtype)
    if not measured(spec):
        terms = korthikanti_terms(spec, batch, length, recompute)
    elif recompute == "full":
        terms = [Term("e N D", "layer input", e * batch * length * spec.d_model)]
    else:
        terms = measured_layer_terms(spec, e, batch, length, kernel)
    keep = recompute == "none" and kernel == "eager"
    return [t for t in terms if keep or not t.scores]


# --------------------------------------------------------------------------- outside the layers


def outside_terms(spec: ModelSpec, batch: int, length: int, dtype: str) -> list[Term]:
    """Saved outside the layers, but the logits (memory.py's logits rows): the final norm and
    its output (saved by the LM head), the int64 token ids (embedding), 8 N, and targets
    (loss: the labels padded by one position and shifted, copied to 8 N when B > 1, a view of
    8 (T + 1) bytes when B = 1); learned positions' int64 ids, 8 T; rotary cos and sin,
    2 e T r, made once and shared by every layer; the loss's fp32 normalizer, 4."""
    e, N, D = activation_width(dtype), batch * length, spec.d_model
    terms = []
    if spec.final_norm:
        terms = norm_terms(spec, e, (N, "N"), (D, "D"), 1, "final norm")
        terms.append(projection_inputs(e, N, D, 1, "final norm output"))
    terms.append(Term("8 N", "token ids, int64", 8 * N))
    if batch == 1:  # a view of the labels padded by one position
        terms.append(Term("8 (T + 1)", "targets, int64", 8 * (length + 1)))
    else:
        terms.append(Term("8 N", "targets, int64 (a contiguous copy)", 8 * N))
    if spec.position == "learned":
        terms.append(Term("8 T", "position ids, int64", 8 * length))
    if spec.rotary_width:
        terms.append(Term("2 e T r", "rotary cos and sin", 2 * e * length * spec.rotary_width))
    return [*terms, Term("4", "loss normalizer, fp32", 4)]


def terms_dict(
    spec: ModelSpec, batch: int, length: int, recompute: str, attention: str, dtype: str
) -> dict[str, Any]:
    """The terms in JSON: each kind of layer (how many, each term's bytes in one layer) and the
    terms outside the layers; ``scores`` marks eager attention's s x s tensors."""

    def listed(terms: list[Term]) -> list[dict[str, Any]]:
        return [
            {"what": t.what, "formula": t.symbols, "bytes": t.bytes, "scores": t.scores}
            for t in terms
        ]

    layers = [
        {
            "layers": stack.n_layers,
            "measured": measured(stack),
            "terms": listed(layer_terms(stack, batch, length, recompute, attention, dtype)),
        }
        for stack in spec.stacks
    ]
    return {"layers": layers, "outside": listed(outside_terms(spec, batch, length, dtype))}


# --------------------------------------------------------------------------- in words


def by_convention(spec: ModelSpec) -> bool:
    """Whether a measured block's figure rests on code details the config does not state:
    sandwich norms, sinks, whole-projection query/key norms and shared experts come from
    families (Gemma 2/3, OLMo 2, gpt-oss, Qwen-MoE) whose norms, rotary tables and routers keep
    tensors in other dtypes than Llama's and Mixtral's, which costcalc counts (docs/memory.md:
    11-24% more in bf16)."""
    return (
        spec.norms_per_block == 4
        or spec.attention_sinks
        or spec.qk_norm == "full"
        or spec.moe_shared_ffn_hidden is not None
    )


def exact(spec: ModelSpec) -> bool:
    """Every block of ``spec`` is of a measured kind whose figure rests on no convention (no
    estimate in its activations)."""
    return all(measured(stack) and not by_convention(stack) for stack in spec.stacks)


def _symbols(terms: list[Term]) -> str:
    return " + ".join(t.symbols for t in terms) or "0"


def activation_formula(spec: ModelSpec, recompute: str, attention: str, dtype: str) -> str:
    """The activation bytes in symbols: each kind of layer's terms, then those outside."""
    layers = []
    for stack in spec.stacks:
        count = "L" if spec.uniform else f"{stack.n_layers:,}"
        terms = layer_terms(stack, 1, 1, recompute, attention, dtype)
        layers.append(f"{count} x ({_symbols(terms)})")
    outside = _symbols(outside_terms(spec, 2, 1, dtype))  # B > 1: targets 8 N
    return f"{' + '.join(layers)} + outside the layers ({outside})"


def activation_source(spec: ModelSpec) -> str:
    """Where the figure comes from: the measurement, the estimate, or both."""
    if exact(spec):
        return MEASURED_SOURCE
    sources = [MEASURED_SOURCE] if any(measured(stack) for stack in spec.stacks) else []
    if any(measured(stack) and by_convention(stack) for stack in spec.stacks):
        sources.append(CONVENTION_SOURCE)
    if not all(measured(stack) for stack in spec.stacks):
        sources.append(("other blocks: " if sources else "") + KORTHIKANTI_SOURCE)
    return "; ".join(sources)


def activation_note(spec: ModelSpec, recompute: str, attention: str, dtype: str) -> str:
    """The sentence every training table prints under its activation rows."""
    e = activation_width(dtype)
    formula = activation_formula(spec, recompute, attention, dtype)
    kind = "what transformers saves for backward" if exact(spec) else "partly an ESTIMATE"
    text = (
        f"Activations are {kind} (--attention {attention}, --recompute {recompute}, {dtype}): "
        f"{formula} bytes, N = B T, e = {e}; {activation_source(spec)}."
    )
    if recompute == "selective":
        text += f" Selective recomputation: {SELECTIVE}."
    return text


SELECTIVE = (
    "Megatron-LM's convention (Korthikanti et al. 2022, Sec. 5): the attention core runs again "
    "in the backward, so no s x s tensor is kept"
)
