"""`costcalc memory` from the command line: JSON contract, table, units, --fits, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, ROOT, Invoke
from tests.golden_models import golden, memory_reference


def memory_json(cli: Invoke, *args: str) -> Any:
    result = cli("memory", *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


CONTRACT = [
    ("weights", "bytes"),
    ("gradients", "bytes"),
    ("optimizer", "elements"),
    ("optimizer", "bytes"),
    ("kv_cache", "elements"),
    ("kv_cache", "bytes"),
    ("activations", "bytes"),
    ("activations", "attention_scores_bytes"),
    ("logits", "elements"),
    ("logits", "bytes"),
    ("logits", "upcast_bytes"),
    ("total", "bytes"),
]


@pytest.mark.parametrize("mode", [(), ("--train", "-T", "1024")])
def test_json_contract_holds_integers(cli: Invoke, mode: tuple[str, ...]) -> None:
    data = memory_json(cli, "-p", "gpt2", *mode)
    for group, key in CONTRACT:
        assert type(data[group][key]) is int, (group, key)
    assert data["activations"]["estimate"] is False  # GPT-2's layout was measured


def test_gpt2_inference_json(cli: Invoke) -> None:
    # tests/golden/hf_reference.json: gpt2 parameters_total and kv_cache_elements (B=1, T=16)
    data = memory_json(cli, "-p", "gpt2", "--length", "16", "--batch", "1")
    P, kv = golden("gpt2")["parameters_total"], golden("gpt2")["kv_cache_elements"]
    assert data["kv_cache"]["elements"] == kv == 294_912
    assert data["weights"]["bytes"] == 2 * P
    assert data["kv_cache"]["bytes"] == 2 * kv
    assert data["total"]["bytes"] == 2 * P + 2 * kv
    assert data["gradients"]["bytes"] == data["optimizer"]["bytes"] == 0
    assert data["setup"]["mode"] == "inference"


def test_qwen_training_json_with_adamw(cli: Invoke) -> None:
    # tests/golden/memory_reference.json: AdamW state of Qwen2.5-0.5B after one step
    record = memory_reference()["models"]["qwen2.5-0.5b"]["optimizers"]["adamw"]
    data = memory_json(cli, "-p", "qwen2.5-0.5b", "--train", "--length", "8")
    P = record["param_numel"]
    assert data["optimizer"]["elements"] == record["state_numel"]
    assert data["optimizer"]["step_elements"] == record["n_param_tensors"]
    assert data["optimizer"]["bytes"] == 4 * record["state_numel"]
    assert data["master_weights"]["bytes"] == 4 * P
    assert data["gradients"]["bytes"] == 2 * P
    assert data["activations"]["source"].startswith("measured: the tensors transformers")
    assert data["total"]["includes_estimate"] is False
    jamba = memory_json(cli, "-c", str(JAMBA), "--train", "--length", "8")  # Mamba blocks
    assert "Korthikanti et al. 2022" in jamba["activations"]["source"]
    assert jamba["activations"]["estimate"] is jamba["total"]["includes_estimate"] is True
    assert data["kv_cache"]["bytes"] == 0


@pytest.mark.parametrize("optimizer", ["sgd", "sgd-momentum", "adafactor"])
def test_optimizer_choice(cli: Invoke, optimizer: str) -> None:
    # tests/golden/memory_reference.json: torch's optimizer state after one step (fp32 training)
    record = memory_reference()["models"]["gpt2"]["optimizers"][optimizer]
    data = memory_json(
        cli, "-p", "gpt2", "--train", "-T", "1024", "--dtype", "fp32", "--optimizer", optimizer
    )
    assert data["optimizer"]["elements"] == record["state_numel"]
    assert data["optimizer"]["bytes"] == 4 * record["state_numel"]
    assert data["master_weights"]["bytes"] == 0  # fp32 training needs no masters


def test_recompute_changes_only_the_activations(cli: Invoke) -> None:
    base = memory_json(cli, "-p", "gpt2", "--train", "-T", "1024")
    full = memory_json(cli, "-p", "gpt2", "--train", "-T", "1024", "--recompute", "full")
    # full recomputation keeps each layer's bf16 input, e N D; outside the layers the final
    # LayerNorm (input, mean and rstd, output), token ids, targets (B = 1: a view of T + 1),
    # position ids and the loss normalizer
    N, D = 1024, 768
    outside = (2 * N * D + 4 * N + 2 * N * D) + 8 * N + 8 * (N + 1) + 8 * N + 4
    assert full["activations"]["bytes"] == 12 * 2 * N * D + outside
    saved = base["activations"]["bytes"] - full["activations"]["bytes"]
    assert base["total"]["bytes"] - full["total"]["bytes"] == saved


def test_table_shows_breakdown_bars_and_the_estimate_source(cli: Invoke) -> None:
    result = cli("memory", "-p", "gpt2", "--train", "-T", "1024", "--attention", "eager")
    assert result.exit_code == 0
    out = " ".join(result.stdout.split())
    for label in ("weights", "gradients", "master weights", "optimizer (adamw)"):
        assert label in out
    assert "activations (ESTIMATE)" not in out
    assert "Activations are what transformers saves for backward" in out
    assert (
        "L x (2 x e N D + 2 x 2 e N + 2 x e N D + 3 e N H d + e N H d + e B H T^2 + 5 e N F)" in out
    )
    assert "Where gpt2-small's memory goes" in out
    assert "█" in out
    assert "248,879,764" in out  # AdamW elements: golden 2 x 124,439,808 + 148 steps


def test_inference_table_shows_the_kv_formula(cli: Invoke) -> None:
    result = cli("memory", "-p", "qwen2.5-0.5b", "-T", "16")
    assert "2 x 24 x 1 x 16 x 2 x 64 elements of bf16" in result.stdout
    assert "98,304" in result.stdout  # golden kv_cache_elements of qwen2.5-0.5b


@pytest.mark.parametrize(
    ("units", "shown", "absent"),
    [("iec", "237.35 MiB", " MB"), ("si", "248.88 MB", "MiB")],
)
def test_units_are_labelled(cli: Invoke, units: str, shown: str, absent: str) -> None:
    # 248,879,616 bf16 bytes of GPT-2 small = 248.88 MB = 237.35 MiB
    result = cli("memory", "-p", "gpt2", "--units", units, "-T", "16")
    assert shown in result.stdout
    assert absent not in result.stdout


def test_fits_with_headroom(cli: Invoke) -> None:
    data = memory_json(cli, "-p", "gpt2", "-T", "16", "--fits", "1GiB")
    assert data["fits"] == {
        "capacity_bytes": 2**30,
        "fits": True,
        "headroom_bytes": 2**30 - data["total"]["bytes"],
        "shortfall_bytes": 0,
        "gpu": None,
        "total_bytes": 2**30,
        "reserve_bytes": 0,
        "datasheet_bytes": None,
    }
    table = cli("memory", "-p", "gpt2", "-T", "16", "--gpu-memory", "1GiB")
    assert table.exit_code == 0
    assert "headroom" in table.stdout


def test_does_not_fit_reports_the_shortfall_and_exits_1(cli: Invoke) -> None:
    result = cli("memory", "-p", "gpt2", "--train", "-T", "1024", "--fits", "2GB")
    assert result.exit_code == 1
    assert "short by (does not fit)" in result.stdout
    assert "does not fit: gpt2-small needs" in result.stderr
    assert "2,000,000,000 bytes given" in result.stderr
    data = json.loads(
        cli("memory", "-p", "gpt2", "--train", "-T", "1024", "--fits", "2GB", "-f", "json").stdout
    )
    assert data["fits"]["fits"] is False
    assert data["fits"]["shortfall_bytes"] == data["total"]["bytes"] - 2 * 10**9


def test_several_models_and_a_config_file(cli: Invoke) -> None:
    data = memory_json(cli, "-p", "gpt2", "-c", str(FIXTURES / "hf" / "gpt2.json"), "-T", "16")
    assert [d["kv_cache"]["elements"] for d in data] == [294_912, 294_912]


def test_overrides_apply(cli: Invoke) -> None:
    data = memory_json(cli, "-p", "qwen2.5-0.5b", "--kv-heads", "14", "-T", "16")
    assert data["kv_cache"]["elements"] == 7 * 98_304


@pytest.mark.parametrize("fmt", ["markdown", "csv"])
def test_other_formats(cli: Invoke, fmt: str) -> None:
    result = cli("memory", "-p", "gpt2", "-T", "16", "--format", fmt)
    assert result.exit_code == 0
    assert ("294,912" if fmt == "markdown" else ",kv_cache,elements,294912,") in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--dtype", "fp64"), "unknown dtype or format 'fp64'"),
        (("--kv-dtype", "q8"), "unknown KV-cache dtype 'q8'"),
        (("--train", "--optimizer", "lion"), "unknown optimizer 'lion'"),
        (("--fits", "24GX"), "'24GX' is not a byte size"),
        (("--fits", "0"), "'0' is not a positive byte size"),
        (("--batch", "0"), "--batch: '0' is not a positive count"),
        (("-T", "-3"), "--length: '-3': a count cannot be negative"),
        (("--train", "-T", "0"), "--length: '0' is not a positive count"),
        (("--gpu-memory", "lots"), "'lots' is not a byte size"),
        (("--units", "metric"), "unknown units 'metric'"),
        (("--optimizer", "sgd"), "--optimizer applies to training; add --train"),
        (("--train", "-T", "8", "--recompute", "half"), "unknown recompute mode 'half'"),
        (("--train", "-T", "8", "--recompute", "flash"), "use --attention flash"),
        (("--train", "-T", "8", "--attention", "fast"), "unknown attention kernel 'fast'"),
        (("--attention", "eager"), "--attention applies to training; add --train"),
        (("--train",), "give -T LENGTH (tokens per sequence; the model's context is 1,024 tokens)"),
        (("--train", "--dtype", "int4"), "training keeps weights and gradients in"),
    ],
)
def test_bad_input_is_one_clear_error(cli: Invoke, args: tuple[str, ...], message: str) -> None:
    result = cli("memory", "-p", "gpt2", *args)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_no_model_and_unknown_preset(cli: Invoke) -> None:
    assert cli("memory").exit_code == 2
    unknown = cli("memory", "-p", "gpt3")
    assert unknown.exit_code == 1
    assert "unknown preset 'gpt3'" in unknown.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-T", "1025"), "length 1025: needs 1,025 positions, past the learned position table"),
        (("--train", "-T", "2048"), "length 2048: needs 2,048 positions, past the learned"),
    ],
)
def test_sizes_are_checked_as_in_params(cli: Invoke, args: tuple[str, ...], message: str) -> None:
    # the same words and exit code as `costcalc params -B 0` or a length past gpt2's 1,024 rows
    result = cli("memory", "-p", "gpt2", *args)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {message}")
    assert result.stdout == ""


def test_sliding_window_caps_the_cache(cli: Invoke, tmp_path: Path) -> None:
    # 2 x 24 layers x 8 tokens x 2 KV heads x 64 = 49,152: the window of 8, not 16 tokens
    config = tmp_path / "windowed.yaml"
    config.write_text((ROOT / "presets" / "qwen2.5-0.5b.yaml").read_text() + "sliding_window: 8\n")
    data = memory_json(cli, "-c", str(config), "-T", "16")
    assert data["kv_cache"]["tokens"] == 8
    assert data["kv_cache"]["elements"] == 49_152
    table = cli("memory", "-c", str(config), "-T", "16")
    assert "T capped by the sliding window of 8" in table.stdout


def _flat(text: str) -> str:
    return " ".join(text.split())


QWEN_TRAINING = ("-p", "qwen2.5-0.5b", "--train", "-B", "8", "-T", "1024")
SCORES = 24 * 6 * 14 * 1024 * 1024 * 8  # L x (4 + 2) B H T^2 of Qwen2.5-0.5B: 16,911,433,728


def test_eager_and_sdpa_differ_by_the_stored_scores(cli: Invoke) -> None:
    # transformers' eager attention keeps the s x s softmax output in fp32 and its bf16 copy,
    # (4 + 2) B H T^2 bytes per layer; SDPA's fused kernels (transformers' default) keep none.
    # Besides, eager keeps keys and values expanded to H heads and a copy of the output,
    # 2 N d (2 H - 2 K) bytes, where SDPA keeps an fp32 log-sum-exp, 4 B H T.
    N, H, K, d = 8 * 1024, 14, 2, 64
    layout = 24 * (2 * N * d * (2 * H - 2 * K) - 4 * 8 * H * 1024)
    eager = memory_json(cli, *QWEN_TRAINING, "--attention", "eager")
    sdpa = memory_json(cli, *QWEN_TRAINING, "--attention", "sdpa")
    assert memory_json(cli, *QWEN_TRAINING) == sdpa  # sdpa is the default
    assert eager["total"]["bytes"] - sdpa["total"]["bytes"] == SCORES + layout
    assert SCORES == 16_911_433_728
    assert eager["activations"]["attention_scores_bytes"] == SCORES
    assert sdpa["activations"]["attention_scores_bytes"] == 0
    assert (eager["setup"]["attention"], sdpa["setup"]["attention"]) == ("eager", "sdpa")
    stated = "L x (4 B H T^2 + e B H T^2) = 24 x (469,762,048 + 234,881,024) = 16,911,433,728"
    eager_out = _flat(cli("memory", *QWEN_TRAINING, "--attention", "eager").stdout)
    assert "attention scores" in eager_out and "ESTIMATE" not in eager_out
    assert f"--attention eager keeps the T x T scores, a row of their own: {stated}" in eager_out
    sdpa_out = _flat(cli("memory", *QWEN_TRAINING).stdout)
    assert "attention scores" not in sdpa_out
    assert "--attention sdpa never stores them" in sdpa_out
    assert f"eager attention without recomputation would keep {stated} bytes" in sdpa_out
    flash = memory_json(cli, *QWEN_TRAINING, "--attention", "flash")
    assert flash["total"]["bytes"] == sdpa["total"]["bytes"]


def test_logits_are_a_row_of_their_own(cli: Invoke) -> None:
    # B T V = 8 x 1,024 x 151,936 logits in bf16, and the fp32 log-probabilities cross_entropy
    # saves for backward (tests/golden/activation_reference.json)
    BTV = 8 * 1024 * 151_936
    data = memory_json(cli, *QWEN_TRAINING)
    assert data["logits"] == {
        "elements": BTV,
        "dtype": "bf16",
        "bytes": 2 * BTV,
        "upcast_dtype": "fp32",
        "upcast_bytes": 4 * BTV,
        "source": data["logits"]["source"],
    }
    assert "ForCausalLMLoss" in data["logits"]["source"]
    parts = ("weights", "gradients", "master_weights", "optimizer", "activations", "kv_cache")
    assert data["total"]["bytes"] == sum(data[p]["bytes"] for p in parts) + 6 * BTV
    out = cli("memory", *QWEN_TRAINING).stdout
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 4}
    assert "2,489,319,424" in rows["logits"]
    assert "4,978,638,848" in rows["log-probabilities (fp32)"]


def test_memory_defaults_no_longer_flip_fits(cli: Invoke) -> None:
    # sdpa keeps no scores: 26,718,502,028 bytes fit in 32 GiB, with 7,641,236,340 to spare;
    # eager's 44,222,905,484 do not
    result = cli("memory", *QWEN_TRAINING, "--fits", "32GiB", "-f", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["fits"]["headroom_bytes"] == 7_641_236_340
    assert 32 * 2**30 - 26_718_502_028 == 7_641_236_340
    assert cli("memory", *QWEN_TRAINING, "--attention", "eager", "--fits", "32GiB").exit_code == 1


QWEN, GPT2, OSS, DSV3 = "qwen2.5-0.5b", "gpt2", "gpt-oss-20b", "deepseek-v3"
JAMBA = FIXTURES / "hf" / "jamba-v0.1.json"
TRAIN = {"train": True, "length": 64}
EXPLAINED: list[tuple[str | Path, dict[str, Any]]] = [
    (QWEN, {**TRAIN, "batch": 8, "length": 1024, "attention": "eager"}),
    (QWEN, {**TRAIN, "optimizer": "adafactor"}),
    (GPT2, {**TRAIN, "dtype": "fp32", "optimizer": "sgd-momentum"}),
    (GPT2, {**TRAIN, "optimizer": "sgd", "recompute": "full"}),
    (GPT2, {**TRAIN, "mixed_precision": False, "recompute": "selective"}),
    (OSS, {**TRAIN, "length": 512, "attention": "eager"}),
    (OSS, {"length": 4096, "batch": 2}),
    (DSV3, {"length": 100}),
    (QWEN, {"length": 16, "dtype": "int4", "kv_dtype": "fp8"}),
    (GPT2, {"length": 15, "dtype": "int4", "kv_dtype": "int4"}),
    (JAMBA, {"length": 300}),
    (JAMBA, {**TRAIN, "length": 300, "attention": "eager"}),
    ("qwen3-30b-a3b", {**TRAIN, "batch": 2, "dtype": "fp32", "attention": "eager"}),
    ("mixtral-8x7b", {**TRAIN, "recompute": "selective"}),
    (FIXTURES / "hf" / "falcon-40b.json", {"length": 16}),  # its cache holds all 128 heads
]


@pytest.mark.parametrize(("model", "options"), EXPLAINED, ids=str)
def test_explain_arithmetic_is_right(model: str | Path, options: dict[str, Any]) -> None:
    # Every row: the numbers put in evaluate to the bytes the report shows for that component.
    import re

    from costcalc.loaders import load_file, load_preset
    from costcalc.memory import memory_setup
    from costcalc.memory_explain import memory_explain
    from costcalc.memory_results import memory_result

    loaded = load_file(model) if isinstance(model, Path) else load_preset(model)
    result = memory_result(loaded, memory_setup(**options))
    formulas = memory_explain(loaded.spec, result.report)
    shown = {c.key: c.bytes for c in result.components()} | {"total": result.report.bytes_total}
    assert set(formulas) == set(shown)
    for key, text in formulas.items():
        *_, expression, value = text.split(" = ")
        assert int(value.replace(",", "")) == shown[key], (key, text)
        if text.count(" = ") == 1:  # nothing to put numbers in: "sgd keeps no state = 0"
            assert shown[key] == 0
            continue
        python = expression.replace(",", "").replace(" x ", " * ")
        python = re.sub(r"ceil\((.*) / (\d)\)", r"-(-(\1) // \2)", python)
        assert re.fullmatch(r"[\d*+()/ -]+", python), (key, text)
        assert eval(python) == shown[key], (key, text)


def test_explain_table(cli: Invoke) -> None:
    result = cli("memory", *QWEN_TRAINING, "--explain")
    out = _flat(result.stdout)
    assert "How qwen2.5-0.5b's memory is counted (bytes)" in out
    assert "B x T x V x 4 (fp32) = 8 x 1,024 x 151,936 x 4 = 4,978,638,848" in out
    assert "2P x 4 (fp32) moments + N x 4 (fp32) steps = 2 x 494,032,768 x 4 + 290 x 4" in out
    inference = _flat(cli("memory", "-p", "qwen2.5-0.5b", "-T", "16", "--explain").stdout)
    assert "= 2 x 24 x 1 x 16 x 2 x 64 x 2 = 196,608" not in inference  # layers lead the terms
    assert "24 x 1 x 16 x 2 x 2 x 64 x 2 = 196,608" in inference


@pytest.mark.parametrize(
    "command",
    [
        ("memory", "-T", "8192"),
        ("memory", "--train", "-T", "1024"),
        ("memory", "-T", "8192", "--engine", "vllm", "--gpu", "l4"),
        ("plan", "--gpu", "l4", "--prompt", "1k", "--generate", "16"),
        ("plan", "--gpu", "h100-sxm", "--tokens", "1B", "-T", "1024"),
        ("lora", "-t", "all-linear", "-r", "8", "--train", "-T", "1024"),
    ],
    ids=" ".join,
)
def test_tables_print_the_config_notes(
    cli: Invoke, tmp_path: Path, command: tuple[str, ...]
) -> None:
    """How the config was read (here Gemma 3's halved bidirectional window, which sizes the KV
    cache) is printed under the tables as params prints it, once: the notes of the JSON record."""
    config = json.loads((FIXTURES / "hf" / "gemma-3-1b.json").read_text())
    path = tmp_path / "bidirectional.json"
    path.write_text(json.dumps({**config, "use_bidirectional_attention": True}))
    data = json.loads(cli(*command, "-c", str(path), "-f", "json").stdout)
    record = data[0] if isinstance(data, list) else data
    assert any("halves the window" in note for note in record["notes"])
    shown = " ".join(cli(*command, "-c", str(path)).stdout.split())
    for note in record["notes"]:
        assert shown.count(" ".join(f"bidirectional: {note}".split())) == 1, note
