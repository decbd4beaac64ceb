"""GGUF files as llama.cpp's ``llama-quantize`` writes them: the type of every tensor, its bytes.

Types and file types are the tables of :mod:`costcalc.gguf_types`. The rules follow
``src/llama-quant.cpp`` of the llama.cpp that llama-cpp-python 0.3.36 vendors.

Which tensors are quantized (``tensor_allows_quantization``, and ``convert_hf_to_gguf.py``'s
float32 list): tensors of two or more dimensions (ggml counts a 1 x n matrix as 1-D), the token
tables included; never vectors (norms, biases: F32), the MoE router (``ffn_gate_inp``: F32), a
1 x n gate (Qwen's ``ffn_gate_inp_shexp``, kept as converted: F16), position tables,
convolutions and Mamba's ``A`` (F32), nor Gemma 3n's ``altup`` and ``laurel`` matrices, its
``per_layer_model_proj`` and the indexer's ``k_proj``/``q_proj`` (F16). Matrices the user keeps
(``-NAME``) stay F16, as ``convert_hf_to_gguf.py --outtype f16`` wrote them.

Each tensor gets a category from its name, as ``tensor_get_category`` does: ``output`` (the LM
head), ``token_embd`` (the token table, and Gemma's per-layer table), ``attn_v`` (a fused
``attn_qkv`` and MLA's ``attn_kv_b`` count as ``attn_v``), ``attn_k``, ``attn_q``,
``attn_output``, ``ffn_down``, ``ffn_gate``, ``ffn_up`` (a fused gate and up projection is
``ffn_up``). ``llama_tensor_get_type_impl`` then picks a type per category, file type, and:

- the model: ``n_gqa`` (layer 0's query heads / key-value heads), ``n_expert``, and the size
  label "70B" (costcalc takes it as 80 layers with grouped key/value heads, as the Llama loader
  assigns it);
- the tensor's place: the i-th ``attn_v`` of n, and for ``ffn_down``/``ffn_gate``/``ffn_up`` the
  layer (its number in MoE models; else the count of such tensors before it) of n = the layers,
  with ``use_more_bits(i, n)``: i < n / 8, or i >= 7 n / 8, or (i - n / 8) % 3 == 2 (integer
  division). Tensors are visited in file order (``weight_name_comparer``: by layer, then name);
- whether an importance matrix is given (option ``imatrix``; assumed for the file types that
  require one, :data:`~costcalc.gguf_types.IMATRIX_REQUIRED`).

Every rule of that function is followed but those that name an architecture (Falcon, GLM-5
Next, BailingMoE 3). A row length that is no multiple of the chosen type's block falls back
(``tensor_type_fallback``): IQ1/IQ2/IQ3/IQ4_XS to IQ4_NL, Q2_0/Q2_K/Q3_K/TQ1_0/TQ2_0 to Q4_0,
Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, then F16 if still not a multiple (a 32-element type
goes to F16 directly); Q1_0 has no fallback (llama-quantize stops, and so does costcalc).
Option ``pure`` (``llama-quantize --pure``) gives every quantizable tensor the file's type.

Not modelled, as costcalc cannot know them: the rules named by an architecture,
``--tensor-type``/``--output-tensor-type`` overrides beyond +/-NAME, and converters that split
tensors differently (newer DeepSeek conversions split ``attn_kv_b`` into ``attn_k_b`` and
``attn_v_b``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from costcalc.errors import UsageError
from costcalc.gguf_types import (
    FILE_TYPES,
    FLOAT_TYPES,
    GGML_QUANT_SIZES,
    IMATRIX_REQUIRED,
    type_bytes,
)
from costcalc.layer_order import layer_stacks
from costcalc.spec import ModelSpec
from costcalc.tensors import Tensor, block_tensors, model_tensors
from costcalc.weight_format import TensorBytes, WeightFormat, override

__all__ = ["GGML_QUANT_SIZES", "gguf_tensors", "type_bytes", "use_more_bits"]

FALLBACK: dict[str, str] = {
    **dict.fromkeys(
        ("IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_XS"), "IQ4_NL"
    ),
    **dict.fromkeys(("Q2_0", "Q2_K", "Q3_K", "TQ1_0", "TQ2_0"), "Q4_0"),
    "Q4_K": "Q5_0",
    "Q5_K": "Q5_1",
    "Q6_K": "Q8_0",
}
"""``tensor_type_fallback``: the type a row length that the block does not divide gets."""

F32_KEPT = ("mlp.router", "embed_positions", "conv1d", "conv.conv", "mixer.A_log")
"""Tensors the converter writes in F32 and llama-quantize leaves alone."""
NOT_QUANTIZED = (
    "altup",
    "laurel",
    "per_layer_model_projection",
    "indexer.k_proj",
    "indexer.q_proj",
)
"""Name parts ``tensor_allows_quantization`` leaves in the converter's type."""
TOKEN_TABLES = ("embed_tokens.weight", "embed_tokens_per_layer.weight")
IQ2_FAMILY = ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M")
"""File types with a branch of their own in ``llama_tensor_get_type_impl``."""


def use_more_bits(i: int, n: int) -> bool:
    """llama.cpp's choice of the layers that get more bits: the first and last eighth, and
    every third layer in between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _module(tensor: Tensor) -> str:
    return tensor.name.removesuffix(".weight")


def ggml_dims(shape: tuple[int, ...]) -> int:
    """``ggml_n_dims``: the dimensions from the first one above 1 (a 1 x n matrix is 1-D)."""
    leading = 0
    while leading < len(shape) - 1 and shape[leading] == 1:
        leading += 1
    return len(shape) - leading


def quantizable(tensor: Tensor) -> bool:
    """``tensor_allows_quantization`` for costcalc's tensors: matrices the forward pass
    multiplies by (the router and a 1 x n gate excepted) and the token tables."""
    if ggml_dims(tensor.shape) < 2 or any(part in tensor.name for part in NOT_QUANTIZED):
        return False
    if tensor.name in TOKEN_TABLES:
        return True
    return tensor.use in ("matmul", "experts")


def unquantized_type(tensor: Tensor) -> str:
    """F32 for vectors and the tensors the converter always writes in F32, else F16."""
    if len(tensor.shape) < 2 or any(part in tensor.name for part in F32_KEPT):
        return "F32"
    return "F16"


def category(tensor: Tensor) -> str:
    """``tensor_get_category`` for a costcalc tensor: the GGUF name's kind (``attn_v`` for
    ``attn_qkv`` and ``attn_kv_b`` too), or ``other``."""
    if tensor.name == "lm_head.weight":
        return "output"
    if tensor.name in TOKEN_TABLES:
        return "token_embd"
    module = _module(tensor)
    for suffix, kind in (
        ("attn.qkv_proj", "attn_v"),
        ("attn.kv_b_proj", "attn_v"),
        ("attn.v_proj", "attn_v"),
        ("attn.k_proj", "attn_k"),
        ("attn.q_proj", "attn_q"),
        ("attn.o_proj", "attn_output"),
    ):
        if module.endswith(suffix):
            return kind
    if module.startswith("mlp."):
        last = module.rsplit(".", 1)[-1]
        kinds = {"down_proj": "ffn_down", "gate_proj": "ffn_gate"}
        if last in kinds:
            return kinds[last]
        if last in ("up_proj", "gate_up_proj"):
            return "ffn_up"
    return "other"


@dataclass
class _Mix:
    """What ``llama_tensor_get_type_impl`` reads: the file type and its default tensor type, the
    model's hyperparameters, and the counters it advances tensor by tensor."""

    ftype: str
    base: str
    n_layers: int
    n_gqa: int
    n_expert: int
    label_70b: bool
    imatrix: bool
    tied: bool
    n_attention_wv: int
    i_attention_wv: int = 0
    i_ffn_down: int = 0
    i_ffn_gate: int = 0
    i_ffn_up: int = 0

    def layer_of(self, counter: int, layer: int) -> int:
        """``layer_info``: the layer from the tensor's name in MoE models, else the count."""
        return layer if self.n_expert > 1 else counter


def _output_type(mix: _Mix, tensor: Tensor) -> str:
    """The LM head (and a tied token table): Q8_0 when its rows do not fit the file type's
    block, Q5_K for the lowest-bit IQ types, else Q6_K (Q8_0 files keep Q8_0)."""
    if mix.ftype == "MXFP4_MOE" or tensor.shape[-1] % GGML_QUANT_SIZES[mix.base][0]:
        return "Q8_0"
    if mix.ftype in (*IQ2_FAMILY, "IQ3_XXS"):
        return "Q5_K"
    return mix.base if mix.base == "Q8_0" else "Q6_K"


def _token_table_type(mix: _Mix) -> str:
    """An untied token table."""
    if mix.ftype in ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"):
        return "Q2_K"
    if mix.ftype in ("IQ2_S", "IQ2_M", "IQ3_XXS"):
        return "IQ3_S"
    if mix.ftype in ("TQ1_0", "TQ2_0", "Q2_0"):
        return "Q4_K"
    return mix.base


def _iq2_type(mix: _Mix, kind: str) -> str:
    """The IQ1/IQ2 file types' own branch."""
    low = "IQ3_S" if mix.ftype in ("IQ2_S", "IQ2_M") else "Q2_K"
    new = mix.base
    if kind == "attn_v":
        new = "Q4_K" if mix.n_gqa >= 4 or mix.n_expert >= 4 else low
        mix.i_attention_wv += 1
    elif mix.n_expert == 8 and kind == "attn_k":
        new = "Q4_K"
    elif kind == "ffn_down":
        if mix.i_ffn_down < mix.n_layers // 8:
            new = low
        mix.i_ffn_down += 1
    elif kind == "attn_output":
        if mix.n_expert == 8:
            new = "Q5_K"
        elif mix.ftype in ("IQ1_S", "IQ1_M"):
            new = "IQ2_XXS"
        elif mix.ftype in ("IQ2_S", "IQ2_M"):
            new = "IQ3_S"
    return new


def _attn_v_type(mix: _Mix) -> str:
    """``attn_v`` (and ``attn_qkv``, ``attn_kv_b``) of the other file types."""
    ftype, gqa, i, new = mix.ftype, mix.n_gqa, mix.i_attention_wv, mix.base
    if ftype == "Q2_K":
        new = "Q4_K" if gqa >= 4 else "Q3_K"
    elif ftype == "Q2_K_S" and gqa >= 4:
        new = "Q4_K"
    elif ftype == "IQ3_XXS":
        new = "Q4_K" if gqa >= 4 else "IQ3_XXS" if mix.imatrix else "IQ3_S"
    elif (ftype in ("IQ3_XS", "IQ3_S") and gqa >= 4) or ftype == "IQ3_M":
        new = "Q4_K"
    elif ftype == "Q3_K_M":
        new = "Q5_K" if i < 2 else "Q4_K"
    elif ftype == "Q3_K_L" or (ftype in ("IQ4_NL", "IQ4_XS") and gqa >= 4):
        new = "Q5_K"
    elif ftype in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, mix.n_attention_wv):
        new = "Q6_K"
    elif ftype == "Q4_K_S" and i < 4:
        new = "Q5_K"
    if mix.label_70b and new in ("Q3_K", "Q4_K"):
        new = "Q5_K"
    if mix.n_expert == 8:
        new = "Q8_0"
    mix.i_attention_wv += 1
    return new


def _ffn_down_type(mix: _Mix, layer: int) -> str:
    """``ffn_down`` of the other file types, by layer."""
    ftype, n, new = mix.ftype, mix.n_layers, mix.base
    i = mix.layer_of(mix.i_ffn_down, layer)
    mix.i_ffn_down += 1
    if ftype == "Q2_K":
        return "Q3_K"
    if ftype == "Q2_K_S":
        return "Q4_K" if i < n // 8 else new
    if ftype == "IQ3_XXS" and not mix.imatrix:
        return "Q4_K" if i < n // 8 else "Q3_K"
    if ftype == "Q3_K_M":
        return "Q5_K" if i < n // 16 else "Q4_K"
    if ftype == "IQ3_M" and (i < n // 8 or (mix.n_expert == 8 and use_more_bits(i, n))):
        return "Q4_K"
    if ftype == "Q3_K_L":
        return "Q5_K"
    if ftype == "Q4_K_M":
        return "Q6_K" if use_more_bits(i, n) else new
    if i < n // 8 and ftype in ("IQ4_NL", "IQ4_XS") and not mix.imatrix:
        return "Q5_K"
    if ftype == "Q5_K_M" and use_more_bits(i, n):
        return "Q6_K"
    if ftype == "Q4_K_S" and i < n // 8:
        return "Q5_K"
    if ftype in ("Q4_0", "Q5_0") and mix.imatrix and i < n // 8:
        return "Q4_1" if ftype == "Q4_0" else "Q5_1"
    return new


ATTN_OUTPUT_8_EXPERTS = (
    "Q2_K", "IQ3_XS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ3_S",
    "IQ3_M", "IQ4_XS",
)  # fmt: skip
"""File types whose ``attn_output`` becomes Q5_K in a model of exactly 8 experts."""
ATTN_OUTPUT: dict[str, str] = {
    "Q2_K": "Q3_K",
    "IQ3_XXS": "IQ3_S",
    "Q3_K_M": "Q4_K",
    "Q3_K_L": "Q5_K",
    "IQ3_M": "Q4_K",
}
"""``attn_output`` of the other models, by file type."""


def _tensor_type(mix: _Mix, tensor: Tensor, layer: int) -> str:
    """``llama_tensor_get_type_impl``: the type the file type's mix gives this tensor."""
    kind = category(tensor)
    if kind == "output" or (mix.tied and kind == "token_embd"):
        return _output_type(mix, tensor)
    if mix.ftype == "MXFP4_MOE":
        stacked = len(tensor.shape) == 3 and tensor.shape[0] > 1
        return "MXFP4" if stacked else "Q8_0"
    if kind == "token_embd":
        return _token_table_type(mix)
    if mix.ftype in IQ2_FAMILY:
        return _iq2_type(mix, kind)
    ftype, new = mix.ftype, mix.base
    if kind == "attn_v":
        return _attn_v_type(mix)
    if kind == "attn_k":
        if mix.n_expert == 8:
            return "Q8_0"
        return {"IQ3_XS": "IQ3_XXS", "IQ3_XXS": "IQ2_S"}.get(ftype, new)
    if kind == "attn_q":
        return {"IQ3_XS": "IQ3_XXS", "IQ3_XXS": "IQ2_S"}.get(ftype, new)
    if kind == "ffn_down":
        return _ffn_down_type(mix, layer)
    if kind == "attn_output":
        if mix.n_expert == 8:
            return "Q5_K" if ftype in ATTN_OUTPUT_8_EXPERTS else new
        return ATTN_OUTPUT.get(ftype, new)
    if kind in ("ffn_gate", "ffn_up"):
        counter = "i_" + kind
        i = mix.layer_of(getattr(mix, counter), layer)
        setattr(mix, counter, getattr(mix, counter) + 1)
        n = mix.n_layers
        if ftype == "IQ3_XS" and n // 8 <= i < 7 * n // 8:
            return "IQ3_XXS"
    return new


def _fallback(tensor: Tensor, gguf_type: str) -> str:
    """``tensor_type_fallback``: a type whose block divides the row length."""
    length = tensor.shape[-1]
    block = GGML_QUANT_SIZES[gguf_type][0]
    if length % block == 0:
        return gguf_type
    new = FALLBACK.get(gguf_type)
    if new is None:
        if block > 32:
            raise UsageError(
                f"llama-quantize has no fallback for {gguf_type}: {tensor.name} has rows of "
                f"{length} elements, no multiple of {block}"
            )
        new = gguf_type
    return new if length % GGML_QUANT_SIZES[new][0] == 0 else "F16"


def _file_order(tensors: list[Tensor]) -> list[Tensor]:
    """A block's tensors in the order llama.cpp visits them where it matters: a layer's
    ``ffn_down`` before ``ffn_down_exps`` before ``ffn_down_shexp`` (by name)."""
    return sorted(tensors, key=lambda t: ("shared_expert" in t.name, "experts" in t.name))


def _mix(spec: ModelSpec, fmt: WeightFormat, first: ModelSpec, layers: list[list[Tensor]]) -> _Mix:
    """The state the mix starts from: ``first`` the first block, ``layers`` the tensors of
    every block in order."""
    assert fmt.gguf_type is not None
    heads = first.n_heads or 0
    n_v = sum(t.copies for tensors in layers for t in tensors if category(t) == "attn_v")
    return _Mix(
        ftype=fmt.gguf_type,
        base=FILE_TYPES[fmt.gguf_type],
        n_layers=spec.n_layers,
        n_gqa=heads // first.kv_heads if first.kv_heads else 0,
        n_expert=max((stack.moe_experts or 0) for stack in spec.stacks),
        label_70b=spec.n_layers == 80 and 0 < spec.kv_heads < (spec.n_heads or 0),
        imatrix=fmt.imatrix or fmt.gguf_type in IMATRIX_REQUIRED,
        tied=spec.tie_embeddings,
        n_attention_wv=n_v,
    )


def _assign(spec: ModelSpec, fmt: WeightFormat) -> Iterator[tuple[Tensor, str, bool]]:
    """Each tensor of one copy (model tensors once, block tensors layer by layer), its type and
    whether it is quantized."""
    per_stack = {id(stack): _file_order(block_tensors(stack)) for stack in spec.stacks}
    order = layer_stacks(spec, "GGUF mixes")
    layers = [per_stack[id(stack)] for stack in order]
    mix = _mix(spec, fmt, order[0] if order else spec, layers)

    def choose(tensor: Tensor, layer: int) -> tuple[Tensor, str, bool]:
        forced = override(fmt, tensor, layer if layer >= 0 else None)
        if forced is False or (forced is None and not quantizable(tensor)):
            kept = unquantized_type(tensor) if forced is None or len(tensor.shape) < 2 else "F16"
            return tensor, kept, False
        if mix.ftype in FLOAT_TYPES:
            return tensor, mix.base, False
        chosen = mix.base if fmt.pure else _tensor_type(mix, tensor, layer)
        return tensor, _fallback(tensor, chosen), True

    for tensor in model_tensors(spec):
        yield choose(tensor, -1)
    for layer, tensors in enumerate(layers):
        for tensor in tensors:
            for _ in range(tensor.copies):
                yield choose(tensor, layer)


def gguf_tensors(
    spec: ModelSpec, fmt: WeightFormat, tensors: list[Tensor]
) -> tuple[TensorBytes, ...]:
    """Every tensor of ``spec`` in a GGUF file of ``fmt``'s type, grouped by name and type:
    rows x row length / block x bytes per block (``tensors`` only fixes the order)."""
    counts: Counter[tuple[str, tuple[int, ...], str, bool]] = Counter()
    for tensor, gguf_type, quantized in _assign(spec, fmt):
        counts[(tensor.name, tensor.shape, gguf_type, quantized)] += 1
    order = {t.name: k for k, t in enumerate(tensors)}
    rows = []
    for (name, shape, gguf_type, quantized), copies in sorted(
        counts.items(), key=lambda item: (order[item[0][0]], item[0][2])
    ):
        *stack, length = shape
        n_rows = copies
        for size in stack:
            n_rows *= size
        rows.append(
            TensorBytes(
                name, shape, copies, gguf_type, quantized, type_bytes(gguf_type, n_rows, length)
            )
        )
    return tuple(rows)
