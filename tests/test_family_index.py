"""The static index of family modules (costcalc.formats.families) against what each module
declares, and docs/huggingface.md's map of it; one config imports one family module."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

from costcalc.formats import families
from costcalc.formats.families import FAMILY_MODULES, LOCATED_IN, MODULE_OF, peft_names
from costcalc.lora import family_names
from tests.conftest import FIXTURES, ROOT

MAP_HEADING = "## Where each family is read"


def _modules() -> dict[str, object]:
    """Every module of the package, imported."""
    return {
        info.name: importlib.import_module(f"{families.__name__}.{info.name}")
        for info in pkgutil.iter_modules(families.__path__)
    }


def test_the_index_names_what_each_module_translates() -> None:
    declared = {
        name: tuple(sorted(getattr(module, "FAMILIES", {})))
        for name, module in _modules().items()
        if getattr(module, "FAMILIES", None)
    }
    assert declared == FAMILY_MODULES
    assert len(MODULE_OF) == sum(len(types) for types in FAMILY_MODULES.values())


def test_the_index_names_where_each_text_location_is_declared() -> None:
    declared = {
        model_type: name
        for name, module in _modules().items()
        for model_type in getattr(module, "TEXT_LOCATIONS", {})
    }
    assert declared == LOCATED_IN


def test_each_family_declares_its_peft_names_beside_its_translators() -> None:
    for name, module in _modules().items():
        assert set(getattr(module, "PEFT_NAMES", {})) == set(getattr(module, "FAMILIES", {})), name


def test_the_lora_module_holds_no_family_names() -> None:
    """peft's names come from the family modules: lora.py names no ``model_type``."""
    text = (ROOT / "costcalc" / "lora.py").read_text(encoding="utf-8")
    named = [t for t in MODULE_OF if f'"{t}"' in text or f"'{t}'" in text]
    assert not named
    assert family_names("gpt2") is peft_names("gpt2")
    assert peft_names("no_such_family") is None


def test_reading_one_config_imports_its_family_module_only() -> None:
    code = (
        "import sys\n"
        "from costcalc.loaders import load_file\n"
        f"load_file({str(FIXTURES / 'hf' / 'opt-350m.json')!r})\n"
        "prefix = 'costcalc.formats.families.'\n"
        "print(sorted(m[len(prefix):] for m in sys.modules if m.startswith(prefix)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert out.strip() == str([MODULE_OF["opt"]])


def family_map() -> str:
    """The section of docs/huggingface.md that maps each module to its ``model_type``s."""
    rows = [
        f"| `{name}.py` | {', '.join(types)} |" for name, types in sorted(FAMILY_MODULES.items())
    ]
    return "\n".join(
        [
            MAP_HEADING,
            "",
            "Each family is one module of `costcalc/formats/families/`, which translates its keys",
            "and names its modules for peft (`PEFT_NAMES`); the index in that package's",
            "`__init__.py` lists them, and this table is checked against it.",
            "",
            "| module | `model_type`s |",
            "| --- | --- |",
            *rows,
        ]
    )


def test_the_docs_map_every_family_to_its_module() -> None:
    text = (ROOT / "docs" / "huggingface.md").read_text(encoding="utf-8")
    start = text.find(MAP_HEADING)
    if start < 0:
        pytest.fail(f"docs/huggingface.md has no section {MAP_HEADING!r}")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end >= 0 else len(text)].strip()
    assert section == family_map(), "docs/huggingface.md's map should read:\n" + family_map()
