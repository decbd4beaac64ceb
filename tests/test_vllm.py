"""vLLM's KV-cache planning against vLLM's own functions (tests/golden/vllm_kv_cache.json,
written by tests/reference/make_vllm_reference.py), and its rules worked by hand."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from costcalc.engines.vllm import default_batched_tokens, vllm_memory
from costcalc.errors import UsageError
from costcalc.loaders import load_file, load_preset
from tests.conftest import ROOT

GOLDEN = json.loads((ROOT / "tests/golden/vllm_kv_cache.json").read_text())
KINDS = {"FullAttentionSpec": "full", "SlidingWindowSpec": "sliding", "MLAAttentionSpec": "mla"}


@pytest.mark.parametrize("name", sorted(GOLDEN["models"]))
def test_planning_equals_vllm(name: str) -> None:
    spec = load_file(ROOT / f"tests/fixtures/hf/{name}.json").spec
    for case in GOLDEN["models"][name]:
        memory = vllm_memory(
            spec,
            "bf16",
            case["max_model_len"],
            kv_cache_dtype=case["kv_cache_dtype"],
            block_size=case["block_size"],
            max_num_batched_tokens=case["max_num_batched_tokens"],
            budget=case["budget_bytes"],
        )
        groups = [(KINDS[g["spec"]], g["layers"], g["page_bytes"]) for g in case["groups"]]
        assert [(g.kind.kind, g.layers, g.kind.page_bytes) for g in memory.groups] == groups
        assert memory.max_model_len == case["max_model_len"]
        assert memory.num_blocks == case["num_blocks"], case
        assert case["tensor_bytes"] == [memory.num_blocks * memory.block_bytes]
        assert float(memory.max_concurrency or 0) == case["max_concurrency"]
        assert memory.kv_cache_tokens == case["kv_cache_tokens"]
        assert memory.log_line == case["log"]


def test_groups_by_hand() -> None:
    # Gemma 3 1B: 22 sliding layers and 4 full; groups of 4: six sliding (4, 4, 4, 4, 3, 3,
    # every sixth layer) and one full; a block holds 4 layers' pages of 16 x 1 x 512 x 2 bytes
    memory = vllm_memory(load_preset("gemma-3-1b").spec, "bf16", 32768, budget=10 * 2**30)
    assert [(g.kind.kind, g.layers) for g in memory.groups] == [
        ("sliding", n) for n in (4, 4, 4, 4, 3, 3)
    ] + [("full", 4)]
    assert memory.block_bytes == 4 * 16 * 512 * 2 == 65_536
    # a request of 32,768 tokens: 2,048 blocks for the full group, each sliding group
    # cdiv(512 - 1 + 2 x 2,048, 16) + 1 = 289
    assert memory.blocks_per_request == 2048 + 6 * 289
    assert memory.num_blocks == 10 * 2**30 // 65_536 == 163_840
    assert memory.max_concurrency == Fraction(163_840, 3782)


def test_llama_by_hand() -> None:
    # 32 layers x 16 tokens x 8 KV heads x (128 + 128) x 2 bytes = 2 MiB a block
    memory = vllm_memory(load_preset("llama-3.1-8b").spec, "bf16", 4096, 8, budget=10 * 2**30)
    assert memory.block_bytes == 32 * 16 * 8 * 256 * 2 == 2**21
    assert memory.blocks_per_request == 256 and memory.kv_bytes == 8 * 256 * 2**21
    assert (memory.num_blocks, memory.max_concurrency, memory.kv_cache_tokens) == (5120, 20, 81920)
    assert memory.log_line == (
        "GPU KV cache size: 81,920 tokens, Maximum concurrency for 4,096 tokens per request: 20.00x"
    )
    fp8 = vllm_memory(load_preset("llama-3.1-8b").spec, "bf16", 4096, kv_cache_dtype="fp8")
    assert fp8.block_bytes == 2**20 and fp8.num_blocks is None


def test_defaults_and_refusals() -> None:
    assert default_batched_tokens(None) == 2048
    assert default_batched_tokens(80 * 10**9) == 8192  # 74.5 GiB
    assert default_batched_tokens(192 * 10**9) == 16384
    assert default_batched_tokens(48 * 10**9) == 2048
    with pytest.raises(UsageError, match="MambaSpec"):
        vllm_memory(load_file(ROOT / "tests/fixtures/hf/tiny-jamba.json").spec, "bf16")
    with pytest.raises(UsageError, match="unknown vLLM kv_cache_dtype 'int4'"):
        vllm_memory(load_preset("gpt2-small").spec, "bf16", kv_cache_dtype="int4")


def test_memory_engine_vllm_cli() -> None:
    from typer.testing import CliRunner

    from costcalc.cli.app import app

    runner = CliRunner()
    args = ["memory", "-p", "llama-3.1-8b", "--engine", "vllm", "-T", "4096", "-B", "8"]
    exact = json.loads(
        runner.invoke(app, [*args, "--kv-cache-memory", "10GiB", "-f", "json"]).stdout
    )
    engine = exact["engine"]
    assert exact["setup"]["engine"] == "vllm"
    assert engine["kv_budget_bytes"] == 10 * 2**30 and engine["kv_budget_exact"]
    assert (engine["num_blocks"], engine["kv_cache_tokens"]) == (5120, 81920)
    assert engine["max_concurrency"]["numerator"] == 20
    assert (
        exact["kv_cache"]["bytes"] == 8 * 256 * 2**21
        and exact["kv_cache"]["dtype"] == "auto (bf16)"
    )
    on_gpu = json.loads(runner.invoke(app, [*args, "--gpu", "h100-sxm", "-f", "json"]).stdout)
    from costcalc.gpus import find_gpu

    h100 = find_gpu("h100-sxm")
    budget = -(-h100.memory_bytes * 23 // 25) - on_gpu["weights"]["bytes"]
    assert on_gpu["engine"]["kv_budget_bytes"] == budget and not on_gpu["engine"]["kv_budget_exact"]
    assert on_gpu["engine"]["max_num_batched_tokens"] == 8192
    half = runner.invoke(app, [*args, "--gpu", "h100-sxm", "--gpu-memory-utilization", "50%"])
    assert "at most" in " ".join(half.stdout.split())
    table = " ".join(runner.invoke(app, [*args, "--kv-cache-memory", "10GiB"]).stdout.split())
    assert "vLLM would log: GPU KV cache size: 81,920 tokens" in table
    assert "Not measured" in table and "KV cache, 8 x 256 blocks" in table
    for extra, message in [
        (["--block-size", "32"], "--block-size applies to vLLM; add --engine vllm"),
        (["--engine", "llamacpp", "--kv-cache-memory", "1GiB"], "applies to vLLM"),
    ]:
        bad = runner.invoke(app, ["memory", "-p", "gpt2-small", *extra])
        assert bad.exit_code == 2 and message in bad.output
