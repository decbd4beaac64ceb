"""The feed-forward network of a block, as transformers builds it: dense (a plain MLP, a gated
FFN, RWKV's channel mix), a mixture of experts (stacked routed experts and their router, a shared
expert, product-key experts, another modality's experts), or none.

Conventions, from transformers 5.24's modeling code:

- A gated FFN keeps gate, up and down as three tensors (Llama, Qwen2, Gemma), or gate and up as
  one 2h x D tensor when ``fused_gate_up`` (Phi-3's ``gate_up_proj``).
- Mixture-of-experts blocks stack their experts (transformers 5: ``experts.gate_up_proj`` of shape
  X x 2h x D and ``experts.down_proj`` of X x D x h, with X x 2h and X x D biases when the experts
  have them: as the FFN unless ``moe_expert_bias`` says) next to one router matrix X x D (plus X
  biases when ``moe_router_bias``); a shared expert is a dense FFN of its own width, optionally
  gated by a D -> 1 linear layer. Another modality's experts (ERNIE 4.5 VL's ``vision_moe``) are
  a second router and expert stack beside the text ones, marked as used by no text token
  (``text``).
"""

from __future__ import annotations

from math import isqrt
from typing import ClassVar

from costcalc.anatomy.saved import SavesForBackward, Step, Term
from costcalc.anatomy.tensor import Block, Tensor, linear, norm

SAVED_KEYS = frozenset(
    {
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
    }
)
"""The block keys whose every value the measured FFNs' saved tensors cover: a plain MLP, a
gated FFN, routed experts with or without a shared expert and its gate, or none."""


class Ffn(SavesForBackward):
    """What one kind of FFN holds; the methods read its sizes from the block."""

    label: ClassVar[str]
    """How ``--explain`` names the FFN's tensors when it sums them."""

    def tensors(self, spec: Block) -> list[Tensor]:
        """The FFN's parameter tensors in one block."""
        return []

    def expert_params(self, spec: Block) -> int:
        """The parameters of one routed expert; of a dense FFN its projections D x h + h x D
        (D x 2h when gated), plus biases."""
        return _one_expert(spec, spec.d_model, spec.ffn_width, spec.ffn_bias)[2]

    def words(self, spec: Block, beside_experts: bool) -> str:
        """The FFN in words, as tables name a kind of block: a dense one by its kind
        (``swiglu FFN``), or as ``dense FFN`` when other kinds of block differ from it in their
        experts (``beside_experts``)."""
        return "dense FFN" if beside_experts else f"{spec.ffn} FFN"

    def formula(self, spec: Block, count: int) -> str | None:
        """The block's FFN parameters ``count`` as a formula with the numbers put in, when the
        FFN has one and it gives ``count`` (nothing else is in the block's FFN row); None: the
        sum of the tensors says it."""
        return None


class MeasuredFfn(Ffn):
    """An FFN whose saved tensors were measured, whatever its :data:`SAVED_KEYS` are: the
    dense FFN, routed experts with their shared expert, and none."""

    saved_keys = SAVED_KEYS

    def measured(self, spec: Block) -> bool:
        return True


def dense_tensors(spec: Block, width: int, name: str = "mlp") -> list[Tensor]:
    """Up (or gate and up, fused or not) h x D and down D x h, with biases when the FFN has
    them."""
    D, bias = spec.d_model, spec.ffn_bias
    if spec.fused_gate_up:
        firsts = linear(f"{name}.gate_up_proj", 2 * width, D, bias, "ffn")
    elif spec.gated:
        firsts = [
            *linear(f"{name}.gate_proj", width, D, bias, "ffn"),
            *linear(f"{name}.up_proj", width, D, bias, "ffn"),
        ]
    else:
        firsts = linear(f"{name}.up_proj", width, D, bias, "ffn")
    return [*firsts, *linear(f"{name}.down_proj", D, width, bias, "ffn")]


def _one_expert(spec: Block, inputs: int, h: int, biased: bool) -> tuple[str, str, int]:
    """One dense FFN or routed expert of width h over ``inputs`` E: its shape in symbols, in
    numbers, and its parameters E x first + h x E (+ first + E biases when ``biased``),
    first = 2h when gated."""
    first = 2 * h if spec.gated else h
    bias = first + inputs if biased else 0
    shape = "D x 2h + h x D" if spec.gated else "D x h + h x D"
    numbers = f"{inputs:,} x {first:,} + {h:,} x {inputs:,}" + (f" + {bias:,}" if bias else "")
    return shape, numbers, inputs * first + h * inputs + bias


def dense_saved(
    spec: Block, e: int, rows: tuple[int, str], width: tuple[int, str], label: str = ""
) -> list[Term]:
    """A gated FFN (``down(act(gate(x)) * up(x))``) on ``rows`` rows of ``width`` (value,
    symbols): gate and up outputs, the activation's output and the product, 4 e n F; a plain
    MLP (GPT-2's ``gelu_new``: its input, tanh output, 0.5 x and 1 + tanh, and the down
    projection's input), 5 e n F."""
    (n, n_sym), (f, f_sym) = rows, width
    if spec.gated:
        what = f"{label}gate, up, activation, product"
        return [Term(f"4 e {n_sym} {f_sym}", what, 4 * e * n * f)]
    return [Term(f"5 e {n_sym} {f_sym}", f"{label}MLP (gelu_new) tensors", 5 * e * n * f)]


class Dense(MeasuredFfn):
    """A plain MLP or a gated FFN (``mlp``, ``swiglu``, ``geglu``) of width h."""

    label = "FFN tensors"

    def saved(self, spec: Block, step: Step) -> list[Term]:
        """Its FFN on the N tokens (:func:`dense_saved`)."""
        return dense_saved(spec, step.e, (step.tokens, "N"), (spec.ffn_width, "F"))

    def tensors(self, spec: Block) -> list[Tensor]:
        """Its projections (:func:`dense_tensors`), with ``ffn_inner_norm`` a norm of h inside
        it (BitNet's ``ffn_sub_norm``) and with ``ngpt_scales`` nGPT's ``suv_gate`` and
        ``suv_up`` (h each)."""
        h = spec.ffn_width
        tensors = dense_tensors(spec, h)
        if spec.ffn_inner_norm:
            tensors += norm(spec, "mlp.ffn_sub_norm", h, "norms")
        if spec.ngpt_scales:
            tensors += [Tensor(f"mlp.{name}", (h,), "ffn") for name in ("suv_gate", "suv_up")]
        return tensors

    def formula(self, spec: Block, count: int) -> str | None:
        h = spec.ffn_width
        shape, numbers, params = _one_expert(spec, spec.d_model, h, spec.ffn_bias)
        if params != count:
            return None
        return f"{shape} + biases, h = {h:,} => {numbers} = {count:,}"


class ChannelMix(Ffn):
    """RWKV-4's channel mix (``RwkvFeedForward``)."""

    label = "channel-mix tensors"

    def tensors(self, spec: Block) -> list[Tensor]:
        """``time_mix_key`` and ``time_mix_receptance`` (1 x 1 x D each), ``key`` D -> h,
        ``receptance`` D -> D (a sigmoid gate on the output), ``value`` h -> D; no biases."""
        from costcalc.anatomy.rwkv import token_shift_mix

        D, h = spec.d_model, spec.ffn_width
        return [
            *token_shift_mix("mlp", ("key", "receptance"), D, "ffn"),
            *linear("mlp.key", h, D, False, "ffn"),
            *linear("mlp.receptance", D, D, False, "ffn"),
            *linear("mlp.value", D, h, False, "ffn"),
        ]


class Experts(MeasuredFfn):
    """A mixture of X routed experts, k of them per token."""

    label = "experts, router and shared expert"

    def saved(self, spec: Block, step: Step) -> list[Term]:
        """Routed experts as transformers' ``grouped_mm`` runs them, R = N k rows: each
        expert's FFN on its rows (:func:`dense_saved`); the sorted token copies and the
        experts' outputs, 2 e R D; the fp32 router weight per row, 4 R (Mixtral's router;
        Qwen3-MoE's casts it to the dtype, e R); int64 indices (sort permutation, token index,
        inverse permutation, top-k expert ids), 32 R; the router's fp32 softmax, top-k weights
        and their sum, 4 N (E + k + 1); int32 offsets per expert, 4 E. Then the shared expert
        (:func:`shared_expert_saved`). One expert is the dense FFN of width F."""
        e, N = step.e, step.tokens
        if spec.experts < 2:
            return dense_saved(spec, e, (N, "N"), (spec.ffn_width, "F"))
        E, k, D = spec.experts, spec.experts_active, spec.d_model
        R = N * k
        return [
            *dense_saved(spec, e, (R, "R"), (spec.expert_width, "F")),
            Term("2 e R D", "routed token copies and expert outputs", 2 * e * R * D),
            Term("4 R", "router weight per routed token, fp32", 4 * R),
            Term("32 R", "int64 routing indices", 32 * R),
            Term("4 N (E + k + 1)", "router softmax, top-k, sum, fp32", 4 * N * (E + k + 1)),
            Term("4 E", "int32 expert offsets", 4 * E),
            *shared_expert_saved(spec, e, N),
        ]

    def saved_by_convention(self, spec: Block) -> bool:
        """A shared expert comes from families (Qwen-MoE) whose routers keep tensors in other
        dtypes than Mixtral's."""
        return spec.moe_shared_ffn_hidden is not None

    def tensors(self, spec: Block) -> list[Tensor]:
        """Router X x D (+ X bias; + a D scale and X per-expert scales), stacked experts
        X x 2h x E (X x h x E plain) and X x E x h (+ their biases), E the routed width
        (:func:`routed_width`; the router's too with ``moe_width``), with a latent width L the
        latent's projections D -> L and L -> D (+ biases with ``ffn_bias``); a bias of D on
        their combined output with ``moe_output_bias``, another modality's experts
        (:func:`modality_expert_tensors`), and the shared expert with its gate when there is
        one."""
        D, X, h = spec.d_model, spec.experts, spec.expert_width
        E = routed_width(spec)
        first = 2 * h if spec.gated else h
        R = D if spec.moe_width is None else spec.moe_width
        tensors = [Tensor("mlp.router.weight", (X, R), "ffn", "router")]
        if spec.moe_router_bias:
            tensors.append(Tensor("mlp.router.bias", (X,), "ffn"))
        if spec.moe_router_scales:
            tensors += [
                Tensor("mlp.router.scale", (D,), "ffn"),
                Tensor("mlp.router.per_expert_scale", (X,), "ffn"),
            ]
        if spec.moe_latent is not None:
            tensors += [
                *linear("mlp.fc1_latent_proj", E, D, spec.ffn_bias, "ffn"),
                *linear("mlp.fc2_latent_proj", D, E, spec.ffn_bias, "ffn"),
            ]
        tensors += [
            Tensor("mlp.experts.gate_up_proj", (X, first, E), "ffn", "experts"),
            Tensor("mlp.experts.down_proj", (X, E, h), "ffn", "experts"),
        ]
        if spec.expert_bias:
            tensors += [
                Tensor("mlp.experts.gate_up_proj_bias", (X, first), "ffn"),
                Tensor("mlp.experts.down_proj_bias", (X, E), "ffn"),
            ]
        if spec.moe_output_bias:
            tensors.append(Tensor("mlp.bias", (D,), "ffn"))
        tensors += modality_expert_tensors(spec)
        if spec.moe_shared_ffn_hidden is not None:
            tensors += dense_tensors(spec, spec.moe_shared_ffn_hidden, "mlp.shared_expert")
        if spec.moe_shared_gate:
            tensors += linear("mlp.shared_expert_gate", 1, D, False, "ffn")
        return tensors

    def words(self, spec: Block, beside_experts: bool) -> str:
        return expert_words(spec)

    def expert_params(self, spec: Block) -> int:
        """E x 2h + h x E (E x h plain) plus biases, E the routed width."""
        return _one_expert(spec, routed_width(spec), spec.expert_width, spec.expert_bias)[2]

    def formula(self, spec: Block, count: int) -> str | None:
        """X experts and the router alone: X x (one expert) + D x X."""
        D, X, h = spec.d_model, spec.experts, spec.expert_width
        shape, numbers, params = _one_expert(spec, D, h, spec.expert_bias)
        if X * params + D * X != count:
            return None
        return (
            f"X x ({shape} + biases) + D x X, X = {X}, h = {h:,} => "
            f"{X:,} x ({numbers}) + {D:,} x {X:,} = {count:,}"
        )


def routed_width(spec: Block) -> int:
    """The width E the routed experts read and write: D, the latent width (``moe_latent``),
    or the width they are built for (``moe_width``)."""
    if spec.moe_latent is not None:
        return spec.moe_latent
    return spec.d_model if spec.moe_width is None else spec.moe_width


def expert_words(spec: Block) -> str:
    """X routed experts, k of them per token, in words: ``128 experts, top 6``."""
    return f"{spec.experts:,} experts, top {spec.experts_active}"


def shared_expert_saved(spec: Block, e: int, N: int) -> list[Term]:
    """The shared expert every token runs, of width S: its FFN on N rows (:func:`dense_saved`);
    with a sigmoid gate (Qwen2-MoE, ``sigmoid(gate(x)) * shared(x)``) the product saves the
    shared expert's output and the gate, e N D + e N."""
    S = spec.moe_shared_ffn_hidden
    if S is None:
        return []
    terms = dense_saved(spec, e, (N, "N"), (S, "S"), "shared expert: ")
    if spec.moe_shared_gate:
        what = "shared expert output and its sigmoid gate"
        terms.append(Term("e N (D + 1)", what, e * N * (spec.d_model + 1)))
    return terms


def modality_expert_tensors(spec: Block) -> list[Tensor]:
    """Another modality's experts, h' = ``moe_modality_ffn_hidden`` (ERNIE 4.5 VL's
    ``mlp.vision_moe``): a router X x D (+ X bias with ``moe_router_bias``), stacked experts
    X x 2h' x D and X x D x h' (+ biases as the routed experts'); text-only input uses none of
    them. None without h'."""
    h = spec.moe_modality_ffn_hidden
    if h is None:
        return []
    D, X = spec.d_model, spec.experts
    first = 2 * h if spec.gated else h
    tensors = [Tensor("mlp.vision_moe.router.weight", (X, D), "ffn", "router", text=False)]
    if spec.moe_router_bias:
        tensors.append(Tensor("mlp.vision_moe.router.bias", (X,), "ffn", text=False))
    tensors += [
        Tensor("mlp.vision_moe.experts.gate_up_proj", (X, first, D), "ffn", "experts", text=False),
        Tensor("mlp.vision_moe.experts.down_proj", (X, D, h), "ffn", "experts", text=False),
    ]
    if spec.expert_bias:
        tensors += [
            Tensor("mlp.vision_moe.experts.gate_up_proj_bias", (X, first), "ffn", text=False),
            Tensor("mlp.vision_moe.experts.down_proj_bias", (X, D), "ffn", text=False),
        ]
    return tensors


class ProductKeyExperts(Ffn):
    """Experts retrieved by product keys (``moe_product_keys``, Doge's ``DogeCDMoE``)."""

    label = "experts, router and shared expert"

    def tensors(self, spec: Block) -> list[Tensor]:
        """The router ``router_gate`` D -> 2 floor(sqrt(X)), no bias; ``down_embed`` and
        ``up_embed``, X x D tables of which a token multiplies its top k rows (k D MACs each);
        the shared expert (its ``gate_proj``, ``up_proj``, ``down_proj``) when
        ``moe_shared_ffn_hidden`` gives its width."""
        D, X = spec.d_model, spec.experts
        tensors = [
            Tensor("mlp.router_gate.weight", (2 * isqrt(X), D), "ffn", "router"),
            Tensor("mlp.down_embed.weight", (X, D), "ffn", "experts", table=True),
            Tensor("mlp.up_embed.weight", (X, D), "ffn", "experts", table=True),
        ]
        if spec.moe_shared_ffn_hidden is not None:
            tensors += dense_tensors(spec, spec.moe_shared_ffn_hidden, "mlp.shared_expert")
        return tensors

    def words(self, spec: Block, beside_experts: bool) -> str:
        return expert_words(spec)

    def expert_params(self, spec: Block) -> int:
        """One row of ``down_embed`` and of ``up_embed``: 2 D."""
        return 2 * spec.d_model


class NoFfn(MeasuredFfn):
    """A block without an FFN (``ffn: none``): nothing to save."""

    label = "no FFN; tensors"

    def words(self, spec: Block, beside_experts: bool) -> str:
        return "no FFN"

    def expert_params(self, spec: Block) -> int:
        return 0

    def formula(self, spec: Block, count: int) -> str | None:
        return "no FFN = 0" if count == 0 else None


DENSE, CHANNEL_MIX, EXPERTS, PRODUCT_KEYS, NO_FFN = (
    Dense(),
    ChannelMix(),
    Experts(),
    ProductKeyExperts(),
    NoFfn(),
)


def ffn_part(spec: Block) -> Ffn:
    """The block's FFN: none, a mixture of experts (retrieved by product keys with
    ``moe_product_keys``), RWKV's channel mix, or dense."""
    if spec.ffn == "none":
        return NO_FFN
    if spec.moe_experts is not None:
        return PRODUCT_KEYS if spec.moe_product_keys else EXPERTS
    return CHANNEL_MIX if spec.ffn == "channel_mix" else DENSE
