"""Parameter tensors: the shapes PyTorch holds, one entry per ``model.parameters()`` tensor.

The element counts are those of :mod:`costcalc.params` (a law the tests check: the shapes' sizes
add up to ``total_params``); what this module adds is how the elements are split into tensors,
which decides per-tensor optimizer state (AdamW's ``step`` scalar, Adafactor's factored rows and
columns).

Conventions, from the Hugging Face ``transformers`` modeling code:

- Q, K and V are one tensor when ``fused_qkv`` (GPT-2's ``c_attn``, GPT-NeoX, Phi-3, nanoGPT,
  PyTorch ``MultiheadAttention``), three otherwise (Llama, Qwen2, Mistral, OPT, Phi); each bias
  likewise.
- A gated FFN keeps gate, up and down as three tensors (Llama, Qwen2, Gemma), or gate and up as
  one 2h x D tensor when ``fused_gate_up`` (Phi-3's ``gate_up_proj``).
- Mixture-of-experts blocks stack their experts (transformers 5: ``experts.gate_up_proj`` of shape
  X x 2h x D and ``experts.down_proj`` of X x D x h) next to one router matrix X x D.
- A tied LM head is the token table itself (no tensor of its own), as ``parameters()`` yields a
  shared tensor once.

Matrices are written (out, in), as ``nn.Linear`` stores them; GPT-2's ``Conv1D`` stores the
transpose, which changes no count here.
"""

from __future__ import annotations

from math import prod

from costcalc.spec import ModelSpec

Shape = tuple[int, ...]


def norm_shapes(spec: ModelSpec) -> list[Shape]:
    """One norm: a weight of D, plus a bias of D for LayerNorm with bias."""
    D = spec.d_model
    return [(D,), (D,)] if spec.has_norm_bias else [(D,)]


def attention_shapes(spec: ModelSpec) -> list[Shape]:
    """Q, K, V (fused into one (H + 2K) d x D matrix, or three) and the output D x H d."""
    D, H, K, d = spec.d_model, spec.n_heads, spec.kv_heads, spec.head_width
    widths = [(H + 2 * K) * d] if spec.fused_qkv else [H * d, K * d, K * d]
    shapes: list[Shape] = [(width, D) for width in widths]
    if spec.qkv_bias:
        shapes += [(width,) for width in widths]
    shapes.append((D, H * d))
    if spec.attn_out_bias:
        shapes.append((D,))
    return shapes


def ffn_shapes(spec: ModelSpec) -> list[Shape]:
    """Dense: up (or gate and up) h x D and down D x h; MoE: router X x D, stacked experts."""
    D, h = spec.d_model, spec.ffn_width
    shapes: list[Shape]
    biases: list[Shape]
    if spec.moe_experts is None:
        firsts = [2 * h] if spec.fused_gate_up else [h, h] if spec.gated else [h]
        shapes = [*((width, D) for width in firsts), (D, h)]
        biases = [*((width,) for width in firsts), (D,)]
    else:
        X = spec.moe_experts
        first = 2 * h if spec.gated else h
        shapes = [(X, D), (X, first, D), (X, D, h)]
        biases = [(X, first), (X, D)]
    return shapes + (biases if spec.ffn_bias else [])


def block_shapes(spec: ModelSpec) -> list[Shape]:
    """One block: its norms, attention and FFN."""
    norms = [shape for _ in range(spec.norms_per_block) for shape in norm_shapes(spec)]
    return norms + attention_shapes(spec) + ffn_shapes(spec)


def parameter_shapes(spec: ModelSpec) -> list[Shape]:
    """Every parameter tensor of the model, each shared tensor once."""
    V, E, D = spec.vocab_rows, spec.embed_width, spec.d_model
    shapes: list[Shape] = [(V, E)]
    if spec.position_rows:
        shapes.append((spec.position_rows, D))
    if E != D:
        shapes += [(D, E), (E, D)]
    shapes += block_shapes(spec) * spec.n_layers
    if spec.final_norm:
        shapes += norm_shapes(spec)
    if not spec.tie_embeddings:
        shapes.append((V, E))
    if spec.lm_head_bias:
        shapes.append((V,))
    return shapes


def parameter_tensors(spec: ModelSpec) -> int:
    """How many tensors ``model.parameters()`` yields: 12 L + 4 for GPT-2, 12 L + 2 for Qwen2."""
    return len(parameter_shapes(spec))


def elements(shape: Shape) -> int:
    """Elements of one tensor: the product of its dimensions."""
    return prod(shape)
