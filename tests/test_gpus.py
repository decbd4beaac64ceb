"""The GPU catalogue: every entry loads with its datasheet named, figures as the datasheets state
them, and --gpu works wherever --fits does."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from costcalc.cli.app import app
from costcalc.errors import UsageError
from costcalc.gpus import PEAK_DTYPES, catalogue, device_capacity, find_gpu

runner = CliRunner()
REQUIRED = ("h100-sxm", "h100-pcie", "h200", "b200", "a100-40gb", "a100-80gb", "l40s", "l4")
REQUIRED += ("a10g", "rtx-4090", "rtx-5090", "mi300x")


def test_every_entry_loads_and_names_its_datasheet() -> None:
    gpus = catalogue()
    assert set(REQUIRED) <= set(gpus)
    for gpu in gpus.values():
        assert gpu.memory_bytes > 0
        assert "(20" in gpu.source, gpu.key  # a title and its year
        assert set(gpu.peak_flops) <= set(PEAK_DTYPES)


@pytest.mark.parametrize(
    ("key", "memory", "bandwidth", "dtype", "peak"),
    [
        # H100 SXM datasheet: 80GB, 3.35TB/s, BF16 1,979 TFLOPS with sparsity -> 989.5 dense
        ("h100-sxm", 80 * 10**9, 3_350 * 10**9, "bf16", 989_500 * 10**9),
        # H100 PCIe: 2TB/s, FP8 3,026 with sparsity -> 1,513 dense
        ("h100-pcie", 80 * 10**9, 2_000 * 10**9, "fp8", 1_513 * 10**12),
        # A100 datasheet: 80GB SXM 2,039 GB/s, BF16 312 dense
        ("a100-80gb", 80 * 10**9, 2_039 * 10**9, "bf16", 312 * 10**12),
        # L40S datasheet: BF16 362.05 dense (733 with sparsity)
        ("l40s", 48 * 10**9, 864 * 10**9, "bf16", 362_050 * 10**9),
        # MI300X data sheet: 192GB HBM3, 5.3TB/s, FP16 1,307.4 dense
        ("mi300x", 192 * 10**9, 5_300 * 10**9, "fp16", 1_307_400 * 10**9),
    ],
)
def test_datasheet_figures(key: str, memory: int, bandwidth: int, dtype: str, peak: int) -> None:
    gpu = find_gpu(key)
    assert (gpu.memory_bytes, gpu.bandwidth, gpu.peak(dtype)) == (memory, bandwidth, peak)


def test_missing_figures_are_errors_not_guesses() -> None:
    a10g = find_gpu("A10G")
    assert a10g.bandwidth is None and a10g.peak_flops == {}
    with pytest.raises(UsageError, match="no bf16 peak for a10g"):
        a10g.peak("bf16")
    with pytest.raises(UsageError, match="no memory bandwidth for a10g"):
        a10g.memory_bandwidth()


def test_device_capacity() -> None:
    assert device_capacity(None, "l4") == 24 * 10**9
    assert device_capacity(24 * 2**30, None) == 24 * 2**30
    assert device_capacity(None, None) is None
    with pytest.raises(UsageError, match="not both"):
        device_capacity(24 * 2**30, "l4")
    with pytest.raises(UsageError, match="did you mean 'h100-sxm'"):
        find_gpu("h100-sxmm")


def test_gpus_command_json_is_a_list() -> None:
    result = runner.invoke(app, ["gpus", "-f", "json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert [d["name"] for d in data] == list(catalogue())
    assert data[0]["peak_flops"]["bf16"] == 989_500_000_000_000


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "-p", "gpt2-small", "--gpu", "t4", "-f", "json"],
        ["lora", "-p", "qwen2.5-0.5b", "-t", "q_proj", "--train", "-T", "64", "--gpu", "t4"],
    ],
)
def test_gpu_option_sets_the_capacity(args: list[str]) -> None:
    result = runner.invoke(app, [*args, "-f", "json"] if "-f" not in args else args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    fits = data["fits"] if data.get("fits") else data["memory"]["fits"]
    assert fits["capacity_bytes"] == 16 * 10**9


def test_gpu_with_fits_is_refused() -> None:
    result = runner.invoke(app, ["memory", "-p", "gpt2-small", "--gpu", "t4", "--fits", "8GB"])
    assert result.exit_code == 2
    assert "not both" in result.output
