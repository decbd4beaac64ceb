"""The docs keep up with the code: every command and every config field is documented."""

from __future__ import annotations

import json
import re

import pytest
import typer

from costcalc.cli.app import app
from costcalc.files import parse_document
from costcalc.loaders import LoadedModel, load_document, load_file
from costcalc.macs import forward_macs
from costcalc.memory import kv_cache_elements
from costcalc.params import total_params
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


def test_the_readme_lists_every_doc() -> None:
    readme = (ROOT / "README.md").read_text()
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert f"](docs/{doc.name})" in readme, f"docs/{doc.name} is missing in README's table"


def test_the_readme_tour_runs_every_command() -> None:
    tour = (ROOT / "README.md").read_text().split("## A short tour", 1)[1].split("\n## ", 1)[0]
    for path in command_paths():
        if " " not in path:
            assert f"$ costcalc {path} " in tour or f"$ costcalc {path}\n" in tour, path


def test_readme_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "pip install . && costcalc params --preset gpt2-small" in readme
    assert 'pip install ".[test]" && python -m pytest' in readme


def _yaml_examples() -> list[str]:
    """Every ```yaml block of docs/config.md that is a whole model (has vocab_size)."""
    text = (ROOT / "docs" / "config.md").read_text()
    blocks = re.findall(r"^```yaml\n(.*?)^```$", text, flags=re.M | re.S)
    return [block for block in blocks if re.search(r"^vocab_size:", block, flags=re.M)]


def _load_example(block: str, name: str) -> LoadedModel:
    return load_document(parse_document(block, f"docs/config.md ({name})"))


def test_every_yaml_example_validates() -> None:
    examples = _yaml_examples()
    assert len(examples) >= 4
    for i, block in enumerate(examples):
        _load_example(block, f"example {i}")  # raises ConfigError or FileReadError if not


@pytest.mark.parametrize(
    ("name", "record", "total"),
    [
        ("gemma-2-2b", "gemma-2-2b", 2_614_341_888),
        ("deepseek-v3", "deepseek-v3", 671_026_404_352),
        ("hunyuan-mt-7b", "hunyuan-mt-7b", 7_504_932_864),
    ],
)
def test_layered_and_unread_family_examples_give_transformers_totals(
    name: str, record: str, total: int
) -> None:
    [block] = [b for b in _yaml_examples() if re.search(rf"^name: {name}$", b, flags=re.M)]
    golden = json.loads((ROOT / "tests" / "golden" / "hf_families.json").read_text())
    assert golden["models"][record]["parameters_total"] == total
    assert total_params(_load_example(block, name).spec) == total


def test_unread_family_example_is_the_model_its_config_describes() -> None:
    """The worked example, described by hand, is the model the family's translator builds."""
    golden = json.loads((ROOT / "tests" / "golden" / "hf_families.json").read_text())
    record = golden["models"]["hunyuan-mt-7b"]
    spec = _load_example(
        next(b for b in _yaml_examples() if "name: hunyuan-mt-7b" in b), "hunyuan"
    ).spec
    translated = load_file(ROOT / record["config"]).spec
    assert spec.resolved() == translated.resolved()
    assert forward_macs(spec, 1, 128) == record["macs_forward"]["macs_total"]
    assert kv_cache_elements(spec, 1, 16) == record["kv_cache_elements"]


def test_readme_counts_the_families_costcalc_reads() -> None:
    from costcalc.formats.families import registry

    match = re.search(r"of (\d+) `model_type`s", (ROOT / "README.md").read_text())
    assert match and int(match.group(1)) == len(registry())
