"""`costcalc params --batch/--length/--causal/--recompute/--prompt/--generate`: MACs and FLOPs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc import macs
from costcalc.loaders import load_preset
from tests.conftest import Invoke
from tests.expect import expect_error
from tests.golden_specs import GOLDEN, golden_spec

GOLDEN_MODELS: dict[str, Any] = json.loads((GOLDEN / "hf_reference.json").read_text())["models"]


def params_json(cli: Invoke, *args: str) -> dict[str, Any]:
    result = cli("params", *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_gpt2_small_forward(cli: Invoke) -> None:
    # Issue 3: FlopCounterMode / 2, GPT-2 small, eager attention, B=1, T=128.
    data = params_json(cli, "-p", "gpt2-small", "--batch", "1", "--length", "128")
    assert data["macs"]["total"] == 16_114_089_984
    assert data["macs"]["lm_head"] == 4_940_464_128
    assert data["macs"]["attention_pair"] == 301_989_888
    assert data["macs"]["projection_ffn"] == 16_114_089_984 - 4_940_464_128 - 301_989_888
    assert data["flops"]["forward"] == 2 * 16_114_089_984
    assert data["flops"]["training"] == 3 * 2 * 16_114_089_984
    assert data["convention"]["attention"] == "full"
    assert data["parameters"]["total"] == 124_439_808


@pytest.mark.parametrize("name", ["qwen2.5-0.5b", "book-gpt-small", "gpt2-large"])
def test_presets_match_golden(cli: Invoke, name: str) -> None:
    # tests/golden/hf_reference.json (FlopCounterMode, B=1, T=128).
    golden = GOLDEN_MODELS[name]["macs_forward"]
    data = params_json(cli, "-p", name, "-B", str(golden["batch"]), "-T", str(golden["seq_len"]))
    assert data["macs"]["total"] == golden["macs_total"]
    assert data["macs"]["lm_head"] == golden["macs_lm_head"]
    assert data["flops"]["forward"] == golden["flops_total"]


def test_causal_and_recompute(cli: Invoke) -> None:
    full = params_json(cli, "-p", "gpt2-small", "-T", "128")
    causal = params_json(cli, "-p", "gpt2-small", "-T", "128", "--causal", "--recompute", "full")
    # 128 x 129 / 2 of the 128^2 pairs.
    assert causal["macs"]["attention_pair"] * 128 * 128 == full["macs"]["attention_pair"] * 8256
    assert causal["convention"] == {
        "attention": "causal",
        "sliding_window": None,
        "training": "4 x forward",
        "recompute": "full",
        "attn_implementation": "eager",
        "flops_per_mac": 2,
    }
    assert causal["flops"]["training"] == 4 * causal["flops"]["forward"]


def test_table_shows_convention(cli: Invoke) -> None:
    result = cli("params", "-p", "gpt2-small", "-T", "128")
    assert "16,114,089,984" in result.stdout
    assert "full T^2 square" in result.stdout
    assert "FLOPs = 2 x MACs" in result.stdout
    causal = cli("params", "-p", "gpt2-small", "-T", "128", "--causal", "--recompute", "full")
    assert "causal: only the T(T+1)/2" in causal.stdout
    assert "Training step = 4 x forward (--recompute full)" in causal.stdout


@pytest.mark.parametrize(
    ("options", "extra_pairs"),
    [
        (["--recompute", "none"], 0),
        (["--attention", "flash"], 1),
        (["--attention", "sdpa"], 1),
        (["--recompute", "selective"], 2),
        (["--recompute", "selective", "--attention", "flash"], 3),
        (["--recompute", "full"], None),
    ],
)
def test_recompute_modes(cli: Invoke, options: list[str], extra_pairs: int | None) -> None:
    # GPT-2 small, B=1, T=128: forward 16,114,089,984 MACs, attention pairs 301,989,888
    # (FlopCounterMode, tests/golden/hf_reference.json). Selective recomputation re-runs both
    # pair products (QK^T, weights x V); a fused kernel's backward re-runs QK^T (half), as
    # FlopCounterMode's sdpa_backward_flop_count counts it.
    data = params_json(cli, "-p", "gpt2-small", "-T", "128", *options)
    forward, pairs = 16_114_089_984, 301_989_888
    again = forward if extra_pairs is None else extra_pairs * pairs // 2
    assert data["flops"]["training"] == 2 * (3 * forward + again)
    given = dict(zip(options[::2], options[1::2], strict=True))
    assert data["convention"]["recompute"] == given.get("--recompute", "none")
    assert data["convention"]["attn_implementation"] == given.get("--attention", "eager")


def test_attention_kernel_is_stated(cli: Invoke) -> None:
    result = cli("params", "-p", "gpt2-small", "-T", "128", "--attention", "flash")
    assert "Training step = 3 x forward + QK^T (half the attention pairs) (--attention flash)" in (
        " ".join(result.stdout.split())
    )


def test_side_by_side(cli: Invoke) -> None:
    result = cli("params", "-p", "gpt2-small", "-p", "gpt2-medium", "-T", "128")
    assert result.exit_code == 0
    golden = GOLDEN_MODELS["gpt2-medium"]["macs_forward"]["macs_total"]
    assert f"{golden:,}" in result.stdout
    data = json.loads(
        cli("params", "-p", "gpt2-small", "-p", "gpt2-medium", "-T", "128", "-f", "json").stdout
    )
    assert [d["macs"]["total"] for d in data] == [16_114_089_984, golden]


def test_moe_rows(cli: Invoke, tmp_path: Path) -> None:
    # tiny-mixtral (tests/golden/hf_reference.json): router and expert MACs at B=1, T=16.
    golden = GOLDEN_MODELS["tiny-mixtral"]["macs_forward"]
    config = golden_spec("tiny-mixtral").model_dump(exclude_none=True)
    data = params_json(cli, "-c", write_config(tmp_path, config), "-T", "16")
    assert data["macs"]["router"] == golden["macs_router"]
    assert data["macs"]["ffn"] == golden["macs_experts"]
    assert data["macs"]["total"] == golden["macs_total"]


def write_config(directory: Path, config: dict[str, Any]) -> str:
    path = directory / "model.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_sliding_window_is_applied_and_said(cli: Invoke, tmp_path: Path) -> None:
    config = {"vocab_size": 100, "context_length": 64, "d_model": 32, "n_layers": 1,
              "n_heads": 2, "position": "rotary", "sliding_window": 8}  # fmt: skip
    path = write_config(tmp_path, config)
    data = params_json(cli, "-c", path, "-T", "16")
    assert data["macs"]["attention_pair"] == 2 * 32 * 16 * 8  # T x W pairs
    assert data["convention"]["sliding_window"] == 8
    causal = params_json(cli, "-c", path, "-T", "16", "--causal")
    assert causal["macs"]["attention_pair"] == 2 * 32 * (8 * 9 // 2 + 8 * 8)
    assert "Sliding window 8 < T" in cli("params", "-c", path, "-T", "16").stdout
    assert "Sliding window" not in cli("params", "-c", path, "-T", "8").stdout


def test_decoding(cli: Invoke) -> None:
    data = params_json(cli, "-p", "gpt2-small", "--prompt", "100", "--generate", "29")
    decode = data["decode"]["macs"]
    spec = load_preset("gpt2-small").spec
    assert decode["prefill"] == macs.forward_macs(spec, 1, 100)
    assert data["decode"]["steps"] == 28
    assert data["decode"]["prompt"] == 100
    assert decode["first_step"] == macs.decode_token_macs(spec, 100)
    assert decode["last_step"] == macs.decode_token_macs(spec, 127)
    assert decode["total"] == decode["prefill"] + decode["decode"]
    # Causal prefill + cached steps = one causal forward of the 128 fed tokens.
    causal = params_json(cli, "-p", "gpt2-small", "--prompt", "100", "--generate", "29", "--causal")
    assert causal["decode"]["macs"]["total"] == macs.forward_macs(spec, 1, 128, causal=True)
    assert "macs" not in data  # no --length: no forward table
    table = cli("params", "-p", "gpt2-small", "--prompt", "100", "--generate", "29", "-B", "2")
    assert "Decoding with a KV cache" in table.stdout
    assert "prefill + decode" in table.stdout
    assert f"{2 * decode['total']:,}" in table.stdout


def test_markdown_and_csv(cli: Invoke) -> None:
    md = cli("params", "-p", "gpt2-small", "-T", "128", "-f", "markdown")
    assert "| forward total | 16,114,089,984 |" in md.stdout
    csv = cli("params", "-p", "gpt2-small", "-T", "128", "-f", "csv")
    assert "gpt2-small,macs,total,16114089984,MACs," in csv.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["-T", "1025"], 1, "past the learned position table of 1,024 positions"),
        (["-T", "0"], 2, "--length: '0' is not a positive count"),
        (["-T", "-3"], 2, "--length: '-3': a count cannot be negative"),
        (["-T", "8", "-B", "0"], 2, "--batch: '0' is not a positive count"),
        (["--prompt", "1000", "--generate", "26"], 1, "past the learned position table"),
        (["--prompt", "0", "--generate", "2"], 2, "--prompt: '0' is not a positive count"),
        (["--prompt", "4", "--generate", "0"], 2, "--generate: '0' is not a positive count"),
        (["--prompt", "4"], 2, "--prompt and --generate go together"),
        (["-B", "4"], 2, "--batch needs --length"),
        (["--causal"], 2, "--causal needs --length"),
        (
            ["--prompt", "4", "--generate", "4", "--recompute", "full"],
            2,
            "--recompute needs --length",
        ),
        (["-T", "8", "--recompute", "half"], 2, "unknown recompute mode 'half'"),
        (["-T", "8", "--recompute", "flash"], 2, "use --attention flash"),
        (["-T", "8", "--attention", "fast"], 2, "unknown attention kernel 'fast'"),
        (["--attention", "flash"], 2, "--attention needs --length"),
    ],
)
def test_bad_input(cli: Invoke, args: list[str], code: int, message: str) -> None:
    result = cli("params", "-p", "gpt2-small", *args)
    expect_error(result, code, message)


def test_non_integer_length(cli: Invoke) -> None:
    result = cli("params", "-p", "gpt2-small", "-T", "12.5")
    assert result.exit_code == 2
    assert result.stderr == "error: --length: '12.5' is 12.5: not a whole number\n"


def test_rotary_has_no_table_limit(cli: Invoke) -> None:
    # Qwen2.5-0.5B has no learned table: any length runs (its context is a different matter).
    data = params_json(cli, "-p", "qwen2.5-0.5b", "-T", "40000")
    assert data["macs"]["total"] > 0


def test_opt_offset_rows_add_no_positions(cli: Invoke) -> None:
    # transformers OPTLearnedPositionalEmbedding: max_position_embeddings + 2 rows, positions
    # looked up at 2 .. T + 1, so T <= max_position_embeddings (2,048 for OPT-125m).
    ok = cli("params", "-p", "opt-125m", "-T", "2048", "--format", "json")
    assert ok.exit_code == 0, ok.stderr
    beyond = cli("params", "-p", "opt-125m", "-T", "2049")
    assert beyond.exit_code == 1
    assert "past the learned position table of 2,048 positions" in beyond.stderr


@pytest.mark.parametrize("preset", ["gpt-oss-20b", "gemma-2-2b", "gemma-3-1b", "gemma-4-e2b"])
@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_windows_of_layer_groups_are_said(cli: Invoke, preset: str, fmt: str) -> None:
    """Windows that live in layer groups (the model-level window is none) are named in the note."""
    spans = {s.sliding_window for s in load_preset(preset).spec.stacks if s.sliding_window}
    [window] = spans
    result = cli("params", "-p", preset, "-T", str(window + 1), "--format", fmt)
    assert result.exit_code == 0
    assert f"Sliding window {window:,} < T" in result.stdout
    assert "< T" not in cli("params", "-p", preset, "-T", str(window), "--format", fmt).stdout
