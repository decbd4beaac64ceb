"""Malformed or inconsistent Hugging Face config.json files: one clear message naming the file
and the file's own keys, exit code 1, no traceback."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from costcalc.formats.families import model_types
from tests.conftest import ROOT, Invoke
from tests.hf_helpers import write_config


def fails(cli: Invoke, path: Path) -> str:
    result = cli("params", "--config", str(path))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {path}: invalid model config")
    return result.stderr


@pytest.mark.parametrize("key", ["n_routed_experts", "n_shared_experts", "num_experts_per_tok"])
def test_missing_size_without_a_class_default_is_named(
    cli: Invoke, tmp_path: Path, key: str
) -> None:
    # Dots1Config leaves these three None: transformers cannot build the model without them.
    stderr = fails(cli, write_config(tmp_path, "dots.llm1.base", **{key: ...}))
    assert f"{key}" in stderr and "required key is missing" in stderr


@pytest.mark.parametrize(
    ("fixture", "key", "default"),
    [
        ("gpt2", "n_embd", "GPT2Config's defaults (as transformers builds it): n_embd 768."),
        ("opt-125m", "ffn_dim", "OPTConfig's defaults (as transformers builds it): ffn_dim 3,072."),
        (
            "tiny-mixtral",
            "num_hidden_layers",
            "MixtralConfig's defaults (as transformers builds it): num_hidden_layers 32.",
        ),
    ],
)
def test_missing_size_is_the_class_default_with_a_note(
    cli: Invoke, tmp_path: Path, fixture: str, key: str, default: str
) -> None:
    result = cli("params", "--config", str(write_config(tmp_path, fixture, **{key: ...})))
    assert result.exit_code == 0, result.stderr
    assert f"not in the file, read as {default}" in " ".join(result.stdout.split())


def test_heads_that_do_not_divide_the_width(cli: Invoke, tmp_path: Path) -> None:
    path = write_config(tmp_path, "llama-3.1-8b", num_attention_heads=30, num_key_value_heads=10)
    stderr = fails(cli, path)
    lines = path.read_text().splitlines()
    heads_line = next(i for i, text in enumerate(lines, 1) if '"num_attention_heads"' in text)
    assert f"num_attention_heads (line {heads_line}): hidden_size 4,096 does not split" in stderr
    assert not re.search(r"\b(d_model|n_heads)\b", stderr)  # the file's names, not costcalc's


def test_kv_heads_that_do_not_divide_the_heads(cli: Invoke, tmp_path: Path) -> None:
    """Qwen2Config takes them and transformers builds the model, whose attention then fails
    (repeat_kv): counted as built, and said."""
    path = write_config(tmp_path, "qwen2.5-0.5b", num_key_value_heads=3)
    result = cli("params", "--config", str(path))
    assert result.exit_code == 0, result.stderr
    shown = " ".join(result.stdout.split())
    assert "14 query heads do not group over 3 key/value heads" in shown
    assert "counted as built" in shown


def test_unknown_model_type_points_to_the_supported_ones(cli: Invoke, tmp_path: Path) -> None:
    stderr = fails(cli, write_config(tmp_path, "gpt2", model_type="bert"))
    assert "unsupported model_type 'bert'" in stderr
    assert f"costcalc reads {len(model_types())} families, listed in docs/huggingface.md" in stderr
    assert "safetensors headers" in stderr and "costcalc YAML" in stderr
    listed = set(
        re.findall(r"^\| ([\w.-]+) \|", (ROOT / "docs" / "huggingface.md").read_text(), re.M)
    )
    assert set(model_types()) <= listed  # the docs' table of keys read has a row for every one


def test_wrong_types_name_the_keys(cli: Invoke, tmp_path: Path) -> None:
    path = write_config(tmp_path, "qwen2.5-0.5b", intermediate_size=4864.5, tie_word_embeddings=1)
    stderr = fails(cli, path)
    assert "intermediate_size" in stderr and "4864.5" in stderr
    assert "tie_word_embeddings" in stderr


@pytest.mark.parametrize(
    ("fixture", "changes", "expected"),
    [
        ("phi-2", {"partial_rotary_factor": 1.5}, "partial_rotary_factor"),
        ("pythia-160m", {"rotary_pct": "quarter"}, "rotary_pct"),
        ("phi-2", {"qk_layernorm": True, "head_dim": 64}, "qk_layernorm"),
        ("opt-125m", {"do_layer_norm_before": "yes"}, "do_layer_norm_before"),
        (
            "qwen2.5-0.5b",
            {"use_sliding_window": True, "max_window_layers": "twelve"},
            "max_window_layers",
        ),
    ],
)
def test_settings_costcalc_cannot_count_or_read_are_refused(
    cli: Invoke, tmp_path: Path, fixture: str, changes: dict[str, Any], expected: str
) -> None:
    stderr = fails(cli, write_config(tmp_path, fixture, **changes))
    assert f"  {expected} (line " in stderr


def test_every_problem_is_reported_at_once(cli: Invoke, tmp_path: Path) -> None:
    path = write_config(tmp_path, "dots.llm1.base", n_routed_experts=..., n_shared_experts=...)
    stderr = fails(cli, path)
    assert "n_routed_experts" in stderr and "n_shared_experts: required" in stderr
