"""The oldest release of each dependency costcalc declares, as pip constraints.

``python -m tests.floors`` prints ``name==version`` for every requirement of costcalc and of its
``test`` extra, each at its declared lower bound (the version after ``>=``). CI installs the
package with these constraints into a fresh environment and runs the suite there, so a floor
that does not work fails CI. A requirement without a lower bound is an error: a floor that is
not declared cannot be tested.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"

_REQUIREMENT = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([^;]*)")
_CLAUSE = re.compile(r"(>=|<=|==|!=|<|>)\s*([0-9][0-9.]*)")


def requirements(path: Path = PYPROJECT) -> dict[str, str]:
    """Each requirement of costcalc and of its ``test`` extra: its name -> its specifier
    (``>=0.29``, ``>=2.7.1,<3``)."""
    project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
    found: dict[str, str] = {}
    for text in [*project["dependencies"], *project["optional-dependencies"]["test"]]:
        match = _REQUIREMENT.fullmatch(text.strip())
        if match is None:
            raise ValueError(f"requirement {text!r} is not NAME followed by a specifier")
        found[match[1].lower().replace("_", "-")] = match[2].replace(" ", "")
    return found


def clauses(specifier: str) -> list[tuple[str, tuple[int, ...]]]:
    """The comparisons of ``specifier`` (``>=2.7.1,<3`` -> ``>=`` 2.7.1 and ``<`` 3); any other
    form is refused rather than misread."""
    parts = [part for part in specifier.split(",") if part]
    found = [_CLAUSE.fullmatch(part) for part in parts]
    if not parts or None in found:
        raise ValueError(f"specifier {specifier!r} is not comparisons with release numbers")
    return [(m[1], release(m[2])) for m in found if m is not None]


def release(version: str) -> tuple[int, ...]:
    """``0.12.5`` as (0, 12, 5), trailing zeros dropped so that 2.7 equals 2.7.0."""
    numbers = [int(part) for part in version.split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def admits(specifier: str, version: str) -> bool:
    """Whether the release ``version`` satisfies ``specifier``."""
    have = release(version)
    compare = {
        ">=": have.__ge__,
        "<=": have.__le__,
        "==": have.__eq__,
        "!=": have.__ne__,
        "<": have.__lt__,
        ">": have.__gt__,
    }
    return all(compare[op](bound) for op, bound in clauses(specifier))


def floor(specifier: str) -> str | None:
    """The version after ``>=`` in ``specifier``, as written, or None."""
    match = re.search(r">=\s*([0-9][0-9.]*)", specifier)
    return match[1] if match else None


def constraints(path: Path = PYPROJECT) -> list[str]:
    """``name==floor`` for every requirement; a ValueError names those without a floor."""
    found = requirements(path)
    missing = sorted(name for name, specifier in found.items() if floor(specifier) is None)
    if missing:
        raise ValueError(f"no lower bound (>=) declared for {', '.join(missing)}")
    return [f"{name}=={floor(specifier)}" for name, specifier in found.items()]


def main() -> None:
    try:
        print("\n".join(constraints()))
    except ValueError as exc:
        sys.exit(f"tests/floors.py: {exc}")


if __name__ == "__main__":
    main()
