"""Every answer says what it leaves out: the non-embedding and active counts by each published
convention, named; what inference memory does not count; a length past the model's positions."""

from __future__ import annotations

import json

import pytest

import costcalc
from tests.conftest import Invoke


@pytest.mark.parametrize(
    ("preset", "billions"),
    [
        # Qwen2.5 Technical Report (arXiv:2412.15115), Table 1, "Non-Emb Params".
        ("qwen2.5-0.5b", "0.36"),
        ("qwen2.5-1.5b", "1.31"),
        ("qwen2.5-3b", "2.77"),
        ("qwen2.5-7b", "6.53"),
        # Qwen3 Technical Report (arXiv:2505.09388), Table 1.
        ("qwen3-0.6b", "0.44"),
        ("qwen3-8b", "6.95"),
    ],
)
def test_non_embedding_as_qwen_counts_it(preset: str, billions: str) -> None:
    parameters = costcalc.count(preset).parameters
    assert f"{parameters.non_embedding_kaplan / 1e9:.2f}" == billions
    head = 0 if parameters.lm_head == 0 else parameters.token_embedding
    assert parameters.non_embedding_kaplan == parameters.total - parameters.token_embedding - head


def test_non_embedding_as_kaplan_defines_it_for_gpt2() -> None:
    """GPT-2 small: the blocks and the final norm, no table (Kaplan et al. 2020, section 2.1:
    N excludes the vocabulary and position embeddings); nanoGPT keeps the tied token table."""
    parameters = costcalc.count("gpt2-small").parameters
    assert parameters.non_embedding_kaplan == parameters.blocks + parameters.final_norm
    assert parameters.non_embedding == 124_439_808 - 1024 * 768  # nanoGPT's 123.65M


@pytest.mark.parametrize(
    ("preset", "total", "active"),
    # OpenAI, gpt-oss-120b & gpt-oss-20b Model Card (arXiv:2508.10925), Table 1: total and
    # active parameters, the embedding parameters not counted as active.
    [("gpt-oss-20b", "20.91", "3.61"), ("gpt-oss-120b", "116.83", "5.13")],
)
def test_active_as_openai_counts_it(preset: str, total: str, active: str) -> None:
    parameters = costcalc.count(preset).parameters
    assert f"{parameters.total / 1e9:.2f}" == total
    assert f"{parameters.active_non_embedding / 1e9:.2f}" == active
    assert parameters.active_non_embedding == parameters.active - parameters.token_embedding


def test_active_as_mistral_counts_it() -> None:
    """Mixtral 8x7B: 12.9B active of 46.7B (Mistral AI, "Mixtral of experts", 2023), the token
    table and LM head in."""
    parameters = costcalc.count("mixtral-8x7b").parameters
    assert f"{parameters.active / 1e9:.1f}" == "12.9"
    assert f"{parameters.total / 1e9:.1f}" == "46.7"


def test_the_rows_are_named_and_defined(cli: Invoke) -> None:
    result = cli("params", "-p", "gpt-oss-20b")
    assert result.exit_code == 0
    out = " ".join(result.stdout.split())
    assert "│ non-embedding (Kaplan, Qwen) │ 19,756,490,304 │" in out
    assert "│ active, no token table (OpenAI) │ 3,608,307,264 │" in out
    assert "Kaplan et al. (2020) and Qwen's reports leave out the token table and the LM" in out
    assert "Active, no token table: as OpenAI's gpt-oss card counts it" in out
    data = json.loads(cli("params", "-p", "gpt-oss-20b", "-f", "json").stdout)["parameters"]
    assert data["active_non_embedding"] == 3_608_307_264
    assert data["non_embedding_kaplan"] == 19_756_490_304


def test_inference_memory_says_what_it_leaves_out(cli: Invoke) -> None:
    result = cli("memory", "-p", "qwen3-8b", "-T", "4096")
    out = " ".join(result.stdout.split())
    assert "Not counted: the forward's activations and logits and the kernels' workspace" in out
    assert "nor the driver and CUDA context" in out


def test_a_length_past_the_positions_is_a_warning(cli: Invoke) -> None:
    result = cli("memory", "-p", "qwen3-8b", "-T", "131072", "-f", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["name"] == "qwen3-8b"  # stdout stays JSON
    assert result.stderr == (
        "warning: 131,072 tokens is past qwen3-8b's trained context of 40,960; rotary positions "
        "run on, so the count is made, but the model was not trained on sequences this long\n"
    )
    assert cli("memory", "-p", "qwen3-8b", "-T", "40960").stderr == ""
