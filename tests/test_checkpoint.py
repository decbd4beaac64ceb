"""Reading safetensors headers: the same tensors, totals and bytes as the safetensors library
reports for files it wrote itself, and one clear CheckpointError, naming the file, for every
broken or hostile header, index or path, without a traceback and without blocking."""

from __future__ import annotations

import json
import os
import struct
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import safetensors
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

import costcalc.checkpoint as checkpoint_module
from costcalc.checkpoint import (
    DTYPE_BITS,
    INDEX_NAME,
    MAX_HEADER_BYTES,
    Checkpoint,
    find_checkpoint,
    read_checkpoint,
    read_header,
)
from costcalc.checkpoint_compare import compare_tensors
from costcalc.errors import CheckpointError, CostcalcError

NUMPY_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": np.bool_,
}


def library_view(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """What the safetensors library itself reads: name -> (dtype, shape)."""
    with safetensors.safe_open(str(path), framework="numpy") as handle:
        return {
            key: (handle.get_slice(key).get_dtype(), tuple(handle.get_slice(key).get_shape()))
            for key in handle.keys()  # noqa: SIM118 (a handle, not a dict)
        }


def costcalc_view(checkpoint: Checkpoint) -> dict[str, tuple[str, tuple[int, ...]]]:
    return {tensor.name: (tensor.dtype, tensor.shape) for tensor in checkpoint.tensors}


def write_raw(path: Path, header: Any, data: bytes = b"", length: int | None = None) -> Path:
    """A safetensors file written by hand: for dtypes NumPy lacks and for broken headers."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + data)
    return path


def entry(dtype: Any, shape: list[Any], begin: int, end: int) -> dict[str, Any]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


# --- files the library wrote ------------------------------------------------------------------


def test_library_file_read_back_exactly(tmp_path: Path) -> None:
    arrays = {
        "wte.weight": np.ones((50, 16), np.float32),
        "h.0.attn.weight": np.ones((16, 48), np.float16),
        "h.0.attn.bias": np.zeros(48, np.float16),
        "position_ids": np.arange(7, dtype=np.int64),
        "mask": np.array([[True, False]]),
        "scale": np.array(3.0, np.float64),  # a scalar: shape [] holds one element
    }
    path = tmp_path / "model.safetensors"
    save_file(arrays, str(path), metadata={"format": "np"})

    checkpoint = read_checkpoint(path)

    assert costcalc_view(checkpoint) == library_view(path)
    assert [tensor.name for tensor in checkpoint.tensors] == sorted(arrays)
    assert checkpoint.parameters_total == sum(array.size for array in arrays.values()) == 1626
    assert checkpoint.tensor_bytes_total == sum(array.nbytes for array in arrays.values())
    assert dict(checkpoint.bytes_by_dtype) == {
        "BOOL": 2,
        "F16": 1632,
        "F32": 3200,
        "F64": 8,
        "I64": 56,
    }
    assert dict(checkpoint.parameters_by_dtype) == {
        "BOOL": 2,
        "F16": 816,
        "F32": 800,
        "F64": 1,
        "I64": 7,
    }
    (file,) = checkpoint.files
    assert file.file_bytes == path.stat().st_size == checkpoint.file_bytes_total
    assert file.file_bytes == 8 + file.header_bytes + file.data_bytes
    assert file.data_bytes == checkpoint.tensor_bytes_total
    assert file.metadata == (("format", "np"),)
    assert checkpoint.index is None and checkpoint.declared_total_size is None


def test_only_the_header_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.safetensors"
    save_file({"w": np.zeros((512, 512), np.float32)}, str(path))
    asked: list[int] = []
    real_read = os.read

    def counting_read(fd: int, count: int) -> bytes:
        asked.append(count)
        return real_read(fd, count)

    monkeypatch.setattr(os, "read", counting_read)
    header = read_header(path)
    assert sum(asked) == 8 + header.header_bytes < 200
    assert header.data_bytes == 512 * 512 * 4


def test_dtypes_numpy_lacks_written_by_hand_are_also_what_the_library_reads(
    tmp_path: Path,
) -> None:
    header = {
        "a": entry("BF16", [4, 3], 0, 24),
        "b": entry("F8_E4M3", [5], 24, 29),
        "c": entry("F4", [2, 3], 29, 32),  # six 4-bit values in 3 bytes
        "d": entry("F6_E2M3", [4], 32, 35),  # four 6-bit values in 3 bytes
        "e": entry("U32", [2], 35, 43),
        "__metadata__": {"quant": "none"},
    }
    path = write_raw(tmp_path / "hand.safetensors", header, bytes(43))
    checkpoint = read_checkpoint(path)
    assert costcalc_view(checkpoint) == library_view(path)
    assert checkpoint.parameters_total == 12 + 5 + 6 + 4 + 2
    assert dict(checkpoint.bytes_by_dtype) == {
        "BF16": 24,
        "F4": 3,
        "F6_E2M3": 3,
        "F8_E4M3": 5,
        "U32": 8,
    }


def test_packed_quantized_tensors_count_stored_elements(tmp_path: Path) -> None:
    """GPTQ-style: eight 4-bit weights per I32 are one stored element each."""
    qweight = np.zeros((16 // 8, 32), np.int32)
    path = tmp_path / "q.safetensors"
    save_file({"qweight": qweight, "scales": np.ones((1, 32), np.float16)}, str(path))
    checkpoint = read_checkpoint(path)
    assert dict(checkpoint.parameters_by_dtype) == {"F16": 32, "I32": 64}
    assert dict(checkpoint.bytes_by_dtype) == {"F16": 64, "I32": 256}


def test_empty_and_zero_sized_tensors(tmp_path: Path) -> None:
    path = tmp_path / "z.safetensors"
    save_file({"empty": np.zeros((0, 8), np.float32), "one": np.ones(1, np.uint8)}, str(path))
    checkpoint = read_checkpoint(path)
    assert costcalc_view(checkpoint) == library_view(path)
    assert checkpoint.parameters_total == 1
    nothing = write_raw(tmp_path / "nothing.safetensors", {})
    assert read_checkpoint(nothing).tensors == ()


def test_offsets_need_not_be_in_name_order(tmp_path: Path) -> None:
    header = {"z": entry("U8", [2], 0, 2), "a": entry("U8", [3], 2, 5)}
    path = write_raw(tmp_path / "order.safetensors", header, bytes(5))
    assert [tensor.name for tensor in read_checkpoint(path).tensors] == ["a", "z"]


# --- sharded checkpoints and folders ----------------------------------------------------------


def write_sharded(folder: Path) -> dict[str, np.ndarray]:
    shards = {
        "model-00001-of-00002.safetensors": {
            "embed.weight": np.ones((32, 8), np.float32),
            "layers.0.w": np.ones((8, 8), np.float16),
        },
        "model-00002-of-00002.safetensors": {
            "layers.1.w": np.ones((8, 8), np.float16),
            "head.weight": np.ones((32, 8), np.float32),
        },
    }
    weight_map = {}
    for shard, arrays in shards.items():
        save_file(arrays, str(folder / shard))
        weight_map.update(dict.fromkeys(arrays, shard))
    total = sum(array.nbytes for arrays in shards.values() for array in arrays.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / INDEX_NAME).write_text(json.dumps(index))
    return {name: array for arrays in shards.values() for name, array in arrays.items()}


def test_sharded_checkpoint_through_its_index(tmp_path: Path) -> None:
    arrays = write_sharded(tmp_path)
    expected: dict[str, tuple[str, tuple[int, ...]]] = {}
    for shard in sorted(tmp_path.glob("*.safetensors")):
        expected.update(library_view(shard))

    for given_path in (tmp_path, tmp_path / INDEX_NAME):
        checkpoint = read_checkpoint(given_path)
        assert costcalc_view(checkpoint) == expected
        assert checkpoint.parameters_total == sum(array.size for array in arrays.values()) == 640
        assert checkpoint.tensor_bytes_total == checkpoint.declared_total_size == 2304
        assert checkpoint.index == str(tmp_path / INDEX_NAME)
        assert [Path(file.path).name for file in checkpoint.files] == [
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors",
        ]
        assert [file.tensors for file in checkpoint.files] == [2, 2]
        assert checkpoint.file_bytes_total == sum(
            path.stat().st_size for path in tmp_path.glob("*.safetensors")
        )


def test_folder_without_index_reads_model_safetensors_else_every_file(tmp_path: Path) -> None:
    save_file({"a": np.ones(3, np.float32)}, str(tmp_path / "model.safetensors"))
    save_file({"b": np.ones(5, np.float32)}, str(tmp_path / "other.safetensors"))
    assert read_checkpoint(tmp_path).parameters_total == 3
    (tmp_path / "model.safetensors").unlink()
    save_file({"c": np.ones(7, np.float32)}, str(tmp_path / "more.safetensors"))
    assert read_checkpoint(tmp_path).parameters_total == 12


def test_a_hugging_face_cache_snapshot_of_symlinks_is_read(tmp_path: Path) -> None:
    blobs, snapshot = tmp_path / "blobs", tmp_path / "snapshots" / "abc"
    blobs.mkdir()
    snapshot.mkdir(parents=True)
    write_sharded(blobs)
    for blob in blobs.iterdir():
        (snapshot / blob.name).symlink_to(Path("../..") / "blobs" / blob.name)
    assert read_checkpoint(snapshot).parameters_total == 640


@pytest.mark.parametrize("link", [INDEX_NAME, "model-00002-of-00002.safetensors"])
def test_a_link_to_a_removed_blob_is_named_not_taken_for_no_checkpoint(
    tmp_path: Path, link: str
) -> None:
    """A cache snapshot whose index (or a shard) links to a blob that was removed: the link is
    named, by every path that looks for a folder's checkpoint."""
    write_sharded(tmp_path)
    (tmp_path / link).unlink()
    (tmp_path / link).symlink_to(Path("../blobs/removed"))
    words = "a link to ../blobs/removed, which does not exist"
    assert refused(tmp_path, tmp_path / link).reason == words
    with pytest.raises(CheckpointError, match=words):
        find_checkpoint(tmp_path)


# --- broken and hostile input -----------------------------------------------------------------

GOOD = {"w": entry("F32", [2, 2], 0, 16)}

# (case, header (JSON value or raw bytes), data, forced length or None, words in the message)
HOSTILE: list[tuple[str, Any, bytes, int | None, str]] = [
    ("length beyond file", GOOD, bytes(16), 10_000, "runs past the end of the file"),
    ("huge length", GOOD, bytes(16), 2**64 - 1, "over the 100,000,000-byte limit"),
    ("just over the limit", GOOD, bytes(16), MAX_HEADER_BYTES + 1, "byte limit"),
    ("not JSON", b"{'w': 1}", b"", None, "is not JSON"),
    ("not UTF-8", b'{"w\xff": 1}', b"", None, "is not UTF-8"),
    ("a JSON list", [1, 2], b"", None, "header is a JSON list; expected an object"),
    ("NaN", b'{"w": NaN}', b"", None, "NaN is not JSON"),
    ("nested", b"[" * 100_000 + b"]" * 100_000, b"", None, "header is a JSON list"),
    (
        "nested in an entry",
        b'{"w": {"dtype": "U8", "shape": ' + b"[" * 20_000 + b"]" * 20_000 + b"}}",
        b"",
        None,
        "nests too deeply",
    ),
    (
        "entry too long",
        b'{"w": {"dtype": "U8", "shape": [' + b" " * 70_000 + b'1], "data_offsets": [0, 1]}}',
        bytes(1),
        None,
        "is no object of dtype, shape and data_offsets within 65,536 characters",
    ),
    ("object in an entry", {"w": {"dtype": {"a": 1}}}, b"", None, "is no object of dtype"),
    ("trailing data", b"{} x", b"", None, "Extra data (character 3)"),
    ("unquoted name", b"{w: 1}", b"", None, "property name enclosed in double quotes"),
    ("metadata not an object", {"__metadata__": [1]}, b"", None, "__metadata__ is a JSON list"),
    ("duplicate metadata", b'{"__metadata__": {}, "__metadata__": {}}', b"", None, "duplicate"),
    (
        "duplicate metadata key",
        b'{"__metadata__": {"a": "", "a": ""}}',
        b"",
        None,
        "duplicate key 'a'",
    ),
    ("duplicate entry key", b'{"w": {"dtype": "U8", "dtype": "U8"}}', b"", None, "duplicate"),
    (
        "duplicate name",
        b'{"w": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}, "w": {}}',
        b"",
        None,
        "duplicate key 'w'",
    ),
    ("bad dtype", {"w": entry("F33", [2], 0, 8)}, bytes(8), None, "unknown dtype 'F33'"),
    ("dtype not a string", {"w": entry(7, [2], 0, 8)}, bytes(8), None, "unknown dtype"),
    ("no shape", {"w": {"dtype": "F32", "data_offsets": [0, 4]}}, bytes(4), None, "no 'shape'"),
    (
        "shape not a list",
        {"w": {"dtype": "F32", "shape": 4, "data_offsets": [0, 16]}},
        bytes(16),
        None,
        "expected a list of sizes",
    ),
    ("negative dim", {"w": entry("F32", [-1, 4], 0, 16)}, bytes(16), None, "has -1; expected"),
    ("float dim", {"w": entry("F32", [2.0, 2], 0, 16)}, bytes(16), None, "has 2.0"),
    ("bool dim", {"w": entry("U8", [True], 0, 1)}, bytes(1), None, "has true"),
    (
        "huge shape",
        {"w": entry("F32", [2**62, 2**62], 0, 16)},
        bytes(16),
        None,
        "holds about 2**124 elements",
    ),
    (
        "dim beyond u64",
        {"w": entry("U8", [2**64], 0, 1)},
        bytes(1),
        None,
        "has 18446744073709551616",
    ),
    (
        "absurd digits",
        b'{"w": {"dtype": "U8", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 1]}}',
        bytes(1),
        None,
        "an integer of 5,000 digits",
    ),
    ("too many dims", {"w": entry("U8", [1] * 65, 0, 1)}, bytes(1), None, "65 dimensions"),
    (
        "offsets not a pair",
        {"w": entry("F32", [1], 0, 4) | {"data_offsets": [0]}},
        bytes(4),
        None,
        "expected [begin, end]",
    ),
    ("offsets reversed", {"w": entry("U8", [0], 4, 0)}, bytes(4), None, "end before they begin"),
    (
        "size mismatch",
        {"w": entry("F32", [2, 2], 0, 12)},
        bytes(12),
        None,
        "is 16 bytes but data_offsets [0, 12] span 12",
    ),
    (
        "overlap",
        {"a": entry("U8", [4], 0, 4), "b": entry("U8", [4], 2, 6)},
        bytes(6),
        None,
        "tensor 'b': data_offsets [2, 6] overlap 'a'",
    ),
    (
        "hole",
        {"a": entry("U8", [4], 0, 4), "b": entry("U8", [4], 5, 9)},
        bytes(9),
        None,
        "leave bytes 4..5 belonging to no tensor",
    ),
    ("not from zero", {"a": entry("U8", [4], 4, 8)}, bytes(8), None, "leave bytes 0..4"),
    (
        "past the data",
        {"a": entry("U8", [4], 0, 4)},
        bytes(2),
        None,
        "run past the end of the data",
    ),
    ("bytes after the last tensor", GOOD, bytes(20), None, "4 bytes after the last tensor"),
    ("sub-byte leftover", {"a": entry("F4", [3], 0, 2)}, bytes(2), None, "not whole bytes"),
    ("metadata not strings", {"__metadata__": {"n": 1}}, b"", None, "'n' is a JSON number"),
    ("tensor not an object", {"w": [1, 2]}, b"", None, "tensor 'w' is a JSON list"),
]


@pytest.mark.parametrize(
    ("header", "data", "length", "words"),
    [case[1:] for case in HOSTILE],
    ids=[case[0] for case in HOSTILE],
)
def test_hostile_header_is_one_clear_error(
    tmp_path: Path, header: Any, data: bytes, length: int | None, words: str
) -> None:
    path = write_raw(tmp_path / "bad.safetensors", header, data, length)
    error = refused(path)
    assert words in error.reason
    assert len(str(error)) < 400


def refused(path: Path, named: Path | None = None) -> CheckpointError:
    """The one CheckpointError reading ``path`` raises; it names ``named`` (default ``path``)."""
    with pytest.raises(CheckpointError) as caught:
        read_checkpoint(path)
    error = caught.value
    assert isinstance(error, CostcalcError) and isinstance(error, ValueError)
    assert error.path == str(named or path)
    assert str(error).startswith(f"{named or path}: ")
    assert (error.__cause__ is None and error.__suppress_context__) or error.__context__ is None
    return error


@pytest.mark.parametrize("size", [0, 3, 7])
def test_truncated_file(tmp_path: Path, size: int) -> None:
    path = tmp_path / "short.safetensors"
    path.write_bytes(bytes(size))
    assert "starts with an 8-byte header length" in refused(path).reason


def test_truncated_header_and_data(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    save_file({"w": np.ones((4, 4), np.float32)}, str(path))
    whole = path.read_bytes()
    path.write_bytes(whole[:20])
    assert "runs past the end of the file" in refused(path).reason
    path.write_bytes(whole[:-1])
    assert "run past the end of the data" in refused(path).reason


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            read_checkpoint(fifo)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():  # unblock the reader so the test run can end
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    (error,) = outcome
    assert isinstance(error, CheckpointError)
    assert "not a regular file" in error.reason and error.path == str(fifo)


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    assert "no such file" in refused(tmp_path / "nope.safetensors").reason
    assert "no model.safetensors.index.json" in refused(tmp_path).reason


# --- broken indexes ---------------------------------------------------------------------------


def rewrite_index(folder: Path, change: Any) -> Path:
    index = folder / INDEX_NAME
    data = json.loads(index.read_text())
    change(data)
    index.write_text(json.dumps(data))
    return index


@pytest.mark.parametrize(
    "shard",
    ["../x.safetensors", "/etc/passwd", "a/../../x.safetensors", "..\\x.safetensors", ""],
)
def test_index_path_traversal_is_refused(tmp_path: Path, shard: str) -> None:
    write_sharded(tmp_path)
    (tmp_path.parent / "x.safetensors").write_bytes(b"")
    index = rewrite_index(tmp_path, lambda data: data["weight_map"].update({"w": shard}))
    assert "expected a file name inside the index's folder" in refused(tmp_path, index).reason


def test_index_naming_a_missing_shard(tmp_path: Path) -> None:
    write_sharded(tmp_path)
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    error = refused(tmp_path, tmp_path / INDEX_NAME)
    assert "names shard 'model-00002-of-00002.safetensors', which is not in" in error.reason


def test_index_listing_a_tensor_the_shard_lacks(tmp_path: Path) -> None:
    write_sharded(tmp_path)
    index = rewrite_index(
        tmp_path,
        lambda data: data["weight_map"].update({"ghost": "model-00001-of-00002.safetensors"}),
    )
    error = refused(tmp_path, index)
    assert "puts tensor 'ghost' in 'model-00001-of-00002.safetensors'" in error.reason


def test_shard_holding_a_tensor_the_index_does_not_list(tmp_path: Path) -> None:
    write_sharded(tmp_path)
    rewrite_index(tmp_path, lambda data: data["weight_map"].pop("head.weight"))
    error = refused(tmp_path, tmp_path / "model-00002-of-00002.safetensors")
    assert "holds tensor 'head.weight', but model.safetensors.index.json does not list it" in (
        error.reason
    )


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("[]", "index is a JSON list"),
        ('{"metadata": {}}', "weight_map is missing"),
        ('{"weight_map": {}}', "weight_map is empty"),
        ('{"weight_map": {"w": 3}}', "weight_map 'w' is a JSON number"),
        ("{", "index is not JSON"),
    ],
)
def test_malformed_index(tmp_path: Path, content: str, words: str) -> None:
    index = tmp_path / INDEX_NAME
    index.write_text(content)
    assert words in refused(tmp_path, index).reason


def test_same_tensor_in_two_files_without_index(tmp_path: Path) -> None:
    save_file({"w": np.ones(2, np.float32)}, str(tmp_path / "a.safetensors"))
    save_file({"w": np.ones(2, np.float32)}, str(tmp_path / "b.safetensors"))
    error = refused(tmp_path, tmp_path / "b.safetensors")
    assert "tensor 'w' is also in" in error.reason


# --- properties -------------------------------------------------------------------------------

arrays_strategy = st.dictionaries(
    keys=st.text(
        st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=12
    ).filter(lambda name: name != "__metadata__"),
    values=st.tuples(
        st.sampled_from(sorted(NUMPY_DTYPES)),
        st.lists(st.integers(0, 5), min_size=0, max_size=4),
    ),
    max_size=8,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spec=arrays_strategy)
def test_any_file_the_library_writes_is_read_back_exactly(
    tmp_path: Path, spec: dict[str, tuple[str, list[int]]]
) -> None:
    arrays = {name: np.zeros(shape, NUMPY_DTYPES[dtype]) for name, (dtype, shape) in spec.items()}
    path = tmp_path / "p.safetensors"
    save_file(arrays, str(path))
    checkpoint = read_checkpoint(path)
    assert costcalc_view(checkpoint) == library_view(path)
    assert checkpoint.parameters_total == sum(array.size for array in arrays.values())
    assert checkpoint.tensor_bytes_total == sum(array.nbytes for array in arrays.values())
    assert checkpoint.file_bytes_total == path.stat().st_size
    for dtype, total in checkpoint.bytes_by_dtype.items():
        assert total * 8 == checkpoint.parameters_by_dtype[dtype] * DTYPE_BITS[dtype]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(0, 400), position=st.integers(0, 400), byte=st.integers(0, 255))
def test_damaged_files_are_refused_cleanly_or_read_as_the_library_reads_them(
    tmp_path: Path, cut: int, position: int, byte: int
) -> None:
    good = tmp_path / "good.safetensors"
    save_file({"a": np.ones((3, 4), np.float16), "b": np.ones(5, np.int32)}, str(good))
    raw = bytearray(good.read_bytes())
    raw[position % len(raw)] = byte
    path = tmp_path / "damaged.safetensors"
    path.write_bytes(bytes(raw[: len(raw) - cut % 8] if cut < 200 else raw))
    try:
        checkpoint = read_checkpoint(path)
    except CheckpointError as error:
        assert error.path == str(path)
        return
    assert costcalc_view(checkpoint) == library_view(path)


# --- comparing with a formula's tensors -------------------------------------------------------


def test_compare_by_names_then_shapes(tmp_path: Path) -> None:
    write_sharded(tmp_path)
    header = read_checkpoint(tmp_path).tensors
    same = compare_tensors(
        header,
        [
            ("embed.weight", (32, 8)),
            ("head.weight", [32, 8]),
            (None, (8, 8)),
            ("blocks.1.mlp", (8, 8)),  # names differ between families: matched by shape
        ],
    )
    assert same.totals_equal and same.exact and same.difference == 0
    assert [pair[:2] for pair in same.matched] == [
        ("embed.weight", "embed.weight"),
        ("head.weight", "head.weight"),
        ("layers.0.w", None),
        ("layers.1.w", "blocks.1.mlp"),
    ]

    tied = compare_tensors(header, [("embed.weight", (32, 8)), ("l", (8, 8)), ("l", (8, 8))])
    assert tied.difference == 256 and not tied.totals_equal
    assert [tensor.name for tensor in tied.unexplained] == ["head.weight"]
    assert tied.missing == ()

    transposed = compare_tensors(
        header, [("x", (8, 32)), ("y", (32, 8)), ("z", (64,)), ("t", (8, 8))]
    )
    assert transposed.totals_equal and not transposed.exact
    assert [tensor.name for tensor in transposed.unexplained] == ["head.weight", "layers.1.w"]
    assert transposed.missing == (("x", (8, 32), 1), ("z", (64,), 1))


def test_compare_refuses_a_malformed_prediction() -> None:
    with pytest.raises(ValueError, match="not non-negative ints"):
        compare_tensors([], [("w", (-1, 3))])


def test_limits_are_checked_as_entries_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "model.safetensors"
    save_file({f"t{i}": np.ones(2, np.float32) for i in range(5)}, str(path))
    monkeypatch.setattr(checkpoint_module, "MAX_FILE_TENSORS", 4)
    assert "header lists over 4 tensors; at most that many are read from one file" in (
        refused(path).reason
    )
    write_raw(path, {"__metadata__": {f"k{i}": "" for i in range(5)}})
    monkeypatch.setattr(checkpoint_module, "MAX_METADATA", 4)
    assert "__metadata__ holds over 4 entries; at most that many are read" in refused(path).reason
    write_sharded(tmp_path)
    index = tmp_path / "model.safetensors.index.json"
    assert "weight_map lists over 4 tensors" not in str(read_checkpoint(index))
    monkeypatch.setattr(checkpoint_module, "MAX_TENSORS", 3)
    assert "weight_map lists over 3 tensors; at most that many" in refused(index).reason
    monkeypatch.setattr(checkpoint_module, "MAX_INDEX_VALUES", 5)
    assert "index holds 7 JSON values; at most 5 are parsed" in refused(index).reason
