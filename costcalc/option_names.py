"""Options named as their caller writes them: ``--base-dtype`` on the command line,
``base_dtype=`` from Python (each API parameter is its option's name, ``_`` for ``-``).

The same checks run under the CLI and the Python API (costcalc.api), so an error about an
option words it with :func:`option`; the API's functions mark their calls with
:func:`api_call`. Kept free of imports: the command line reads it at start-up.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_IN_API: ContextVar[bool] = ContextVar("costcalc_in_api", default=False)

SWITCHES = frozenset({"--train", "--sp", "--dora", "--causal", "--swa-full", "--double-quant"})
"""Options that take no value: ``train=True`` in Python."""


@contextmanager
def api_call() -> Iterator[None]:
    """Within this block, messages name the API's parameters."""
    token = _IN_API.set(True)
    try:
        yield
    finally:
        _IN_API.reset(token)


def in_api() -> bool:
    """Whether the current call came through the Python API."""
    return _IN_API.get()


def option(flag: str, value: object = None, metavar: str | None = None) -> str:
    """``flag`` as its caller writes it, with ``value`` when given: ``--tp 5`` on the command
    line, ``tp=5`` from Python (``base_dtype=`` without a value, ``--node-gpus G`` with a
    ``metavar``; a switch is ``train=True``; a list is ``--targets q,v`` and
    ``targets=['q', 'v']``)."""
    if not _IN_API.get():
        if value is None:
            return flag if metavar is None else f"{flag} {metavar}"
        if isinstance(value, list):
            return f"{flag} {','.join(map(str, value))}"
        return f"{flag} {value:,}" if isinstance(value, int) else f"{flag} {value}"
    name = flag.removeprefix("--").replace("-", "_")
    if flag in SWITCHES:
        return f"{name}=True"
    if flag.startswith("--no-"):  # the off side of a switch: --no-mixed-precision
        return f"{name.removeprefix('no_')}=False"
    return f"{name}=" if value is None else f"{name}={value!r}"
