"""Generate tests/golden/quant_reference.json: the bytes quantization toolkits store per weight.

Run by hand (pytest does not collect this file). Each section runs the toolkit itself on small
real tensors, on the CPU, and records the shape, dtype and bytes of every tensor it stores:

    pip install torch==2.13.0 numpy gguf==0.19.0 transformers==5.24.0 compressed-tensors==0.20.1
    pip install --no-deps bitsandbytes==0.50.2 autoawq==0.2.9
    BUILD_CUDA_EXT=0 pip install --no-deps --no-build-isolation auto-gptq==0.7.1
    python tests/reference/make_quant_reference.py [--skip gptq] [--only compressed_tensors]

- bitsandbytes (CPU backend): ``functional.quantize_4bit`` (nf4, fp4; with and without
  ``compress_statistics``): the packed weight and every tensor of its ``QuantState`` (absmax,
  code tables, nested absmax and offset), and what ``as_dict(packed=True)`` saves (the
  quant-state JSON included); ``functional.int8_vectorwise_quant`` (LLM.int8).
- AutoAWQ: ``WQLinear_GEMM.from_linear`` packs a real linear layer (its ``datasets`` import, for
  calibration only, is stubbed).
- AutoGPTQ: ``QuantLinear.pack`` of ``qlinear_cuda_old`` (the CPU path), when it installs.
- gguf: ``GGML_QUANT_SIZES``, and a small GGUF file written by ``GGUFWriter`` with tensors
  quantized by ``gguf.quants.quantize`` (k-quants, which gguf-py does not quantize: random blocks
  of the type's byte shape), read back by ``GGUFReader`` (each tensor's ``n_bytes``).
- compressed-tensors: every weight scheme it presets (NVFP4, MXFP4, FP8 per tensor, channel and
  block, W4A16, W8A16, W8A8 ...) applied to real bf16 linear layers by
  ``apply_quantization_config``, its scales computed from the weights by its own
  ``compute_dynamic_scales_and_zp``/``calculate_qparams``/``generate_gparam``, then compressed by
  ``ModelCompressor.compress_model`` (its CPU path): every tensor of the compressed layer.
- gpt-oss's MXFP4 experts: compressed-tensors' MXFP4 quantizer packs each expert of stacked
  gate/up and down projections, laid out as gpt-oss stores them (``*_blocks`` (X, out, in / 32,
  16), ``*_scales`` (X, out, in / 32)); transformers' own ``convert_moe_packed_tensors`` (the
  CPU dequantizer of ``integrations/mxfp4.py``) reads them back to the (X, in, out) parameter
  GptOss computes with, close to the original weights. transformers' MXFP4 quantizer itself
  runs only on a GPU (Triton kernels), so the layout is built this way.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import tempfile
import types
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "golden" / "quant_reference.json"
SHAPES = [(64, 64), (96, 80), (17, 33), (300, 512), (1024, 4096)]
"""(out, in) of the weights quantized; 17 x 33 has an odd element count."""


def nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def describe(t: torch.Tensor) -> dict:
    return {
        "shape": list(t.shape),
        "dtype": str(t.dtype).removeprefix("torch."),
        "bytes": nbytes(t),
    }


def bitsandbytes_cases() -> dict:
    import bitsandbytes
    import bitsandbytes.functional as bnb_functional

    torch.manual_seed(0)
    cases = []
    for out, inp in SHAPES:
        w = torch.randn(out, inp, dtype=torch.bfloat16)
        for quant_type in ("nf4", "fp4"):
            for dq in (True, False):
                packed, state = bnb_functional.quantize_4bit(
                    w, blocksize=64, compress_statistics=dq, quant_type=quant_type
                )
                parts = {
                    "packed": describe(packed),
                    "absmax": describe(state.absmax),
                    "quant_map": describe(state.code),
                }
                if dq:
                    parts["nested_absmax"] = describe(state.state2.absmax)
                    parts["nested_quant_map"] = describe(state.state2.code)
                    parts["offset"] = describe(torch.as_tensor(state.offset))
                saved = state.as_dict(packed=True)
                blob = next(v for k, v in saved.items() if k.startswith("quant_state."))
                cases.append(
                    {
                        "format": quant_type,
                        "double_quant": dq,
                        "shape": [out, inp],
                        "tensors": parts,
                        "bytes": sum(p["bytes"] for p in parts.values()),
                        "saved": {k: describe(v) for k, v in saved.items()},
                        "quant_state_json": bytes(blob.tolist()).decode(),
                    }
                )
        values, row_scales, _ = bnb_functional.int8_vectorwise_quant(w.half())
        parts = {"CB": describe(values), "SCB": describe(row_scales)}
        cases.append(
            {
                "format": "llm-int8",
                "shape": [out, inp],
                "tensors": parts,
                "bytes": sum(p["bytes"] for p in parts.values()),
            }
        )
    return {"source": f"bitsandbytes {bitsandbytes.__version__}, CPU backend", "cases": cases}


def awq_cases() -> dict:
    sys.modules.setdefault("datasets", types.SimpleNamespace(load_dataset=None))  # type: ignore[arg-type]
    import awq
    from awq.modules.linear.gemm import WQLinear_GEMM

    torch.manual_seed(0)
    cases = []
    for out, inp, group, bias in [
        (64, 256, 128, True),
        (1024, 4096, 128, False),
        (96, 512, 64, False),
        (256, 256, 256, False),
    ]:
        linear = torch.nn.Linear(inp, out, bias=bias).half()
        groups = 1 if group == -1 else inp // group
        scales = (torch.rand(groups, out) + 0.1).half()
        zeros = torch.randint(0, 16, (groups, out)).half()
        packed = WQLinear_GEMM.from_linear(linear, 4, group, scales=scales, zeros=zeros)
        parts = {k: describe(v) for k, v in packed.state_dict().items()}
        weight = {k: v for k, v in parts.items() if k != "bias"}
        cases.append(
            {
                "format": "awq-int4",
                "group": group,
                "shape": [out, inp],
                "tensors": parts,
                "bytes": sum(p["bytes"] for p in weight.values()),
            }
        )
    return {"source": f"AutoAWQ {awq.__version__} WQLinear_GEMM.from_linear", "cases": cases}


def gptq_cases() -> dict:
    import importlib.util
    from importlib.metadata import version

    # auto_gptq/__init__ imports model code that transformers 5 no longer supports: load the
    # layer's own file alone.
    package = importlib.util.find_spec("auto_gptq").submodule_search_locations[0]
    path = Path(package) / "nn_modules" / "qlinear" / "qlinear_cuda_old.py"
    spec = importlib.util.spec_from_file_location("qlinear_cuda_old", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    QuantLinear = module.QuantLinear

    torch.manual_seed(0)
    cases = []
    for out, inp, bits, group in [
        (64, 256, 4, 128),
        (1024, 4096, 4, 128),
        (96, 512, 8, 32),
        (256, 320, 4, -1),
        (128, 320, 4, 128),
    ]:
        linear = torch.nn.Linear(inp, out, bias=False).half()
        layer = QuantLinear(bits, group, inp, out, False)
        groups = layer.qzeros.shape[0]
        scales = (torch.rand(out, groups) + 0.1).half()
        zeros = torch.randint(0, 2**bits, (out, groups)).int()
        g_idx = torch.tensor([i // layer.group_size for i in range(inp)], dtype=torch.int32)
        layer.pack(linear, scales, zeros, g_idx)
        parts = {k: describe(v) for k, v in layer.state_dict().items()}
        cases.append(
            {
                "format": f"gptq-int{bits}",
                "group": group,
                "shape": [out, inp],
                "tensors": parts,
                "bytes": sum(p["bytes"] for p in parts.values()),
            }
        )
    return {
        "source": f"AutoGPTQ {version('auto-gptq')} qlinear_cuda_old.QuantLinear.pack",
        "cases": cases,
    }


GGUF_TYPES = ("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K")


def gguf_cases() -> dict:
    from importlib.metadata import version

    import gguf

    T = gguf.GGMLQuantizationType
    sizes = {name: list(gguf.GGML_QUANT_SIZES[T[name]]) for name in GGUF_TYPES}
    rng = np.random.default_rng(0)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "small.gguf"
        writer = gguf.GGUFWriter(path, "llama")
        plan = [
            ("blk.0.attn_q.weight", (256, 512), "Q4_0"),
            ("blk.0.attn_v.weight", (64, 512), "Q8_0"),
            ("blk.0.ffn_down.weight", (512, 768), "Q4_K"),
            ("blk.0.ffn_up.weight", (768, 512), "Q5_K"),
            ("output.weight", (1000, 512), "Q6_K"),
            ("token_embd.weight", (1000, 512), "F16"),
            ("blk.0.attn_norm.weight", (512,), "F32"),
        ]
        for name, shape, kind in plan:
            data = rng.standard_normal(shape).astype(np.float32)
            qtype = T[kind]
            if kind == "F32":
                writer.add_tensor(name, data)
            elif kind == "F16":
                writer.add_tensor(name, data.astype(np.float16))
            else:
                try:
                    packed = gguf.quants.quantize(data, qtype)
                except NotImplementedError:  # gguf-py quantizes Q4_0 and Q8_0, not k-quants
                    byte_shape = gguf.quants.quant_shape_to_byte_shape(shape, qtype)
                    packed = rng.integers(0, 256, byte_shape, dtype=np.uint8)
                writer.add_tensor(name, packed, raw_dtype=qtype)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        reader = gguf.GGUFReader(path)
        for tensor in reader.tensors:
            written.append(
                {
                    "name": tensor.name,
                    "type": tensor.tensor_type.name,
                    "shape": [int(n) for n in reversed(tensor.shape.tolist())],
                    "bytes": int(tensor.n_bytes),
                }
            )
    return {
        "source": f"gguf {version('gguf')} GGML_QUANT_SIZES, GGUFWriter / GGUFReader",
        "quant_sizes": sizes,
        "file_tensors": written,
    }


CT_SCHEMES = (
    "NVFP4A16", "NVFP4", "MXFP4A16", "MXFP4", "FP8", "FP8_DYNAMIC", "FP8_BLOCK", "W4A16",
    "W4A16_ASYM", "W8A16", "W8A8",
)  # fmt: skip
CT_SHAPES = [(64, 256), (300, 384), (96, 512), (1024, 4096)]


def _calibrate(linear: torch.nn.Module, args) -> None:
    """The weight's scales (and zero points, global scale) from its values, by
    compressed-tensors' own functions."""
    from compressed_tensors.quantization import QuantizationStrategy as S
    from compressed_tensors.quantization.utils.helpers import (
        calculate_qparams,
        compute_dynamic_scales_and_zp,
        generate_gparam,
    )

    w = linear.weight.data
    global_scale = None
    if args.strategy == S.TENSOR_GROUP:
        global_scale = generate_gparam(w.min(), w.max())
        linear.weight_global_scale.data.copy_(global_scale)
    if args.strategy in (S.TENSOR, S.GROUP, S.TENSOR_GROUP):
        scale, zero = compute_dynamic_scales_and_zp(w, args, linear, global_scale=global_scale)
    elif args.strategy == S.CHANNEL:
        scale, zero = calculate_qparams(w.amin(1, keepdim=True), w.amax(1, keepdim=True), args)
    else:
        rows, cols = args.block_structure
        padded = torch.nn.functional.pad(w, (0, -w.shape[1] % cols, 0, -w.shape[0] % rows))
        blocks = padded.unflatten(0, (-1, rows)).unflatten(2, (-1, cols))
        scale, zero = calculate_qparams(blocks.amin((1, 3)), blocks.amax((1, 3)), args)
    linear.weight_scale.data = scale.to(linear.weight_scale.dtype).reshape(
        linear.weight_scale.shape
    )
    if hasattr(linear, "weight_zero_point"):
        zp = linear.weight_zero_point
        zp.data = zero.to(zp.dtype).reshape(zp.shape)
    if hasattr(linear, "input_scale"):
        linear.input_scale.data.fill_(0.5)
    if hasattr(linear, "input_global_scale"):
        linear.input_global_scale.data.fill_(1.0)


def compressed_tensors_cases() -> dict:
    from importlib.metadata import version

    from compressed_tensors.compressors.model_compressors.model_compressor import (
        ModelCompressor,
    )
    from compressed_tensors.quantization import (
        QuantizationConfig,
        apply_quantization_config,
        preset_name_to_scheme,
    )

    cases = []
    for name in (*CT_SCHEMES, "W8A16_CHANNEL_ASYM"):
        for out, inp in CT_SHAPES:
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(inp, out, bias=False)).to(torch.bfloat16)
            if name == "W8A16_CHANNEL_ASYM":
                scheme = preset_name_to_scheme("W8A16", ["Linear"])
                scheme.weights.strategy = "channel"
                scheme.weights.group_size = None
                scheme.weights.symmetric = False
            else:
                scheme = preset_name_to_scheme(name, ["Linear"])
            apply_quantization_config(model, QuantizationConfig(config_groups={"group_0": scheme}))
            _calibrate(model[0], scheme.weights)
            compressor = ModelCompressor.from_pretrained_model(model)
            compressor.compress_model(model)
            parts = {k.removeprefix("0."): describe(v) for k, v in model.state_dict().items()}
            cases.append(
                {
                    "scheme": name,
                    "format": compressor.quantization_config.format,
                    "weights": scheme.weights.model_dump(mode="json"),
                    "input_activations": (
                        None
                        if scheme.input_activations is None
                        else scheme.input_activations.model_dump(mode="json")
                    ),
                    "shape": [out, inp],
                    "tensors": parts,
                    "bytes": sum(p["bytes"] for p in parts.values()),
                }
            )
    return {
        "source": (
            f"compressed-tensors {version('compressed-tensors')} apply_quantization_config, "
            "ModelCompressor.compress_model (CPU), bf16 nn.Linear weights"
        ),
        "cases": cases,
    }


def compressed_tensors_actorder_cases() -> dict:
    """Group activation order (``actorder: group``, a ``weight_g_idx`` per input column), which
    compressed-tensors removed after 0.12: run with 0.12.2 first on the path, e.g.
    ``pip download compressed-tensors==0.12.2 --no-deps`` unpacked into DIR and
    ``PYTHONPATH=DIR python tests/reference/make_quant_reference.py --only
    compressed_tensors_actorder``."""
    import compressed_tensors
    from compressed_tensors.compressors.model_compressors.model_compressor import (
        ModelCompressor,
    )
    from compressed_tensors.quantization import (
        QuantizationArgs,
        QuantizationConfig,
        QuantizationScheme,
        apply_quantization_config,
    )

    cases = []
    for out, inp in CT_SHAPES:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(inp, out, bias=False)).to(torch.bfloat16)
        weights = QuantizationArgs(
            num_bits=4, type="int", symmetric=True, strategy="group", group_size=128,
            actorder="group",
        )  # fmt: skip
        scheme = QuantizationScheme(targets=["Linear"], weights=weights)
        apply_quantization_config(model, QuantizationConfig(config_groups={"group_0": scheme}))
        linear = model[0]
        groups = -(-inp // 128)
        w = linear.weight.data.unflatten(1, (groups, 128)).abs().amax(-1)
        linear.weight_scale.data = (w / 7).to(linear.weight_scale.dtype)
        linear.weight_g_idx.data = torch.arange(inp, dtype=torch.int32) // 128
        compressor = ModelCompressor.from_pretrained_model(model)
        compressor.compress_model(model)
        parts = {k.removeprefix("0."): describe(v) for k, v in model.state_dict().items()}
        cases.append(
            {
                "scheme": "W4A16, actorder group",
                "format": str(compressor.quantization_config.format),
                "shape": [out, inp],
                "tensors": parts,
                "bytes": sum(p["bytes"] for p in parts.values()),
            }
        )
    return {
        "source": f"compressed-tensors {compressed_tensors.__version__} (actorder group)",
        "cases": cases,
    }


GPT_OSS_SHAPES = [(4, 64, 96), (2, 5760, 2880), (2, 2880, 2880)]
"""(experts, out, in): gpt-oss-20b's gate_up_proj (2 F x D) and down_proj (D x F), two experts."""


def gpt_oss_mxfp4_cases() -> dict:
    from importlib.metadata import version

    from compressed_tensors.compressors.model_compressors.model_compressor import (
        ModelCompressor,
    )
    from compressed_tensors.quantization import (
        QuantizationConfig,
        apply_quantization_config,
        preset_name_to_scheme,
    )
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    cases = []
    for experts, out, inp in GPT_OSS_SHAPES:
        torch.manual_seed(0)
        weights = torch.randn(experts, out, inp, dtype=torch.bfloat16) * 0.02
        blocks, scales = [], []
        for e in range(experts):
            linear = torch.nn.Linear(inp, out, bias=False).to(torch.bfloat16)
            linear.weight.data.copy_(weights[e])
            model = torch.nn.Sequential(linear)
            scheme = preset_name_to_scheme("MXFP4A16", ["Linear"])
            apply_quantization_config(model, QuantizationConfig(config_groups={"group_0": scheme}))
            _calibrate(model[0], scheme.weights)
            ModelCompressor.from_pretrained_model(model).compress_model(model)
            state = model.state_dict()
            blocks.append(state["0.weight_packed"].view(out, inp // 32, 16))
            scales.append(state["0.weight_scale"])
        blocks_t, scales_t = torch.stack(blocks), torch.stack(scales)
        dequantized = convert_moe_packed_tensors(blocks_t, scales_t, dtype=torch.float32)
        assert dequantized.shape == (experts, inp, out), dequantized.shape
        error = (dequantized - weights.float().transpose(1, 2)).abs().max().item()
        assert error < 0.5 * weights.float().abs().max().item(), error
        parts = {"blocks": describe(blocks_t), "scales": describe(scales_t)}
        cases.append(
            {
                "shape": [experts, out, inp],
                "tensors": parts,
                "bytes": sum(p["bytes"] for p in parts.values()),
                "max_abs_error": error,
            }
        )
    return {
        "source": (
            f"compressed-tensors {version('compressed-tensors')} MXFP4 packing, laid out as "
            f"gpt-oss's *_blocks/*_scales and read back by transformers {version('transformers')} "
            "integrations.mxfp4.convert_moe_packed_tensors"
        ),
        "cases": cases,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    names = [
        "bitsandbytes", "awq", "gptq", "gguf", "compressed_tensors", "compressed_tensors_actorder",
        "gpt_oss_mxfp4",
    ]  # fmt: skip
    parser.add_argument("--skip", nargs="*", default=[], choices=names)
    parser.add_argument("--only", nargs="*", default=None, choices=names)
    args = parser.parse_args()
    skip = set(args.skip) | (set(names) - set(args.only) if args.only is not None else set())
    if args.only is None:
        skip.add("compressed_tensors_actorder")  # needs compressed-tensors 0.12
    data: dict = json.loads(OUTPUT.read_text()) if OUTPUT.exists() else {}
    data["generator"] = "tests/reference/make_quant_reference.py"
    data["date"] = datetime.date.today().isoformat()
    data["torch"] = torch.__version__
    steps = {
        "bitsandbytes": bitsandbytes_cases,
        "awq": awq_cases,
        "gptq": gptq_cases,
        "gguf": gguf_cases,
        "compressed_tensors": compressed_tensors_cases,
        "compressed_tensors_actorder": compressed_tensors_actorder_cases,
        "gpt_oss_mxfp4": gpt_oss_mxfp4_cases,
    }
    for name, step in steps.items():
        if name not in skip:
            data[name] = step()
    OUTPUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
