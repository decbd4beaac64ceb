"""GGUF files as llama.cpp's ``llama-quantize`` writes them: the type of every tensor, its bytes.

Block sizes and bytes per block are gguf-py's ``GGML_QUANT_SIZES`` (gguf 0.19.0; checked by the
tests against the package): a row of n elements of a type with blocks of b elements and s bytes
takes n / b x s bytes (n must be a multiple of b).

Which tensors are quantized (``tensor_allows_quantization`` in llama.cpp ``src/llama-quant.cpp``,
and ``convert_hf_to_gguf.py``'s float32 list): matrices, the token table included; never vectors
(norms, biases: F32), the MoE router (``ffn_gate_inp``: F32) nor the shared-expert gate
(``ffn_gate_inp_shexp``, kept as converted: F16), position tables, convolutions and Mamba's
``A`` (F32). Matrices the user keeps (``-NAME``) stay F16, as ``convert_hf_to_gguf.py
--outtype f16`` wrote them.

The mixes (``llama_tensor_get_type_impl``), for the file types costcalc knows; layers are counted
in file order (``weight_name_comparer``: by layer number):

- Every file type but the pure ones: the LM head (``output.weight``, or the token table when the
  embeddings are tied) becomes Q6_K, or Q8_0 when its row length is no multiple of the type's
  block or the type is Q8_0. An untied token table keeps the file's type.
- Q4_K_M, Q5_K_M: ``attn_v`` (and a fused ``attn_qkv``, MLA's ``attn_kv_b``) becomes Q6_K in
  the i-th such tensor when ``use_more_bits(i, n)``: i < n / 8, or i >= 7 n / 8, or
  (i - n / 8) % 3 == 2 (integer division); likewise ``ffn_down`` (each layer's experts and shared
  expert: the layer's number) with n = the number of layers.
- Q4_K_S: the first 4 ``attn_v`` become Q5_K, ``ffn_down`` of the first n / 8 layers Q5_K.
- Models with exactly 8 experts: ``attn_v`` and ``attn_k`` become Q8_0, and under Q4_K_S/Q4_K_M
  ``attn_output`` Q5_K.
- llama.cpp's size label "70B" (costcalc takes it as 80 layers with grouped key/value heads, as
  the Llama loader assigns it): ``attn_v`` still Q4_K becomes Q5_K.
- A row length that is no multiple of the block (256 for k-quants) falls back: Q4_K to Q5_0,
  Q5_K to Q5_1, Q6_K to Q8_0, then F16 if still not a multiple; Q4_0 and Q8_0 have no fallback
  (llama-quantize stops, and so does costcalc).

Not modelled, as costcalc cannot know them: Falcon's own rules (an architecture name), an
importance matrix (changes Q4_0's first ``ffn_down`` layers only when given), ``--tensor-type``
overrides beyond +/-NAME, and converters that split tensors differently (newer DeepSeek
conversions split ``attn_kv_b`` into ``attn_k_b`` and ``attn_v_b``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from costcalc.blocks import BLOCK_FIELDS
from costcalc.errors import UsageError
from costcalc.quant import TensorBytes, WeightFormat, override
from costcalc.spec import LayerGroup, ModelSpec
from costcalc.tensors import Tensor, block_tensors, model_tensors

GGML_QUANT_SIZES: dict[str, tuple[int, int]] = {
    "F32": (1, 4),
    "F16": (1, 2),
    "BF16": (1, 2),
    "Q4_0": (32, 18),
    "Q4_1": (32, 20),
    "Q5_0": (32, 22),
    "Q5_1": (32, 24),
    "Q8_0": (32, 34),
    "Q4_K": (256, 144),
    "Q5_K": (256, 176),
    "Q6_K": (256, 210),
}
"""Type -> (elements per block, bytes per block), gguf-py 0.19.0 ``GGML_QUANT_SIZES``."""

FILE_TYPES: dict[str, str] = {
    "F16": "F16",
    "BF16": "BF16",
    "Q4_0": "Q4_0",
    "Q8_0": "Q8_0",
    "Q6_K": "Q6_K",
    "Q4_K_S": "Q4_K",
    "Q4_K_M": "Q4_K",
    "Q5_K_S": "Q5_K",
    "Q5_K_M": "Q5_K",
}
"""llama-quantize file type -> its default tensor type (``llama_ftype_get_default_type``)."""

PURE_TYPES: tuple[str, ...] = ("Q4_K", "Q5_K")
"""Types accepted alone: ``llama-quantize --pure``, every quantizable tensor of that type."""

GGUF_TYPES: tuple[str, ...] = (*FILE_TYPES, *PURE_TYPES)
FALLBACK = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}
MAX_LAYERS = 100_000
"""GGUF mixes are assigned layer by layer; deeper models are refused."""

ATTN_V_LIKE = ("attn.v_proj", "attn.qkv_proj", "attn.kv_b_proj")
"""Modules llama.cpp treats as ``attn_v`` (a name match: a cross-attention's ``cross_attn.v_proj``
too)."""
F32_KEPT = ("mlp.router", "embed_positions", "conv1d", "conv.conv", "mixer.A_log")


def type_bytes(gguf_type: str, rows: int, row_length: int) -> int:
    """Bytes of ``rows`` rows of ``row_length`` elements of ``gguf_type``."""
    block, size = GGML_QUANT_SIZES[gguf_type]
    return rows * (row_length // block) * size


def use_more_bits(i: int, n: int) -> bool:
    """llama.cpp's choice of the layers that get more bits: the first and last eighth, and
    every third layer in between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _module(tensor: Tensor) -> str:
    return tensor.name.removesuffix(".weight")


def quantizable(tensor: Tensor) -> bool:
    """``tensor_allows_quantization`` for costcalc's tensors: matrices the forward pass
    multiplies by (the router, the shared-expert gate excepted) and the token table."""
    if len(tensor.shape) < 2:
        return False
    if tensor.name == "embed_tokens.weight":
        return True
    return tensor.use in ("matmul", "experts") and "shared_expert_gate" not in tensor.name


def unquantized_type(tensor: Tensor) -> str:
    """F32 for vectors and the tensors the converter always writes in F32, else F16."""
    if len(tensor.shape) < 2 or any(part in tensor.name for part in F32_KEPT):
        return "F32"
    return "F16"


def _layers(spec: ModelSpec) -> list[ModelSpec]:
    """The spec of every block, in layer order (patterns cycled as :func:`pattern_counts`)."""
    if spec.n_layers > MAX_LAYERS:
        raise UsageError(f"GGUF mixes are assigned layer by layer: at most {MAX_LAYERS:,} layers")
    if any(stack.shared_weight_sets is not None for stack in spec.stacks):
        raise UsageError("GGUF mixes of blocks that reuse weight sets are not modelled")
    if spec.layers is None:
        return [spec] * spec.n_layers
    stacks: dict[tuple[object, ...], ModelSpec] = {}
    for stack in spec.stacks:
        stacks.setdefault(tuple(getattr(stack, name) for name in BLOCK_FIELDS), stack)
    order: list[ModelSpec] = []
    for group in spec.layers:
        for overrides, count in _runs(group):
            block = {**group.overrides(), **overrides}
            key = tuple(block.get(name, getattr(spec, name)) for name in BLOCK_FIELDS)
            order += [stacks[key]] * count
    return order


def _runs(group: LayerGroup) -> list[tuple[dict[str, Any], int]]:
    """A layer group's runs in layer order: one run, or its pattern cycled up to its count."""
    if group.pattern is None:
        return [({}, group.count)]
    runs: list[tuple[dict[str, Any], int]] = []
    left = group.count
    while left > 0:
        for run in group.pattern:
            take = min(run.count, left)
            if take:
                runs.append((run.overrides(), take))
            left -= take
    return runs


def _rule(ftype: str, tensor: Tensor, i: int, n: int, experts: int, label_70b: bool) -> str | None:
    """The file type's choice for a block tensor (None: the default type), given its index
    ``i`` among tensors of its kind and their number ``n`` (see the module docstring)."""
    module = _module(tensor)
    if module.endswith(ATTN_V_LIKE):
        new = None
        if ftype in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, n):
            new = "Q6_K"
        elif ftype == "Q4_K_S" and i < 4:
            new = "Q5_K"
        if label_70b and (new or FILE_TYPES[ftype]) == "Q4_K":
            new = "Q5_K"
        return "Q8_0" if experts == 8 else new
    if module == "attn.k_proj" and experts == 8:
        return "Q8_0"
    if module.endswith("down_proj"):
        if ftype in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, n):
            return "Q6_K"
        if ftype == "Q4_K_S" and i < n // 8:
            return "Q5_K"
    if module == "attn.o_proj" and experts == 8 and ftype in ("Q4_K_S", "Q4_K_M"):
        return "Q5_K"
    return None


def _fallback(tensor: Tensor, gguf_type: str) -> str:
    """``tensor_type_fallback``: a type whose block divides the row length."""
    length = tensor.shape[-1]
    if length % GGML_QUANT_SIZES[gguf_type][0] == 0:
        return gguf_type
    if gguf_type not in FALLBACK:
        raise UsageError(
            f"llama-quantize has no fallback for {gguf_type}: {tensor.name} has rows of {length} "
            f"elements, no multiple of {GGML_QUANT_SIZES[gguf_type][0]}"
        )
    new = FALLBACK[gguf_type]
    return new if length % GGML_QUANT_SIZES[new][0] == 0 else "F16"


def _assign(spec: ModelSpec, fmt: WeightFormat) -> Iterator[tuple[Tensor, str, bool]]:
    """Each tensor of one copy (model tensors once, block tensors layer by layer), its type and
    whether it is quantized."""
    assert fmt.gguf_type is not None
    ftype = fmt.gguf_type
    base = FILE_TYPES.get(ftype, ftype)
    mixed = ftype in FILE_TYPES and base not in ("F16", "BF16")
    layers = _layers(spec)
    experts = max((stack.moe_experts or 0) for stack in spec.stacks)
    label_70b = spec.n_layers == 80 and 0 < spec.kv_heads < (spec.n_heads or 0)
    tied = spec.tie_embeddings

    def choose(tensor: Tensor, rule: str | None) -> tuple[Tensor, str, bool]:
        forced = override(fmt, tensor)
        if forced is False or (forced is None and not quantizable(tensor)):
            kept = unquantized_type(tensor) if forced is None or len(tensor.shape) < 2 else "F16"
            return tensor, kept, False
        if base in ("F16", "BF16"):
            return tensor, base, False
        chosen = rule if mixed and rule else base
        return tensor, _fallback(tensor, chosen), True

    for tensor in model_tensors(spec):
        rule = None
        if tensor.name == "lm_head.weight" or (tied and tensor.name == "embed_tokens.weight"):
            length = tensor.shape[-1]
            rule = "Q8_0" if length % GGML_QUANT_SIZES[base][0] or base == "Q8_0" else "Q6_K"
        yield choose(tensor, rule)
    per_layer = [block_tensors(stack) for stack in spec.stacks]
    index = {id(stack): k for k, stack in enumerate(spec.stacks)}
    n_v = sum(
        t.copies
        for stack in layers
        for t in per_layer[index[id(stack)]]
        if _module(t).endswith(ATTN_V_LIKE)
    )
    i_v = i_down = 0
    for layer, stack in enumerate(layers):
        for tensor in per_layer[index[id(stack)]]:
            module = _module(tensor)
            rule = None
            if module.endswith(ATTN_V_LIKE):
                rule = _rule(ftype, tensor, i_v, n_v, experts, label_70b)
                i_v += 1
            elif module.endswith("down_proj"):
                i = layer if experts > 1 else i_down
                rule = _rule(ftype, tensor, i, spec.n_layers, experts, label_70b)
                i_down += 1
            elif quantizable(tensor):
                rule = _rule(ftype, tensor, 0, 0, experts, label_70b)
            for _ in range(tensor.copies):
                yield choose(tensor, rule)


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
