"""Configs with many kinds of block, for the tests and the benchmark of work per kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES


def laguna_kinds(kinds: int) -> dict[str, Any]:
    """Laguna's config.json with ``kinds`` layers, each with a head count of its own
    (``num_attention_heads_per_layer``), sliding and full attention alternating."""
    data = json.loads((FIXTURES / "hf" / "laguna-xs-2.1.json").read_text())
    data.update(
        num_hidden_layers=kinds,
        layer_types=[("full" if i % 2 else "sliding") + "_attention" for i in range(kinds)],
        mlp_layer_types=["dense"] + ["sparse"] * (kinds - 1),
        num_attention_heads_per_layer=[8 * (1 + i) for i in range(kinds)],
    )
    return data


def group_kinds(kinds: int) -> dict[str, Any]:
    """A costcalc config of ``kinds`` one-layer groups, each with an FFN width of its own."""
    groups = [{"count": 1, "ffn_hidden": 16 + i} for i in range(kinds)]
    return {
        "vocab_size": 1000,
        "context_length": 4096,  # the benchmark's longest -T
        "d_model": 64,
        "n_heads": 4,
        "layers": groups,
    }


def write_json(folder: Path, name: str, data: dict[str, Any]) -> Path:
    path = folder / name
    path.write_text(json.dumps(data, separators=(",", ":")))
    return path
