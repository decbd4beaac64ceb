"""Bad input to `costcalc params`: one clear message, a non-zero exit, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Invoke


def fails(cli: Invoke, *args: str, code: int = 1) -> str:
    result = cli(*args)
    assert result.exit_code == code, result.stdout
    assert "Traceback" not in result.stderr + result.stdout
    return result.stderr


def test_unknown_preset_lists_and_suggests(cli: Invoke) -> None:
    message = fails(cli, "params", "--preset", "gpt2-smal")
    assert "unknown preset 'gpt2-smal'" in message
    assert "Did you mean 'gpt2-small'?" in message
    assert "book-gpt-small" in message and "qwen2.5-0.5b" in message


def test_heads_that_do_not_divide_the_width(cli: Invoke) -> None:
    # seed 000: D=256 with 7 heads is "invalid equal split"; reported, never auto-corrected.
    message = fails(cli, "params", "-p", "lrn-gpt", "--heads", "7")
    assert "--heads (command line)" in message
    assert "256 does not split into 7 equal heads" in message
    assert "8" in message  # the nearest valid head counts are named


def test_kv_heads_that_do_not_group(cli: Invoke) -> None:
    message = fails(cli, "params", "-p", "qwen2.5-0.5b", "--kv-heads", "4")
    assert (
        "--kv-heads (command line)" in message
        and "--heads must be a multiple of --kv-heads" in message
    )


def test_width_that_breaks_a_presets_heads_names_the_options(cli: Invoke) -> None:
    # GPT-2 small has 12 heads; 1,000 does not split into 12, and the preset file is not the
    # user's: the message speaks of the options they can type.
    message = fails(cli, "params", "-p", "gpt2", "--d", "1000")
    assert "line" not in message and "n_heads" not in message
    assert "--d 1,000 does not split into 12 equal heads" in message
    assert "try --heads 10 or --heads 20, or give --head-dim" in message


def test_choices_suggest_the_closest(cli: Invoke) -> None:
    message = fails(
        cli, "memory", "-p", "gpt2", "--train", "-T", "8", "--optimizer", "adam", code=2
    )
    assert "did you mean 'adamw'?" in message
    message = fails(cli, "params", "-p", "gpt2", "-T", "8", "--recompute", "ful", code=2)
    assert "did you mean 'full'?" in message


@pytest.mark.parametrize("size", ["24", "1.5"])
def test_sizes_without_a_unit_are_refused(cli: Invoke, size: str) -> None:
    message = fails(cli, "memory", "-p", "gpt2", "--fits", size, code=2)
    assert f"{size} what? Give a unit, e.g. {size}GiB" in message
    assert cli("memory", "-p", "gpt2", "--fits", "24GiB").exit_code == 0


@pytest.mark.parametrize("value", ["0", "-3"])
def test_non_positive_sizes(cli: Invoke, value: str) -> None:
    message = fails(cli, "params", "-p", "gpt2", "--layers", value, code=2)
    assert message.startswith(f"error: --layers: '{value}'")
    assert "not a positive count" in message or "a count cannot be negative" in message


def test_non_integer_option_is_a_usage_error(cli: Invoke) -> None:
    result = cli("params", "-p", "gpt2", "--d", "768.5")
    assert result.exit_code == 2
    assert result.stderr == "error: --d: '768.5' is 768.5: not a whole number\n"


def test_no_model_named(cli: Invoke) -> None:
    assert "name a model with --preset NAME" in fails(cli, "params", code=2)


def test_missing_file(cli: Invoke, tmp_path: Path) -> None:
    message = fails(cli, "params", "--config", str(tmp_path / "nope.yaml"))
    assert "nope.yaml: no such file" in message


def test_directory(cli: Invoke, tmp_path: Path) -> None:
    assert "is a directory" in fails(cli, "params", "--config", str(tmp_path))


def test_malformed_yaml_names_file_and_line(cli: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("vocab_size: 50257\nd_model: [1, 2\n")
    message = fails(cli, "params", "-c", str(path))
    assert f"{path}:" in message and "malformed YAML" in message


def test_unknown_key_with_hint_and_line(cli: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text("vocab_size: 4096\ncontext_length: 256\nd_model: 256\nn_layers: 4\nn_head: 4\n")
    message = fails(cli, "params", "-c", str(path))
    assert "n_head (line 5): unknown key; did you mean 'n_heads'?" in message
    assert "n_heads: required" in message


@pytest.mark.parametrize(
    ("value", "shown"), [("true", "True"), ("768.0", "768.0"), ("'768'", "'768'")]
)
def test_sizes_are_strict_integers(cli: Invoke, tmp_path: Path, value: str, shown: str) -> None:
    path = tmp_path / "strict.yaml"
    path.write_text(
        f"vocab_size: 4096\ncontext_length: 256\nd_model: {value}\nn_layers: 4\nn_heads: 4\n"
    )
    message = fails(cli, "params", "-c", str(path))
    assert "d_model (line 3): Input should be a valid integer" in message
    assert f"(got {shown})" in message


def test_contradicting_ffn_width(cli: Invoke) -> None:
    message = fails(cli, "params", "-p", "gpt2", "--ffn-mult", "4", "--ffn-hidden", "1000")
    assert "--ffn-hidden 1000 contradicts --ffn-mult 4" in message


def test_unknown_choice(cli: Invoke) -> None:
    message = fails(cli, "params", "-p", "gpt2", "--ffn", "swishy")
    choices = "'mlp', 'swiglu', 'geglu', 'channel_mix' or 'none'"
    assert "--ffn (command line)" in message and choices in message


def test_presets_show_unknown(cli: Invoke) -> None:
    assert "unknown preset 'nope'" in fails(cli, "presets", "show", "nope")
