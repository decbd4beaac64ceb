"""Exact parameter counts and bytes from a safetensors checkpoint's headers, never its weights.

A safetensors file is an 8-byte little-endian unsigned header length ``N``, then ``N`` bytes of
UTF-8 JSON, then the tensor data::

    {"__metadata__": {"format": "pt"},
     "wte.weight": {"dtype": "F32", "shape": [50257, 768], "data_offsets": [0, 154389504]}, ...}

``data_offsets`` are ``[begin, end)`` byte offsets into the data, which starts right after the
header. Only ``8 + N`` bytes of each file are read; its size comes from ``fstat``. Every header is
checked as the safetensors library checks it (offsets contiguous from 0 with no hole and no
overlap, each span equal to the tensor's elements times its dtype's size, the last tensor ending
exactly at the end of the file) plus limits of its own (below), so a header that would not load,
or that only a hostile writer would produce, is a :class:`~costcalc.errors.CheckpointError`
naming the file and what was expected, never a traceback and never a large allocation.

Counts are of elements *as stored*: a quantized checkpoint that packs eight 4-bit weights into
one ``I32`` counts one element there, and its bytes are the bytes on disk. ``F4`` and the 6-bit
dtypes count one element per 4- or 6-bit value, as their shapes say.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

from costcalc.errors import CheckpointError
from costcalc.files import os_reason

INDEX_NAME = "model.safetensors.index.json"
"""The index a sharded checkpoint's folder holds (``weight_map``: tensor name -> shard file)."""

SINGLE_NAME = "model.safetensors"
"""The file an unsharded checkpoint's folder holds."""

MAX_HEADER_BYTES = 100_000_000
"""Longest JSON header read (and longest index file): the safetensors library's own limit."""

MAX_JSON_ITEMS = 10_000_000
"""Most commas, ``[`` and ``{`` a header or index may hold, counted before it is parsed.

This bounds the number of JSON values Python would build (about 8 per tensor), and so the memory
parsing takes, whatever the header's shape: a real header has a few per tensor.
"""

MAX_TENSORS = 1_000_000
"""Most tensors in one checkpoint, all shards together (the largest real ones have ~10**5)."""

MAX_FILES = 10_000
"""Most shard files in one checkpoint, and most ``*.safetensors`` looked at in a folder."""

MAX_DIMS = 64
"""Most dimensions in one tensor's shape (NumPy's and PyTorch's limit)."""

MAX_INT_DIGITS = 20
"""Longest integer a header may spell out: 2**64 - 1 has 20 digits."""

MAX_U64 = 2**64 - 1
"""Largest dimension, offset or element count: the library's ``usize`` on a 64-bit machine."""

DTYPE_BITS: Mapping[str, int] = MappingProxyType(
    {
        "BOOL": 8,
        "F4": 4,
        "F6_E2M3": 6,
        "F6_E3M2": 6,
        "U8": 8,
        "I8": 8,
        "F8_E5M2": 8,
        "F8_E4M3": 8,
        "F8_E8M0": 8,
        "F8_E4M3FNUZ": 8,
        "F8_E5M2FNUZ": 8,
        "I16": 16,
        "U16": 16,
        "F16": 16,
        "BF16": 16,
        "I32": 32,
        "U32": 32,
        "F32": 32,
        "C64": 64,
        "F64": 64,
        "I64": 64,
        "U64": 64,
    }
)
"""Every dtype the safetensors format names, with the bits one element takes."""


@dataclass(frozen=True)
class TensorInfo:
    """One tensor as its header describes it: elements and bytes as stored."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    numel: int
    """Elements as stored (the product of ``shape``; 1 for a scalar)."""
    nbytes: int
    """Bytes on disk: ``end - begin`` of its ``data_offsets``."""
    file: str
    """The file that holds it, as the path was given or joined to the folder."""


@dataclass(frozen=True)
class FileInfo:
    """One ``.safetensors`` file: its sizes and what its header holds."""

    path: str
    file_bytes: int
    """The file's size on disk: ``8 + header_bytes + data_bytes``."""
    header_bytes: int
    data_bytes: int
    tensors: int
    parameters: int
    metadata: tuple[tuple[str, str], ...]
    """The header's ``__metadata__`` pairs, sorted by key (empty when it has none)."""


@dataclass(frozen=True)
class Checkpoint:
    """What a checkpoint's headers say: every tensor, and totals by dtype and by file."""

    source: str
    """The path :func:`read_checkpoint` was given."""
    tensors: tuple[TensorInfo, ...]
    """Every tensor, sorted by name."""
    files: tuple[FileInfo, ...]
    """Every file read, sorted by path."""
    parameters_total: int
    """Sum of every tensor's elements as stored (packed quantized elements count once)."""
    tensor_bytes_total: int
    """Sum of every tensor's bytes on disk (headers excluded)."""
    file_bytes_total: int
    """Sum of the files' sizes (headers included)."""
    bytes_by_dtype: Mapping[str, int] = field(hash=False)
    """Tensor bytes on disk per dtype, dtypes sorted by name."""
    parameters_by_dtype: Mapping[str, int] = field(hash=False)
    """Elements as stored per dtype, dtypes sorted by name."""
    index: str | None = None
    """The index file used, if any."""
    declared_total_size: int | None = None
    """The index's ``metadata.total_size`` as written (not checked: writers disagree on it)."""


def is_checkpoint_file(path: str | os.PathLike[str]) -> bool:
    """A path that names safetensors data itself: a ``.safetensors`` file or an index."""
    name = Path(path).name
    return name.endswith(".safetensors") or name.endswith(".safetensors.index.json")


def find_checkpoint(folder: str | os.PathLike[str]) -> Checkpoint | None:
    """The checkpoint in a model folder, or None when the folder holds no safetensors file."""
    path = Path(folder)
    try:
        present = (path / INDEX_NAME).exists() or any(path.glob("*.safetensors"))
    except OSError:
        present = False
    return read_checkpoint(path) if present else None


def read_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Read a checkpoint's safetensors headers: a ``.safetensors`` file, an index, or a folder.

    A folder is read through its ``model.safetensors.index.json`` if it has one, else its
    ``model.safetensors``, else every ``*.safetensors`` directly in it. A ``.json`` path is read
    as an index. Anything else is read as one safetensors file.

    Raises :class:`~costcalc.errors.CheckpointError` for anything missing, unreadable, malformed,
    inconsistent or beyond the module's limits.
    """
    source = os.fspath(path)
    info = _stat(source, "a .safetensors file, an index or a folder")
    if stat.S_ISDIR(info.st_mode):
        return _read_folder(Path(source), source)
    if source.lower().endswith(".json"):
        return read_index(Path(source), source)
    header = read_header(source)
    return build_checkpoint(source, [header], None, None)


@dataclass(frozen=True)
class Header:
    """One file's header, checked: its tensors, metadata and sizes."""

    path: str
    file_bytes: int
    header_bytes: int
    tensors: tuple[TensorInfo, ...]
    """Sorted by ``data_offsets``, as they lie in the file."""
    metadata: tuple[tuple[str, str], ...]

    @property
    def data_bytes(self) -> int:
        return self.file_bytes - 8 - self.header_bytes


def read_header(path: str | os.PathLike[str]) -> Header:
    """Read and check one safetensors file's header, reading ``8 + N`` bytes and nothing more."""
    name = os.fspath(path)
    fd = _open(name)
    try:
        info = os.fstat(fd)
        _check_regular(name, info, "a .safetensors file")
        size = info.st_size
        if size < 8:
            raise CheckpointError(
                name,
                f"file is {size} bytes; a safetensors file starts with an 8-byte header length",
            )
        n = int.from_bytes(_read_exact(fd, 8, name), "little")
        check_header_length(name, n, size)
        raw = _read_exact(fd, n, name)
    finally:
        os.close(fd)
    return parse_header(name, size, n, raw)


def check_header_length(name: str, n: int, size: int) -> None:
    """Refuse a header length ``n`` over the limit or past the end of a ``size``-byte file."""
    if n > MAX_HEADER_BYTES:
        raise CheckpointError(
            name,
            f"header length {n:,} bytes is over the {MAX_HEADER_BYTES:,}-byte limit "
            "(not a safetensors file, or a corrupt one)",
        )
    if 8 + n > size:
        raise CheckpointError(
            name,
            f"header length {n:,} bytes runs past the end of the file ({size:,} bytes); "
            "expected the header to fit in the file",
        )


def parse_header(name: str, size: int, n: int, raw: bytes) -> Header:
    """The checked header of a ``size``-byte file whose ``n``-byte JSON header is ``raw``."""
    data = _parse_json(raw, name, "header")
    tensors, metadata = _check_header(data, name, size - 8 - n)
    return Header(name, size, n, tensors, metadata)


def _check_header(
    data: Any, name: str, data_len: int
) -> tuple[tuple[TensorInfo, ...], tuple[tuple[str, str], ...]]:
    if not isinstance(data, dict):
        raise CheckpointError(
            name, f"header is a JSON {_kind(data)}; expected an object of tensor names"
        )
    metadata = _check_metadata(data.get("__metadata__"), name)
    entries = [(key, value) for key, value in data.items() if key != "__metadata__"]
    if len(entries) > MAX_TENSORS:
        raise CheckpointError(
            name, f"header lists {len(entries):,} tensors; at most {MAX_TENSORS:,} are read"
        )
    spans: list[tuple[int, int, TensorInfo]] = []
    for key, value in entries:
        begin, end, tensor = _check_tensor(key, value, name)
        spans.append((begin, end, tensor))
    spans.sort(key=lambda span: (span[0], span[1], span[2].name))
    expected = 0
    previous = ""
    for begin, end, tensor in spans:
        where = f"tensor '{tensor.name}'"
        if begin < expected:
            raise CheckpointError(
                name,
                f"{where}: data_offsets [{begin}, {end}] overlap '{previous}', which ends at "
                f"byte {expected}; expected each tensor to start where the one before it ends",
            )
        if begin > expected:
            raise CheckpointError(
                name,
                f"{where}: data_offsets [{begin}, {end}] leave bytes {expected}..{begin} "
                "belonging to no tensor; expected each tensor to start where the one before "
                "it ends",
            )
        if end > data_len:
            raise CheckpointError(
                name,
                f"{where}: data_offsets [{begin}, {end}] run past the end of the data "
                f"({data_len:,} bytes after the header)",
            )
        expected, previous = end, tensor.name
    if expected != data_len:
        raise CheckpointError(
            name,
            f"{data_len - expected:,} bytes after the last tensor; expected the data "
            f"({data_len:,} bytes) to end where the last tensor ends",
        )
    return tuple(span[2] for span in spans), metadata


def _check_metadata(value: Any, name: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise CheckpointError(
            name, f"__metadata__ is a JSON {_kind(value)}; expected an object of strings"
        )
    for key, item in value.items():
        if not isinstance(item, str):
            raise CheckpointError(
                name, f"__metadata__ '{key}' is a JSON {_kind(item)}; expected a string"
            )
    return tuple(sorted(value.items()))


def _check_tensor(key: str, value: Any, name: str) -> tuple[int, int, TensorInfo]:
    where = f"tensor '{key}'"
    if not isinstance(value, dict):
        raise CheckpointError(
            name,
            f"{where} is a JSON {_kind(value)}; expected an object with dtype, shape and "
            "data_offsets",
        )
    for required in ("dtype", "shape", "data_offsets"):
        if required not in value:
            raise CheckpointError(name, f"{where} has no '{required}'")
    dtype = value["dtype"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        shown = f"'{dtype}'" if isinstance(dtype, str) else f"a JSON {_kind(dtype)}"
        raise CheckpointError(
            name, f"{where}: unknown dtype {shown}; expected one of {', '.join(DTYPE_BITS)}"
        )
    shape = value["shape"]
    if not isinstance(shape, list):
        raise CheckpointError(
            name, f"{where}: shape is a JSON {_kind(shape)}; expected a list of sizes"
        )
    if len(shape) > MAX_DIMS:
        raise CheckpointError(
            name, f"{where}: shape has {len(shape)} dimensions; at most {MAX_DIMS} are read"
        )
    for dim in shape:
        if not _is_u64(dim):
            raise CheckpointError(
                name,
                f"{where}: shape {_show(shape)} has {_show(dim)}; expected integers from 0 "
                f"to 2**64 - 1",
            )
    offsets = value["data_offsets"]
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_u64, offsets))):
        raise CheckpointError(
            name,
            f"{where}: data_offsets {_show(offsets)}; expected [begin, end], two integers "
            "from 0 to 2**64 - 1",
        )
    begin, end = offsets
    if end < begin:
        raise CheckpointError(name, f"{where}: data_offsets [{begin}, {end}] end before they begin")
    numel = math.prod(shape)
    if numel > MAX_U64:
        raise CheckpointError(
            name,
            f"{where}: shape {_show(shape)} holds {_approx(numel)} elements; expected at most "
            "2**64 - 1",
        )
    bits = numel * DTYPE_BITS[dtype]
    if bits % 8:
        raise CheckpointError(
            name,
            f"{where}: {numel:,} elements of {dtype} fill {bits} bits, not whole bytes",
        )
    if bits // 8 != end - begin:
        raise CheckpointError(
            name,
            f"{where}: shape {_show(shape)} of {dtype} is {bits // 8:,} bytes but "
            f"data_offsets [{begin}, {end}] span {end - begin:,}; expected them equal",
        )
    tensor = TensorInfo(key, dtype, tuple(shape), numel, end - begin, name)
    return begin, end, tensor


def _read_folder(folder: Path, source: str) -> Checkpoint:
    index = folder / INDEX_NAME
    if _exists(index):
        return read_index(index, source)
    single = folder / SINGLE_NAME
    if _exists(single):
        return build_checkpoint(source, [read_header(single)], None, None)
    found: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith(".safetensors") and not entry.name.startswith("."):
                    found.append(entry.name)
                    if len(found) > MAX_FILES:
                        raise CheckpointError(
                            source,
                            f"over {MAX_FILES:,} .safetensors files; at most {MAX_FILES:,} "
                            "are read",
                        )
    except OSError as exc:
        raise CheckpointError(source, os_reason(exc)) from None
    if not found:
        raise CheckpointError(
            source,
            f"no {INDEX_NAME}, {SINGLE_NAME} or *.safetensors file in this folder; "
            "expected a safetensors checkpoint",
        )
    headers = [read_header(folder / file) for file in sorted(found)]
    return build_checkpoint(source, headers, None, None)


def read_index(
    index: Path,
    source: str,
    read_shard: Callable[[str], Header] | None = None,
    parallel: int = 1,
) -> Checkpoint:
    """A sharded checkpoint through its index: each shard's header, read by ``read_shard``
    (``parallel`` at a time) or, by default, from the index's folder."""
    name = str(index)
    data = _read_index_json(index)
    if not isinstance(data, dict):
        raise CheckpointError(
            name, f"index is a JSON {_kind(data)}; expected an object with a weight_map"
        )
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        shown = "missing" if weight_map is None else f"a JSON {_kind(weight_map)}"
        if isinstance(weight_map, dict):
            shown = "empty"
        raise CheckpointError(
            name, f"weight_map is {shown}; expected an object of tensor name -> shard file"
        )
    if len(weight_map) > MAX_TENSORS:
        raise CheckpointError(
            name, f"weight_map lists {len(weight_map):,} tensors; at most {MAX_TENSORS:,} are read"
        )
    by_shard: dict[str, set[str]] = {}
    for tensor, shard in weight_map.items():
        _check_shard_name(tensor, shard, name)
        by_shard.setdefault(shard, set()).add(tensor)
    if len(by_shard) > MAX_FILES:
        raise CheckpointError(
            name, f"weight_map names {len(by_shard):,} shards; at most {MAX_FILES:,} are read"
        )
    folder = index.parent

    def local_shard(shard: str) -> Header:
        if not _exists(folder / shard):
            raise CheckpointError(
                name, f"weight_map names shard '{shard}', which is not in {folder}"
            )
        return read_header(folder / shard)

    shards = sorted(by_shard)
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        read = pool.map(read_shard or local_shard, shards)
        headers: list[Header] = []
        for shard, header in zip(shards, read, strict=True):
            held = {tensor.name for tensor in header.tensors}
            listed = by_shard[shard]
            absent = sorted(listed - held)
            if absent:
                raise CheckpointError(
                    name,
                    f"weight_map puts tensor '{absent[0]}' in '{shard}', whose header has no such "
                    "tensor",
                )
            unlisted = sorted(held - listed)
            if unlisted:
                elsewhere = weight_map.get(unlisted[0])
                said = f"puts it in '{elsewhere}'" if elsewhere else "does not list it"
                raise CheckpointError(
                    header.path,
                    f"holds tensor '{unlisted[0]}', but {index.name} {said}; expected the index "
                    "to list every tensor of every shard",
                )
            headers.append(header)
    metadata = data.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    declared = total if _is_u64(total) else None
    return build_checkpoint(source, headers, name, declared)


def _read_index_json(index: Path) -> Any:
    """An index file's JSON, within the header limits."""
    name = str(index)
    fd = _open(name)
    try:
        info = os.fstat(fd)
        _check_regular(name, info, "an index file")
        if info.st_size > MAX_HEADER_BYTES:
            raise CheckpointError(
                name,
                f"index is {info.st_size:,} bytes; one over {MAX_HEADER_BYTES:,} is refused",
            )
        raw = _read_exact(fd, info.st_size, name)
    finally:
        os.close(fd)
    return _parse_json(raw, name, "index")


@dataclass(frozen=True)
class IndexOnly:
    """A folder's index, downloaded without the shards it lists."""

    path: str
    total_size: int | None
    """Its ``metadata.total_size`` (None when it declares none)."""


def index_without_shards(folder: str | os.PathLike[str]) -> IndexOnly | None:
    """The folder's index when the folder holds none of the shards it lists; None when it has
    no index or a shard is there (then its headers are read). A malformed index is a
    CheckpointError."""
    index = Path(folder) / INDEX_NAME
    if not _exists(index):
        return None
    data = _read_index_json(index)
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        return None
    if len(weight_map) > MAX_TENSORS:
        raise CheckpointError(
            str(index),
            f"weight_map lists {len(weight_map):,} tensors; at most {MAX_TENSORS:,} are read",
        )
    for tensor, shard in weight_map.items():
        _check_shard_name(tensor, shard, str(index))
    if any(_exists(Path(folder) / shard) for shard in set(weight_map.values())):
        return None
    metadata = data.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    return IndexOnly(str(index), total if _is_u64(total) else None)


def _check_shard_name(tensor: Any, shard: Any, name: str) -> None:
    where = f"weight_map '{tensor}'"
    if not isinstance(shard, str):
        raise CheckpointError(name, f"{where} is a JSON {_kind(shard)}; expected a file name")
    pure = PurePosixPath(shard)
    bad = (
        not shard
        or "\\" in shard
        or "\x00" in shard
        or pure.is_absolute()
        or ".." in pure.parts
        or shard in (".", "")
    )
    if bad:
        raise CheckpointError(
            name,
            f"{where} names {shard!r}; expected a file name inside the index's folder "
            "(no absolute path, no '..')",
        )


def build_checkpoint(
    source: str, headers: list[Header], index: str | None, declared: int | None
) -> Checkpoint:
    tensors: list[TensorInfo] = []
    seen: dict[str, str] = {}
    for header in headers:
        for tensor in header.tensors:
            if tensor.name in seen:
                raise CheckpointError(
                    header.path,
                    f"tensor '{tensor.name}' is also in {seen[tensor.name]}; expected each "
                    "tensor in one file",
                )
            seen[tensor.name] = header.path
            tensors.append(tensor)
            if len(tensors) > MAX_TENSORS:
                raise CheckpointError(
                    source, f"over {MAX_TENSORS:,} tensors in all; at most that many are read"
                )
    tensors.sort(key=lambda tensor: tensor.name)
    files = tuple(
        sorted(
            (
                FileInfo(
                    path=header.path,
                    file_bytes=header.file_bytes,
                    header_bytes=header.header_bytes,
                    data_bytes=header.data_bytes,
                    tensors=len(header.tensors),
                    parameters=sum(tensor.numel for tensor in header.tensors),
                    metadata=header.metadata,
                )
                for header in headers
            ),
            key=lambda file: file.path,
        )
    )
    by_bytes: dict[str, int] = {}
    by_params: dict[str, int] = {}
    for tensor in tensors:
        by_bytes[tensor.dtype] = by_bytes.get(tensor.dtype, 0) + tensor.nbytes
        by_params[tensor.dtype] = by_params.get(tensor.dtype, 0) + tensor.numel
    return Checkpoint(
        source=source,
        tensors=tuple(tensors),
        files=files,
        parameters_total=sum(by_params.values()),
        tensor_bytes_total=sum(by_bytes.values()),
        file_bytes_total=sum(file.file_bytes for file in files),
        bytes_by_dtype=MappingProxyType(dict(sorted(by_bytes.items()))),
        parameters_by_dtype=MappingProxyType(dict(sorted(by_params.items()))),
        index=index,
        declared_total_size=declared,
    )


# --- reading bytes safely ---------------------------------------------------------------------


def _open(name: str) -> int:
    """A read-only descriptor that never blocks on a FIFO (it is refused after ``fstat``)."""
    try:
        return os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise CheckpointError(name, os_reason(exc)) from None


def _check_regular(name: str, info: os.stat_result, expected: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise CheckpointError(name, f"is a directory; expected {expected}")
    if not stat.S_ISREG(info.st_mode):
        raise CheckpointError(
            name, f"not a regular file (a FIFO, device or socket); expected {expected}"
        )


def _read_exact(fd: int, count: int, name: str) -> bytes:
    chunks: list[bytes] = []
    left = count
    try:
        while left:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                raise CheckpointError(
                    name, f"file ended {left:,} bytes early (it shrank while being read)"
                )
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise CheckpointError(name, os_reason(exc)) from None
    return b"".join(chunks)


def _stat(name: str, expected: str) -> os.stat_result:
    try:
        return os.stat(name)
    except OSError as exc:
        raise CheckpointError(name, f"{os_reason(exc)}; expected {expected}") from None
    except ValueError:  # a NUL in the path
        raise CheckpointError(name, f"not a valid path; expected {expected}") from None


def _exists(path: Path) -> bool:
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise CheckpointError(str(path), os_reason(exc)) from None
    return True


# --- parsing JSON safely ----------------------------------------------------------------------


class _RefusedError(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _parse_json(raw: bytes, name: str, what: str) -> Any:
    items = raw.count(b",") + raw.count(b"[") + raw.count(b"{")
    if items > MAX_JSON_ITEMS:
        raise CheckpointError(
            name,
            f"{what} holds {items:,} JSON values; at most {MAX_JSON_ITEMS:,} are parsed",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointError(
            name, f"{what} is not UTF-8 (byte {exc.start} of the {what}); expected UTF-8 JSON"
        ) from None
    try:
        return json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_int=_bounded_int,
            parse_constant=_no_constant,
        )
    except _RefusedError as exc:
        raise CheckpointError(name, f"{what}: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise CheckpointError(
            name, f"{what} is not JSON: {exc.msg} (character {exc.pos}); expected a JSON object"
        ) from None
    except RecursionError:
        raise CheckpointError(name, f"{what} nests too deeply to be a safetensors {what}") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _RefusedError(f"duplicate key '{key}'; expected each name once")
        result[key] = value
    return result


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _RefusedError(
            f"an integer of {len(text.lstrip('-')):,} digits; expected at most "
            f"{MAX_INT_DIGITS} (2**64 - 1)"
        )
    return int(text)


def _no_constant(text: str) -> Any:
    raise _RefusedError(f"{text} is not JSON; expected numbers to be integers")


# --- wording ----------------------------------------------------------------------------------


def _is_u64(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_U64


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object"


def _show(value: Any) -> str:
    """A short rendering of a JSON value for a message (never more than ~80 characters)."""
    if isinstance(value, list) and len(value) > 8:
        value = [*value[:8], "..."]
    elif isinstance(value, dict):
        return "an object"
    elif isinstance(value, str) and len(value) > 80:
        value = value[:77] + "..."
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _approx(value: int) -> str:
    """``value`` as ``about 2**N`` when it is too long to print."""
    return f"{value:,}" if value < 10**30 else f"about 2**{value.bit_length() - 1}"
