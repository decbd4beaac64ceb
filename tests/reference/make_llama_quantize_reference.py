"""Generate tests/golden/llama_quantize.json: what llama.cpp's quantizer writes, per file type.

Run by hand (pytest does not collect this file), with llama-cpp-python (its bindings build
llama.cpp; this data came from 0.3.36) and gguf:

    pip install llama-cpp-python==0.3.36 gguf==0.19.0 numpy
    python tests/reference/make_llama_quantize_reference.py

For each architecture below, a random-weight F16 GGUF file is written with gguf's GGUFWriter
(tensor names and shapes as ``convert_hf_to_gguf.py`` writes them for that Hugging Face config:
2-D weights F16, vectors and the MoE router F32), then quantized by ``llama_model_quantize``
(llama-quantize's own function) to every file type llama-quantize offers, with an importance
matrix of ones where the type requires one (and, for some types, once more with one), and once
``--pure``. The output file is read back by ggml's own GGUF reader (``gguf_init_from_file``,
``gguf_get_tensor_type``, ``gguf_get_tensor_size`` of libggml-base), which gives each tensor's
type and bytes as llama.cpp computes them. A file type llama-quantize refuses for a model is
recorded with its error. ggml's type table (``ggml_blck_size``, ``ggml_type_size``) is recorded
too.
"""

from __future__ import annotations

import ctypes
import datetime
import json
import os
import sys
import tempfile
from collections import Counter
from importlib.metadata import version
from pathlib import Path

import gguf
import llama_cpp
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "golden" / "llama_quantize.json"
LIB = Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so"

FILE_TYPES = {
    "F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q2_K": 10,
    "Q3_K_S": 11, "Q3_K_M": 12, "Q3_K_L": 13, "Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16,
    "Q5_K_M": 17, "Q6_K": 18, "IQ2_XXS": 19, "IQ2_XS": 20, "Q2_K_S": 21, "IQ3_XS": 22,
    "IQ3_XXS": 23, "IQ1_S": 24, "IQ4_NL": 25, "IQ3_S": 26, "IQ3_M": 27, "IQ2_S": 28,
    "IQ2_M": 29, "IQ4_XS": 30, "IQ1_M": 31, "BF16": 32, "TQ1_0": 36, "TQ2_0": 37,
    "MXFP4_MOE": 38, "Q1_0": 40, "Q2_0": 41,
}  # fmt: skip
"""llama-quantize's file types (``QUANT_OPTIONS``) and their ``llama_ftype`` values."""

NEEDS_IMATRIX = {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS",
                 "Q2_K_S"}  # fmt: skip
ALSO_WITH_IMATRIX = ("Q4_0", "Q5_0", "IQ4_NL", "IQ4_XS")
"""Types whose mix changes when an importance matrix is given: quantized both ways."""
PURE = ("Q4_K_M", "Q3_K_S")

ARCHITECTURES = {
    "llama": {
        "model_type": "llama",
        "vocab_size": 512,
        "hidden_size": 256,
        "intermediate_size": 768,
        "num_hidden_layers": 16,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False,
    },
    "qwen2": {
        "model_type": "qwen2",
        "vocab_size": 640,
        "hidden_size": 384,
        "intermediate_size": 1056,
        "num_hidden_layers": 12,
        "num_attention_heads": 6,
        "num_key_value_heads": 3,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True,
    },
    "qwen2moe": {
        "model_type": "qwen2_moe",
        "vocab_size": 512,
        "hidden_size": 256,
        "intermediate_size": 512,
        "moe_intermediate_size": 256,
        "shared_expert_intermediate_size": 512,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "num_hidden_layers": 8,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
    },
    "mixtral": {
        "model_type": "mixtral",
        "vocab_size": 512,
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "num_hidden_layers": 8,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False,
    },
}
"""Hugging Face configs (as costcalc reads them) of the models written as GGUF files."""


def gguf_tensors(c: dict) -> list[tuple[str, tuple[int, ...], bool]]:
    """(name, numpy shape, kept in F32) of every tensor convert_hf_to_gguf.py writes."""
    V, D, L = c["vocab_size"], c["hidden_size"], c["num_hidden_layers"]
    H, K = c["num_attention_heads"], c["num_key_value_heads"]
    hd = D // H
    bias = c["model_type"] in ("qwen2", "qwen2_moe")
    out = [("token_embd.weight", (V, D), False), ("output_norm.weight", (D,), True)]
    if not c["tie_word_embeddings"]:
        out.append(("output.weight", (V, D), False))
    for i in range(L):
        p = f"blk.{i}."
        out += [
            (p + "attn_norm.weight", (D,), True),
            (p + "attn_q.weight", (H * hd, D), False),
            (p + "attn_k.weight", (K * hd, D), False),
            (p + "attn_v.weight", (K * hd, D), False),
            (p + "attn_output.weight", (D, H * hd), False),
            (p + "ffn_norm.weight", (D,), True),
        ]
        if bias:
            out += [
                (p + "attn_q.bias", (H * hd,), True),
                (p + "attn_k.bias", (K * hd,), True),
                (p + "attn_v.bias", (K * hd,), True),
            ]
        experts = c.get("num_local_experts") or c.get("num_experts")
        if experts:
            F = c.get("moe_intermediate_size") or c["intermediate_size"]
            out += [
                (p + "ffn_gate_inp.weight", (experts, D), True),
                (p + "ffn_gate_exps.weight", (experts, F, D), False),
                (p + "ffn_up_exps.weight", (experts, F, D), False),
                (p + "ffn_down_exps.weight", (experts, D, F), False),
            ]
            S = c.get("shared_expert_intermediate_size")
            if S:
                out += [
                    (p + "ffn_gate_inp_shexp.weight", (1, D), False),
                    (p + "ffn_gate_shexp.weight", (S, D), False),
                    (p + "ffn_up_shexp.weight", (S, D), False),
                    (p + "ffn_down_shexp.weight", (D, S), False),
                ]
        else:
            F = c["intermediate_size"]
            out += [
                (p + "ffn_gate.weight", (F, D), False),
                (p + "ffn_up.weight", (F, D), False),
                (p + "ffn_down.weight", (D, F), False),
            ]
    return out


def write_f16(path: Path, c: dict) -> list[tuple[str, tuple[int, ...], bool]]:
    """The random-weight F16 GGUF file of config ``c``."""
    arch = {"llama": "llama", "mixtral": "llama", "qwen2": "qwen2", "qwen2_moe": "qwen2moe"}[
        c["model_type"]
    ]
    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(c["num_key_value_heads"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_vocab_size(c["vocab_size"])
    w.add_file_type(1)
    experts = c.get("num_local_experts") or c.get("num_experts")
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(c["num_experts_per_tok"])
    if c.get("moe_intermediate_size"):
        w.add_expert_feed_forward_length(c["moe_intermediate_size"])
        w.add_expert_shared_feed_forward_length(c["shared_expert_intermediate_size"])
    rng = np.random.default_rng(0)
    tensors = gguf_tensors(c)
    for name, shape, f32 in tensors:
        data = (rng.standard_normal(shape) * 0.02).astype(np.float32)
        w.add_tensor(name, data if f32 else data.astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return tensors


class GGUFInitParams(ctypes.Structure):
    _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.c_void_p)]


def ggml() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(LIB))
    lib.gguf_init_from_file.restype = ctypes.c_void_p
    lib.gguf_init_from_file.argtypes = [ctypes.c_char_p, GGUFInitParams]
    lib.gguf_get_n_tensors.restype = ctypes.c_int64
    lib.gguf_get_n_tensors.argtypes = [ctypes.c_void_p]
    lib.gguf_get_tensor_name.restype = ctypes.c_char_p
    lib.gguf_get_tensor_name.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.gguf_get_tensor_type.restype = ctypes.c_int
    lib.gguf_get_tensor_type.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.gguf_get_tensor_size.restype = ctypes.c_size_t
    lib.gguf_get_tensor_size.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.gguf_free.argtypes = [ctypes.c_void_p]
    lib.ggml_type_name.restype = ctypes.c_char_p
    lib.ggml_blck_size.restype = ctypes.c_int64
    lib.ggml_type_size.restype = ctypes.c_size_t
    return lib


def read_back(lib: ctypes.CDLL, path: Path) -> list[tuple[str, str, int]]:
    """(name, type, bytes) of every tensor of a GGUF file, as ggml reads them."""
    ctx = lib.gguf_init_from_file(str(path).encode(), GGUFInitParams(True, None))
    assert ctx, path
    rows = []
    for i in range(lib.gguf_get_n_tensors(ctx)):
        kind = lib.ggml_type_name(lib.gguf_get_tensor_type(ctx, i)).decode().upper()
        rows.append(
            (lib.gguf_get_tensor_name(ctx, i).decode(), kind, lib.gguf_get_tensor_size(ctx, i))
        )
    lib.gguf_free(ctx)
    return rows


def imatrix_of(tensors: list[tuple[str, tuple[int, ...], bool]]) -> ctypes.Array:
    """An importance matrix of ones for every matrix: ne[0] x experts values each."""
    entries = []
    keep = []
    for name, shape, _ in tensors:
        if len(shape) < 2:
            continue
        size = shape[-1] * (shape[0] if len(shape) == 3 else 1)
        data = (ctypes.c_float * size)(*([1.0] * size))
        keep.append(data)
        entries.append(
            llama_cpp.llama_model_imatrix_data(
                name.encode(), ctypes.cast(data, ctypes.POINTER(ctypes.c_float)), size
            )
        )
    entries.append(llama_cpp.llama_model_imatrix_data(None, None, 0))
    array = (llama_cpp.llama_model_imatrix_data * len(entries))(*entries)
    array._keep = keep  # type: ignore[attr-defined]
    return array


def quantize(src: Path, dst: Path, ftype: int, imatrix: ctypes.Array | None, pure: bool) -> int:
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = 2
    params.pure = pure
    if imatrix is not None:
        params.imatrix = ctypes.cast(imatrix, ctypes.POINTER(llama_cpp.llama_model_imatrix_data))
    return llama_cpp.llama_model_quantize(
        str(src).encode(), str(dst).encode(), ctypes.byref(params)
    )


def runs() -> list[tuple[str, str, bool, bool]]:
    """(costcalc format, file type, imatrix, pure) of every file written."""
    out = []
    for name in FILE_TYPES:
        out.append((f"gguf:{name}", name, name in NEEDS_IMATRIX, False))
        if name in ALSO_WITH_IMATRIX:
            out.append((f"gguf:{name},imatrix", name, True, False))
        if name in PURE:
            out.append((f"gguf:{name},pure", name, False, True))
    return out


def main() -> None:
    lib = ggml()
    names = {name: i for i in range(43) if (name := lib.ggml_type_name(i).decode().upper())}
    wanted = ("F32", "F16", "BF16", "Q1_0", "Q2_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0",
              "MXFP4", "NVFP4", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ1_S", "IQ1_M",
              "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_NL", "IQ4_XS", "TQ1_0",
              "TQ2_0")  # fmt: skip
    types = {n: [lib.ggml_blck_size(names[n]), lib.ggml_type_size(names[n])] for n in wanted}
    models = {}
    with tempfile.TemporaryDirectory() as tmp:
        for arch, config in ARCHITECTURES.items():
            src = Path(tmp) / f"{arch}-f16.gguf"
            tensors = write_f16(src, config)
            imatrix = imatrix_of(tensors)
            files = {}
            for label, ftype, with_imatrix, pure in runs():
                dst = Path(tmp) / "out.gguf"
                print(f"{arch} {label}", file=sys.stderr, flush=True)
                rc = quantize(src, dst, FILE_TYPES[ftype], imatrix if with_imatrix else None, pure)
                if rc != 0:
                    files[label] = {"error": f"llama_model_quantize returned {rc}"}
                    continue
                rows = read_back(lib, dst)
                by_type: Counter[str] = Counter()
                count: Counter[str] = Counter()
                for _, kind, size in rows:
                    by_type[kind] += size
                    count[kind] += 1
                files[label] = {
                    "bytes": sum(by_type.values()),
                    "bytes_by_type": dict(sorted(by_type.items())),
                    "tensors_by_type": dict(sorted(count.items())),
                }
                os.remove(dst)
            models[arch] = {"config": config, "files": files}
    data = {
        "generator": "tests/reference/make_llama_quantize_reference.py",
        "date": datetime.date.today().isoformat(),
        "source": (
            f"llama-cpp-python {version('llama-cpp-python')} llama_model_quantize (its vendored "
            f"llama.cpp), read back by libggml-base gguf_get_tensor_size; inputs written by "
            f"gguf {version('gguf')} GGUFWriter"
        ),
        "ggml_types": types,
        "models": models,
    }
    OUTPUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
