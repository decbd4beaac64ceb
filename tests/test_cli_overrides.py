"""Overrides reach the model the same way in every command (overrides_among)."""

from __future__ import annotations

import json

from conftest import Invoke


def test_params_applies_overrides(cli: Invoke) -> None:
    # seed 000: GPT-2 small's token table at D = 1536 holds 77,194,752 parameters
    result = cli("params", "-p", "gpt2-small", "--d", "1536", "--format", "json")
    assert json.loads(result.stdout)["parameters"]["token_embedding"] == 77_194_752


def test_memory_applies_the_same_overrides(cli: Invoke) -> None:
    # 77,194,752 token-table parameters (seed 000) are part of the bf16 weights at D = 1536
    params = cli("params", "-p", "gpt2-small", "--d", "1536", "--ffn-mult", "2", "-f", "json")
    memory = cli("memory", "-p", "gpt2-small", "--d", "1536", "--ffn-mult", "2", "-f", "json")
    total = json.loads(params.stdout)["parameters"]["total"]
    assert json.loads(memory.stdout)["weights"]["bytes"] == 2 * total
    assert json.loads(memory.stdout)["model"]["d_model"] == 1536
