"""Limits sized to goals: the largest safetensors header and index costcalc accepts are read
within MEMORY_GOAL (256 MiB) under an address-space cap; a formula with more tensors than any
checkpoint holds is still compared with one, by its kinds of tensor."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

from costcalc.checkpoint import (
    MAX_FILE_TENSORS,
    MAX_HEADER_BYTES,
    MAX_INDEX_BYTES,
    MAX_METADATA,
    MAX_TENSORS,
    MAX_WIDE_HEADER_BYTES,
    MEMORY_GOAL,
)
from tests.conftest import FIXTURES, ROOT, Invoke

ENTRY = b'{"dtype":"U8","shape":[1],"data_offsets":[%d,%d]}'


def _write(path: Path, header: bytes, data: int) -> Path:
    with path.open("wb") as out:
        out.write(struct.pack("<Q", len(header)) + header)
        out.truncate(8 + len(header) + data)  # the data as a hole: never read
    return path


def _named_tensors(path: Path, tensors: int, limit: int, letter: bytes = b"x") -> Path:
    """``tensors`` one-byte tensors whose names are as long as fills ``limit`` bytes."""
    fixed = sum(len(ENTRY % (i, i + 1)) for i in range(tensors)) + 12 * tensors + 2
    pad = b"" if limit < fixed else letter * ((limit - fixed) // tensors // len(letter))
    entries = (b'"%08d%s":' % (i, pad) + ENTRY % (i, i + 1) for i in range(tensors))
    header = b"{" + b",".join(entries) + b"}"
    assert len(header) <= limit
    return _write(path, header, tensors)


def _largest_headers(folder: Path) -> list[Path]:
    """The largest headers the limits let through: the most tensors with names as long as the
    byte limit allows, the same beyond ASCII."""
    emoji = "\N{GRINNING FACE}".encode()
    return [
        _named_tensors(folder / "names.safetensors", MAX_FILE_TENSORS, MAX_HEADER_BYTES),
        _named_tensors(
            folder / "wide.safetensors", MAX_FILE_TENSORS // 10, MAX_WIDE_HEADER_BYTES, emoji
        ),
    ]


def _metadata(folder: Path, limit: int) -> Path:
    """The most metadata entries, their values as long as fills ``limit`` bytes."""
    value = (limit - 30) // MAX_METADATA - 16
    entries = (b'"%08d":"%s"' % (i, b"m" * value) for i in range(MAX_METADATA))
    return _write(
        folder / "metadata.safetensors", b'{"__metadata__":{' + b",".join(entries) + b"}}", 0
    )


def _index(folder: Path, tensors: int, limit: int) -> Path:
    """An index of ``tensors`` entries whose names fill ``limit`` bytes; its shard is not
    there, so it is read whole and then refused."""
    name = (limit - 64) // tensors - 30
    weights = (b'"%08d%s":"a.safetensors"' % (i, b"w" * name) for i in range(tensors))
    path = folder / "model.safetensors.index.json"
    path.write_bytes(b'{"metadata":{},"weight_map":{' + b",".join(weights) + b"}}")
    assert path.stat().st_size <= limit
    return path


def _read_capped(cap: int, paths: list[Path]) -> list[str]:
    """What reading each path gives (its tensors, or why it is refused) in a fresh process
    whose address space may grow by no more than ``cap`` bytes."""
    done = subprocess.run(
        [sys.executable, "-c", READ_CAPPED, str(cap), *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.stderr == ""
    return done.stdout.splitlines()


READ_CAPPED = """
import resource, sys
from costcalc.checkpoint import read_checkpoint
from costcalc.errors import CheckpointError
with open("/proc/self/statm") as statm:
    in_use = int(statm.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (in_use + int(sys.argv[1]),) * 2)
for path in sys.argv[2:]:
    try:
        print(len(read_checkpoint(path).tensors))
    except CheckpointError as error:
        print(error.reason)
"""


def test_the_largest_headers_are_read_within_the_memory_goal(tmp_path: Path) -> None:
    assert _read_capped(MEMORY_GOAL, _largest_headers(tmp_path)) == [
        str(MAX_FILE_TENSORS),
        str(MAX_FILE_TENSORS // 10),
    ]


def test_an_index_and_metadata_are_read_within_the_memory_goal(tmp_path: Path) -> None:
    """An index's memory is its text, its names and a map entry each, metadata's its text and
    values: linear in their size, so a quarter of the largest within a quarter of the goal holds
    for the whole (full-size ones take seconds to write and read)."""
    paths = [
        _index(tmp_path, MAX_TENSORS // 4, MAX_INDEX_BYTES // 4),
        _metadata(tmp_path, MAX_HEADER_BYTES // 4),
    ]
    refused = f"weight_map names shard 'a.safetensors', which is not in {tmp_path}"
    # one process each: the goal holds per file, and what one read leaves to the allocator's
    # arenas is not memory the next read may count on
    assert [_read_capped(MEMORY_GOAL // 4, [path]) for path in paths] == [[refused], ["0"]]


def test_a_formula_of_more_tensors_than_any_checkpoint_is_compared(
    cli: Invoke, tmp_path: Path
) -> None:
    """GPT-2 of 100,000 layers predicts 1,200,004 tensors: compared with its folder's one-tensor
    checkpoint by kinds of tensor, the formula's total is its own, never 0."""
    config = json.loads((FIXTURES / "hf" / "gpt2.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(config | {"n_layer": 100_000}))
    _write(tmp_path / "model.safetensors", b"{" + b'"wte.weight":' + ENTRY % (0, 1) + b"}", 1)
    result = cli("params", "-c", str(tmp_path), "-f", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    formula = data["checkpoint"]["formula"]
    assert formula["parameters_total"] == data["parameters"]["total"] > 7 * 10**11
    assert formula["difference"] == 1 - formula["parameters_total"]
    assert formula["unexplained"] == ["wte.weight"]
