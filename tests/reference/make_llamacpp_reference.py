"""Generate tests/golden/llamacpp_memory.json: what llama.cpp allocates and logs, model by model.

Run by hand (pytest does not collect this file), with llama-cpp-python (this data came from
0.3.36, whose bindings build llama.cpp 0c1e570) and gguf:

    pip install llama-cpp-python==0.3.36 gguf==0.19.0 numpy
    python tests/reference/make_llamacpp_reference.py

For each Hugging Face config of tests/fixtures/llamacpp/ a random-weight GGUF file is written
with gguf's GGUFWriter as ``convert_hf_to_gguf.py --outtype f16`` writes it (its tensor names and
shapes for that architecture, in the order of the checkpoint's sorted tensor names, 2-D weights
F16, vectors and the MoE router F32), then quantized to Q8_0 and Q4_K_M by
``llama_model_quantize`` (llama-quantize's own function). Each file is loaded by llama.cpp on the
CPU (``llama_model_load_from_file`` with mmap, without repacking: ``use_extra_bufts`` false) and
contexts are made with ``llama_init_from_model`` at several ``n_ctx``, cache types (``type_k``,
``type_v``; flash attention on), ``swa_full`` and ``n_seq_max``, each in a child process whose
log (verbose, every line) is kept. From it the script records the lines costcalc is checked
against: ``load_tensors: CPU_Mapped model buffer size``, ``llama_context: n_ctx`` and
``n_ctx_seq``, ``llama_kv_cache_iswa: creating ... KV cache, size = N cells``, each
``llama_kv_cache: size = ...`` line (cells, layers, seqs, K and V type and MiB), the KV buffer
and the output buffer. The mapped span of each file (its first tensor's offset to its last
one's end, as ``llama_model_loader::get_mapping_range`` takes it) is read by gguf's GGUFReader
and stored beside, exact.
"""

from __future__ import annotations

import ctypes
import datetime
import json
import re
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "llamacpp"
OUTPUT = ROOT / "tests" / "golden" / "llamacpp_memory.json"

ARCH = {"llama": "llama", "qwen3": "qwen3", "qwen3_moe": "qwen3moe", "gemma2": "gemma2",
        "gemma3_text": "gemma3"}  # fmt: skip
FILE_TYPES = {"F16": 1, "Q8_0": 7, "Q4_K_M": 15}
CACHE_TYPES = {"f16": 1, "q8_0": 8, "q4_0": 2}
CONTEXTS = (1000, 4096, 5000)


def checkpoint_names(c: dict) -> list[tuple[str, str, tuple[int, ...], bool]]:
    """(checkpoint name, GGUF name, numpy shape, kept in F32) of every tensor, sorted by the
    checkpoint's names as convert_hf_to_gguf.py reads them."""
    V, D, L = c["vocab_size"], c["hidden_size"], c["num_hidden_layers"]
    H, K = c["num_attention_heads"], c["num_key_value_heads"]
    hd = c.get("head_dim") or D // H
    kind = c["model_type"]
    out = [("model.embed_tokens.weight", "token_embd.weight", (V, D), False)]
    out.append(("model.norm.weight", "output_norm.weight", (D,), True))
    if not c.get("tie_word_embeddings", kind.startswith("gemma")):
        out.append(("lm_head.weight", "output.weight", (V, D), False))
    for i in range(L):
        hf, g = f"model.layers.{i}.", f"blk.{i}."
        out += [
            (hf + "input_layernorm.weight", g + "attn_norm.weight", (D,), True),
            (hf + "self_attn.q_proj.weight", g + "attn_q.weight", (H * hd, D), False),
            (hf + "self_attn.k_proj.weight", g + "attn_k.weight", (K * hd, D), False),
            (hf + "self_attn.v_proj.weight", g + "attn_v.weight", (K * hd, D), False),
            (hf + "self_attn.o_proj.weight", g + "attn_output.weight", (D, H * hd), False),
        ]
        if kind in ("qwen3", "qwen3_moe", "gemma3_text"):
            out += [
                (hf + "self_attn.q_norm.weight", g + "attn_q_norm.weight", (hd,), True),
                (hf + "self_attn.k_norm.weight", g + "attn_k_norm.weight", (hd,), True),
            ]
        if kind.startswith("gemma"):
            out += [
                (
                    hf + "post_attention_layernorm.weight",
                    g + "post_attention_norm.weight",
                    (D,),
                    True,
                ),
                (hf + "pre_feedforward_layernorm.weight", g + "ffn_norm.weight", (D,), True),
                (hf + "post_feedforward_layernorm.weight", g + "post_ffw_norm.weight", (D,), True),
            ]
        else:
            out.append((hf + "post_attention_layernorm.weight", g + "ffn_norm.weight", (D,), True))
        if kind == "qwen3_moe":
            X, F, e = c["num_experts"], c["moe_intermediate_size"], hf + "mlp.experts.0."
            out += [
                (hf + "mlp.gate.weight", g + "ffn_gate_inp.weight", (X, D), True),
                (e + "down_proj.weight", g + "ffn_down_exps.weight", (X, D, F), False),
                (e + "gate_proj.weight", g + "ffn_gate_exps.weight", (X, F, D), False),
                (e + "up_proj.weight", g + "ffn_up_exps.weight", (X, F, D), False),
            ]
        else:
            F = c["intermediate_size"]
            out += [
                (hf + "mlp.gate_proj.weight", g + "ffn_gate.weight", (F, D), False),
                (hf + "mlp.up_proj.weight", g + "ffn_up.weight", (F, D), False),
                (hf + "mlp.down_proj.weight", g + "ffn_down.weight", (D, F), False),
            ]
    return sorted(out)


def write_f16(path: Path, c: dict) -> None:
    """The random-weight F16 GGUF file of config ``c``, with the metadata llama.cpp reads."""
    import gguf
    import numpy as np

    arch = ARCH[c["model_type"]]
    w = gguf.GGUFWriter(path, arch)
    H = c["num_attention_heads"]
    hd = c.get("head_dim") or c["hidden_size"] // H
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(H)
    w.add_head_count_kv(c["num_key_value_heads"])
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_rope_dimension_count(hd)
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_rope_freq_base(c.get("rope_theta", 10000.0))
    w.add_tokenizer_model("none")
    w.add_vocab_size(c["vocab_size"])
    w.add_file_type(1)
    if c.get("sliding_window"):
        w.add_sliding_window(c["sliding_window"])
    if c["model_type"] == "qwen3_moe":
        w.add_expert_count(c["num_experts"])
        w.add_expert_used_count(c["num_experts_per_tok"])
        w.add_expert_feed_forward_length(c["moe_intermediate_size"])
    rng = np.random.default_rng(0)
    for _, name, shape, f32 in checkpoint_names(c):
        data = (rng.standard_normal(shape) * 0.02).astype(np.float32)
        w.add_tensor(name, data if f32 else data.astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def mapped_span(path: Path) -> dict:
    """The file's tensor data as llama.cpp maps it: first offset to last end, exact."""
    import gguf

    reader = gguf.GGUFReader(path)
    starts = [int(t.data_offset) for t in reader.tensors]
    ends = [int(t.data_offset) + int(t.n_bytes) for t in reader.tensors]
    return {
        "tensors": len(reader.tensors),
        "alignment": reader.alignment,
        "span_bytes": max(ends) - min(starts),
        "tensor_bytes": sum(int(t.n_bytes) for t in reader.tensors),
        "last_tensor": reader.tensors[-1].name,
    }


def quantize(src: Path, dst: Path, ftype: int) -> None:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = 2
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(params))
    assert rc == 0, (src, ftype, rc)


def child(args: dict) -> None:
    """Load the model and make one context with ``args``; llama.cpp logs to stderr."""
    import llama_cpp

    @llama_cpp.llama_log_callback
    def log(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        sys.stderr.write(text.decode("utf-8", "replace"))

    llama_cpp.llama_log_set(log, ctypes.c_void_p(0))
    llama_cpp.llama_backend_init()
    mp = llama_cpp.llama_model_default_params()
    mp.use_mmap = True
    mp.use_extra_bufts = False
    model = llama_cpp.llama_model_load_from_file(args["path"].encode(), mp)
    assert model, args
    if "n_ctx" in args:
        cp = llama_cpp.llama_context_default_params()
        cp.n_ctx = args["n_ctx"]
        cp.n_seq_max = args["n_seq_max"]
        cp.n_threads = cp.n_threads_batch = 1
        cp.type_k = CACHE_TYPES[args["type_k"]]
        cp.type_v = CACHE_TYPES[args["type_v"]]
        cp.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
        cp.swa_full = args["swa_full"]
        cp.kv_unified = False
        ctx = llama_cpp.llama_init_from_model(model, cp)
        assert ctx, args
        llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)


KV = re.compile(
    r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+)/(\d+) seqs\), "
    r"K \((\w+)\): +([\d.]+) MiB, V \((\w+)\): +([\d.]+) MiB"
)


def parse(log: str) -> dict:
    """The lines costcalc is checked against, as llama.cpp printed them."""

    def one(pattern: str) -> str | None:
        found = re.search(pattern, log)
        return found.group(1) if found else None

    caches = [
        {
            "line": m.group(0),
            "mib": m.group(1),
            "cells": int(m.group(2)),
            "layers": int(m.group(3)),
            "seqs": [int(m.group(4)), int(m.group(5))],
            "type_k": m.group(6),
            "k_mib": m.group(7),
            "type_v": m.group(8),
            "v_mib": m.group(9),
        }
        for m in KV.finditer(log)
    ]
    iswa = re.findall(r"creating +(non-SWA|SWA) KV cache, size = (\d+) cells", log)
    buffers = r"load_tensors: +(\S+) model buffer size = +([\d.]+) MiB"
    return {
        "model_buffer_mib": re.findall(buffers, log),
        "n_ctx": int(one(r"llama_context: n_ctx += (\d+)") or 0) or None,
        "n_ctx_seq": int(one(r"llama_context: n_ctx_seq += (\d+)") or 0) or None,
        "n_ubatch": int(one(r"llama_context: n_ubatch += (\d+)") or 0) or None,
        "iswa_cells": {kind: int(cells) for kind, cells in iswa},
        "kv_caches": caches,
        "kv_buffer_mib": re.findall(r"llama_kv_cache: +\S+ KV buffer size = +([\d.]+) MiB", log),
        "output_buffer_mib": one(r"llama_context: +\S+ +output buffer size = +([\d.]+) MiB"),
    }  # fmt: skip


def run(args: dict) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(args)],
        capture_output=True,
        text=True,
        check=True,
    )
    return parse(done.stderr)


def contexts(config: dict) -> list[dict]:
    """The contexts made of a model's F16 file."""
    sliding = bool(config.get("sliding_window"))
    out = []
    for n_ctx in CONTEXTS:
        for cache in ("f16", "q8_0", "q4_0"):
            for swa_full in (False, True) if sliding else (False,):
                out.append(
                    {"n_ctx": n_ctx, "n_seq_max": 1, "type_k": cache, "type_v": cache,
                     "swa_full": swa_full}
                )  # fmt: skip
    out.append(
        {"n_ctx": 5000, "n_seq_max": 3, "type_k": "q8_0", "type_v": "f16", "swa_full": False}
    )
    return out


def main() -> None:
    models = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fixture in sorted(FIXTURES.glob("*.json")):
            config = json.loads(fixture.read_text())
            name = fixture.stem
            f16 = Path(tmp) / f"{name}-F16.gguf"
            write_f16(f16, config)
            files = {}
            for label, ftype in FILE_TYPES.items():
                path = f16 if label == "F16" else Path(tmp) / f"{name}-{label}.gguf"
                if label != "F16":
                    if config["hidden_size"] % 32:
                        continue  # rows no block divides: llama-quantize stops
                    quantize(f16, path, ftype)
                print(f"{name} {label}", file=sys.stderr, flush=True)
                files[label] = {**mapped_span(path), **run({"path": str(path)})}
            runs = []
            for args in contexts(config):
                if args["type_k"] != "f16" and config.get("head_dim", 64) % 32:
                    continue
                print(f"{name} {args}", file=sys.stderr, flush=True)
                runs.append({"args": args, **run({"path": str(f16), **args})})
            models[name] = {
                "fixture": str(fixture.relative_to(ROOT)),
                "files": files,
                "contexts": runs,
            }
    data = {
        "generator": "tests/reference/make_llamacpp_reference.py",
        "date": datetime.date.today().isoformat(),
        "source": (
            f"llama-cpp-python {version('llama-cpp-python')} (its vendored llama.cpp) on the "
            f"CPU, verbose log lines; files written by gguf {version('gguf')} GGUFWriter, "
            "quantized by llama_model_quantize, mapped spans read by GGUFReader"
        ),
        "models": models,
    }
    OUTPUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(json.loads(sys.argv[2]))
    else:
        main()
