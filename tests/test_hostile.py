"""Hostile input: no file, file system, environment or command line crashes, hangs or exhausts
`costcalc`. One test (at least) per cause of issue 14, through `check` and `params --config`
(and `memory` where it applies), each asserting the exit code, the message and no traceback.
Time-heavy cases bound the work done, not the wall time; memory-heavy ones run under a limit."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, SupportsIndex

import pytest

from costcalc.check import Limits, check_file, config_files
from costcalc.errors import HubError
from costcalc.files import parse_document
from costcalc.formats.hf_layers import MAX_LISTED_LAYERS
from costcalc.hub import fetch_config
from costcalc.units import format_bytes
from tests.conftest import ROOT, Invoke, unprivileged
from tests.test_hf_hub import cached_config

GOOD = (ROOT / "presets" / "gpt2-small.yaml").read_text(encoding="utf-8")
GOOD_DATA: dict[str, Any] = {
    "vocab_size": 50257,
    "context_length": 1024,
    "d_model": 768,
    "n_layers": 12,
    "n_heads": 12,
}
GPT2_SMALL = 124_439_808  # transformers' count (tests/golden/hf_reference.json)


def _no_traceback(*outputs: str) -> None:
    for output in outputs:
        assert "Traceback" not in output


def _expect(cli: Invoke, path: Path, line: int | None, message: str) -> None:
    """`check` makes it the file's one finding (exit 1); `params --config` and `memory --config`
    print one line naming the file (exit 1)."""
    checked = cli("check", str(path), "-f", "json")
    assert checked.exit_code == 1, checked.stdout
    [record] = json.loads(checked.stdout)
    assert record["findings"] == [{"field": None, "line": line, "message": message}]
    where = f"{path}:{line}" if line is not None else str(path)
    for command in ("params", "memory"):
        result = cli(command, "--config", str(path))
        assert result.exit_code == 1
        assert result.stdout == ""
        assert result.stderr == f"error: {where}: {message}\n"
        _no_traceback(result.stderr)


def _config(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# 1. every YAML tag constructor's failure is a finding


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('!!int "-"', "'-' cannot be read as !!int"),
        ('!!float ""', "'' cannot be read as !!float"),
        ("!!bool maybe", "'maybe' cannot be read as !!bool"),
        ("!!timestamp x", "YAML tag '!!timestamp' refused: only plain data is read (column 10)"),
        ("!!set [1]", "YAML tag '!!set' refused: only plain data is read (column 10)"),
        ("!!str [1]", "malformed YAML: expected a scalar node, but found sequence (column 10)"),
    ],
)
def test_tag_constructor_failure_is_a_finding(
    cli: Invoke, tmp_path: Path, value: str, message: str
) -> None:
    _expect(cli, _config(tmp_path, "tag.yaml", f"d_model: {value}\n"), 1, message)


def test_one_failing_file_never_hides_another(cli: Invoke, tmp_path: Path) -> None:
    good = _config(tmp_path, "good.yaml", GOOD)
    bad = _config(tmp_path, "bad.yaml", GOOD.replace("d_model: 768", 'd_model: !!int "-"'))
    result = cli("check", str(good), str(bad), "-f", "json")
    assert result.exit_code == 1
    records = json.loads(result.stdout)
    assert [r["ok"] for r in records] == [True, False]
    assert records[0]["parameters"] == GPT2_SMALL


# 3. one cap per file for JSON as for YAML, line lookup linear in the file


def test_json_value_cap(cli: Invoke, tmp_path: Path) -> None:
    data = {**GOOD_DATA, "extra": list(range(10_000))}
    _expect(cli, _config(tmp_path, "many.json", json.dumps(data)), None, TOO_MANY)


TOO_MANY = "holds over 10,000 values; refused"


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_key_length_cap(cli: Invoke, tmp_path: Path, suffix: str) -> None:
    data = {**GOOD_DATA, "k" * 300: 1}
    path = _config(tmp_path, f"key{suffix}", json.dumps(data))  # JSON is YAML too
    line = None if suffix == ".json" else 1
    _expect(cli, path, line, "a key of 300 characters; a config key has at most 256")


class _CountingText(str):
    """Text that adds up how much of itself ``count`` scans (the key-line lookup's work)."""

    scanned = 0

    def count(self, sub: str, start: SupportsIndex | None = None, end: Any = None) -> int:
        first = 0 if start is None else int(start)
        last = len(self) if end is None else int(end)
        _CountingText.scanned += max(0, last - first)
        return super().count(sub, first, last)


def test_json_key_lines_scan_the_text_once() -> None:
    """4,000 keys in ~1,000 lines: every line is right, and the text is scanned once in all
    (a search per key from the start would scan it ~2,000 times)."""
    keys = {f"k{i}": {"v": i} for i in range(2000)}
    text = _CountingText(json.dumps(keys, indent=1).replace("\n ", " ", 1))
    _CountingText.scanned = 0
    doc = parse_document(text, "keys.json", json_text=True)
    lines = str(text).split("\n")
    assert _CountingText.scanned <= len(text)
    for path in [("k0",), ("k0", "v"), ("k1999",), ("k1999", "v"), ("k777", "v")]:
        line = doc.lines[path]
        assert f'"{path[-1]}"' in lines[line - 1]


def test_json_key_lines_ignore_quotes_inside_strings() -> None:
    text = '{"a": "x\\": 1",\n"b": {"c\\"": 2}}'
    assert parse_document(text, "q.json", json_text=True).lines == {
        ("a",): 1,
        ("b",): 2,
        ("b", 'c"'): 2,
    }


def test_many_values_under_a_memory_limit(tmp_path: Path) -> None:
    """1 MiB of JSON values is refused without the checker growing past a fixed budget."""
    path = tmp_path / "values.json"
    path.write_text('{"a": [' + ",".join(["0"] * 500_000) + "]}")
    with _memory_limit(256 * 2**20):
        report = check_file(path, Limits())
    assert [p.message for p in report.findings] == [TOO_MANY]


@contextmanager
def _memory_limit(extra: int) -> Iterator[None]:
    """The address space capped at what is in use plus ``extra`` bytes, for a while."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        in_use = int(statm.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (in_use + extra, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


# 4. files opened once without blocking; a file changing type after it is listed


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging."""

    def hung(*_: object) -> None:
        raise TimeoutError("blocked")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_file_swapped_for_a_fifo_after_listing(tmp_path: Path) -> None:
    _config(tmp_path, "model.yaml", GOOD)
    [(path, problem)] = list(config_files([str(tmp_path)]))
    assert problem is None
    os.unlink(path)
    os.mkfifo(path)
    with _deadline(10):
        report = check_file(path, Limits())
    assert [p.message for p in report.findings] == ["not a regular file (a device, FIFO or socket)"]


def test_fifo_through_every_command(cli: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    with _deadline(20):
        _expect(cli, path, None, "not a regular file (a device, FIFO or socket)")


# 5. directory walks


def test_unreadable_directory_is_a_finding(cli: Invoke) -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:  # reachable when run as nobody
        top = Path(tmp)
        top.chmod(0o755)
        _config(top, "good.yaml", GOOD).chmod(0o644)
        locked = top / "locked"
        locked.mkdir()
        _config(locked, "hidden.yaml", GOOD)
        locked.chmod(0)
        import costcalc.cli.check  # noqa: F401  (imported while every module is still readable)

        try:
            with unprivileged():
                result = cli("check", str(top), "-f", "json")
        finally:
            locked.chmod(0o755)
    assert result.exit_code == 1
    records = json.loads(result.stdout)
    assert [(r["path"], r["ok"]) for r in records] == [
        (str(top / "good.yaml"), True),
        (str(locked), False),
    ]
    assert records[1]["findings"][0]["message"] == "cannot list this directory: permission denied"


def _deep(tmp_path: Path, depth: int) -> Path:
    path = tmp_path.joinpath(*["d"] * depth)
    os.makedirs(path)
    return _config(path, "deep.yaml", GOOD)


@pytest.mark.parametrize("pattern", ["{top}", "{top}/**/*.yaml", "{top}/**"])
def test_deep_tree_walked_without_recursion(cli: Invoke, tmp_path: Path, pattern: str) -> None:
    deep = _deep(tmp_path, 600)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # far fewer frames than the tree is deep
    try:
        result = cli("check", pattern.format(top=tmp_path), "-f", "json")
    finally:
        sys.setrecursionlimit(limit)
    assert result.exit_code == 0, result.stdout
    assert [r["path"] for r in json.loads(result.stdout)] == [str(deep)]


def test_symlink_cycles_and_the_same_file_twice(cli: Invoke, tmp_path: Path) -> None:
    model = _config(tmp_path, "a.yaml", GOOD)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up").symlink_to("..")
    (tmp_path / "sub" / "same.yaml").symlink_to(model)
    for args in ([str(tmp_path)], [str(model), f"{tmp_path}/./a.yaml", f"{tmp_path}/**/*.yaml"]):
        result = cli("check", *args, "-f", "json")
        assert result.exit_code == 0
        assert [r["path"] for r in json.loads(result.stdout)] == [str(model)]


# 6. output never fails on content


HOSTILE_NAME = "x\n::error file=a.py,line=1::injected \ud800 [/x] \x1b[31m\u202e"


def _hostile_named(tmp_path: Path) -> Path:
    text = json.dumps({**GOOD_DATA, "name": HOSTILE_NAME})  # "\ud800" stays an escape
    return _config(tmp_path, "named.json", text)


@pytest.mark.parametrize(
    "args",
    [
        ["check"],
        ["params", "--config"],
        ["params", "-f", "markdown", "--config"],
        ["params", "-f", "csv", "--config"],
        ["memory", "--config"],
    ],
)
def test_names_are_escaped_in_every_format(cli: Invoke, tmp_path: Path, args: list[str]) -> None:
    result = cli(*args, str(_hostile_named(tmp_path)))
    assert result.exit_code == 0, result.stderr
    assert not any(line.startswith("::") for line in result.stdout.splitlines())
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout
    assert "x\\n::error" in result.stdout


def test_json_names_round_trip(cli: Invoke, tmp_path: Path) -> None:
    for args in (["check"], ["params", "--config"]):
        result = cli(*args, str(_hostile_named(tmp_path)), "-f", "json")
        assert result.exit_code == 0
        assert result.stdout.isascii()
        data = json.loads(result.stdout)
        name = data[0]["name"] if args == ["check"] else data["name"]
        assert name == HOSTILE_NAME


def test_file_name_not_utf8_nor_printable(cli: Invoke, tmp_path: Path) -> None:
    path = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9\n::error::x.yaml"))
    path.write_text('d_model: !!int "-"\n')
    table = cli("check", str(tmp_path))
    assert table.exit_code == 1
    assert "caf\\udce9\\n::error::x.yaml" in table.stdout
    assert not any(line.startswith("::") for line in table.stdout.splitlines())
    as_json = cli("check", str(tmp_path), "-f", "json")
    assert json.loads(as_json.stdout)[0]["path"] == str(path)
    params = cli("params", "--config", str(path))
    assert params.exit_code == 1
    assert params.stderr.count("\n") == 1 and "caf\\udce9\\n::error::x.yaml:1" in params.stderr


def _run(*args: str, stdout: Any = subprocess.PIPE, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "costcalc", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
        cwd=ROOT,
        timeout=60,
    )


def test_ascii_terminal(tmp_path: Path) -> None:
    named = _hostile_named(tmp_path)
    for fmt in ("table", "json"):
        done = _run("check", str(named), "-f", fmt, PYTHONIOENCODING="ascii")
        assert done.returncode == 0, done.stderr
        _no_traceback(done.stderr)
    table = _run("params", "-p", "gpt2-small", "--config", str(named), PYTHONIOENCODING="ascii")
    assert table.returncode == 0 and table.stderr == ""


def test_full_device_and_closed_pipe() -> None:
    with open("/dev/full", "w") as full:
        done = _run("check", str(ROOT / "presets"), "-f", "json", stdout=full)
    assert done.returncode == 1
    assert done.stderr == "error: cannot write the output: No space left on device\n"
    reader = subprocess.Popen(
        [sys.executable, "-m", "costcalc", "check", str(ROOT / "presets")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()
    assert reader.wait(timeout=60) == -signal.SIGPIPE  # quietly, as `cat` ends (docs/cli.md)
    with reader.stderr:
        assert reader.stderr.read() == b""


# 7. command-line numbers


def test_sizes_with_too_many_digits(cli: Invoke, tmp_path: Path) -> None:
    good = _config(tmp_path, "good.yaml", GOOD)
    for args in (
        ["check", str(good), "--max-params", "9" * 5000],
        ["check", str(good), "--max-weight-bytes", "1." + "5" * 400],
        ["memory", "-p", "gpt2-small", "--fits", "9" * 400],
    ):
        result = cli(*args)
        assert result.exit_code == 2
        assert "digits; a " in result.stderr and "has at most 100" in result.stderr
        _no_traceback(result.stderr)


def test_byte_formatting_is_exact_at_any_size(cli: Invoke) -> None:
    assert format_bytes(10**400) == f"{10**388:,}.00 TB"
    assert format_bytes(2**1400, "iec") == f"{2**1360:,}.00 TiB"
    assert format_bytes(1_234_567) == "1.23 MB"
    assert format_bytes(1_235_000) == "1.24 MB"  # half up, exactly
    huge = str(10**40)
    result = cli("memory", "-p", "gpt2-small", "--batch", huge, "--length", "1024", "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert cli("memory", "-p", "gpt2-small", "--batch", huge, "--length", "1024").exit_code == 0


# 8. the Hugging Face cache


def _cache(tmp_path: Path, ref: bytes | None = b"a" * 40) -> Path:
    repo = tmp_path / "hub" / "models--org--model"
    snapshot = repo / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text((ROOT / "tests/fixtures/hf/gpt2.json").read_text())
    if ref is not None:
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_bytes(ref)
    return tmp_path / "hub"


@pytest.mark.parametrize(
    "ref", [b"../../../../outside", b"\xff\xfe", b"b" * 40, b"a" * 39, b"A" * 40]
)
def test_ref_must_be_a_commit_in_the_cache(tmp_path: Path, ref: bytes) -> None:
    outside = tmp_path / "outside" / "config.json"
    outside.parent.mkdir()
    outside.write_text("{}")
    hub = _cache(tmp_path, ref)
    expected = "not in the cache" if ref == b"b" * 40 else "refs/main does not hold a commit"
    with pytest.raises(HubError, match=expected):
        cached_config("org/model", {"HF_HUB_CACHE": str(hub)})


def test_ref_resolving_outside_the_cache_is_not_read(tmp_path: Path) -> None:
    hub = _cache(tmp_path)
    ref = hub / "models--org--model" / "refs" / "main"
    outside = tmp_path / "elsewhere"
    ref.rename(outside)
    ref.symlink_to(outside)
    with pytest.raises(HubError, match=r"refs/main resolves outside the cache \(.*\); refused"):
        cached_config("org/model", {"HF_HUB_CACHE": str(hub)})


def test_offline_says_which_variable_set_it(tmp_path: Path) -> None:
    env = {"HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "", "TRANSFORMERS_OFFLINE": "1"}
    with pytest.raises(HubError, match=r"and TRANSFORMERS_OFFLINE is set \(unset it"):
        fetch_config("org/model", env=env)


def test_huge_ref_is_not_read(cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub = _cache(tmp_path, b"")
    with (hub / "models--org--model" / "refs" / "main").open("wb") as ref:
        ref.truncate(8 * 2**30)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    with _memory_limit(256 * 2**20):
        result = cli("params", "--hf", "org/model")
    assert result.exit_code == 1
    assert "refs/main does not hold a commit hash; refused" in result.stderr


def test_config_resolving_outside_the_cache(tmp_path: Path) -> None:
    hub = _cache(tmp_path)
    config = hub / "models--org--model" / "snapshots" / ("a" * 40) / "config.json"
    outside = tmp_path / "elsewhere.json"
    config.rename(outside)
    config.symlink_to(outside)
    with pytest.raises(HubError, match=r"resolves outside the cache \(.*\); refused"):
        cached_config("org/model", {"HF_HUB_CACHE": str(hub)})


@pytest.mark.parametrize("name", ["model.safetensors", "model.safetensors.index.json", "shard"])
def test_snapshot_files_resolving_outside_the_cache(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The safetensors files of a cached snapshot are read only where they resolve inside the
    cache, as its config.json is: a link to anywhere else is refused, naming it."""
    hub = _cache(tmp_path)
    snapshot = hub / "models--org--model" / "snapshots" / ("a" * 40)
    outside = tmp_path / "outside"
    outside.mkdir()
    header = b'{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    (outside / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + b"x")
    if name == "shard":  # the index inside the cache, its shard a link out of it
        index = {"weight_map": {"w": "model-1.safetensors"}}
        (snapshot / "model.safetensors.index.json").write_text(json.dumps(index))
        name, target = "model-1.safetensors", outside / "model.safetensors"
    elif name.endswith(".json"):
        (outside / name).write_text(json.dumps({"weight_map": {"w": "model.safetensors"}}))
        target = outside / name
    else:
        target = outside / name
    (snapshot / name).symlink_to(target)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    result = cli("params", "--hf", "org/model")
    assert result.exit_code == 1, result.stdout
    assert result.stderr == (
        f"error: {snapshot / name}: resolves to {target}, outside {hub}; refused\n"
    )


def test_cache_os_errors_are_clear(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = _cache(tmp_path, ref=None)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    long_name = cli("params", "--hf", "org/model@" + "m" * 256)
    assert long_name.exit_code == 1
    assert "has no refs/mmmm" in long_name.stderr and "choose one with" in long_name.stderr
    too_long = cli("params", "--hf", "org/" + "m" * 300)
    assert too_long.exit_code == 2
    assert too_long.stderr == (
        "error: --hf expects a model id like ORG/NAME or ORG/NAME@REVISION, each part at most 96 "
        f"letters, digits, '-', '_' or '.' (got {'org/' + 'm' * 56!r}... (304 characters))\n"
    )
    snapshots = hub / "models--org--model" / "snapshots"
    tmp_path.chmod(0o755)
    snapshots.chmod(0)
    try:
        with unprivileged():
            denied = cli("params", "--hf", "org/model")
    finally:
        snapshots.chmod(0o755)
    assert denied.exit_code == 1
    assert f"cannot read the cache ({hub}): permission denied" in denied.stderr
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", "~nosuchuser")  # huggingface_hub leaves it as written
    no_home = cli("params", "--hf", "org/model")
    assert no_home.exit_code == 1
    assert no_home.stderr == (
        "error: org/model: config.json is not in the cache (~nosuchuser/hub) and HF_HUB_OFFLINE "
        "is set (unset it to download)\n"
    )
    for result in (long_name, too_long, denied, no_home):
        _no_traceback(result.stderr)


# 9. costcalc YAML integers are plain decimal


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("01400", "'01400' is read as octal 768"),
        ("12:48", "'12:48' is read as base-60 768"),
        ("0x300", "'0x300' is read as hexadecimal 768"),
        ('!!int "0b1100000000"', "'0b1100000000' is read as binary 768"),
    ],
)
def test_yaml_integers_are_plain_decimal(
    cli: Invoke, tmp_path: Path, value: str, message: str
) -> None:
    path = _config(tmp_path, "ints.yaml", GOOD.replace("d_model: 768", f"d_model: {value}"))
    line = GOOD.splitlines().index("d_model: 768") + 1
    _expect(cli, path, line, f"{message} by YAML 1.1; costcalc integers are plain decimal")


def test_decimal_with_separators_is_read(cli: Invoke, tmp_path: Path) -> None:
    text = GOOD.replace("vocab_size: 50257", "vocab_size: 50_257").replace(
        "d_model: 768", "d_model: +768"
    )
    result = cli("check", str(_config(tmp_path, "sep.yaml", text)), "-f", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)[0]["parameters"] == GPT2_SMALL


# 2. nothing grows with a config value: layer counts, norms and pattern counts at the size limit,
# each command in a fresh process under an address-space limit far below one list entry per layer

ADDRESS_SPACE = 512 * 2**20
"""Enough for Python, typer, rich and pydantic (about 300 MiB); a list of 2**31 - 1 entries
alone would need 16 GiB."""
HUGE = 2**31 - 1
QWEN2_BLOCK = 14_912_384  # Qwen2.5-0.5B's block: sliding or full, the same parameters
QWEN2_REST = 136_134_656 + 896  # its tied token table and final norm
GPT2_BLOCK = 12 * 768**2 + 13 * 768


def _limited(*args: str) -> subprocess.CompletedProcess[str]:
    """``costcalc ARGS`` in a fresh process whose address space is capped at ADDRESS_SPACE."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    done = subprocess.run(
        [sys.executable, "-m", "costcalc", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        preexec_fn=cap,
    )
    _no_traceback(done.stdout, done.stderr)
    assert "MemoryError" not in done.stderr
    return done


def _limited_json(*args: str) -> Any:
    done = _limited(*args, "-f", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _qwen2(tmp_path: Path, layers: int, **extra: Any) -> Path:
    data = {
        "model_type": "qwen2",
        "architectures": ["Qwen2ForCausalLM"],
        "vocab_size": 151936,
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_hidden_layers": layers,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-06,
        "sliding_window": 4096,
        "use_sliding_window": True,
        "max_window_layers": 3,
        "tie_word_embeddings": True,
        **extra,
    }
    return _config(tmp_path, f"qwen2-{layers}.json", json.dumps(data))


def test_address_space_limit_is_enforced() -> None:
    """The limit bites: a list as long as the model is deep would not fit under it."""
    code = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE},) * 2); "
    done = subprocess.run(
        [sys.executable, "-c", code + f"x = [None] * {10**9}"], capture_output=True, text=True
    )
    assert done.returncode == 1 and "MemoryError" in done.stderr


@pytest.mark.parametrize("layers", [10**9, HUGE])
def test_sliding_window_layers_of_any_count(tmp_path: Path, layers: int) -> None:
    """Qwen2's per-layer rule (sliding from max_window_layers on) in closed form: 3 full layers,
    the rest sliding, whatever num_hidden_layers says."""
    path = _qwen2(tmp_path, layers)
    total = QWEN2_REST + layers * QWEN2_BLOCK
    [record] = _limited_json("check", str(path))
    assert record["ok"] and record["parameters"] == total
    report = _limited_json("params", "--config", str(path))["parameters"]
    assert report["total"] == total
    assert [(s["kind"], s["layers"]) for s in report["stacks"]] == [
        ("full attention", 3),
        ("sliding window 4,096", layers - 3),
    ]


def test_layer_count_beyond_a_size_is_refused(tmp_path: Path) -> None:
    path = _qwen2(tmp_path, 10**18)
    message = f"Input should be less than or equal to {HUGE} (got {10**18})"
    checked = _limited("check", str(path), "-f", "json")
    assert checked.returncode == 1
    [record] = json.loads(checked.stdout)
    assert record["findings"][0] == {"field": "num_hidden_layers", "line": 1, "message": message}
    params = _limited("params", "--config", str(path))
    assert params.returncode == 1 and params.stdout == ""
    assert f"num_hidden_layers (line 1): {message}" in params.stderr


@pytest.mark.parametrize(
    ("fixture", "key", "extra"),
    [
        ("qwen1.5-moe-a2.7b.json", "mlp_only_layers", {"mlp_only_layers": [0]}),
        ("lfm2-1.2b.json", "full_attn_idxs", {"full_attn_idxs": [2, 5], "layer_types": None}),
    ],
)
def test_per_layer_rules_refuse_past_their_limit(
    tmp_path: Path, fixture: str, key: str, extra: dict[str, Any]
) -> None:
    """A rule that lists layers by index is evaluated layer by layer only up to
    MAX_LISTED_LAYERS; past it, a finding names the key."""
    data = json.loads((ROOT / "tests" / "fixtures" / "hf" / fixture).read_text())
    data.update(extra, num_hidden_layers=HUGE)
    data = {k: v for k, v in data.items() if v is not None}
    path = _config(tmp_path, fixture, json.dumps(data))
    message = f"a per-layer rule is evaluated for at most {MAX_LISTED_LAYERS:,} layers"
    checked = _limited("check", str(path), "-f", "json")
    assert checked.returncode == 1
    [record] = json.loads(checked.stdout)
    assert record["findings"] == [{"field": key, "line": 1, "message": message}]
    for command in ("params", "memory"):
        done = _limited(command, "--config", str(path))
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr == (
            f"error: {path}: invalid model config\n  {key} (line 1): {message}\n"
        )


def test_layers_option_at_the_size_limit() -> None:
    data = _limited_json("memory", "-p", "gpt2-small", "--layers", str(HUGE))
    assert data["parameters"] == GPT2_SMALL + (HUGE - 12) * GPT2_BLOCK
    assert data["parameter_tensors"] == 12 * HUGE + 4


@pytest.mark.parametrize(
    "args",
    [
        ["params"],
        ["memory"],
        ["memory", "--train", "-T", "16", "--optimizer", "adafactor"],
        ["memory", "--train", "-T", "16", "--optimizer", "adamw"],
    ],
)
def test_norms_per_block_at_the_size_limit(tmp_path: Path, args: list[str]) -> None:
    path = _config(tmp_path, "norms.yaml", GOOD + f"norms_per_block: {HUGE}\n")
    total = GPT2_SMALL + 12 * (HUGE - 2) * 2 * 768  # each LayerNorm: weight and bias of 768
    data = _limited_json(*args, "--config", str(path))
    counted = data["parameters"]["total"] if args == ["params"] else data["parameters"]
    assert counted == total
    if args == ["params"]:
        [record] = _limited_json("check", str(path))
        assert record["ok"] and record["parameters"] == total


def test_pattern_group_at_the_size_limit(tmp_path: Path) -> None:
    text = (
        "vocab_size: 1000\ncontext_length: 64\nd_model: 64\nn_heads: 4\nlayers:\n"
        f"  - count: {HUGE}\n    pattern:\n"
        "      - {count: 5, sliding_window: 16}\n      - {count: 1}\n"
    )
    path = _config(tmp_path, "pattern.yaml", text)
    block = 12 * 64**2 + 13 * 64
    total = 1000 * 64 + 64 * 64 + HUGE * block + 2 * 64
    report = _limited_json("params", "--config", str(path))["parameters"]
    assert report["total"] == total
    full = HUGE // 6 + max(HUGE % 6 - 5, 0)  # one full layer per cycle of 6
    assert [s["layers"] for s in report["stacks"]] == [HUGE - full, full]
    memory = _limited_json("memory", "--config", str(path), "--length", "64")
    assert memory["parameters"] == total
    [record] = _limited_json("check", str(path))
    assert record["ok"] and record["parameters"] == total
