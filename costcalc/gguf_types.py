"""GGML tensor types and llama-quantize file types: the tables, nothing else.

Block sizes and bytes per block are gguf-py's ``GGML_QUANT_SIZES`` (gguf 0.19.0; checked by the
tests against the package), and for Q2_0, which gguf 0.19.0 does not list, ``block_q2_0`` of
``ggml/src/ggml-common.h`` (the llama.cpp vendored by llama-cpp-python 0.3.36). A row of n
elements of a type with blocks of b elements and s bytes takes n / b x s bytes.

The file types are those ``llama-quantize`` accepts (``QUANT_OPTIONS`` of
``tools/quantize/quantize.cpp``) and the tensor type each defaults to
(``llama_ftype_get_default_type`` of ``src/llama-quant.cpp``).
"""

from __future__ import annotations

GGML_QUANT_SIZES: dict[str, tuple[int, int]] = {
    "F32": (1, 4),
    "F16": (1, 2),
    "BF16": (1, 2),
    "Q1_0": (128, 18),
    "Q2_0": (64, 18),
    "Q4_0": (32, 18),
    "Q4_1": (32, 20),
    "Q5_0": (32, 22),
    "Q5_1": (32, 24),
    "Q8_0": (32, 34),
    "MXFP4": (32, 17),
    "Q2_K": (256, 84),
    "Q3_K": (256, 110),
    "Q4_K": (256, 144),
    "Q5_K": (256, 176),
    "Q6_K": (256, 210),
    "IQ1_S": (256, 50),
    "IQ1_M": (256, 56),
    "IQ2_XXS": (256, 66),
    "IQ2_XS": (256, 74),
    "IQ2_S": (256, 82),
    "IQ3_XXS": (256, 98),
    "IQ3_S": (256, 110),
    "IQ4_NL": (32, 18),
    "IQ4_XS": (256, 136),
    "TQ1_0": (256, 54),
    "TQ2_0": (256, 66),
}
"""Tensor type -> (elements per block, bytes per block)."""

FILE_TYPES: dict[str, str] = {
    "F32": "F32",
    "F16": "F16",
    "BF16": "BF16",
    "Q1_0": "Q1_0",
    "Q2_0": "Q2_0",
    "Q4_0": "Q4_0",
    "Q4_1": "Q4_1",
    "Q5_0": "Q5_0",
    "Q5_1": "Q5_1",
    "Q8_0": "Q8_0",
    "MXFP4_MOE": "MXFP4",
    "Q2_K": "Q2_K",
    "Q2_K_S": "Q2_K",
    "Q3_K_S": "Q3_K",
    "Q3_K_M": "Q3_K",
    "Q3_K_L": "Q3_K",
    "Q4_K_S": "Q4_K",
    "Q4_K_M": "Q4_K",
    "Q5_K_S": "Q5_K",
    "Q5_K_M": "Q5_K",
    "Q6_K": "Q6_K",
    "IQ1_S": "IQ1_S",
    "IQ1_M": "IQ1_M",
    "IQ2_XXS": "IQ2_XXS",
    "IQ2_XS": "IQ2_XS",
    "IQ2_S": "IQ2_XS",
    "IQ2_M": "IQ2_S",
    "IQ3_XXS": "IQ3_XXS",
    "IQ3_XS": "IQ3_S",
    "IQ3_S": "IQ3_S",
    "IQ3_M": "IQ3_S",
    "IQ4_NL": "IQ4_NL",
    "IQ4_XS": "IQ4_XS",
    "TQ1_0": "TQ1_0",
    "TQ2_0": "TQ2_0",
}
"""llama-quantize file type -> the tensor type it defaults to."""

FILE_TYPE_ALIASES: dict[str, str] = {"Q3_K": "Q3_K_M", "Q4_K": "Q4_K_M", "Q5_K": "Q5_K_M"}
"""Names llama-quantize takes for another file type ("alias for Q4_K_M")."""

GGUF_TYPES: tuple[str, ...] = (*FILE_TYPES, *FILE_TYPE_ALIASES)
"""Every name ``gguf:TYPE`` takes."""

FLOAT_TYPES: frozenset[str] = frozenset({"F32", "F16", "BF16"})
"""File types that quantize nothing: every quantizable tensor in that float type, no mix."""

IMATRIX_REQUIRED: frozenset[str] = frozenset(
    {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS", "Q2_K_S"}
)
"""File types llama-quantize writes only with an importance matrix (``tensor_requires_imatrix``:
IQ1, IQ2 and IQ3_XXS tensors, and the Q2_K tensors of Q2_K_S), so their mix assumes one."""


def type_bytes(gguf_type: str, rows: int, row_length: int) -> int:
    """Bytes of ``rows`` rows of ``row_length`` elements of ``gguf_type``
    (``ggml_row_size``: row length / block x bytes per block)."""
    block, size = GGML_QUANT_SIZES[gguf_type]
    return rows * (row_length // block) * size
