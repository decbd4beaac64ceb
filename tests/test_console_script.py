"""The installed console script, run as a user would: a separate process, another directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = shutil.which("costcalc", path=str(Path(sys.executable).parent))
    assert script is not None, "costcalc is not installed next to this Python"
    env = {**os.environ, "COLUMNS": "120"}
    return subprocess.run(
        [script, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )


def test_params_json(tmp_path: Path) -> None:
    result = run(tmp_path, "params", "--preset", "gpt2-small", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["parameters"]["total"] == 124_439_808


def test_bad_file_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("d_model: [1, 2\n")
    result = run(tmp_path, "params", "--config", str(bad))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {bad}:")


def test_module_entry_point(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "costcalc", "presets", "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "gpt2-small" in {entry["name"] for entry in json.loads(result.stdout)}


def test_version(tmp_path: Path) -> None:
    from costcalc import __version__

    result = run(tmp_path, "--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"costcalc {__version__}"
