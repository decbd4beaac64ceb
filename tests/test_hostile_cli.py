"""Hostile command lines: every option added lately (lora, quantized --dtype formats, plan,
memory's parallel options, --hf ids, per-model overrides, check --key) given empty, negative,
huge, non-numeric or non-ASCII values ends in one clear line on stderr and a non-zero exit,
never a traceback, a hang or unbounded memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, Invoke

GPT2 = ["-p", "gpt2-small"]
PLAN = ["plan", *GPT2, "--gpu", "h100-sxm", "-T", "512"]
HUGE = "9" * 5001
"""Past the 4,300 digits Python converts from text."""
MANY = "9" * 101
"""One digit past the 100 a size may be written with."""

COMMANDS = [
    ["params"],
    ["memory"],
    ["lora", "-t", "qkv_proj"],
    PLAN[:1] + PLAN[3:] + ["--tokens", "1T"],
]

USAGE = [
    # lora
    (["lora", *GPT2, "-t", "qkv_proj", "-r", "0"], "--rank: '0' is not a positive count"),
    (["lora", *GPT2, "-t", "qkv_proj", "-r", "-1"], "--rank: '-1': a count cannot be negative"),
    (["lora", *GPT2, "-t", ""], "name what to adapt"),
    (["lora", *GPT2, "-t", ",,,"], "name what to adapt"),
    (["lora", *GPT2, "-t", " , "], "name what to adapt"),
    (["lora", *GPT2, "-t", "\u202e"], "target '\\u202e' matches no linear layer"),
    (["lora", *GPT2, "-t", ",".join(f"m{i}" for i in range(10_000))], "target 'm0' matches no"),
    (["lora", *GPT2, "-t", "all-linear,qkv_proj"], "all-linear stands alone"),
    (["lora", *GPT2, "--target-parameters", "ü"], "target parameter 'ü' matches no"),
    (["lora", *GPT2, "-t", "qkv_proj", "--bias", "x"], "unknown bias mode 'x'"),
    # quantized formats, on every command that takes them
    *(
        (cmd, message)
        for dtype, message in [
            ("gguf:", "unknown GGUF type ''"),
            ("gptq-int4:g0", "the group size must be a positive whole number"),
            ("gptq-int4:g²", "not '²'"),
            (f"gptq-int4:g{HUGE}", "at most 100 digits"),
            (f"fp8-block:b{MANY}", "the block size must be a positive whole number"),
            ("fp8-block:b0", "the block size must be a positive whole number"),
            ("nf4:xyz", "'xyz' is no option of nf4"),
            ("nf4:\x1b", "'\\x1b' is no option of nf4"),
            ("x" * 10_000, "unknown dtype or format"),
            ("+", "unknown dtype or format '+'"),
            ("-", "unknown dtype or format '-'"),
        ]
        for cmd in (
            ["params", *GPT2, "--dtype", dtype],
            ["memory", *GPT2, "--dtype", dtype],
            ["check", "presets/gpt2-small.yaml", "--max-weight-bytes", "1GiB", "--dtype", dtype],
        )
    ),
    # plan
    ([*PLAN, "--tokens", "0"], "--tokens: '0' is not a positive count"),
    ([*PLAN, "--tokens", "1T5"], "--tokens: '1T5' is not a count"),
    ([*PLAN, "--tokens", "1e999"], "--tokens: '1e999': an exponent has at most 2 digits"),
    ([*PLAN, "--tokens", HUGE], "--tokens: a count of 5,001 digits"),
    *(
        ([*PLAN, "--tokens", "1T", "--mfu", mfu], f"MFU '{mfu}': expected a share")
        for mfu in ("0", "1.5", "150%", "nan", "inf", "-inf", "1e999", "1e-999")
    ),
    *(
        ([*PLAN, "--budget", budget], f"--budget: {message}")
        for budget, message in [
            ("0", "'0' is not a positive count"),
            ("-1", "'-1': a count cannot be negative"),
            ("nan", "'nan' is not a count"),
            ("inf", "'inf' is not a count"),
            ("1e-30", "'1e-30' is not a count"),
            ("5.76e1", "'5.76e1' is 57.6: not a whole number"),
            ("1e100", "'1e100': an exponent has at most 2 digits"),
            (HUGE, "a count of 5,001 digits"),
        ]
    ),
    ([*PLAN, "--tokens", "1T", "--gpu", ""], "unknown GPU ''"),
    ([*PLAN, "--tokens", "1T", "--dtype", "nf4"], "nf4 is a stored weight format"),
    ([*PLAN, "--prompt", "8", "--dtype", "nf5"], "unknown dtype or format 'nf5'"),
    ([*PLAN], "nothing to plan"),
    # --hf ids and revisions
    (["params", "--hf", ""], "--hf expects a model id like ORG/NAME"),
    (["params", "--hf", "@"], "--hf expects a model id like ORG/NAME"),
    (
        ["params", "--hf", "../x"],
        "'../x' is a path, not a Hub id ORG/NAME; a file is read with --config",
    ),
    (["params", "--hf", "a/b@"], "a revision is a branch, tag or commit"),
    (["params", "--hf", "a/b@../../x"], "a revision is a branch, tag or commit"),
    (["params", "--hf", "a/b", "--revision", ""], "a revision is a branch, tag or commit"),
    # memory's parallel options
    (["memory", *GPT2, "--train", "--gpus", "0"], "--gpus: '0' is not a positive count"),
    (["memory", *GPT2, "--train", "-T", "64", "--zero", "4"], "unknown ZeRO stage 4"),
    (["memory", *GPT2, "--train", "-T", "64", "--gpus", "8", "--fsdp", "hybrid"], "--node-gpus G"),
    *(
        (
            [
                "memory",
                *GPT2,
                "--train",
                "-T",
                "64",
                "--gpus",
                "8",
                "--fsdp",
                "hybrid",
                "--node-gpus",
                g,
            ],
            message,
        )
        for g, message in [
            ("0", "--node-gpus: '0' is not a positive count"),
            ("-2", "--node-gpus: '-2': a count cannot be negative"),
            ("3", "8 GPUs do not divide into nodes of 3"),
        ]
    ),
    # per-model overrides, on every command that loads models
    *(
        ([cmd[0], "-p", f"gpt2-small:{override}", *cmd[1:]], message)
        for override, message in [
            (f"vocab_size={HUGE}", "vocab_size: a count of 5,001 digits; a count has at most 100"),
            ("n_layers=²", "n_layers: '²' is not a count"),
            ("d_model=", "d_model: '' is not a count"),
            ("d_model=1.5e0", "d_model: '1.5e0' is 1.5: not a whole number"),
            ("unknown=1", "unknown field 'unknown'"),
            ("un\x1bknown=1", "unknown field 'un\\x1bknown'"),
            ("tie=\x1b", "tie_embeddings=\\x1b: expected true or false"),
        ]
        for cmd in COMMANDS
    ),
    # counts given as they cannot be
    ([*PLAN, "--tokens", "1T", "--gpus", "0"], "--gpus: '0' is not a positive count"),
    ([*PLAN, "--tokens", "1T", "--gpus", "-1"], "--gpus: '-1': a count cannot be negative"),
    ([*PLAN, "--prompt", "-1"], "--prompt: '-1': a count cannot be negative"),
    (["lora", *GPT2, "-t", "qkv_proj", "--train", "-T", "0"], "--length: '0' is not a positive"),
    ([*PLAN, "--prompt", "0"], "--prompt: '0' is not a positive count"),
    *(
        ([*PLAN, "--prompt", "1", "--generate", "1", option, "9" * 101], f"{name}: a count of 101")
        for option, name in [("-B", "--batch"), ("--gpus", "--gpus"), ("-T", "--length")]
    ),
    ([*PLAN, "--prompt", "9" * 101], "--prompt: a count of 101 digits"),
]


OVER_100_DIGITS = [
    *(
        (
            [*PLAN, "--prompt", "1", "--generate", "1", option, "99e99"],
            f"{name} of about 102 digits",
        )
        for option, name in [("-B", "batch"), ("--gpus", "gpus"), ("-T", "length")]
    ),
    ([*PLAN, "--prompt", "99e99"], "prompt of about 102 digits: expected at most 100 digits"),
    ([*PLAN, "--budget", "99e99"], "budget"),
]
"""Counts written with an exponent, read and then found over 100 digits: wrong usage, as a
count written out in 101 digits is (docs/cli.md's exit codes)."""


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [(*case, 2) for case in USAGE + OVER_100_DIGITS],
    ids=lambda v: repr(v)[:60],
)
def test_usage_error(cli: Invoke, args: list[str], message: str, code: int) -> None:
    """A wrong command-line value: one line naming it on stderr, nothing on stdout, exit 2."""
    result = cli(*args)
    assert result.exit_code == code, result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("error: ")
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "dtype", ["gguf:", "gptq-int4:g0", "gptq-int4:g²", f"gptq-int4:g{HUGE}", "nf4:xyz", "+"]
)
def test_budget_dtype_in_a_file(cli: Invoke, tmp_path: Path, dtype: str) -> None:
    """The same formats as a file's budget.dtype are a finding of that file, at its line."""
    path = tmp_path / "model.yaml"
    preset = (ROOT / "presets" / "gpt2-small.yaml").read_text(encoding="utf-8")
    path.write_text(f"{preset}budget:\n  max_weight_bytes: 1GiB\n  dtype: '{dtype}'\n")
    line = preset.count("\n") + 3
    result = cli("check", str(path))
    assert result.exit_code == 1
    assert f"line {line}   budget.dtype: " in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize("option", ["--mfu", "--budget"])
@pytest.mark.parametrize("exponent", ["1e999999999", "1e-999999999"])
def test_huge_exponents_are_refused_at_once(option: str, exponent: str) -> None:
    """1e999999999 is refused as it is read, not turned into a billion-digit number (which takes
    minutes and gigabytes; in a child process, so that a regression fails instead of hanging)."""
    args = [*PLAN, "--tokens", "1T", option, exponent]
    done = subprocess.run(
        [sys.executable, "-m", "costcalc", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr


def test_a_module_named_twice_is_saved_once(cli: Invoke) -> None:
    """peft wraps each module of modules_to_save once, however often the list names it."""
    args = ["lora", *GPT2, "-t", "qkv_proj", "-f", "json", "--modules-to-save"]
    once = json.loads(cli(*args, "lm_head").stdout)
    twice = json.loads(cli(*args, "lm_head, lm_head,lm_head").stdout)
    assert twice["trainable"] == once["trainable"]
    assert twice["modules_to_save"] == once["modules_to_save"]


def test_the_largest_plan_prints_finite_figures(cli: Invoke) -> None:
    """Every count at its limit, on the largest preset: the times and rates still fit a float."""
    most = "9" * 100
    args = ["-B", most, "--prompt", most, "--generate", most, "--tokens", most, "-T", most]
    result = cli(
        "plan",
        "-p",
        "deepseek-v3",
        "--gpu",
        "h100-sxm",
        *args,
        "--mfu",
        "1e-99",
        "--budget",
        "9e99",
        "-f",
        "json",
    )
    assert result.exit_code == 0, result.stderr
    assert "Infinity" not in result.stdout
    assert json.loads(result.stdout)["inference"]["prefill_seconds"] > 1e280


# One exit code per kind of error, in every command that takes the value (docs/cli.md).

TRAIN = ["--train", "-T", "64"]
COUNT_OPTIONS = [
    *(["params", *GPT2, option] for option in ("-T", "-B", "--prompt", "--d", "--layers")),
    *(["memory", *GPT2, option] for option in ("-T", "-B")),
    *(
        ["memory", *GPT2, *TRAIN, option]
        for option in ("--gpus", "--tp", "--pp", "--ep", "--cp", "--micro-batches")
    ),
    *(PLAN[:1] + PLAN[3:] + ["--tokens", "1T", option] for option in ("--gpus", "-B", "-T")),
    [*PLAN, "--prompt", "8", "--tp"],
    *(["lora", *GPT2, "-t", "qkv_proj", option] for option in ("-r", "--heads")),
    ["lora", *GPT2, "-t", "qkv_proj", *TRAIN, "--gpus"],
    ["heads", "--heads", "8", "--d"],
    ["scale", *GPT2, "--layers", "1", "--d"],
]


@pytest.mark.parametrize("args", COUNT_OPTIONS, ids=lambda args: f"{args[0]} {args[-1]}")
@pytest.mark.parametrize("value", ["0", "-1", "1.5", "9" * 101, "x"])
def test_a_malformed_count_is_wrong_usage_everywhere(
    cli: Invoke, args: list[str], value: str
) -> None:
    result = cli(*args, value)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stderr.startswith(f"error: {args[-1] if args[-1].startswith('--') else ''}")


SIZES = [
    ["params", *GPT2, "--d"],
    ["memory", *GPT2, "--heads"],
    ["plan", *GPT2, "--gpu", "h100-sxm", "--tokens", "1T", "--layers"],
    ["lora", *GPT2, "-t", "qkv_proj", "-r"],
    ["heads", "--heads", "8", "--d"],
    ["scale", "--layers", "1", "2", "--d"],
]


@pytest.mark.parametrize("args", SIZES, ids=lambda args: f"{args[0]} {args[-1]}")
def test_a_size_no_model_can_have_is_an_invalid_input_everywhere(
    cli: Invoke, args: list[str]
) -> None:
    result = cli(*args, "2147483648")
    assert result.exit_code == 1, result.stdout + result.stderr
    assert result.stderr.startswith("error: ")
    assert "2147483647" in result.stderr.replace(",", "")
