"""Hugging Face fixture configs with keys changed, for settings the golden models leave out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.loaders import load_file
from costcalc.spec import ModelSpec
from tests.conftest import FIXTURES


def config_data(fixture: str, **changes: Any) -> dict[str, Any]:
    """``tests/fixtures/hf/<fixture>.json``'s data with keys changed (``...`` deletes a key)."""
    data: dict[str, Any] = json.loads((FIXTURES / "hf" / f"{fixture}.json").read_text())
    for key, value in changes.items():
        if value is ...:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def write_config(tmp_path: Path, fixture: str, **changes: Any) -> Path:
    """A copy of ``tests/fixtures/hf/<fixture>.json`` with keys changed (``...`` deletes a key)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config_data(fixture, **changes), indent=2))
    return path


def spec_of(tmp_path: Path, fixture: str, **changes: Any) -> ModelSpec:
    """The spec of a fixture config with keys changed, as ``write_config`` writes it."""
    return load_file(write_config(tmp_path, fixture, **changes)).spec


def assert_refused(tmp_path: Path, fixture: str, message: str, **changes: Any) -> None:
    """A fixture config with keys changed is refused, the problem matching ``message``."""
    with pytest.raises(ConfigError, match=message):
        spec_of(tmp_path, fixture, **changes)


def windows(spec: ModelSpec) -> list[tuple[int, int | None]]:
    """(layers, sliding window) of each stack of layers, in order; None is full attention."""
    return [(stack.n_layers, stack.sliding_window) for stack in spec.stacks]
