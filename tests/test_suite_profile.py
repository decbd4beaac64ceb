"""The suite's hypothesis profile: no example fails by time alone on a loaded machine."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def test_no_deadline_and_no_timing_health_check() -> None:
    assert settings().deadline is None
    assert HealthCheck.too_slow in settings().suppress_health_check
