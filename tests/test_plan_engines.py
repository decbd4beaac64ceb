"""plan --engine: what fits as llama.cpp and vLLM allocate it, worked from their rules."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from costcalc.cli.app import app
from costcalc.engines.llamacpp import llamacpp_memory, model_buffer
from costcalc.engines.vllm import vllm_memory
from costcalc.gpus import find_gpu, usable_memory
from costcalc.loaders import load_preset

RUNNER = CliRunner()


def _inference(*args: str) -> dict:
    result = RUNNER.invoke(app, ["plan", *args, "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["inference"]


def test_llamacpp_fit() -> None:
    spec = load_preset("qwen3-8b").spec
    gpu = find_gpu("rtx-4090")
    data = _inference(
        "-p", "qwen3-8b", "--gpu", "rtx-4090", "--prompt", "8192", "--dtype", "gguf:Q4_K_M",
        "--engine", "llamacpp", "--cache-type-k", "q8_0", "--cache-type-v", "q8_0",
    )  # fmt: skip
    fit = data["fit"]
    assert data["engine"] == "llamacpp" and fit["kv_dtype"] == "q8_0"
    assert fit["weight_bytes"] == model_buffer(spec, "gguf:Q4_K_M")
    assert fit["budget_bytes"] == usable_memory(gpu, gpu.reserve) * 23 // 25
    free = fit["cache_bytes_free"]

    def held(b: int) -> int:
        m = llamacpp_memory(spec, "gguf:Q4_K_M", b * 8448, b, "q8_0", "q8_0")
        return m.kv_bytes + m.output_buffer

    b = fit["largest_batch"]
    assert held(b) <= free < held(b + 1)
    # the step reads the cache of the 8,448 tokens each layer attends to, in q8_0 rows:
    # 36 layers x 8,448 x 2 x (1,024 / 32 x 34)
    step = data["decode_by_batch"][0]
    assert step["cache_bytes"] == 36 * 8448 * 2 * (1024 // 32 * 34)


def test_vllm_fit() -> None:
    spec = load_preset("llama-3.1-8b").spec
    h100 = find_gpu("h100-sxm")
    data = _inference(
        "-p", "llama-3.1-8b", "--gpu", "h100-sxm", "--prompt", "4000", "--generate", "96",
        "--engine", "vllm",
    )  # fmt: skip
    fit = data["fit"]
    assert fit["budget_bytes"] == -(-h100.memory_bytes * 23 // 25)  # vLLM's ceil
    assert fit["weight_bytes"] == 2 * 8_030_261_248
    memory = vllm_memory(spec, "bf16", 4096, budget=fit["cache_bytes_free"])
    assert fit["largest_batch"] == memory.num_blocks // memory.blocks_per_request == 116
    assert fit["vllm"]["num_blocks"] == memory.num_blocks
    assert (
        fit["vllm"]["max_concurrency"]["numerator"] * 256
        == memory.num_blocks * (fit["vllm"]["max_concurrency"]["denominator"])
    )
    table = " ".join(
        RUNNER.invoke(
            app,
            ["plan", "-p", "llama-3.1-8b", "--gpu", "h100-sxm", "--prompt", "4000",
             "--generate", "96", "--engine", "vllm"],
            env={"COLUMNS": "120"},
        ).stdout.split()
    )  # fmt: skip
    assert "vLLM maximum concurrency at 4,096 tokens (at most)" in table
    assert "upper bounds" in table


def test_plan_engine_refusals() -> None:
    base = ["plan", "-p", "gpt2-small", "--gpu", "l4"]
    for extra, message in [
        (["--tokens", "1B", "--engine", "vllm"], "the vllm engine sizes inference: give a prompt"),
        (
            ["--prompt", "64", "--tp", "2", "--engine", "llamacpp"],
            "give a prompt (--prompt) and no tensor parallelism (--tp)",
        ),
        (["--prompt", "64", "--block-size", "32"], "applies to vLLM"),
        (["--prompt", "64", "--kv-dtype", "int4"], "unknown KV-cache dtype 'int4'"),
    ]:
        result = RUNNER.invoke(app, [*base, *extra])
        assert result.exit_code == 2, result.output
        assert message in " ".join(result.output.split())
