"""The bytes one quantized matrix takes, as each toolkit lays out its tensors.

Pure functions of the matrix's (out, in) shape and the format's settings; every count is an
integer, rounded as the toolkit's tensor shapes round it. Sources are in each docstring; the
reference scripts under ``tests/reference/`` run the toolkits themselves.
"""

from __future__ import annotations

FP32_BYTES = 4
INT32_BYTES = 4
INT64_BYTES = 8
FP16_BYTES = 2
NF4_BLOCK = 64
NESTED_BLOCK = 256
NF4_CODE = 16
"""Values of the 4-bit code table (``quant_map``) every NF4/FP4 weight keeps, fp32."""
NESTED_CODE = 256
"""Values of the 8-bit dynamic code table (``nested_quant_map``) of double quantization, fp32."""
FP8_BLOCK = 128
MXFP4_BLOCK = 32
NVFP4_BLOCK = 16

SCALE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "e8m0": 1}
"""Bytes of one scale in each dtype a scale is stored in (``e8m0``: a power of two, 1 byte)."""


def nf4_bytes(n: int, double_quant: bool) -> int:
    """One NF4 or FP4 weight of n elements (bitsandbytes ``quantize_4bit``, blocksize 64): packed
    values (n + 1) // 2 bytes and an fp32 absmax per block, 4 ceil(n / 64); with double
    quantization the absmax are uint8, ceil(n / 64) bytes, quantized in blocks of 256 with an fp32
    scale each (``state2.absmax``) plus the fp32 mean subtracted first (``offset``). The code
    tables each weight also keeps are :func:`nf4_code_bytes`."""
    blocks = -(-n // NF4_BLOCK)
    packed = (n + 1) // 2
    if not double_quant:
        return packed + FP32_BYTES * blocks
    return packed + blocks + FP32_BYTES * -(-blocks // NESTED_BLOCK) + FP32_BYTES


def nf4_code_bytes(double_quant: bool) -> int:
    """The code tables of one NF4 or FP4 weight (its ``QuantState``): the 16 fp32 values of the
    4-bit code (``quant_map``, 64 bytes) and, with double quantization, the 256 fp32 values of
    the nested 8-bit code (``nested_quant_map``, 1,024 bytes). bitsandbytes builds them per
    weight (``get_4bit_type``, ``create_dynamic_map``) and saves them with it."""
    return FP32_BYTES * (NF4_CODE + (NESTED_CODE if double_quant else 0))


def int8_bytes(out: int, inp: int) -> int:
    """One LLM.int8 weight: out x in int8 values + an fp32 scale per output row (``SCB``)."""
    return out * inp + FP32_BYTES * out


def gptq_bytes(out: int, inp: int, bits: int, group: int | None) -> int:
    """One GPTQ matrix: qweight int32 (in // 32 x bits, out), qzeros int32 (ceil(in / G),
    out // 32 x bits), scales fp16 (ceil(in / G), out), g_idx int32 (in); G = in for one group."""
    groups = 1 if group is None else -(-inp // group)
    qweight = INT32_BYTES * (inp // 32 * bits) * out
    qzeros = INT32_BYTES * groups * (out // 32 * bits)
    return qweight + qzeros + FP16_BYTES * groups * out + INT32_BYTES * inp


def awq_bytes(out: int, inp: int, group: int | None) -> int:
    """One AWQ GEMM matrix (4-bit): qweight int32 (in, out / 8), qzeros int32 (in / G, out / 8),
    scales fp16 (in / G, out)."""
    groups = 1 if group is None else inp // group
    return (
        INT32_BYTES * inp * (out // 8)
        + INT32_BYTES * groups * (out // 8)
        + FP16_BYTES * groups * out
    )


def fp8_bytes(
    out: int,
    inp: int,
    scales: str,
    block: int = FP8_BLOCK,
    scale: str = "fp32",
    static: bool = False,
) -> int:
    """One FP8 matrix: out x in bytes + scales in ``scale``'s dtype: one (tensor), out (channel),
    or ceil(out / B) x ceil(in / B) (block; DeepSeek-V3's ``weight_scale_inv``), and one more
    for the input when activations are quantized statically (``activation_scale``,
    compressed-tensors' ``input_scale``)."""
    if scales == "tensor":
        count = 1
    elif scales == "channel":
        count = out
    else:
        count = -(-out // block) * -(-inp // block)
    return out * inp + SCALE_BYTES[scale] * (count + (1 if static else 0))


def mxfp4_bytes(out: int, inp: int) -> int:
    """One MXFP4 matrix (OCP MX v1.0; compressed-tensors ``weight_packed`` uint8 (out, in / 2)
    and ``weight_scale`` uint8 e8m0 (out, ceil(in / 32)); gpt-oss's ``*_blocks`` (out, in / 32,
    16) and ``*_scales`` (out, in / 32))."""
    return out * (inp // 2) + out * -(-inp // MXFP4_BLOCK)


def nvfp4_bytes(out: int, inp: int, w4a4: bool = False) -> int:
    """One NVFP4 matrix (compressed-tensors ``weight_packed`` uint8 (out, in / 2),
    ``weight_scale`` fp8 e4m3 (out, ceil(in / 16)), ``weight_global_scale`` fp32 (1,); W4A4
    checkpoints add ``input_global_scale`` fp32 (1,))."""
    scales = out * -(-inp // NVFP4_BLOCK)
    return out * (inp // 2) + scales + FP32_BYTES * (2 if w4a4 else 1)


def packed_int_bytes(
    out: int,
    inp: int,
    bits: int,
    group: int | None,
    scale: str = "bf16",
    asym: bool = False,
    actorder: bool = False,
) -> int:
    """One compressed-tensors ``pack-quantized`` matrix (0.20: 32 values packed densely into
    ``bits`` int32 words): ``weight_packed`` int32 (out, ceil(in x bits / 32)), ``weight_scale``
    (out, ceil(in / G)) in ``scale``'s dtype (one column per row without groups),
    ``weight_shape`` int64 (2,); asymmetric: ``weight_zero_point`` int32 (ceil(out x bits / 32),
    groups); group activation order: ``weight_g_idx`` int32 (in)."""
    groups = 1 if group is None else -(-inp // group)
    packed = INT32_BYTES * out * -(-inp * bits // 32)
    total = packed + SCALE_BYTES[scale] * out * groups + 2 * INT64_BYTES
    if asym:
        total += INT32_BYTES * -(-out * bits // 32) * groups
    if actorder:
        total += INT32_BYTES * inp
    return total


def int8_channel_bytes(out: int, inp: int, scale: str = "bf16", static: bool = False) -> int:
    """One compressed-tensors ``int-quantized`` matrix (W8A8): ``weight`` int8 (out, in),
    ``weight_scale`` (out, 1) in ``scale``'s dtype, and ``input_scale`` (1,) when activations
    are quantized statically."""
    return out * inp + SCALE_BYTES[scale] * (out + (1 if static else 0))
