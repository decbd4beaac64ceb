"""Checking model config files: every problem a file has, as findings, and one report per file.

Each file goes read -> parse -> validate -> structural rules -> budgets; whatever fails becomes a
:class:`Problem` (field, line where known, message) of that file. One bad file never stops the
others. Limits come from the command line and from the ``budget:`` section of the file itself;
both are checked, each finding naming where its limit was set.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from costcalc.compute import position_limit
from costcalc.config import Budget
from costcalc.errors import ConfigError, CostcalcError, FileReadError, Problem
from costcalc.files import Document, read_document
from costcalc.loaders import LoadedModel, load_document
from costcalc.params import total_params
from costcalc.units import dtype_bytes, format_bytes

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
"""What a directory is searched for."""

_GLOB_CHARS = frozenset("*?[")

Locator = Callable[[str], tuple[str, int | None]]
"""A budget key -> the (field, line) a finding about it is reported at."""


@dataclass(frozen=True)
class Limits:
    """What every checked model must satisfy, from the command line."""

    budget: Budget = field(default_factory=Budget)
    length: int | None = None
    """A sequence length every model must accept (within a learned position table)."""


@dataclass(frozen=True)
class FileReport:
    """The outcome of checking one file."""

    path: str
    findings: list[Problem]
    model: LoadedModel | None = None
    parameters: int | None = None

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        """The JSON record of this file (docs/check.md)."""
        return {
            "path": self.path,
            "ok": self.ok,
            "format": self.model.format if self.model else None,
            "name": self.model.name if self.model else None,
            "parameters": self.parameters,
            "findings": [
                {"field": p.field or None, "line": p.line, "message": p.message}
                for p in self.findings
            ],
        }


def check_paths(arguments: Sequence[str], limits: Limits) -> list[FileReport]:
    """Check every config file the arguments name (files, directories, globs), in order."""
    reports: list[FileReport] = []
    seen: set[str] = set()
    for path, problem in config_files(arguments):
        if path in seen:
            continue
        seen.add(path)
        reports.append(FileReport(path, [problem]) if problem else check_file(path, limits))
    return reports


def config_files(arguments: Sequence[str]) -> Iterator[tuple[str, Problem | None]]:
    """Each file to check, or an argument that names none with the reason why.

    A directory is searched recursively for *.yaml, *.yml and *.json, skipping hidden files
    and directories; a glob (``configs/**/*.json``) is expanded. A directory or glob that
    yields no file is a finding, so a CI gate never passes by checking nothing. Anything
    else is checked as a file (a missing or unreadable one becomes that file's finding).
    """
    for argument in arguments:
        if os.path.isdir(argument):
            found = _directory_configs(argument)
            if not found:
                suffixes = ", ".join(f"*{suffix}" for suffix in CONFIG_SUFFIXES)
                yield argument, Problem("", f"directory holds no config files ({suffixes})")
            for path in found:
                yield path, None
        elif _GLOB_CHARS & set(argument) and not os.path.exists(argument):
            matches = sorted(glob.glob(argument, recursive=True))
            if not matches:
                yield argument, Problem("", "no file matches this pattern")
            for match in matches:
                yield from config_files([match])
        else:
            yield argument, None


def _directory_configs(directory: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [
            os.path.join(root, name)
            for name in sorted(files)
            if not name.startswith(".") and name.lower().endswith(CONFIG_SUFFIXES)
        ]
    return found


def check_file(path: str | Path, limits: Limits) -> FileReport:
    """Every finding of one file: unreadable, invalid, or over a limit."""
    name = str(path)
    try:
        doc = read_document(path)
        model = load_document(doc)
    except FileReadError as exc:
        return FileReport(name, [Problem("", exc.reason, exc.line)])
    except ConfigError as exc:
        return FileReport(name, sorted(exc.problems, key=_by_line))
    except CostcalcError as exc:
        return FileReport(name, [Problem("", str(exc))])
    count = total_params(model.spec)
    findings = limit_problems(model, count, doc, limits)
    return FileReport(name, findings, model, count)


def limit_problems(model: LoadedModel, count: int, doc: Document, limits: Limits) -> list[Problem]:
    """The limits ``model`` (of ``count`` parameters) breaks: its own budget, then the command
    line's, then the required length."""
    problems: list[Problem] = []
    if model.budget is not None:
        problems += budget_problems(
            count, model.budget, lambda key: (f"budget.{key}", doc.line_of(("budget", key)))
        )
    problems += budget_problems(count, limits.budget, lambda key: (_option(key), None))
    beyond = None if limits.length is None else position_limit(model.spec, limits.length)
    if beyond is not None:
        key = model.key_names.get("context_length", "context_length")
        problems.append(Problem(key, f"--length {limits.length:,} {beyond}", doc.line_of((key,))))
    return problems


def budget_problems(count: int, budget: Budget, where: Locator) -> list[Problem]:
    """The limits of ``budget`` that ``count`` parameters break; ``where(key)`` gives the
    (field, line) each finding is reported at."""
    problems = []
    if budget.max_params is not None and count > budget.max_params:
        field_name, line = where("max_params")
        message = f"{count:,} parameters exceed the limit of {budget.max_params:,}"
        problems.append(Problem(field_name, message, line))
    if budget.max_weight_bytes is not None:
        size = dtype_bytes(count, budget.dtype)
        if size > budget.max_weight_bytes:
            field_name, line = where("max_weight_bytes")
            message = (
                f"{budget.dtype} weights take {_bytes(size)}, over the limit of "
                f"{_bytes(budget.max_weight_bytes)}"
            )
            problems.append(Problem(field_name, message, line))
    return problems


def _by_line(problem: Problem) -> tuple[bool, int]:
    return problem.line is None, problem.line or 0


def _option(key: str) -> str:
    return "--" + key.replace("_", "-")


def _bytes(n: int) -> str:
    return f"{n:,} bytes ({format_bytes(n, 'si')}, {format_bytes(n, 'iec')})"
