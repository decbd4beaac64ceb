"""The package as published: dependency floors that CI installs and tests (tests/floors.py), the
license, the metadata a package index shows, and an sdist that holds what its tests read."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.floors import admits, clauses, constraints, floor, release, requirements

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_dependency_has_a_floor_that_ci_installs() -> None:
    found = requirements()
    assert {"typer", "rich", "pydantic", "pyyaml", "huggingface-hub", "httpx2"} <= set(found)
    assert {"pytest", "hypothesis", "numpy", "jsonschema"} <= set(found)
    pins = constraints()
    assert len(pins) == len(found)
    for pin in pins:
        name, version = pin.split("==")
        assert admits(found[name], version), pin


def test_typer_0_12_cannot_be_installed_beside_costcalc() -> None:
    typer = requirements()["typer"]
    assert not [n for n in range(6) if admits(typer, f"0.12.{n}")]
    assert not admits(typer, "0.28.0")  # shows <int> in help and converts absent options
    assert admits(typer, "0.29.0")


def test_floors_of_the_libraries_that_failed() -> None:
    found = requirements()
    assert not admits(found["pydantic"], "2.6.0")  # a warning per field, on every run
    assert not admits(found["pydantic"], "2.7.0")  # cannot build the JSON schema
    assert not admits(found["pyyaml"], "6.0.3")  # crashes on a deeply nested file
    assert not admits(found["pydantic"], "3.0")


IMPORT_NAMES = {"yaml": "pyyaml", "huggingface_hub": "huggingface-hub", "pydantic_core": "pydantic"}
"""The declared distribution of each import name that differs from it (pydantic pins the
pydantic_core it is built on)."""


def test_costcalc_imports_only_what_it_declares() -> None:
    """Every module costcalc imports is the standard library's, its own, or of a declared
    dependency (costcalc.hub's httpx2 among them)."""
    declared = set(requirements())
    imported: set[str] = set()
    for path in (ROOT / "costcalc").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"costcalc", "__future__"}
    assert "httpx2" in third_party
    assert {IMPORT_NAMES.get(name, name) for name in third_party} <= declared


@pytest.mark.parametrize(
    ("specifier", "version", "admitted"),
    [
        (">=2.7.1,<3", "2.7.1", True),
        (">=2.7.1,<3", "2.7", False),
        (">=2.7.1,<3", "3.0.0", False),
        (">=2.7.1,<3", "2.14.4", True),
        (">=0.29", "0.29", True),
        (">=6.0.4", "6.0.10", True),
        ("==1.0", "1.0.0", True),
        ("!=1.0,>0.5", "1.0", False),
    ],
)
def test_admits(specifier: str, version: str, admitted: bool) -> None:
    assert admits(specifier, version) is admitted


def test_forms_not_understood_are_refused() -> None:
    for specifier in ["~=1.0", ">=1.0a1", "", ">=1.*"]:
        with pytest.raises(ValueError, match="not comparisons"):
            clauses(specifier)
    assert floor("<3") is None
    assert release("1.10.0") == (1, 10) > release("1.9")


def test_a_requirement_without_a_floor_is_an_error(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\ndependencies = ["typer>=0.29", "rich"]\n'
        '[project.optional-dependencies]\ntest = ["pytest<9"]\n',
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=r"no lower bound \(>=\) declared for pytest, rich"):
        constraints(pyproject)


def test_license_is_the_mit_license_declared() -> None:
    assert PROJECT["project"]["license"] == "MIT"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n\nCopyright (c) ")
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text


def test_metadata_for_the_package_index() -> None:
    info = metadata.metadata("costcalc")
    assert info["License-Expression"] == "MIT"
    assert info.get_all("Author")
    urls = dict(url.split(", ", 1) for url in info.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(urls)
    classifiers = info.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert "Typing :: Typed" in classifiers


def test_the_package_index_gets_absolute_readme_links() -> None:
    """The installed package's long description (what an index shows) links only absolutely,
    each link the repository's README has made absolute on the Source URL."""
    description = metadata.metadata("costcalc").get_payload()  # type: ignore[attr-defined]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    relative = [link for link in LINK.findall(readme) if not re.match(r"https?://|#", link)]
    assert relative  # the repository's README links relatively, which works in any clone
    for link in relative:
        assert (ROOT / link.split("#")[0]).exists(), link
    source = PROJECT["project"]["urls"]["Source"]
    links = LINK.findall(description)
    assert not [link for link in links if not re.match(r"https?://|#", link)]
    assert {f"{source}/blob/main/{link}" for link in relative} <= set(links)


def test_the_sdist_holds_every_file_the_repository_tracks() -> None:
    """Every tracked file but CI's own is in the sdist's include list, so the sdist's tests find
    what they read (its tests pass from the sdist: .ci/run)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (an unpacked sdist)")
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    include = PROJECT["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
    left_out = [
        path
        for path in tracked
        if path.split("/")[0] not in {*include, ".ci", ".gitignore", "pyproject.toml"}
    ]
    assert not left_out
