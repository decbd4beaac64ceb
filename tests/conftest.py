"""Shared fixtures: a CLI runner with Rich's width and colour fixed; running as nobody; the
hypothesis profile of the whole suite (no deadline)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from typer.testing import CliRunner, Result

from costcalc.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
GOLDEN = Path(__file__).resolve().parent / "golden"

# No wall-clock limit inside a unit test: a loaded 2-core CI machine must not fail correct work
# by time alone (speed targets live in tests/bench/, as paired ratios). The too-slow health check
# is a timing limit too.
settings.register_profile("costcalc", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("costcalc")

# Rich reads these: a wide, colourless terminal so tables do not wrap in assertions.
os.environ.update(COLUMNS="160", NO_COLOR="1", TERM="dumb")
# The suite never reaches the real Hugging Face Hub; tests/test_hub_server.py serves its own.
os.environ["HF_HUB_OFFLINE"] = "1"

Invoke = Callable[..., Result]


def hub_log_to_process_stderr() -> None:
    """Point huggingface_hub's log handler (a ``StreamHandler`` bound to the ``sys.stderr`` of
    the moment it was made, which may be an earlier run's captured stream, since closed) at the
    process's own stderr: a line it logs late (a download given up at its deadline, still
    retrying in its thread) then lands in no later run's output."""
    import logging
    import sys

    if "huggingface_hub" in sys.modules:
        for handler in logging.getLogger("huggingface_hub").handlers:
            if isinstance(handler, logging.StreamHandler) and sys.__stderr__ is not None:
                handler.stream = sys.__stderr__  # setStream would flush the closed one


@pytest.fixture(autouse=True)
def _hub_log() -> None:
    hub_log_to_process_stderr()


@pytest.fixture
def cli() -> Invoke:
    """Run ``costcalc ARGS...`` in-process; stdout and stderr are kept apart."""
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        hub_log_to_process_stderr()
        return runner.invoke(app, list(args), catch_exceptions=False)

    return invoke


@contextmanager
def unprivileged() -> Iterator[None]:
    """Run as nobody for a while: root reads any file or directory whatever its mode, so a test
    that needs an unreadable one drops the effective user id (and takes it back after)."""
    if os.geteuid() != 0:
        yield
        return
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)
