"""The docs keep up with the code: every command and every config field is documented."""

from __future__ import annotations

import re

import typer

from costcalc.cli.app import app
from costcalc.spec import ModelSpec
from tests.conftest import ROOT, Invoke


def command_paths() -> list[str]:
    """Every command and subcommand, as typed after `costcalc`."""
    root = typer.main.get_command(app)
    paths: list[str] = []

    def walk(command: object, prefix: str) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            paths.append(f"{prefix}{name}")
            walk(sub, f"{prefix}{name} ")

    walk(root, "")
    return paths


def test_every_command_has_help_and_a_docs_entry(cli: Invoke) -> None:
    listed = (ROOT / "docs" / "cli.md").read_text()
    paths = command_paths()
    assert {"params", "presets", "presets show"} <= set(paths)
    for path in paths:
        result = cli(*path.split(), "--help")
        assert result.exit_code == 0
        assert len(result.stdout.strip().splitlines()) > 3, path
        top = path.split()[0]
        assert re.search(rf"`costcalc {re.escape(top)}\b", listed), f"{path} missing in docs/cli.md"


def test_every_config_field_is_documented() -> None:
    text = (ROOT / "docs" / "config.md").read_text()
    for name in ModelSpec.model_fields:
        assert f"| `{name}` |" in text, name


def test_readme_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "pip install . && costcalc params --preset gpt2-small" in readme
    assert 'pip install ".[test]" && python -m pytest' in readme
