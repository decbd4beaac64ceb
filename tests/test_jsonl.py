"""`--format jsonl`: the records of `--format json`, one compact object per line, always."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Invoke


@pytest.mark.parametrize("command", ["params", "memory"])
def test_a_line_per_model_however_many(cli: Invoke, command: str) -> None:
    for presets in (["gpt2-small"], ["gpt2-small", "qwen3-0.6b"]):
        chosen = [arg for name in presets for arg in ("-p", name)]
        as_json = json.loads(cli(command, *chosen, "-f", "json").stdout)
        lines = cli(command, *chosen, "-f", "jsonl").stdout.splitlines()
        records = as_json if isinstance(as_json, list) else [as_json]
        assert lines == [json.dumps(record, separators=(",", ":")) for record in records]


def test_scale_prints_a_line_per_value_of_its_dimension(cli: Invoke) -> None:
    lines = cli("scale", "--d", "256", "512", "-f", "jsonl").stdout.splitlines()
    records = [json.loads(line) for line in lines]
    assert [record["d"] for record in records] == [256, 512]
    whole = json.loads(cli("scale", "--d", "256", "512", "-f", "json").stdout)
    assert [r["terms"] for r in records] == [
        {term: v["values"][i] for term, v in whole["terms"].items()} for i in range(2)
    ]
