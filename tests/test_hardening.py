"""No bad input gets past: every way a config file can be broken, through `costcalc check` and
through `costcalc params --config`. Each gives one line naming the file, a non-zero exit and no
traceback; `check` reports it as that file's finding and goes on with the others."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, Invoke, unprivileged

GOOD = (ROOT / "presets" / "gpt2-small.yaml").read_text(encoding="utf-8")


def _bomb() -> str:
    """Billion laughs: nine aliases of nine aliases ... expand to 9**9 strings."""
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    return "\n".join(lines) + "\n"


def _nested_yaml(depth: int) -> str:
    return "a: " + "[" * depth + "]" * depth + "\n"


def _nested_json(depth: int) -> str:
    return '{"a": ' + "[" * depth + "]" * depth + "}"


# (case, file name, content, line or None, message)
CASES: list[tuple[str, str, str | bytes, int | None, str]] = [
    (
        "malformed YAML",
        "bad.yaml",
        "d_model: 768\n  n_heads: [\n",
        2,
        "malformed YAML: mapping values are not allowed in this context (column 10)",
    ),
    (
        "malformed JSON",
        "bad.json",
        '{"d_model": 768,\n "n_heads": }\n',
        2,
        "malformed JSON: Expecting value (column 13)",
    ),
    ("empty YAML", "empty.yaml", "", None, "empty file; expected a mapping of keys to values"),
    ("empty JSON", "empty.json", "", None, "empty file; expected a mapping of keys to values"),
    (
        "only comments",
        "blank.yaml",
        "# nothing yet\n\n",
        None,
        "empty file; expected a mapping of keys to values",
    ),
    (
        "top-level list",
        "list.yaml",
        "- d_model: 768\n",
        None,
        "expected a mapping of keys to values at the top, found a list",
    ),
    (
        "top-level list in JSON",
        "list.json",
        "[768]",
        None,
        "expected a mapping of keys to values at the top, found a list",
    ),
    (
        "top-level scalar",
        "scalar.yaml",
        "768\n",
        None,
        "expected a mapping of keys to values at the top, found a number",
    ),
    (
        "top-level string in JSON",
        "scalar.json",
        '"gpt2"',
        None,
        "expected a mapping of keys to values at the top, found a string",
    ),
    (
        "top-level null",
        "null.json",
        "null",
        None,
        "expected a mapping of keys to values at the top, found null",
    ),
    (
        "binary",
        "binary.yaml",
        b"d_model: 768\n\x00\x01\x02",
        None,
        "binary file (contains NUL bytes), not a text config",
    ),
    ("not UTF-8", "latin1.yaml", b"name: caf\xe9\n", 1, "not UTF-8 text (byte 9)"),
    (
        "duplicate YAML key",
        "dup.yaml",
        GOOD + "d_model: 1024\n",
        18,
        "duplicate key 'd_model' (first on line 6)",
    ),
    (
        "duplicate JSON key",
        "dup.json",
        '{\n "d_model": 768,\n "d_model": 1024\n}',
        3,
        "duplicate key 'd_model' (first on line 2)",
    ),
    (
        "duplicate YAML key in a nested mapping",
        "dup-nested.yaml",
        GOOD + "budget:\n  max_params: 1B\n  max_params: 2B\n",
        20,
        "duplicate key 'max_params' under budget (first on line 19)",
    ),
    (
        "duplicate key in a layer group",
        "dup-group.yaml",
        GOOD + "layers:\n  - count: 6\n  - count: 6\n    count: 7\n",
        21,
        "duplicate key 'count' under layers.1 (first on line 20)",
    ),
    (
        # the key's first text is elsewhere in the file: the line is the duplicate's own
        "duplicate JSON key in a nested object",
        "dup-nested.json",
        '{"rope_scaling": {"type": "linear"},\n "n_layer": 2,\n "x": {"type": 1,\n  "type": 2}}',
        4,
        "duplicate key 'type' under x (first on line 3)",
    ),
    (
        "boolean YAML key",
        "bool-key.yaml",
        GOOD + "true: 2\n",
        18,
        "key true reads as a boolean in YAML, not as a string: a config's keys are names "
        "(write 'true' in quotes if that name is meant)",
    ),
    (
        "float YAML key",
        "float-key.yaml",
        GOOD + "1e3: 2\n",
        18,
        "key 1e3 reads as a number in YAML, not as a string: a config's keys are names "
        "(write '1e3' in quotes if that name is meant)",
    ),
    (
        "integer YAML key in a nested mapping",
        "nested-int-key.yaml",
        GOOD + "budget:\n  max_params: 1B\n  1: 2\n",
        20,
        "key 1 under budget reads as an integer in YAML, not as a string: a config's keys are "
        "names (write '1' in quotes if that name is meant)",
    ),
    (
        # true and 1 are one key to Python: the first is refused, never merged with the second
        "boolean then integer YAML key",
        "bool-int-keys.yaml",
        GOOD + "layers:\n  - count: 12\n    True: 1\n    1: 2\n",
        20,
        "key True under layers.0 reads as a boolean in YAML, not as a string: a config's keys "
        "are names (write 'True' in quotes if that name is meant)",
    ),
    (
        "several YAML documents",
        "multi.yaml",
        GOOD + "---\n" + GOOD,
        18,
        "several YAML documents in one file; a config is one document (column 1)",
    ),
    (
        "custom YAML tag",
        "tag.yaml",
        "d_model: !width 768\n",
        1,
        "YAML tag '!width' refused: only plain data is read (column 10)",
    ),
    (
        "alias bomb",
        "bomb.yaml",
        _bomb(),
        None,
        "holds over 10,000 values once its aliases are expanded; refused",
    ),
    (
        "deep YAML",
        "deep.yaml",
        _nested_yaml(200),
        None,
        "nested more than 64 levels deep; refused",
    ),
    (
        "very deep YAML",
        "deeper.yaml",
        _nested_yaml(100_000),
        1,
        "malformed YAML: exceeded maximum nesting depth (column 1003)",
    ),
    (
        "deep JSON",
        "deep.json",
        _nested_json(200),
        None,
        "nested more than 64 levels deep; refused",
    ),
    (
        "very deep JSON",
        "deeper.json",
        _nested_json(100_000),
        None,
        "JSON nested too deeply to be a config",
    ),
    (
        "YAML NaN",
        "nan.yaml",
        "vocab_size: .nan\n",
        1,
        "vocab_size: nan is not a number a config can hold",
    ),
    (
        "YAML infinity",
        "inf.yaml",
        "d_model: -.inf\n",
        1,
        "d_model: -inf is not a number a config can hold",
    ),
    (
        "JSON NaN",
        "nan.json",
        '{\n"vocab_size": NaN}',
        2,
        "vocab_size: nan is not a number a config can hold",
    ),
    (
        "JSON Infinity",
        "inf.json",
        '{"vocab_size": Infinity}',
        1,
        "vocab_size: inf is not a number a config can hold",
    ),
    (
        "JSON tagged infinity in a costcalc config",
        "tagged.json",
        '{"vocab_size": 64,\n "d_model": {"__float__": "-Infinity"}}',
        2,
        "d_model: -inf is not a number a config can hold",
    ),
    (
        "JSON float overflowing to infinity",
        "overflow.json",
        '{"d_model": 1e999}',
        1,
        "d_model: inf is not a number a config can hold",
    ),
    (
        "YAML integer of thousands of digits",
        "digits.yaml",
        "n_layers: 12\nvocab_size: " + "9" * 5000 + "\n",
        2,
        "an integer of 5,000 digits is too long for a config value",
    ),
    (
        "JSON integer of thousands of digits",
        "digits.json",
        '{\n"vocab_size": ' + "9" * 5000 + "}",
        2,
        "an integer of 5,000 digits is too long for a config value",
    ),
    (
        "file over the size limit",
        "huge.yaml",
        "# " + "x" * (2 * 1024 * 1024) + "\n",
        None,
        "file is 2,097,155 bytes; a file over 1,048,576 is refused",
    ),
]


def _expect_everywhere(cli: Invoke, path: Path, line: int | None, message: str) -> None:
    """`check` reports the finding and exits 1; `params --config` prints one line and exits 1."""
    checked = cli("check", str(path), "--format", "json")
    assert checked.exit_code == 1
    [record] = json.loads(checked.stdout)
    assert record["path"] == str(path)
    assert record["findings"] == [{"field": None, "line": line, "message": message}]

    params = cli("params", "--config", str(path))
    where = f"{path}:{line}" if line is not None else str(path)
    assert params.exit_code == 1
    assert params.stdout == ""
    assert params.stderr == f"error: {where}: {message}\n"


@pytest.mark.parametrize(
    ("name", "content", "line", "message"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_broken_file(
    cli: Invoke, tmp_path: Path, name: str, content: str | bytes, line: int | None, message: str
) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    _expect_everywhere(cli, path, line, message)


def test_python_tag_is_refused_and_never_run(cli: Invoke, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = tmp_path / "evil.yaml"
    path.write_text(f'd_model: !!python/object/apply:os.system ["touch {marker}"]\n')
    _expect_everywhere(
        cli,
        path,
        1,
        "YAML tag '!!python/object/apply:os.system' refused: only plain data is read (column 10)",
    )
    name_tag = tmp_path / "name.yaml"
    name_tag.write_text("d_model: !!python/name:os.system\n")
    _expect_everywhere(
        cli,
        name_tag,
        1,
        "YAML tag '!!python/name:os.system' refused: only plain data is read (column 10)",
    )
    assert not marker.exists()


def test_huge_file_is_refused_before_it_is_read(cli: Invoke, tmp_path: Path) -> None:
    """A sparse 64 GiB file: refused from its size alone, at once."""
    path = tmp_path / "sparse.yaml"
    with path.open("wb") as handle:
        handle.truncate(64 * 2**30)
    start = time.perf_counter()
    _expect_everywhere(
        cli, path, None, "file is 68,719,476,736 bytes; a file over 1,048,576 is refused"
    )
    assert time.perf_counter() - start < 5


def test_missing_file(cli: Invoke, tmp_path: Path) -> None:
    _expect_everywhere(cli, tmp_path / "nope.yaml", None, "no such file")


def test_path_through_a_file(cli: Invoke, tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD)
    _expect_everywhere(
        cli, tmp_path / "a.yaml" / "b.yaml", None, "a part of the path is not a directory"
    )


def test_symlink_loop(cli: Invoke, tmp_path: Path) -> None:
    (tmp_path / "one.yaml").symlink_to(tmp_path / "two.yaml")
    (tmp_path / "two.yaml").symlink_to(tmp_path / "one.yaml")
    _expect_everywhere(cli, tmp_path / "one.yaml", None, "too many levels of symbolic links")


def test_fifo_is_refused_without_blocking(cli: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    _expect_everywhere(cli, path, None, "not a regular file (a device, FIFO or socket)")


def test_directory_given_as_config(cli: Invoke, tmp_path: Path) -> None:
    params = cli("params", "--config", str(tmp_path))
    assert params.exit_code == 1
    assert params.stderr == (
        f"error: {tmp_path}: is a directory without a config.json (a model folder holds "
        "config.json and its safetensors files)\n"
    )
    checked = cli("check", str(tmp_path), "-f", "json")
    assert checked.exit_code == 1
    assert json.loads(checked.stdout)[0]["findings"] == [
        {
            "field": None,
            "line": None,
            "message": "directory holds no config files (*.yaml, *.yml, *.json)",
        }
    ]


def test_unreadable_file(cli: Invoke, tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    path = tmp_path / "secret.yaml"
    path.write_text(GOOD)
    path.chmod(0)
    import costcalc.check  # noqa: F401  (imported while every module is still readable)

    with unprivileged():
        _expect_everywhere(cli, path, None, "permission denied")


def test_one_bad_file_never_stops_the_others(cli: Invoke, tmp_path: Path) -> None:
    paths = []
    for index, (_, name, content, _, _) in enumerate(CASES):
        path = tmp_path / f"{index:02d}-{name}"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        paths.append(path)
    good = tmp_path / "zz-good.yaml"
    good.write_text(GOOD)
    result = cli("check", str(tmp_path), "-f", "json")
    assert result.exit_code == 1
    records = json.loads(result.stdout)
    assert [r["path"] for r in records] == [str(p) for p in [*paths, good]]
    assert [r["findings"][0]["message"] for r in records[:-1]] == [case[4] for case in CASES]
    # transformers' count of GPT-2 small (tests/golden/hf_reference.json)
    assert records[-1]["ok"] and records[-1]["parameters"] == 124_439_808


def test_anchors_and_merge_keys_are_plain_data(cli: Invoke, tmp_path: Path) -> None:
    """`<<: *base` is not a duplicate key, and a key after it overrides the merged one."""
    path = tmp_path / "merge.yaml"
    path.write_text(
        "vocab_size: &vocab 50257\ncontext_length: 1024\nd_model: 768\nn_layers: 12\n"
        "n_heads: 12\nbudget:\n  <<: {max_params: 1M, dtype: fp32}\n  max_params: 125M\n"
    )
    result = cli("check", str(path), "-f", "json")
    assert result.exit_code == 0, result.stdout
    # transformers' count of GPT-2 small (tests/golden/hf_reference.json)
    assert json.loads(result.stdout)[0]["parameters"] == 124_439_808
