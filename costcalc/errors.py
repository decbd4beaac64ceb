"""Errors costcalc raises for a user's mistake.

Every error is a :class:`CostcalcError`; each subclass also inherits the matching built-in, keeps
its constructor's arguments as fields of the same names and builds its message from them (so it
pickles: it is rebuilt from those fields). The CLI prints the message and exits non-zero; it
never shows a traceback for one of these.
"""

from __future__ import annotations

from typing import Any, NamedTuple

_UNSHOWN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode categories never printed as they are: controls, format characters (bidi overrides),
unpaired surrogates (a file name that is not UTF-8) and line or paragraph separators."""


def shown(text: str) -> str:
    """``text`` safe to print anywhere: every character of :data:`_UNSHOWN` escaped as Python
    writes it (``\\n``, ``\\x1b``, ``\\u202e``, ``\\udce9``), so a name can neither break a line,
    drive a terminal, nor fail to encode."""
    if text.isprintable():
        return text
    import unicodedata  # only for text that needs escaping

    return "".join(
        ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) in _UNSHOWN else ch
        for ch in text
    )


class CostcalcError(Exception):
    """Root of every error costcalc raises on bad input."""

    exit_code = 1

    def __reduce__(self) -> str | tuple[Any, ...]:
        """The error rebuilt from its constructor's arguments, each kept as the field of its
        name, so that it survives pickling (a process pool sends errors back pickled)."""
        import inspect

        init = type(self).__init__
        if not inspect.isfunction(init):  # a built-in's: its arguments are its args
            return super().__reduce__()
        names = list(inspect.signature(init).parameters)[1:]
        return type(self), tuple(getattr(self, name) for name in names), self.__dict__


class Problem(NamedTuple):
    """One thing wrong with a config: where it is and what was expected."""

    field: str
    message: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line is not None else ""
        message = shown(self.message)
        return f"{shown(self.field)}{where}: {message}" if self.field else message


class ConfigError(CostcalcError, ValueError):
    """A config (file, preset or command-line overrides) that does not describe a valid model."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{shown(source)}: invalid model config\n{lines}")


class UnsupportedModelError(ConfigError):
    """A config of a family costcalc has no formula for (its checkpoint headers may still be
    read)."""


class FileReadError(CostcalcError, OSError):
    """A config file that cannot be read or parsed at all."""

    def __init__(
        self, path: str, reason: str, line: int | None = None, column: int | None = None
    ) -> None:
        self.path = path
        self.reason = reason
        self.line = line
        self.column = column
        where = f":{line}" if line is not None else ""
        super().__init__(f"{shown(path)}{where}: {shown(reason)}")


class UnknownPresetError(CostcalcError, KeyError):
    """A preset name that is not shipped."""

    def __init__(self, name: str, known: list[str], suggestion: str | None) -> None:
        self.name = name
        self.known = known
        self.suggestion = suggestion
        hint = f" Did you mean '{suggestion}'?" if suggestion else ""
        super().__init__(f"unknown preset '{shown(name)}'.{hint} Presets: {', '.join(known)}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class UsageError(CostcalcError, ValueError):
    """Command-line values that are wrong before any model is loaded."""

    exit_code = 2


def check_choice(value: str, known: tuple[str, ...], what: str) -> str:
    """``value`` if it is one of ``known``, else a UsageError worded the same for every choice,
    with the closest known value as a suggestion."""
    if value not in known:
        raise UsageError(
            f"unknown {what} '{shown(value)}'{did_you_mean(value, known)}; "
            f"expected one of {', '.join(known)}"
        )
    return value


def did_you_mean(value: str, known: tuple[str, ...]) -> str:
    """`` (did you mean 'X'?)`` for the known value closest to ``value``: the same letters in
    another case, else the closest spelling, else one it begins; empty when none is close."""
    import difflib

    folded = {k.casefold(): k for k in known}
    close = [folded[value.casefold()]] if value.casefold() in folded else []
    close = close or difflib.get_close_matches(value, known, n=1, cutoff=0.5)
    close = close or [k for k in known if value and k.startswith(value)][:1]
    return f" (did you mean '{close[0]}'?)" if close else ""


class HubError(CostcalcError, OSError):
    """A model that cannot be had from the Hugging Face Hub or its local cache: ``reason`` says
    why (missing, gated, offline and not cached, an unreadable cache) and what to do."""

    def __init__(self, model: str, reason: str) -> None:
        self.model = model
        self.reason = reason
        super().__init__(f"{shown(model)}: {shown(reason)}")

    def __str__(self) -> str:  # OSError would format its arguments
        return str(self.args[0])


class OutputError(CostcalcError):
    """Standard output that cannot be written (a full device, a closed pipe).

    Deliberately not an OSError: click would take a closed pipe for a quiet exit."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"cannot write the output: {reason}")


class RangeError(CostcalcError, ValueError):
    """A size, batch, length or token count outside the range it must lie in. With ``usage``
    (a count below its least, or of over 100 digits: ``gpus=0``, ``length=-4``) it is wrong
    usage, exit 2, as the command line's ``--gpus 0`` is; else a value the model cannot take
    (a length past its learned positions, a rank past 2,147,483,647), exit 1, as there."""

    def __init__(self, name: str, value: int, expected: str, usage: bool = False) -> None:
        self.name = name
        self.value = value
        self.expected = expected
        self.usage = usage
        self.exit_code = UsageError.exit_code if usage else CostcalcError.exit_code
        super().__init__(f"{name} {_number(value)}: {expected}")


def _number(value: object) -> str:
    """An integer as a message shows it: in full up to 40 digits, else by its size (Python
    writes out at most 4,300 digits, and no one reads 40)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
        return f"of about {int(abs(value).bit_length() * 0.30103) + 1:,} digits"
    return str(value)


class CheckpointError(CostcalcError, ValueError):
    """A safetensors checkpoint (file, index or folder) whose headers cannot be trusted.

    ``path`` is the file at fault (a shard, the index or the folder) and ``reason`` says what was
    found and what was expected instead. Raised before any tensor data is read.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")
