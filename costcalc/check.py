"""Checking model config files: every problem a file has, as findings, and one report per file.

Each file goes read -> parse -> validate -> structural rules -> budgets; whatever fails becomes a
:class:`Problem` (field, line where known, message) of that file. One bad file never stops the
others. Limits come from the command line and from the ``budget:`` section of the file itself;
both are checked, each finding naming where its limit was set. With ``models_only``, a file that
is no model config (:mod:`costcalc.selection`) is skipped with a note; with ``key``, the model is
the mapping under that key of a larger file (a Hydra or Lightning config's ``model:``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from costcalc.compute import position_limit
from costcalc.config import Budget
from costcalc.errors import ConfigError, CostcalcError, FileReadError, Problem, UsageError
from costcalc.file_limits import KeyPath
from costcalc.files import Document, os_reason, read_document
from costcalc.header_check import UNJUDGED, HeaderCount, judge_headers
from costcalc.loaders import DEFAULT_WEIGHTS, LoadedModel, load_document, with_checkpoint
from costcalc.memory import weight_bytes
from costcalc.params import total_params
from costcalc.spec import ModelSpec
from costcalc.units import format_bytes
from costcalc.weight_format import weight_label

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
    strict: bool = False
    """Warnings (a key that looks misspelled) are findings too."""


@dataclass(frozen=True)
class Reading:
    """Which files are checked, and where in them the model is."""

    models_only: bool = False
    """Skip, with a note, a file that is no model config instead of failing it."""
    key: KeyPath = ()
    """The path of keys to the model's mapping in a larger file (``model`` or ``model.net``)."""


HYDRA_KEYS = frozenset({"_target_", "_recursive_", "_convert_", "_partial_", "_args_"})
"""Hydra's instantiation keys (``hydra.utils.instantiate``): no part of the model's sizes."""


@dataclass(frozen=True)
class FileReport:
    """The outcome of checking one file."""

    path: str
    findings: list[Problem]
    model: LoadedModel | None = None
    parameters: int | None = None
    skipped: str | None = None
    """Why the file was not checked (it is no model config)."""
    warnings: list[Problem] = field(default_factory=list)
    """What looks wrong but does not fail the file (a key that looks misspelled)."""

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
            "skipped": self.skipped,
            "findings": [_record(p) for p in self.findings],
            "warnings": [_record(p) for p in self.warnings],
        }


def _record(problem: Problem) -> dict[str, Any]:
    return {"field": problem.field or None, "line": problem.line, "message": problem.message}


def check_paths(
    arguments: Sequence[str], limits: Limits, reading: Reading | None = None
) -> list[FileReport]:
    """Check every config file the arguments name (files, directories, globs), in order; a file
    reached twice (by two paths or through a link) is checked once."""
    reports: list[FileReport] = []
    seen: set[object] = set()
    for path, problem in config_files(arguments):
        identity = _identity(path)
        if identity in seen:
            continue
        seen.add(identity)
        if isinstance(problem, Skipped):
            reports.append(FileReport(path, [], skipped=problem.message))
        else:
            report = FileReport(path, [problem]) if problem else check_file(path, limits, reading)
            reports.append(report)
    return reports


class Skipped(Problem):
    """A path :func:`config_files` passes over, with why: not a finding, a note."""


LINK_OUT = "a link to a directory outside the tree being checked; not followed"
LINK_OUT_FILE = "a link to a file outside the tree being checked; not read"


def _link_out(path: str) -> Skipped:
    """The note of a link that leads out of the tree being checked."""
    return Skipped("", LINK_OUT if os.path.isdir(path) else LINK_OUT_FILE)


def _identity(path: str) -> object:
    """What a file is, whatever the path to it: its device and inode, else the path itself."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return path
    return info.st_dev, info.st_ino


def config_files(arguments: Sequence[str]) -> Iterator[tuple[str, Problem | None]]:
    """Each file to check, or a path that gives none with the reason why.

    A directory is searched recursively for *.yaml, *.yml and *.json, skipping hidden files
    and directories; a glob (``configs/**/*.json``) is expanded. A directory or glob that
    yields no file, and a directory that cannot be listed, are findings, so a CI gate never
    passes by checking nothing. A model folder (:func:`is_model_folder`) named as an argument is
    checked as one model. Anything else is checked as a file (a missing or unreadable one
    becomes that file's finding).
    """
    for argument in arguments:
        if is_model_folder(argument):
            yield argument, None
        elif os.path.isdir(argument):
            yield from _directory_configs(argument)
        elif _GLOB_CHARS & set(argument) and not os.path.lexists(argument):
            matches = list(_glob(argument))
            if not matches:
                yield argument, Problem("", "no file matches this pattern")
            searched: set[str] = set()
            for match, problem in sorted(matches, key=lambda pair: pair[0]):
                if problem or not _searched_within(match, searched):
                    yield from [(match, problem)] if problem else config_files([match])
        else:
            yield argument, None


def _searched_within(path: str, searched: set[str]) -> bool:
    """Whether ``path``, a directory a pattern matched, lies below one of the directories
    ``searched`` already, through no hidden name, so that searching it again would find
    nothing new (``**`` matches every directory of a tree: searching each would list a tree of
    depth d d times). Judged on the path as matched, in steps linear in its length; a directory
    also reached through a link is searched again, and its files checked once. Adds a directory
    not searched yet."""
    if not os.path.isdir(path) or is_model_folder(path):
        return False
    names: list[str] = []
    head = path
    while True:
        head, name = os.path.split(head)
        if not name:
            break
        names.append(name)
        if (head or os.curdir) in searched:
            if not any(part.startswith(".") for part in names):
                return True
            break
    searched.add(path)
    return False


def is_model_folder(path: str) -> bool:
    """A folder as ``save_pretrained`` writes it: ``config.json`` beside safetensors files
    (checked as one model, its config and its headers; the files beside them are not configs)."""
    from costcalc.checkpoint import INDEX_NAME

    if not os.path.isfile(os.path.join(path, "config.json")):
        return False
    try:
        with os.scandir(path) as entries:
            return any(e.name.endswith(".safetensors") or e.name == INDEX_NAME for e in entries)
    except OSError:
        return False


def _directory_configs(top: str) -> Iterator[tuple[str, Problem | None]]:
    """The config files under ``top``, depth first in name order, without recursion; each
    directory is entered once (so a symbolic-link cycle ends) and one that cannot be listed
    is a finding."""
    found = False
    entered: set[object] = set()
    stack = [top]
    while stack:
        directory = stack.pop()
        if _entered_before(directory, entered):
            continue
        if directory != top and _outside(directory, top):
            yield directory, Skipped("", LINK_OUT)
            continue
        try:
            files, subdirectories = _listing(directory, hidden=False)
        except OSError as exc:
            found = True
            yield directory, _unlistable(exc)
            continue
        for name in files:
            if name.lower().endswith(CONFIG_SUFFIXES):
                found = True
                path = os.path.join(directory, name)
                yield path, (_link_out(path) if _outside(path, top) else None)
        stack += [os.path.join(directory, name) for name in reversed(subdirectories)]
    if not found:
        suffixes = ", ".join(f"*{suffix}" for suffix in CONFIG_SUFFIXES)
        yield top, Problem("", f"directory holds no config files ({suffixes})")


def _outside(path: str, top: str) -> bool:
    """Whether ``path``, reached below ``top`` through a symbolic link, resolves outside
    ``top``'s tree (then it is not entered nor read: a link to / would walk the whole file
    system, a link to a file elsewhere would show what it holds)."""
    if not os.path.islink(path):
        return False
    real, root = os.path.realpath(path), os.path.realpath(top)
    return os.path.commonpath([real, root]) != root


def _entered_before(directory: str, entered: set[object], *key: object) -> bool:
    """Whether ``directory`` (by identity, whatever the path) with ``key`` is in ``entered``;
    adds it."""
    identity = (_identity(directory), *key)
    if identity in entered:
        return True
    entered.add(identity)
    return False


def _listing(directory: str, hidden: bool) -> tuple[list[str], list[str]]:
    """The names of the files and of the subdirectories of ``directory``, sorted; names
    starting with ``.`` only when ``hidden``."""
    with os.scandir(directory) as entries:
        shown = sorted(
            (entry for entry in entries if hidden or not entry.name.startswith(".")),
            key=lambda entry: entry.name,
        )
    is_directory = [_is_directory(entry) for entry in shown]
    return (
        [entry.name for entry, is_dir in zip(shown, is_directory, strict=True) if not is_dir],
        [entry.name for entry, is_dir in zip(shown, is_directory, strict=True) if is_dir],
    )


def _is_directory(entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` is a directory, or links to one; a link that cannot be followed (a
    loop) is taken as a file, so it is judged on its own and never hides its neighbours."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _unlistable(exc: OSError) -> Problem:
    return Problem("", f"cannot list this directory: {os_reason(exc)}")


def _glob(pattern: str) -> Iterator[tuple[str, Problem | None]]:
    """The paths ``pattern`` matches (``*``, ``?`` and ``[...]`` within a name; ``**`` any
    depth of directories), without recursion; hidden names match only a part starting with
    ``.``. The tree is the pattern's part before its first wildcard: a link met while matching
    that leads out of it is noted, not followed. Each directory is searched once per part of
    the pattern, so a link cycle ends; one that cannot be listed is a finding."""
    parts = [part for part in pattern.split(os.sep) if part]
    start = os.sep if pattern.startswith(os.sep) else ""
    fixed = next((i for i, part in enumerate(parts) if _GLOB_CHARS & set(part)), len(parts))
    tree = os.path.join(start, *parts[:fixed]) or os.curdir
    stack = [(start, 0)]
    searched: set[object] = set()
    while stack:
        path, index = stack.pop()
        if index == len(parts):
            yield path or os.curdir, None  # ``**`` matching no directory: the one it is in
            continue
        part = parts[index]
        if not _GLOB_CHARS & set(part):
            if os.path.lexists(os.path.join(path, part)):
                stack.append((os.path.join(path, part), index + 1))
            continue
        if _entered_before(path or os.curdir, searched, index):
            continue
        try:
            files, subdirectories = _listing(path or os.curdir, hidden=part.startswith("."))
        except OSError as exc:
            yield path or os.curdir, _unlistable(exc)
            continue
        if part == "**":
            stack.append((path, index + 1))
            found = [(os.path.join(path, name), index) for name in subdirectories]
        else:
            names = [*files, *subdirectories] if index + 1 == len(parts) else subdirectories
            found = [(os.path.join(path, n), index + 1) for n in names if fnmatchcase(n, part)]
        for entry, at in found:
            if _outside(entry, tree):
                yield entry, _link_out(entry)
            else:
                stack.append((entry, at))


def check_file(path: str | Path, limits: Limits, reading: Reading | None = None) -> FileReport:
    """Every finding of one file: unreadable, invalid, or over a limit; or why it is skipped."""
    name = str(path)
    reading = reading or Reading()
    folder = os.path.isdir(path)
    if reading.models_only and not folder:
        from costcalc.selection import skip_reason

        reason = skip_reason(name, reading.key)
        if reason is not None:
            return FileReport(name, [], skipped=reason)
    doc: Document | None = None
    try:
        config = os.path.join(path, "config.json") if folder else path
        doc = nested_document(read_document(config), reading.key)
        model = load_document(doc)
        if folder:  # its headers must read too
            model = with_checkpoint(model, Path(path), doc)
    except FileReadError as exc:
        return FileReport(name, [Problem("", exc.reason, exc.line, exc.column)])
    except ConfigError as exc:
        return FileReport(name, sorted(_located(exc.problems, doc), key=_by_line))
    except CostcalcError as exc:
        return FileReport(name, [Problem("", str(exc))])
    except (MemoryError, RecursionError):  # a file that exhausts the checker fails alone
        return FileReport(name, [Problem("", _EXHAUSTING)])
    except Exception as exc:  # a fault of costcalc's own fails this file alone, named
        return FileReport(name, [Problem("", fault_message(exc))])
    from costcalc.formats.hf_quant import find_quantization_config

    count: int | None = None
    found = None
    try:
        count = total_params(model.spec)
        found = find_quantization_config(doc) if model.checkpoint is not None else None
        findings, headers = judge_headers(model, found is not None)
        findings += limit_problems(model, count, doc, limits, headers)
    except (MemoryError, RecursionError):
        return FileReport(name, [Problem("", _EXHAUSTING)], model, count)
    except Exception as exc:
        return FileReport(name, [Problem("", fault_message(exc))], model, count)
    warnings = list(model.warnings)
    if found is not None and model.weight_format is None:
        warnings.append(Problem(".".join(found[0]), UNJUDGED, doc.line_of(found[0])))
    if limits.strict:
        return FileReport(name, sorted(warnings, key=_by_line) + findings, model, count)
    return FileReport(name, findings, model, count, warnings=warnings)


FAULT = "costcalc could not check this file (an error in costcalc itself)"
"""How the finding of an unexpected error starts; the tests assert that no file gives one."""


def fault_message(exc: Exception) -> str:
    """The finding of a file costcalc itself failed on, naming the error so it can be fixed."""
    return f"{FAULT}: {type(exc).__name__}: {exc}"


def nested_document(doc: Document, key: KeyPath) -> Document:
    """The mapping under ``key`` of ``doc`` (all of it without ``key``) as a document of its
    own, its lines still those of the file (the mapping itself at the line of its key), with
    Hydra's instantiation keys (HYDRA_KEYS) left out at any level: a config-group file
    (``conf/model/gpt.yaml``: ``_target_`` beside the model's keys) is a model config. A
    missing key or one that holds no mapping is a :class:`FileReadError`."""
    if not key:
        return Document(doc.path, _without_hydra_keys(doc.data), doc.lines)
    data: object = doc.data
    for end, part in enumerate(key, 1):
        if not isinstance(data, dict) or part not in data:
            raise FileReadError(doc.path, f"no key '{'.'.join(key[:end])}' (--key)")
        data = data[part]
    if not isinstance(data, dict):
        where = ".".join(key)
        raise FileReadError(
            doc.path, f"'{where}' holds no mapping of keys (--key)", doc.line_of(key)
        )
    lines = {path[len(key) :]: line for path, line in doc.lines.items() if path[: len(key)] == key}
    return Document(doc.path, _without_hydra_keys(data), lines)


def _without_hydra_keys(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without HYDRA_KEYS, in it and in every mapping it holds (lists included)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in HYDRA_KEYS}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    stripped: dict[str, Any] = strip(data)
    return stripped


def _located(problems: list[Problem], doc: Document | None) -> list[Problem]:
    """``problems`` with those of no line (a key that is missing) at the line of the mapping
    that lacks them: the top of the file, or the ``--key`` mapping."""
    if doc is None or not doc.lines:
        return problems
    top = doc.lines.get((), min(doc.lines.values()))
    return [p if p.line is not None or not p.field else p._replace(line=top) for p in problems]


_EXHAUSTING = "the model is too large to check (it exhausted memory or the stack)"


def limit_problems(
    model: LoadedModel,
    count: int,
    doc: Document,
    limits: Limits,
    headers: HeaderCount | None = None,
) -> list[Problem]:
    """The limits ``model`` (of ``count`` parameters by its formula; ``headers``, what its
    safetensors hold, judged instead where given) breaks: its own budget, then the command
    line's, then the required length."""
    problems: list[Problem] = []
    if model.budget is not None:
        problems += budget_problems(
            model.spec,
            count,
            model.budget,
            lambda key: (f"budget.{key}", doc.line_of(("budget", key))),
            model.weight_format,
            headers,
        )
    problems += budget_problems(
        model.spec,
        count,
        limits.budget,
        lambda key: (_option(key), None),
        model.weight_format,
        headers,
    )
    beyond = None if limits.length is None else position_limit(model.spec, limits.length)
    if beyond is not None:
        key = model.key_names.get("context_length", "context_length")
        problems.append(Problem(key, f"--length {limits.length:,} {beyond}", doc.line_of((key,))))
    return problems


def budget_problems(
    spec: ModelSpec,
    count: int,
    budget: Budget,
    where: Locator,
    stored: str | None = None,
    headers: HeaderCount | None = None,
) -> list[Problem]:
    """The limits of ``budget`` that ``spec`` (of ``count`` parameters) breaks; ``where(key)``
    gives the (field, line) each finding is reported at. Weight bytes are those of
    ``budget.dtype`` (raw: P x its bytes, or a quantized format with its metadata), by default
    ``stored``, the format the checkpoint stores, else bf16. Given ``headers`` (a model folder's
    safetensors), their parameters and, in the format they store, their bytes are judged, and
    the finding says so (and their one float dtype is the default)."""
    dtype = budget.dtype or stored or (headers.dtype if headers else None) or DEFAULT_WEIGHTS
    problems = []
    if budget.max_params is not None:
        counted, whence = count, ""
        if headers is not None and headers.parameters is not None:
            counted, whence = headers.parameters, f" (counted from {headers.source})"
        if counted > budget.max_params:
            field_name, line = where("max_params")
            message = f"{counted:,} parameters{whence} exceed the limit of {budget.max_params:,}"
            problems.append(Problem(field_name, message, line))
    if budget.max_weight_bytes is None:
        # a dtype given without a byte limit is still held to the model: a selection naming no
        # tensor of it is a finding, not a silent pass
        if budget.dtype is not None and _unsized(spec, dtype, where, problems) is None:
            return problems
    else:
        whence = ""
        if headers is not None and headers.dtype == dtype:
            size, whence = headers.bytes, f" (the tensor bytes of {headers.source})"
        else:
            sized = _unsized(spec, dtype, where, problems)
            if sized is None:
                return problems
            size = sized
        if size > budget.max_weight_bytes:
            field_name, line = where("max_weight_bytes")
            message = (
                f"{weight_label(dtype)} weights take {_bytes(size)}{whence}, over the limit of "
                f"{_bytes(budget.max_weight_bytes)}"
            )
            problems.append(Problem(field_name, message, line))
    return problems


def _unsized(spec: ModelSpec, dtype: str, where: Locator, problems: list[Problem]) -> int | None:
    """The weight bytes of ``spec`` in ``dtype``, or None with a finding at the dtype when its
    format cannot store this model's tensors."""
    try:
        return weight_bytes(spec, dtype)
    except UsageError as exc:
        field_name, line = where("dtype")
        problems.append(Problem(field_name, f"cannot size the weights as {dtype}: {exc}", line))
        return None


def _by_line(problem: Problem) -> tuple[bool, int]:
    return problem.line is None, problem.line or 0


def _option(key: str) -> str:
    return "--" + key.replace("_", "-")


def _bytes(n: int) -> str:
    return f"{n:,} bytes ({format_bytes(n, 'si')}, {format_bytes(n, 'iec')})"
