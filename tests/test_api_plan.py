"""`costcalc.count_plan`: the figures and JSON of `costcalc plan`, arguments checked at the
boundary, the weights of an inference plan as the checkpoint stores them."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

import costcalc
from costcalc.errors import RangeError, UsageError
from tests.conftest import FIXTURES, Invoke

OSS = str(FIXTURES / "hf" / "gpt-oss-20b.json")

CASES: list[tuple[list[str], dict[str, Any]]] = [
    (
        ["-p", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--tokens", "1T"],
        {"model": "llama-3.1-8b", "gpu": "h100-sxm", "gpus": 64, "tokens": 10**12},
    ),
    (
        ["-p", "mixtral-8x7b", "--gpu", "h100-sxm", "--prompt", "1k", "-B", "8", "--tp", "2"],
        {"model": "mixtral-8x7b", "gpu": "h100-sxm", "prompt": 1000, "batch": 8, "tp": 2},
    ),
    (
        ["-p", "qwen3-8b", "--gpu", "rtx-4090", "--prompt", "8192", "--dtype", "gguf:Q4_K_M"],
        {"model": "qwen3-8b", "gpu": "rtx-4090", "prompt": 8192, "dtype": "gguf:Q4_K_M"},
    ),
    (
        ["-p", "llama-3.1-8b", "--gpu", "l4", "--prompt", "512", "--engine", "vllm"],
        {"model": "llama-3.1-8b", "gpu": "l4", "prompt": 512, "engine": "vllm"},
    ),
    (
        [
            "-p",
            "gpt2-small",
            "--gpu",
            "a100-80gb",
            "--budget",
            "5.76e23",
            "--tokens",
            "1B",
            "-T",
            "1k",
        ],
        {
            "model": "gpt2-small",
            "gpu": "a100-80gb",
            "budget": 576 * 10**21,
            "tokens": 10**9,
            "length": 1000,
        },
    ),
    (
        ["-c", OSS, "--gpu", "h100-sxm", "--prompt", "1000", "--reserve", "2GiB"],
        {"model": OSS, "gpu": "h100-sxm", "prompt": 1000, "reserve": "2GiB"},
    ),
]


@pytest.mark.parametrize(("argv", "kwargs"), CASES)
def test_the_api_gives_the_json_of_the_command(
    cli: Invoke, argv: list[str], kwargs: dict[str, Any]
) -> None:
    shown = cli("plan", *argv, "-f", "json")
    assert shown.exit_code == 0, shown.stderr
    model = kwargs.pop("model")
    result = costcalc.count_plan(model, **kwargs)
    assert json.loads(json.dumps(result.to_dict())) == json.loads(shown.stdout)
    assert pickle.loads(pickle.dumps(result)).to_dict() == result.to_dict()


def test_inference_takes_the_stored_format_and_training_bf16() -> None:
    """gpt-oss-20b's checkpoint stores its experts in MXFP4: an inference plan holds the
    published index's 13,761,264,768 bytes, as `memory` counts them; training plans bf16."""
    served = costcalc.count_plan(OSS, gpu="h100-sxm", prompt=1000)
    assert served.dtype == "mxfp4:-attn"
    assert served.inference is not None
    assert served.inference.fit.weights == 13_761_264_768
    assert served.inference.fit.weights == costcalc.count_memory(OSS).report.bytes_weights
    assert served.inference.kernels.dtype == "bf16"
    trained = costcalc.count_plan(OSS, gpu="h100-sxm", tokens=10**9)
    assert trained.dtype == "bf16" and trained.inference is None
    given = costcalc.count_plan(OSS, gpu="h100-sxm", prompt=1000, dtype="bf16")
    assert given.inference is not None and given.inference.fit.weights == 41_829_514_368


def test_the_command_names_where_the_stored_format_comes_from(cli: Invoke) -> None:
    shown = cli("plan", "-c", OSS, "--gpu", "h100-sxm", "--prompt", "1000")
    assert shown.exit_code == 0, shown.stderr
    assert "(mxfp4:-attn)" in shown.stdout
    assert "Weights as the checkpoint stores them" in " ".join(shown.stdout.split())


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({}, UsageError, "nothing to plan"),
        ({"prompt": "1k"}, UsageError, "prompt is str '1k'; expected a whole number"),
        ({"prompt": -1}, RangeError, "prompt -1"),
        ({"tokens": 10**9, "dtype": "nf4"}, UsageError, "nf4 is a stored weight format"),
        ({"prompt": 10, "tp": 2, "engine": "llamacpp"}, UsageError, "the llamacpp engine sizes"),
        ({"prompt": 10, "mfu": 0.4}, UsageError, "mfu is float"),
        ({"prompt": 10, "kv_dtype": "int3"}, UsageError, "KV-cache dtype"),
    ],
)
def test_bad_arguments_are_costcalc_errors(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        costcalc.count_plan("gpt2-small", gpu="h100-sxm", **kwargs)
    assert message in str(raised.value)
    assert type(raised.value) is error


def test_a_model_is_required() -> None:
    with pytest.raises(TypeError):
        costcalc.count_plan()  # type: ignore[call-arg]


def test_a_budget_alone_needs_no_gpu(cli: Invoke) -> None:
    """Compute-optimal sizing is the budget's and the model's, no GPU's: --gpu may be left out,
    and training or inference without one is a clear error."""
    shown = cli("plan", "-p", "gpt2-small", "--budget", "5.76e23", "-f", "json")
    assert shown.exit_code == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["gpu"] is None and data["compute_optimal"]["model_parameters"] == 124_439_808
    assert costcalc.count_plan("gpt2-small", budget=576 * 10**21).to_dict() == data
    for asked in (["--tokens", "1B", "-T", "1k"], ["--prompt", "10"]):
        refused = cli("plan", "-p", "gpt2-small", *asked)
        assert refused.exit_code == 2
        assert "inference rooflines are a GPU's: give one of `costcalc gpus`" in refused.stderr
    with pytest.raises(UsageError, match="give one of `costcalc gpus`"):
        costcalc.count_plan("gpt2-small", prompt=10)
