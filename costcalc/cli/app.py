"""The ``costcalc`` command: registers the subcommands; each lives in a module of its own.

Exit codes: 0 success; 1 invalid model or input (a message on stderr, never a traceback), or
findings of `costcalc check`;
2 wrong usage (unknown option, malformed value). A reader that closes the pipe early (``| head``)
ends costcalc quietly by SIGPIPE, as it ends ``cat`` or ``grep`` (status 141 in a shell).
"""

from __future__ import annotations

import gc
import importlib
import io
import os
import signal
import sys
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from costcalc.cli.common import Command, Group

COMMANDS = (
    "params",
    "memory",
    "plan",
    "check",
    "schema",
    "scale",
    "heads",
    "lora",
    "presets",
    "gpus",
    "completion",
)
"""The subcommands, in the order help lists them; each is the function of the same name in the
module of the same name (``presets`` a Typer app of its own)."""


@contextmanager
def _output_errors() -> Iterator[None]:
    from costcalc.errors import OutputError

    try:
        yield
    except BrokenPipeError:
        raise _ClosedPipeError from None
    except OSError as exc:
        raise OutputError(exc.strerror or str(exc)) from None


class _ClosedPipeError(Exception):
    """The reader of standard output has gone (``costcalc ... | head -1``). Not an OSError,
    which click would turn into exit 1."""


class _Commands(MutableMapping[str, Any]):
    """The subcommands by name, each built (its module imported, its options read from the
    function's signature) only when looked up: running one command builds that command alone,
    while help, which lists them all, builds them all."""

    def __init__(self) -> None:
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in COMMANDS:
                raise KeyError(name)
            self._built[name] = _build(name)
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        raise TypeError("costcalc's subcommands are fixed")

    def __delitem__(self, name: str) -> None:
        raise TypeError("costcalc's subcommands are fixed")

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)


def _build(name: str) -> Any:
    """The click command ``name``, registered on a Typer app of its own as it would be on
    :data:`app` (same defaults, so the same help and behaviour)."""
    module = importlib.import_module(f"costcalc.cli.{name}")
    single = typer.Typer()
    if name == "presets":
        single.add_typer(module.app, name=name)
    else:
        cls = module.ListOptionsCommand if name == "scale" else Command
        single.command(name, cls=cls)(getattr(module, name))
    return typer.main.get_group(single).commands[name]


class _RootGroup(Group):
    """The ``costcalc`` group: its subcommands built on demand (:class:`_Commands`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands()

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)


app = typer.Typer(
    cls=_RootGroup,
    name="costcalc",
    help="What a transformer language model costs: exact parameters, MACs, FLOPs and bytes.",
    no_args_is_help=True,
    add_completion=False,  # `costcalc completion SHELL` prints a static script instead
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from costcalc import __version__

        typer.echo(f"costcalc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """What a transformer language model costs: exact parameters, MACs, FLOPs and bytes."""


def main() -> None:
    """Console-script entry point. Standard output escapes what its encoding cannot hold; a
    failed write to it (a full device) ends with one line on stderr and exit 1, never a
    traceback, and a closed pipe ends quietly by SIGPIPE, the status of ``cat`` in a pipe.
    The objects built by then are frozen (``gc.freeze``): the process ends without the
    collector walking them once more."""
    from costcalc.errors import OutputError

    if sys.stderr is None:  # standard error closed: messages have nowhere to go
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (the process's own, until it ends)
    if sys.stdout is None:  # standard output closed (`costcalc ... >&-`): nothing can be written
        sys.stderr.write(f"error: {OutputError('standard output is closed')}\n")
        sys.exit(OutputError.exit_code)
    sys.stdout = _Output(sys.stdout)
    try:
        try:
            app(prog_name="costcalc")
        finally:
            sys.stdout.flush()
            # What the run built lives until the process ends: frozen, it is not walked again
            # by the collector at shutdown, a walk that costs more than the run itself.
            gc.freeze()
    except OutputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to fail
        sys.exit(exc.exit_code)
    except _ClosedPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if hasattr(signal, "SIGPIPE"):
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGPIPE)
        sys.exit(0)


class _Output(io.TextIOWrapper):
    """Standard output whose unencodable characters are escaped and whose write errors are
    :class:`~costcalc.errors.OutputError` (not OSError, which click would silence)."""

    def __init__(self, stdout: Any) -> None:
        super().__init__(
            stdout.buffer,
            encoding=stdout.encoding,
            errors="backslashreplace",
            line_buffering=stdout.line_buffering,
        )

    def write(self, text: str) -> int:
        with _output_errors():
            return super().write(text)

    def flush(self) -> None:
        with _output_errors():
            super().flush()
