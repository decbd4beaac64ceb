"""llama.cpp's allocations against what llama.cpp itself logs (tests/golden/llamacpp_memory.json,
written by tests/reference/make_llamacpp_reference.py), and its rules worked by hand."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest

from costcalc.engines.llamacpp import (
    context_cells,
    kv_caches,
    llamacpp_memory,
    model_buffer,
    row_bytes,
    swa_cells,
)
from costcalc.errors import UsageError
from costcalc.loaders import load_file, load_preset
from costcalc.spec import ModelSpec
from tests.conftest import ROOT

GOLDEN = json.loads((ROOT / "tests/golden/llamacpp_memory.json").read_text())
MODELS = GOLDEN["models"]


def mib(n: int) -> str:
    """``bytes / 1024.0 / 1024.0`` printed with %.2f, as the buffer lines are."""
    return f"{n / 1024 / 1024:.2f}"


def mib_float(n: int) -> str:
    """``(float) bytes / (1024.0f * 1024.0f)`` printed with %.2f, as ``llama_kv_cache: size``."""
    single = struct.unpack("f", struct.pack("f", float(n)))[0]
    return f"{single / 1048576:.2f}"


def test_the_golden_data_covers_what_it_should() -> None:
    assert len(MODELS) >= 4
    windowed = [m for m in MODELS.values() if any(r["iswa_cells"] for r in m["contexts"])]
    assert len(windowed) >= 2
    for record in MODELS.values():
        contexts = {r["args"]["n_ctx"] for r in record["contexts"]}
        caches = {r["args"]["type_k"] for r in record["contexts"]}
        assert len(contexts) >= 3 and len(caches) >= (1 if "odd" in record["fixture"] else 2)


def fixture_spec(record: dict[str, Any]) -> ModelSpec:
    """The model of a record's fixture: its config.json, or the costcalc twin beside it (the
    same name, ``.yaml``) where transformers refuses the config.json but llama.cpp builds the
    GGUF file written from it."""
    fixture = ROOT / record["fixture"]
    twin = fixture.with_suffix(".yaml")
    return load_file(twin if twin.exists() else fixture).spec


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_buffer_equals_the_mapped_file(name: str) -> None:
    record = MODELS[name]
    spec = fixture_spec(record)
    for file_type, file in record["files"].items():
        size = model_buffer(spec, f"gguf:{file_type}")
        assert size == file["span_bytes"], (name, file_type)
        assert file["model_buffer_mib"] == [["CPU_Mapped", mib(size)]]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_kv_caches_equal_the_log(name: str) -> None:
    record = MODELS[name]
    spec = fixture_spec(record)
    for run in record["contexts"]:
        args = run["args"]
        memory = llamacpp_memory(
            spec,
            "gguf:F16",
            args["n_ctx"],
            args["n_seq_max"],
            args["type_k"],
            args["type_v"],
            args["swa_full"],
        )
        assert (memory.n_ctx, memory.n_ctx_seq) == (run["n_ctx"], run["n_ctx_seq"]), args
        got = [
            {
                "cells": c.cells,
                "layers": c.layers,
                "seqs": [args["n_seq_max"], c.streams],
                "type_k": memory.type_k,
                "type_v": memory.type_v,
                "k_mib": mib_float(c.k_bytes),
                "v_mib": mib_float(c.v_bytes),
                "mib": mib_float(c.bytes),
            }
            for c in memory.caches
        ]
        logged = [{k: c[k] for k in got[0]} for c in run["kv_caches"]]
        assert got == logged, (name, args)
        kinds = {c.kind: c.cells for c in memory.caches if c.kind != "KV"}
        assert kinds == run["iswa_cells"]
        assert mib(memory.output_buffer) == run["output_buffer_mib"]


def test_context_cells_by_hand() -> None:
    assert context_cells(1000, 1) == (1024, 1024)  # GGML_PAD(1000, 256)
    assert context_cells(4096, 1) == (4096, 4096)
    # 5,000 -> 5,120; over 3 streams 1,706 -> 1,792 each, so n_ctx becomes 3 x 1,792
    assert context_cells(5000, 3) == (5376, 1792)
    assert context_cells(5000, 3, unified=True) == (5120, 5120)
    with pytest.raises(UsageError, match="n_ctx_seq == 0"):
        context_cells(256, 512)


def test_swa_cells_by_hand() -> None:
    # Gemma 2 (window 4,096) at -c 8,192: min(8,192, 4,096 + 512) = 4,608 cells
    assert swa_cells(8192, 4096, 1, False, 512, False) == 4608
    assert swa_cells(2048, 4096, 1, False, 512, False) == 2048  # never more than the base
    assert swa_cells(8192, 4096, 4, True, 512, False) == 8192  # unified: 4 windows
    assert swa_cells(8192, 128, 1, False, 512, False) == 768  # 640 padded to 256
    assert swa_cells(8192, 128, 1, False, 512, True) == 8192  # swa_full


def test_gemma2_by_hand() -> None:
    # 26 layers, 13 sliding (window 4,096), 4 KV heads of 256: 1,024 elements per token each
    spec = load_preset("gemma-2-2b").spec
    memory = llamacpp_memory(spec, "gguf:Q4_K_M", 8192)
    full, sliding = memory.caches
    assert (full.kind, full.cells, full.layers) == ("non-SWA", 8192, 13)
    assert (sliding.kind, sliding.cells, sliding.layers) == ("SWA", 4608, 13)
    assert full.k_bytes == full.v_bytes == 13 * 1024 * 2 * 8192
    assert sliding.bytes == 2 * 13 * 1024 * 2 * 4608
    q8 = llamacpp_memory(spec, "gguf:Q4_K_M", 8192, type_k="q8_0", type_v="q8_0")
    assert q8.caches[0].k_bytes == 13 * (1024 // 32 * 34) * 8192
    assert memory.output_buffer == 4 * 256_000


def test_uniform_windows_are_one_full_cache() -> None:
    # Mistral 7B v0.1 slides on every layer: llama.cpp's llama architecture ignores the window
    (cache,) = kv_caches(load_preset("mistral-7b-v0.1").spec, 32768, 1, "f16", "f16")
    assert (cache.kind, cache.cells, cache.layers) == ("KV", 32768, 32)


def test_mla_keeps_its_latent_in_k() -> None:
    # DeepSeek-V3: K holds the 512-wide latent and the 64-wide rotary key; there is no V
    (cache,) = kv_caches(load_preset("deepseek-v3").spec, 4096, 1, "f16", "f16")
    assert cache.k_bytes == 61 * 576 * 2 * 4096 and cache.v_bytes == 0


def test_refusals() -> None:
    with pytest.raises(UsageError, match="blocks hold 32"):
        row_bytes("q8_0", 40, "key")
    with pytest.raises(UsageError, match=r"unknown llama\.cpp cache type 'q3_k'"):
        llamacpp_memory(load_preset("gpt2-small").spec, "gguf:F16", 1024, type_k="q3_k")
    with pytest.raises(UsageError, match="llama_memory_recurrent"):
        llamacpp_memory(load_file(ROOT / "tests/fixtures/hf/tiny-jamba.json").spec, "gguf:F16")
    with pytest.raises(UsageError, match=r"llama\.cpp loads GGUF files"):
        model_buffer(load_preset("gpt2-small").spec, "nf4")
    # 16-bit weights are the file convert_hf_to_gguf.py writes
    spec = load_preset("gpt2-small").spec
    assert model_buffer(spec, "fp16") == model_buffer(spec, "gguf:F16")


def test_memory_engine_llamacpp_cli() -> None:
    from typer.testing import CliRunner

    from costcalc.cli.app import app

    runner = CliRunner()
    args = ["memory", "-p", "gemma-2-2b", "--engine", "llamacpp", "--dtype", "gguf:Q4_K_M"]
    args += ["-T", "8192", "-B", "2", "--cache-type-k", "q8_0"]
    result = runner.invoke(app, [*args, "-f", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    spec = load_preset("gemma-2-2b").spec
    memory = llamacpp_memory(spec, "gguf:Q4_K_M", 16384, 2, "q8_0", "f16")
    engine = data["engine"]
    assert (engine["context"], engine["sequences"], engine["n_ctx_seq"]) == (16384, 2, 8192)
    assert [c["cells"] for c in engine["kv_caches"]] == [8192, 4608]
    assert data["weights"]["bytes"] == engine["model_buffer_bytes"] == memory.model_buffer
    assert (
        data["kv_cache"]["bytes"] == memory.kv_bytes and data["kv_cache"]["dtype"] == "q8_0 / f16"
    )
    assert data["output_buffer"]["bytes"] == 4 * 256_000 * 2
    assert data["total"]["bytes"] == memory.model_buffer + memory.kv_bytes + 4 * 256_000 * 2
    assert data["setup"]["engine"] == "llamacpp" and engine["not_counted"]
    table = " ".join(runner.invoke(app, args, env={"COLUMNS": "120"}).stdout.split())
    assert "-c 16,384 -np 2" in table and "SWA 4,608 cells x 2 streams x 13 layers" in table
    assert "Not counted: the compute buffer" in table
    plain = json.loads(runner.invoke(app, ["memory", "-p", "gpt2-small", "-f", "json"]).stdout)
    assert plain["engine"] is None and plain["output_buffer"]["bytes"] == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--cache-type-k", "q8_0"], "--cache-type-k applies to llama.cpp; add --engine llamacpp"),
        (["--swa-full"], "--swa-full applies to llama.cpp"),
        (["--engine", "llamacpp", "--train", "-T", "64"], "drop --train"),
        (["--engine", "llamacpp", "--explain"], "--explain shows the formula's rows"),
        (["--engine", "llamacpp", "--tp", "2"], "it serves on one device"),
        (["--engine", "llama"], "unknown engine 'llama'"),
        (["--engine", "llamacpp", "--dtype", "nf4"], "llama.cpp loads GGUF files"),
        (["--engine", "llamacpp", "--kv-dtype", "fp8"], "unknown llama.cpp cache type 'fp8'"),
    ],
)
def test_memory_engine_refusals(extra: list[str], message: str) -> None:
    from typer.testing import CliRunner

    from costcalc.cli.app import app

    result = CliRunner().invoke(app, ["memory", "-p", "gpt2-small", *extra])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())


def test_engine_names() -> None:
    from costcalc.engines import check_engine

    assert check_engine("llama.cpp") == check_engine("LlamaCpp") == "llamacpp"
    assert check_engine(None) == "transformers"
