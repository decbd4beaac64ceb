"""Activation memory of a training step: the tensors autograd saves for the backward pass.

For the block kinds that were measured (tests/golden/activation_reference.json: small GPT-2,
Llama, Qwen3, Mixtral, Qwen3-MoE, Gemma 2, Gemma 3, OLMo 2, Qwen2-MoE, gpt-oss, StableLM 2 and
GLM models run
forward with their loss under ``torch.autograd.graph.saved_tensors_hooks``, each storage counted
once), the bytes are what transformers' modeling code saves, term by term: exact for that
implementation in the training dtype, but the conventions below. Each part of a block gives what
it saves (its mixer's and FFN's ``saved``, its norms' ``block_norms_saved``, in
:mod:`costcalc.anatomy`) and whether that was measured; a block is measured when its parts are
and it has nothing else: its mixer is plain attention (sinks allowed; no MLA, output or per-head
gate, low-rank queries, grouped output, key compressor, shared keys and values, per-layer inputs
or residual streams), it has 2 norms (pre- or post-norm) or 4 (sandwich), its query/key norms
(if any) are one weight for all heads, over whole projections or one LayerNorm per head, and its
values are as wide as the keys (no ``v_head_dim``, no ``keys_as_values``); its FFN may be a plain
MLP, a gated FFN or routed experts, with or without a shared expert (and its sigmoid gate). Other
blocks keep the Korthikanti et al. 2022 estimate, and the output says so.

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
sin in fp32, gpt-oss's are r / 2 wide, GLM repeats them interleaved in each layer).
"""

from __future__ import annotations

from typing import Any

from costcalc.anatomy.ffn import ffn_part
from costcalc.anatomy.mixer import token_mixer
from costcalc.anatomy.model import model_saved
from costcalc.anatomy.norms import SAVED_KEYS as NORM_KEYS
from costcalc.anatomy.norms import (
    block_norms_by_convention,
    block_norms_measured,
    block_norms_saved,
)
from costcalc.anatomy.per_layer import per_layer_measured
from costcalc.anatomy.residual import residual_measured
from costcalc.anatomy.saved import Step, Term, projection_inputs
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


def activation_width(dtype: str) -> int:
    """e: bytes per activation element of the training dtype."""
    return DTYPE_BITS[dtype] // 8


def covered_keys(spec: ModelSpec) -> frozenset[str]:
    """The block keys whose every value the saved tensors of the block's parts cover (its
    mixer's, its FFN's, its norms'); any other block key away from its default (a new kind of
    block among them) makes the block unmeasured."""
    return token_mixer(spec.mixer).saved_keys | ffn_part(spec).saved_keys | NORM_KEYS


def measured(spec: ModelSpec) -> bool:
    """Whether a block of ``spec`` is of a measured kind: its mixer, FFN, norms, residual path
    and per-layer input were measured (each part says so: one residual stream, no AltUp, no
    per-layer inputs) and the other block keys are at their defaults (:func:`covered_keys`)."""
    fields = type(spec).model_fields
    covered = covered_keys(spec)
    return (
        token_mixer(spec.mixer).measured(spec)
        and ffn_part(spec).measured(spec)
        and block_norms_measured(spec)
        and all(
            getattr(spec, name) == fields[name].default
            for name in BLOCK_FIELDS
            if name not in covered
        )
        and residual_measured(spec)
        and per_layer_measured(spec)
    )


# --------------------------------------------------------------------------- one layer


def measured_layer_terms(spec: ModelSpec, step: Step) -> list[Term]:
    """Every tensor one measured block saves: its norms', its mixer's and its FFN's, as each
    part gives them. The attention and FFN projections save their inputs, 2 e N D: the
    pre-norms' outputs, or the residual stream where the block normalizes only outputs
    (OLMo 2); sandwich blocks' (Gemma 2/3) post-norm outputs are added to the residual stream,
    which saves nothing."""
    terms = block_norms_saved(spec, step)
    terms.append(projection_inputs(step.e, step.tokens, spec.d_model, 2, "norm outputs"))
    terms += token_mixer(spec.mixer).saved(spec, step)
    return terms + ffn_part(spec).saved(spec, step)


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
        terms = measured_layer_terms(spec, Step(e, batch, length, kernel))
    keep = recompute == "none" and kernel == "eager"
    return [t for t in terms if keep or not t.scores]


# --------------------------------------------------------------------------- outside the layers


def outside_terms(spec: ModelSpec, batch: int, length: int, dtype: str) -> list[Term]:
    """Saved outside the layers, but the logits (memory.py's logits rows): the model part's
    (:func:`costcalc.anatomy.model.model_saved`)."""
    return model_saved(spec, activation_width(dtype), batch, length)


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
        block_norms_by_convention(spec)
        or token_mixer(spec.mixer).saved_by_convention(spec)
        or ffn_part(spec).saved_by_convention(spec)
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
