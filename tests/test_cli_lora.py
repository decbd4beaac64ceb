"""`costcalc lora` from the command line: JSON contract, table, --train, --fits, bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import FIXTURES, GOLDEN, Invoke

PEFT = json.loads((GOLDEN / "lora_reference.json").read_text())["cases"]
GPT2 = str(FIXTURES / "hf" / "gpt2.json")


def lora_json(cli: Invoke, *args: str) -> Any:
    result = cli("lora", *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_json_carries_peft_s_trainable_and_total(cli: Invoke) -> None:
    data = lora_json(
        cli, "-c", GPT2, "--targets", "c_attn", "-r", "8", "--modules-to-save", "lm_head"
    )
    peft = PEFT["gpt2-c_attn-r8-lm_head"]
    assert (data["trainable"], data["total"]) == (peft["trainable"], peft["total"])
    assert {k: v["added"] for k, v in data["modules"].items()} == {"c_attn": 294912}
    assert data["modules"]["c_attn"]["modules"] == 12
    assert data["modules_to_save"] == {"lm_head": 38597376}
    assert data["family"] == "gpt2"
    assert data["memory"] is None


def test_dora_bias_and_all_linear_from_the_command_line(cli: Invoke) -> None:
    qwen = str(FIXTURES / "hf" / "qwen2.5-0.5b.json")
    data = lora_json(cli, "-c", qwen, "-t", "all-linear", "-r", "8", "--dora")
    assert data["trainable"] == PEFT["qwen2.5-0.5b-all-linear-r8-dora"]["trainable"]
    data = lora_json(
        cli, "-c", qwen, "-t", "q_proj,k_proj,v_proj,o_proj", "-r", "16", "--bias", "lora_only"
    )
    assert data["trainable"] == PEFT["qwen2.5-0.5b-qkvo-r16-lora_only"]["trainable"]


def test_experts_through_target_parameters(cli: Invoke) -> None:
    mixtral = str(FIXTURES / "hf" / "tiny-mixtral.json")
    data = lora_json(
        cli,
        "-c",
        mixtral,
        "-t",
        "q_proj,v_proj",
        "-r",
        "4",
        "--target-parameters",
        "experts.gate_up_proj,experts.down_proj",
    )
    assert data["trainable"] == PEFT["tiny-mixtral-experts-r4"]["trainable"]


def test_table_shows_breakdown_and_share(cli: Invoke) -> None:
    result = cli("lora", "-c", GPT2, "-t", "c_proj", "-r", "4", "--bias", "all")
    assert result.exit_code == 0, result.stderr
    assert "c_proj" in result.stdout and "258,048" in result.stdout
    assert "biases (all)" in result.stdout and "360,192" in result.stdout
    assert "trainable share" in result.stdout


def test_train_adds_memory_and_fits_decides_the_exit(cli: Invoke) -> None:
    args = (
        "-p",
        "qwen2.5-0.5b",
        "-t",
        "q_proj,v_proj",
        "--train",
        "--base-dtype",
        "nf4",
        "-T",
        "512",
    )
    data = lora_json(cli, *args)
    memory = data["memory"]
    assert memory["setup"]["double_quant"] is True
    assert memory["adapters"] == {"elements": 540672, "dtype": "fp32", "bytes": 4 * 540672}
    parts = (
        "quantized_weights",
        "frozen_weights",
        "adapters",
        "saved_copies",
        "gradients",
        "optimizer",
        "activations",
        "logits",
    )
    upcast = memory["logits"]["upcast_bytes"]
    assert memory["total"]["bytes"] == sum(memory[p]["bytes"] for p in parts) + upcast
    assert memory["activations"]["estimate"] is True
    assert memory["setup"]["attention"] == "sdpa"  # transformers' default kernel
    assert memory["activations"]["attention_scores_bytes"] == 0
    V = 151936  # Qwen2.5-0.5B's vocabulary rows: B x T x V logits in bf16, then an fp32 copy
    assert memory["logits"] == {
        "elements": 512 * V,
        "dtype": "bf16",
        "bytes": 2 * 512 * V,
        "upcast_dtype": "fp32",
        "upcast_bytes": 4 * 512 * V,
        "source": memory["logits"]["source"],
    }
    short = cli("lora", *args, "--fits", "1GiB")
    assert short.exit_code == 1 and "does not fit" in short.stderr
    assert cli("lora", *args, "--fits", "2GiB").exit_code == 0


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(
    ("kernel", "recompute"), [("eager", "none"), ("sdpa", "none"), ("eager", "selective")]
)
def test_training_table_speaks_as_memory_train(cli: Invoke, kernel: str, recompute: str) -> None:
    """The activation, scores and logits notes are memory --train's, word for word; the scores
    get a row of their own only when eager attention stores them."""
    from costcalc.cli.memory import training_notes
    from costcalc.loaders import load_file

    setup = ("--train", "-B", "2", "-T", "256", "--attention", kernel, "--recompute", recompute)
    lora = _flat(cli("lora", "-c", GPT2, "-t", "c_attn", *setup).stdout)
    memory = _flat(cli("memory", "-c", GPT2, *setup).stdout)
    for note in training_notes(load_file(GPT2).spec, 2, 256, recompute, kernel, "bf16"):
        assert _flat(note) in lora and _flat(note) in memory
    assert f"bf16 base, {kernel} attention, B=2, T=256" in lora
    assert ("attention scores (ESTIMATE)" in lora) == ((kernel, recompute) == ("eager", "none"))
    assert "log-probabilities (fp32)" in lora


def test_training_needs_a_length_as_memory_does(cli: Invoke) -> None:
    lora = cli("lora", "-c", GPT2, "-t", "c_attn", "--train")
    memory = cli("memory", "-c", GPT2, "--train")
    assert lora.exit_code == memory.exit_code == 2
    assert lora.stderr == memory.stderr
    assert "give -T LENGTH" in lora.stderr and "1,024 tokens" in lora.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-c", GPT2, "-t", "q_proj"), "matches no linear layer or table"),
        (("-c", GPT2), "name what to adapt"),
        (("-c", GPT2, "-t", "c_attn", "--base-dtype", "nf4"), "add --train"),
        (("-c", GPT2, "-t", "c_attn", "--attention", "eager"), "--attention applies"),
        (
            ("-c", GPT2, "-t", "c_attn", "--train", "-T", "8", "--attention", "fast"),
            "unknown attention kernel 'fast'",
        ),
        (
            ("-c", GPT2, "-t", "c_attn", "--train", "-T", "8", "--recompute", "flash"),
            "use --attention flash",
        ),
        (("-c", GPT2, "-t", "c_attn", "--train", "--base-dtype", "int4"), "unknown base dtype"),
        (("-c", GPT2, "-t", "c_attn", "--bias", "some"), "unknown bias mode"),
        (("-c", GPT2, "-t", "c_attn", "--modules-to-save", "ln_f"), "the tables and the LM head"),
    ],
)
def test_bad_input_is_one_clear_error(cli: Invoke, args: tuple[str, ...], message: str) -> None:
    result = cli("lora", *args)
    assert result.exit_code == 2  # wrong usage
    assert message in result.stderr
    assert "Traceback" not in result.stderr
