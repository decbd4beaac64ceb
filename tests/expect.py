"""Assertions shared by the CLI tests."""

from __future__ import annotations

from typer.testing import Result


def expect_error(result: Result, code: int, message: str) -> None:
    """A user's mistake: exit ``code``, ``message`` on stderr, no traceback."""
    assert result.exit_code == code, result.stdout
    assert message in result.stderr
    assert "Traceback" not in result.stderr
