"""Output channels under hostile conditions: any terminal width (COLUMNS=0 included) prints
every figure whole; a closed standard output is one message, never a traceback; the job summary
is written without blocking, refused clearly when it cannot be, and kept under 1 MiB; no log line
of `check -f github` can be read as a workflow command; `check` never leaves the tree it was
given nor reports the empty path."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costcalc.check import LINK_OUT, LINK_OUT_FILE, FileReport
from costcalc.cli.app import app
from costcalc.cli.check import MAX_SUMMARY_BYTES, job_summary
from costcalc.errors import Problem
from tests.conftest import ROOT, Invoke
from tests.test_hostile import _deadline

GPT2_SMALL = ROOT / "presets" / "gpt2-small.yaml"
FIGURE = re.compile(r"(?<![\w,.])\d[\d,.]*\d(?![\w,.])")
COMMANDS = [
    ["params", "-p", "qwen2.5-0.5b", "-T", "100000000000", "-B", "1000000000"],
    ["memory", "-p", "gpt2-small", "-p", "deepseek-v3", "--train", "-T", "1024", "-B", "999999"],
    [
        "plan",
        "-p",
        "gpt2-small",
        "--gpu",
        "h100-sxm",
        "--tokens",
        "1T",
        "--prompt",
        "64",
        "-T",
        "512",
    ],
    ["scale", "--d", "256", "512", "1024"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: args[0])
def test_every_figure_whole_at_any_width(args: list[str]) -> None:
    runner = CliRunner()
    wide = runner.invoke(app, args, env={"COLUMNS": "200"}, catch_exceptions=False)
    assert wide.exit_code == 0, wide.stderr
    figures = set(FIGURE.findall(wide.stdout))
    assert len(figures) > 10
    for columns in ("0", "1", "5", "12", "19", "20", "33"):
        narrow = runner.invoke(app, args, env={"COLUMNS": columns}, catch_exceptions=False)
        assert narrow.exit_code == 0, narrow.stderr
        assert figures <= set(FIGURE.findall(narrow.stdout)), columns


def _run(shell: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", shell, sys.executable],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )


def test_closed_standard_output_and_error() -> None:
    closed = _run('exec "$0" -m costcalc params -p gpt2-small >&-')
    assert closed.returncode == 1
    assert closed.stderr == "error: cannot write the output: standard output is closed\n"
    both = _run('exec "$0" -m costcalc params -p nosuch >&- 2>&-')
    assert both.returncode == 1
    quiet = _run('exec "$0" -m costcalc params -p nosuch 2>&-')
    assert quiet.returncode == 1 and quiet.stdout == ""


def _summary_to(cli: Invoke, target: str, monkeypatch: pytest.MonkeyPatch, *paths: str) -> object:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", target)
    with _deadline(10):
        return cli("check", *paths, "-f", "github")


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: p / "no-such-dir" / "summary.md", "no such file"),
        (lambda p: p, "is a directory"),
        (lambda p: (os.mkfifo(p / "fifo"), p / "fifo")[1], "not a regular file"),
        (lambda p: Path("/dev/null"), "not a regular file"),
    ],
    ids=["missing folder", "directory", "fifo", "device"],
)
def test_a_job_summary_that_cannot_be_written(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: object, reason: str
) -> None:
    """The annotations are printed, then one line says why the summary is not written (a FIFO
    with no reader is never waited on); exit 1, no traceback."""
    target = make(tmp_path)  # type: ignore[operator]
    result = _summary_to(cli, str(target), monkeypatch, str(GPT2_SMALL))
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert result.stdout == "1 file, 0 failed\n"  # type: ignore[attr-defined]
    assert result.stderr.startswith(f"error: {target}: cannot write the job summary: ")  # type: ignore[attr-defined]
    assert reason in result.stderr  # type: ignore[attr-defined]


def test_a_fifo_with_a_reader_is_refused_too(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        result = _summary_to(cli, str(fifo), monkeypatch, str(GPT2_SMALL))
    finally:
        os.close(reader)
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert "not a regular file" in result.stderr  # type: ignore[attr-defined]


def test_the_job_summary_stays_under_a_mebibyte() -> None:
    message = "m" * 200
    reports = [FileReport(f"f{i}.yaml", [Problem("d_model", message, i)]) for i in range(20_000)]
    text = job_summary(reports)
    assert len(text.encode()) <= MAX_SUMMARY_BYTES < 2**20
    kept = text.count(message)
    assert 1000 < kept < 20_000
    assert text.rstrip().endswith(
        f"{20_000 - kept:,} findings left out: the summary is kept under 1 MiB (see the log)"
    )
    assert job_summary(reports[:10]).count(message) == 10
    assert "left out" not in job_summary(reports[:10])


def test_file_names_are_never_read_as_workflow_commands(cli: Invoke, tmp_path: Path) -> None:
    """Past the ten annotations findings are plain log lines; where one could pass for a
    command (a file named ``::warning::x.yaml`` or holding ``##[error]``), the plain lines are
    printed between ``::stop-commands::`` and its end."""
    for i in range(10):
        (tmp_path / f"bad{i}.yaml").write_text("d_model: 0\n")
    for name in ("::warning file=a::x.yaml", "##[error]y.yaml", "  ::notice::z.yaml"):
        (tmp_path / name).write_text("d_model: 0\n")
    result = cli("check", str(tmp_path), "-f", "github")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    stop = next(i for i, line in enumerate(lines) if line.startswith("::stop-commands::"))
    token = lines[stop].removeprefix("::stop-commands::")
    assert len(token) == 64 and lines[-1] == f"::{token}::"
    assert all(line.startswith("::error ") for line in lines[:stop])
    assert len(lines[:stop]) == 10
    between = lines[stop + 1 : -1]
    assert any(line.startswith(str(tmp_path / "::warning")) for line in between)
    assert not any(token in line for line in between)
    plain = cli("check", *map(str, sorted(tmp_path.glob("bad*.yaml"))), "-f", "github")
    assert "::stop-commands::" not in plain.stdout


def test_check_never_leaves_its_tree(cli: Invoke, tmp_path: Path) -> None:
    """A link to a directory outside the tree is noted, not entered (a link to / would walk
    the whole file system); a link inside it is read as the directory it names."""
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (tree / "a").mkdir(parents=True)
    outside.mkdir()
    (tree / "a" / "model.yaml").write_text(GPT2_SMALL.read_text())
    (outside / "other.yaml").write_text("d_model: 0\n")
    (tree / "out").symlink_to(outside)
    (tree / "root").symlink_to("/")
    (tree / "inner").symlink_to(tree / "a")
    for args in ([str(tree)], [f"{tree}/**"], [f"{tree}/**/*.yaml"]):
        result = cli("check", *args, "-f", "json")
        assert result.exit_code == 0, result.stdout
        records = json.loads(result.stdout)
        skipped = sorted(Path(r["path"]).name for r in records if r["skipped"] == LINK_OUT)
        assert skipped == ["out", "root"], args
        assert [r["parameters"] for r in records if not r["skipped"]] == [124_439_808]


def test_a_glob_never_names_the_empty_path(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "model.yaml").write_text(GPT2_SMALL.read_text())
    monkeypatch.chdir(tmp_path)
    result = cli("check", "**", "-f", "json")
    assert result.exit_code == 0, result.stdout
    assert [r["path"] for r in json.loads(result.stdout)] == [
        os.path.join(".", "sub", "model.yaml")
    ]


def test_a_link_loop_in_a_tree_hides_no_file(cli: Invoke, tmp_path: Path) -> None:
    """A link that cannot be followed (a loop) is judged as the file it is named as: the
    directory holding it is still listed, and its other files checked."""
    (tmp_path / "model.yaml").write_text(GPT2_SMALL.read_text())
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / "self.yaml").symlink_to("self.yaml")
    for args in ([str(tmp_path)], [f"{tmp_path}/**"]):
        result = cli("check", *args, "-f", "json")
        assert result.exit_code == 1, result.stdout
        records = {Path(r["path"]).name: r for r in json.loads(result.stdout)}
        assert sorted(records) == ["model.yaml", "self.yaml"], args
        assert records["model.yaml"]["ok"]
        assert "too many levels of symbolic links" in records["self.yaml"]["findings"][0]["message"]


def test_every_directory_a_glob_matches_is_searched_once(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``**`` matches every directory of a tree: a tree of depth d is listed about twice per
    directory (once by the pattern, once searched), never d times."""
    deep = tmp_path.joinpath(*["d"] * 60)
    deep.mkdir(parents=True)
    (deep / "model.yaml").write_text(GPT2_SMALL.read_text())
    listed: list[str] = []
    scandir = os.scandir

    def counted(path: str) -> object:
        listed.append(path)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counted)
    monkeypatch.chdir(tmp_path)
    result = cli("check", "**", "-f", "json")
    assert result.exit_code == 0, result.stdout
    assert [r["path"] for r in json.loads(result.stdout)] == [
        os.path.join(".", *["d"] * 60, "model.yaml")
    ]
    assert len(listed) <= 3 * 61


def test_a_glob_names_an_unlistable_directory_by_its_name(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import unprivileged

    monkeypatch.chdir(tmp_path)
    tmp_path.chmod(0o300)  # searchable, not listable
    try:
        with unprivileged():
            result = cli("check", "**", "-f", "json")
    finally:
        tmp_path.chmod(0o755)
    assert result.exit_code == 1
    (record,) = json.loads(result.stdout)
    assert record["path"] == "."
    assert record["findings"][0]["message"].startswith("cannot list this directory")


def test_check_reads_no_file_a_link_leads_out_of_its_tree_to(cli: Invoke, tmp_path: Path) -> None:
    """A repository's link to a file elsewhere (a secret, /proc/self/environ) is noted, never
    read, whether the tree is searched or matched by a pattern; named itself, it is read."""
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    secret = tmp_path / "secret.yaml"
    secret.write_text("aws_secret_access_key: SECRET\n")
    (tree / "sub" / "evil.yaml").symlink_to(secret)
    (tree / "env.json").symlink_to("/proc/self/environ")
    (tree / "model.yaml").write_text(GPT2_SMALL.read_text())
    for args in ([str(tree)], [f"{tree}/**/*.yaml", f"{tree}/*.json"], [f"{tree}/*"]):
        result = cli("check", *args, "-f", "json")
        assert result.exit_code == 0, (args, result.stdout)
        assert "SECRET" not in result.stdout and "aws_secret" not in result.stdout
        records = {Path(r["path"]).name: r for r in json.loads(result.stdout)}
        assert records["evil.yaml"]["skipped"] == LINK_OUT_FILE, args
        assert records["env.json"]["skipped"] == LINK_OUT_FILE, args
        assert records["model.yaml"]["ok"]
    named = cli("check", str(tree / "sub" / "evil.yaml"))
    assert named.exit_code == 1 and "aws_secret_access_key: unknown key" in named.stdout


def test_a_pattern_follows_no_link_out_of_its_fixed_part(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`*/model.yaml` matched through a link to a directory elsewhere leaves the tree, the
    pattern's part before its first wildcard (here the current folder): noted, not entered."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "model.yaml").write_text("d_model: 0\n")
    tree = tmp_path / "tree"
    (tree / "a").mkdir(parents=True)
    (tree / "a" / "model.yaml").write_text(GPT2_SMALL.read_text())
    (tree / "out").symlink_to(outside)
    monkeypatch.chdir(tree)
    result = cli("check", "*/model.yaml", "-f", "json")
    assert result.exit_code == 0, result.stdout
    records = json.loads(result.stdout)
    assert [(r["path"], r["skipped"]) for r in records] == [
        (os.path.join("a", "model.yaml"), None),
        ("out", LINK_OUT),
    ]
