"""The GPU catalogue: each device's memory as it reports itself (the source of each figure named
here), the datasheet's beside it, names as people type them and as nvidia-smi prints them, the
reserve, and --gpu wherever --fits works."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from costcalc.cli.app import app
from costcalc.errors import UsageError
from costcalc.gpus import (
    CONTEXT_RESERVE,
    DEFAULT_RESERVE,
    PEAK_DTYPES,
    catalogue,
    device_capacity,
    device_memory,
    find_gpu,
    parse_reserve,
)

runner = CliRunner()
MIB = 2**20
REQUIRED = ("h100-sxm", "h100-pcie", "h100-nvl", "h200", "h20", "h800", "a800", "b200", "b300")
REQUIRED += ("gb200", "a100-40gb", "a100-80gb", "l40s", "l20", "l4", "a10g", "rtx-4090")
REQUIRED += ("rtx-5090", "rtx-6000-ada", "rtx-pro-6000", "mi300x", "mi355x", "gaudi2", "gaudi3")
REQUIRED += ("tpu-v5e", "tpu-v6e", "m2-max-64gb", "m4-max-128gb")

# What each device reports, and where it was published (the catalogue's reported_source names
# the same place). nvidia-smi's memory.total is in MiB.
REPORTED: dict[str, tuple[int, str]] = {
    "h100-sxm": (81_559 * MIB, "github.com/wilicc/gpu-burn/issues/114"),
    "h100-pcie": (81_559 * MIB, "NVIDIA H100 PCIe ... 81559MiB"),
    "h100-nvl": (95_830 * MIB, "github.com/NVIDIA/gpu-admin-tools/issues/4"),
    "h800": (81_559 * MIB, "NVIDIA H800 ... 81559MiB"),
    "h20": (97_871 * MIB, "NVIDIA H20 ... 97871MiB"),
    "h200": (143_771 * MIB, "github.com/sgl-project/sglang/issues/3196"),
    "b200": (183_359 * MIB, "github.com/NVIDIA/TensorRT-LLM/issues/10278"),
    "b300": (275_040 * MIB, "NVIDIA B300 SXM6 AC ... 275040MiB"),
    "gb200": (189_471 * MIB, "NVIDIA GB200 ... 189471MiB"),
    "a100-40gb": (40_960 * MIB, "github.com/modal-labs/modal-client/pull/2797"),
    "a100-80gb": (81_920 * MIB, "github.com/modal-labs/modal-client/pull/2797"),
    "a100-pcie-80gb": (81_920 * MIB, "NVIDIA A100 80GB PCIe ... 81920MiB"),
    "a800": (81_920 * MIB, "NVIDIA A800-SXM4-80GB ... 81920MiB"),
    "l40s": (46_068 * MIB, "github.com/modal-labs/modal-client/pull/2797"),
    "l20": (46_068 * MIB, "NVIDIA L20 ... 46068MiB"),
    "l4": (23_034 * MIB, "github.com/modal-labs/modal-client/pull/2797"),
    "a10": (23_028 * MIB, "github.com/modal-labs/modal-client/pull/2797"),
    "a10g": (23_028 * MIB, "NVIDIA A10G ... 23028MiB"),
    "t4": (15_360 * MIB, "github.com/modal-labs/modal-client/pull/2797"),
    "rtx-a6000": (49_140 * MIB, "NVIDIA RTX A6000 ... 49140MiB"),
    "rtx-6000-ada": (49_140 * MIB, "github.com/thamada/nvidia-smi gls/RTX6000Ada_x8_smi.py"),
    "rtx-pro-6000": (97_887 * MIB, "RTX PRO 6000 Blac... 97887MiB"),
    "rtx-4090": (24_564 * MIB, "github.com/RLinf/RLinf/issues/255"),
    "rtx-5090": (32_607 * MIB, "github.com/noonghunna/club-3090/issues/1261"),
    "mi300x": (205_822_885_888, "VRAM Total Memory (B) 205822885888"),
    "gaudi2": (98_304 * MIB, "HL-225 ... 98304MiB"),
    "gaudi3": (131_072 * MIB, "HL-325L ... 131072MiB"),
    "m2-max-64gb": (3 * 2**36 // 4, "recommendedMaxWorkingSetSize = 51539.61 MB"),
}
# The total CUDA sees (deviceQuery's "Total amount of global memory", in bytes), all from
# github.com/thamada/nvidia-smi.
CUDA_VISIBLE: dict[str, int] = {
    "h100-sxm": 85_045_477_376,
    "h100-nvl": 99_861_594_112,
    "a100-80gb": 85_100_068_864,
    "l40s": 47_803_596_800,
    "l4": 23_570_219_008,
    "rtx-4090": 25_386_352_640,
}


def test_every_entry_loads_and_names_its_sources() -> None:
    gpus = catalogue()
    assert set(REQUIRED) <= set(gpus)
    for gpu in gpus.values():
        assert gpu.memory_bytes > 0 and gpu.datasheet_bytes
        assert "(20" in gpu.source, gpu.key  # a title and its year
        assert set(gpu.peak_flops) <= set(PEAK_DTYPES)
        if gpu.reported_by is None:  # no device report found: the datasheet's, and said so
            assert gpu.memory_bytes == gpu.datasheet_bytes, gpu.key
            assert "no published" in gpu.source, gpu.key
        else:
            assert gpu.memory_source, gpu.key


@pytest.mark.parametrize(("key", "reported", "where"), [(k, *v) for k, v in REPORTED.items()])
def test_memory_is_what_the_device_reports(key: str, reported: int, where: str) -> None:
    gpu = find_gpu(key)
    assert gpu.memory_bytes == reported
    assert where in (gpu.memory_source or ""), gpu.memory_source
    assert set(REPORTED) == {k for k, g in catalogue().items() if g.reported_by is not None}


def test_the_reported_memory_differs_from_the_datasheet() -> None:
    # "80GB" is 80e9 bytes on the datasheet; the H100 reports 81,559 MiB, the A100 81,920 MiB
    h100, a100 = find_gpu("h100-sxm"), find_gpu("a100-80gb")
    assert (h100.datasheet_bytes, h100.datasheet_memory) == (80 * 10**9, "80 GB")
    assert h100.memory_bytes - 80 * 10**9 == 5_520_809_984
    assert a100.memory_bytes == 80 * 2**30
    # Apple and Google write GB for 2^30; macOS lets the GPU wire 3/4 of a 64 GiB M2 Max
    mac = find_gpu("m2-max-64gb")
    assert (mac.datasheet_bytes, mac.datasheet_memory) == (64 * 2**30, "64 GiB")
    assert mac.memory_bytes == 48 * 2**30


@pytest.mark.parametrize(("key", "cuda"), CUDA_VISIBLE.items())
def test_cuda_visible_totals_and_the_reserve(key: str, cuda: int) -> None:
    gpu = find_gpu(key)
    assert gpu.cuda_bytes == cuda < gpu.memory_bytes
    assert "github.com/thamada/nvidia-smi" in (gpu.cuda_source or "")
    assert gpu.reserve == gpu.memory_bytes - cuda + CONTEXT_RESERVE
    assert device_capacity(None, key) == cuda - CONTEXT_RESERVE


def test_the_reserve_by_hand() -> None:
    # H100: nvidia-smi 81,559 MiB, CUDA sees 81,106 MiB (85,045,477,376 bytes): 453 MiB kept by
    # the driver, 512 MiB more for the CUDA context
    assert find_gpu("h100-sxm").reserve == 1_012_203_520
    assert find_gpu("h200").reserve == DEFAULT_RESERVE == 2**30  # no CUDA total published
    capacity = device_memory(None, "h200")
    assert capacity is not None
    assert (capacity.bytes, capacity.total, capacity.reserve) == (
        143_771 * MIB - 2**30,
        143_771 * MIB,
        2**30,
    )
    assert device_capacity(None, "h200", 0) == 143_771 * MIB
    assert device_capacity(None, "h200", 2 * 2**30) == 143_771 * MIB - 2 * 2**30
    assert device_capacity(24 * 2**30, None) == 24 * 2**30  # a size given is taken as it is
    assert device_capacity(24 * 2**30, None, 2**30) == 23 * 2**30
    assert device_capacity(None, None) is None
    with pytest.raises(UsageError, match="not both"):
        device_capacity(24 * 2**30, "l4")
    with pytest.raises(UsageError, match="add --gpu or --fits"):
        device_capacity(None, None, 2**30)
    with pytest.raises(UsageError, match="leaves nothing of t4's 16,106,127,360 bytes"):
        device_capacity(None, "t4", 15 * 2**30)  # all 15,360 MiB of it
    assert parse_reserve("0") == 0 and parse_reserve("1.5GiB") == 3 * 2**29


@pytest.mark.parametrize(
    ("key", "datasheet", "bandwidth", "dtype", "peak"),
    [
        # H100 SXM datasheet: 80GB, 3.35TB/s, BF16 1,979 TFLOPS with sparsity -> 989.5 dense
        ("h100-sxm", 80 * 10**9, 3_350 * 10**9, "bf16", 989_500 * 10**9),
        # H100 PCIe: 2TB/s, FP8 3,026 with sparsity -> 1,513 dense
        ("h100-pcie", 80 * 10**9, 2_000 * 10**9, "fp8", 1_513 * 10**12),
        # H100 NVL: 94GB, 3.9TB/s, BF16 1,671 with sparsity -> 835.5 dense
        ("h100-nvl", 94 * 10**9, 3_900 * 10**9, "bf16", 835_500 * 10**9),
        # A100 datasheet: 80GB SXM 2,039 GB/s, BF16 312 dense, INT4 1,248 TOPS dense
        ("a100-80gb", 80 * 10**9, 2_039 * 10**9, "int4", 1_248 * 10**12),
        # L40S datasheet: BF16 362.05 dense (733 with sparsity)
        ("l40s", 48 * 10**9, 864 * 10**9, "bf16", 362_050 * 10**9),
        # MI300X data sheet: 192GB HBM3, 5.3TB/s, FP32 vector 163.4
        ("mi300x", 192 * 10**9, 5_300 * 10**9, "fp32", 163_400 * 10**9),
        # Cloud TPU v6e: 32 GiB HBM, 1,640 GB/s, bf16 918 TFLOPs
        ("tpu-v6e", 32 * 2**30, 1_640 * 10**9, "bf16", 918 * 10**12),
        # HGX B300: 36 PFLOPS BF16 with sparsity for 8 GPUs -> 2.25 dense each
        ("b300", 288 * 10**9, 8_000 * 10**9, "bf16", 2_250 * 10**12),
    ],
)
def test_datasheet_figures(key: str, datasheet: int, bandwidth: int, dtype: str, peak: int) -> None:
    gpu = find_gpu(key)
    assert (gpu.datasheet_bytes, gpu.bandwidth, gpu.peak(dtype)) == (datasheet, bandwidth, peak)


def test_missing_figures_are_errors_not_guesses() -> None:
    a10g = find_gpu("A10G")
    assert a10g.bandwidth is None and set(a10g.peak_flops) == {"int8"}
    with pytest.raises(UsageError, match="no bf16 peak for a10g"):
        a10g.peak("bf16")
    with pytest.raises(UsageError, match="no memory bandwidth for a10g"):
        a10g.memory_bandwidth()
    with pytest.raises(UsageError, match="no interconnect bandwidth for m2-max-64gb"):
        find_gpu("m2-max-64gb").link_bandwidth()
    assert find_gpu("h100-sxm").link_bandwidth() == 900 * 10**9


@pytest.mark.parametrize(
    ("typed", "key"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("nvidia h100 80gb hbm3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("Tesla T4", "t4"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000"),
        ("NVIDIA B300 SXM6 AC", "b300"),
        ("AMD Instinct MI300X", "mi300x"),
        ("HL-225", "gaudi2"),
        ("4090", "rtx-4090"),
        ("H100 SXM", "h100-sxm"),
        ("  H200 ", "h200"),
        ("tpu v5e", "tpu-v5e"),
    ],
)
def test_names_as_printed_and_typed(typed: str, key: str) -> None:
    assert find_gpu(typed).key == key


@pytest.mark.parametrize(
    ("typed", "listed"),
    [
        ("h100", ["h100-sxm", "h100-pcie", "h100-nvl"]),
        ("a100", ["a100-40gb", "a100-80gb", "a100-pcie-80gb"]),
        ("rtx 6000", ["rtx-a6000", "rtx-6000-ada", "rtx-pro-6000"]),
        ("m2 max", ["m2-max-64gb"]),  # the memory is part of a Mac's name: never assumed
    ],
)
def test_a_family_lists_its_members_and_picks_none(typed: str, listed: list[str]) -> None:
    with pytest.raises(UsageError) as error:
        find_gpu(typed)
    message = str(error.value)
    assert all(key in message for key in listed)
    named = {key for key in catalogue() if f"{key} (" in message}
    assert named == set(listed)


def test_h100_never_suggests_h200() -> None:
    for typed in ("h100", "H100", "h100-sxmm", "h100 sxm5", "NVIDIA H100 80GB", "h10", "h1000"):
        try:
            find_gpu(typed)
        except UsageError as error:
            assert "h200" not in str(error).split("lists them")[0], typed
    with pytest.raises(UsageError, match="did you mean 'h100-sxm'"):
        find_gpu("h100-sxmm")
    with pytest.raises(UsageError, match="did you mean 'h200'"):
        find_gpu("h200x")
    for typed in ("h10", "gh200", "rtx 3090"):  # no device of that family and number
        with pytest.raises(UsageError) as error:
            find_gpu(typed)
        assert "did you mean" not in str(error.value), typed


@given(st.text(alphabet="hHaAbBlLmM0123456789 -_", min_size=1, max_size=12))
def test_a_suggestion_keeps_the_model_numbers(typed: str) -> None:
    try:
        find_gpu(typed)
    except UsageError as error:
        message = str(error)
        if "did you mean '" in message:
            suggested = message.split("did you mean '")[1].split("'")[0]
            numbers = set(filter(str.isdigit, typed.replace("-", " ").split()))
            assert all(number in suggested for number in numbers), (typed, suggested)


def test_gpus_command_json_is_a_list() -> None:
    result = runner.invoke(app, ["gpus", "-f", "json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert [d["name"] for d in data] == list(catalogue())
    h100 = data[0]
    assert h100["peak_flops"]["bf16"] == 989_500_000_000_000
    assert h100["memory_bytes"] == 85_520_809_984
    assert h100["datasheet_memory_bytes"] == 80_000_000_000
    assert h100["cuda_memory_bytes"] == 85_045_477_376
    assert h100["reserve_bytes"] == 1_012_203_520
    assert h100["memory_reported_by"] == "nvidia-smi memory.total"
    assert h100["interconnect_bytes_per_s"] == 900 * 10**9
    assert h100["names"] == ["NVIDIA H100 80GB HBM3"]


def test_gpus_table_names_every_source() -> None:
    table = " ".join(runner.invoke(app, ["gpus"], env={"COLUMNS": "200"}).stdout.split())
    for key, (_, where) in REPORTED.items():
        assert f"{key}: " in table and " ".join(where.split()) in table, key
    assert "85,520,809,984 (79.65 GiB)" in table and "80 GB" in table
    assert "256,000,000,000 (238.42 GiB) *" in table  # the MI325X: the datasheet's, marked


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
    assert fits["capacity_bytes"] == 15_360 * MIB - 2**30  # nvidia-smi's total less 1 GiB
    reserved = runner.invoke(app, [*args, "--reserve", "0", "-f", "json"])
    data = json.loads(reserved.stdout)
    fits = data["fits"] if data.get("fits") else data["memory"]["fits"]
    assert fits["capacity_bytes"] == 15_360 * MIB


def test_memory_states_where_the_capacity_comes_from() -> None:
    args = ["memory", "-p", "gpt2-small", "-T", "16", "--gpu", "NVIDIA H100 80GB HBM3"]
    data = json.loads(runner.invoke(app, [*args, "-f", "json"]).stdout)["fits"]
    assert data["capacity_bytes"] == 85_045_477_376 - CONTEXT_RESERVE
    assert (data["gpu"], data["total_bytes"], data["reserve_bytes"]) == (
        "h100-sxm",
        85_520_809_984,
        1_012_203_520,
    )
    assert data["datasheet_bytes"] == 80 * 10**9
    table = " ".join(runner.invoke(app, args, env={"COLUMNS": "200"}).stdout.split())
    assert "h100-sxm has 85,520,809,984 bytes, as nvidia-smi memory.total reports it" in table
    assert "less 1,012,203,520 set aside" in table
    given = json.loads(runner.invoke(app, [*args[:5], "--fits", "8GB", "-f", "json"]).stdout)
    assert given["fits"]["gpu"] is None and given["fits"]["reserve_bytes"] == 0


def test_gpu_with_fits_is_refused() -> None:
    result = runner.invoke(app, ["memory", "-p", "gpt2-small", "--gpu", "t4", "--fits", "8GB"])
    assert result.exit_code == 2
    assert "not both" in result.output
    ambiguous = runner.invoke(app, ["memory", "-p", "gpt2-small", "--gpu", "h100"])
    assert ambiguous.exit_code == 2 and "names several GPUs" in ambiguous.output
    assert "h200" not in ambiguous.output
