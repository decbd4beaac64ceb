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
import re
import stat
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path, PurePosixPath
from typing import Any

from costcalc.errors import CheckpointError, shown
from costcalc.files import os_reason
from costcalc.frozen import FrozenMap

INDEX_NAME = "model.safetensors.index.json"
"""The index a sharded checkpoint's folder holds (``weight_map``: tensor name -> shard file)."""

SINGLE_NAME = "model.safetensors"
"""The file an unsharded checkpoint's folder holds."""

MAX_HEADER_BYTES = 100_000_000
"""Longest JSON header read: the safetensors library's own limit."""

MAX_INDEX_BYTES = 64 * 2**20
"""Longest index file read: its weight map is kept beside its text while it is parsed, so
within the memory goal (:data:`MEMORY_GOAL`) at 1,000,000 tensors (real ones: ~10 MB)."""

MAX_WIDE_HEADER_BYTES = MAX_HEADER_BYTES // 4
"""Longest header or index holding any character beyond ASCII: Python keeps such text at up to
four bytes a character, and the memory goal (:data:`MEMORY_GOAL`) holds for this size too."""

MAX_TENSORS = 1_000_000
"""Most tensors in one checkpoint, all shards together (the largest real ones have ~10**5)."""

MAX_FILE_TENSORS = 250_000
"""Most tensors in one file's header (the largest real single files hold ~10**4)."""

MAX_INDEX_VALUES = MAX_TENSORS + 100_000
"""Most commas, ``[`` and ``{`` an index may hold, counted before it is parsed: one a tensor
of its weight map, and room for its metadata."""

MAX_METADATA = 10_000
"""Most ``__metadata__`` entries in one header (real ones hold a few: ``format``)."""

MAX_ENTRY_CHARS = 65_536
"""Longest JSON text of one tensor's entry (64 dimensions of 20 digits take ~1,500)."""

MEMORY_GOAL = 256 * 2**20
"""What reading one header or index may take at most: its text, one entry's JSON objects at a
time, and what is kept of each tensor (:class:`TensorInfo`, about 200 bytes beside its name; a
shape is kept once per file), so about 2 x MAX_HEADER_BYTES + 200 x MAX_FILE_TENSORS bytes;
an index, its text, its names and a map entry each, about 2 x MAX_INDEX_BYTES + 64 x
MAX_TENSORS (tests/test_hostile_limits.py reads the largest of each under an address-space
cap). A whole checkpoint takes this plus what is kept of every other shard's tensors: under
1 GiB at :data:`MAX_TENSORS`."""

MAX_FILES = 10_000
"""Most shard files in one checkpoint, and most ``*.safetensors`` looked at in a folder."""

MAX_DIMS = 64
"""Most dimensions in one tensor's shape (NumPy's and PyTorch's limit)."""

MAX_INT_DIGITS = 20
"""Longest integer a header may spell out: 2**64 - 1 has 20 digits."""

MAX_U64 = 2**64 - 1
"""Largest dimension, offset or element count: the library's ``usize`` on a 64-bit machine."""

DTYPE_BITS: Mapping[str, int] = FrozenMap(
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

_DTYPE_NAMES = {dtype: dtype for dtype in DTYPE_BITS}
"""Each dtype's one string, kept by every tensor of that dtype."""


@dataclass(frozen=True, slots=True)
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
    offset: int = 0
    """Where its bytes begin in the file's data: ``begin`` of its ``data_offsets``."""


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


def find_checkpoint(
    folder: str | os.PathLike[str], inside: Path | None = None
) -> Checkpoint | None:
    """The checkpoint in a model folder, or None when the folder holds no safetensors file;
    with ``inside``, every file read must resolve inside that folder (a cache)."""
    path = Path(folder)
    try:
        present = _exists(path / INDEX_NAME) or any(path.glob("*.safetensors"))
    except OSError:
        present = False
    return read_checkpoint(path, inside) if present else None


def read_checkpoint(path: str | os.PathLike[str], inside: Path | None = None) -> Checkpoint:
    """Read a checkpoint's safetensors headers: a ``.safetensors`` file, an index, or a folder.

    A folder is read through its ``model.safetensors.index.json`` if it has one, else its
    ``model.safetensors``, else every ``*.safetensors`` directly in it. A ``.json`` path is read
    as an index. Anything else is read as one safetensors file.

    Raises :class:`~costcalc.errors.CheckpointError` for anything missing, unreadable, malformed,
    inconsistent or beyond the module's limits, or (with ``inside``) for a file that resolves
    outside that folder.
    """
    source = os.fspath(path)
    info = _stat(source, "a .safetensors file, an index or a folder")
    if stat.S_ISDIR(info.st_mode):
        return _read_folder(Path(source), source, inside)
    if source.lower().endswith(".json"):
        return read_index(Path(source), source, inside=inside)
    header = read_header(source, inside)
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


def read_header(path: str | os.PathLike[str], inside: Path | None = None) -> Header:
    """Read and check one safetensors file's header, reading ``8 + N`` bytes and nothing more
    (with ``inside``: only when the file resolves inside that folder)."""
    name = os.fspath(path)
    fd = _open(name, inside)
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
        text = decode_json(_read_exact(fd, n, name), name, "header")
    finally:
        os.close(fd)
    return parse_header(name, size, n, text)


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


def parse_header(name: str, size: int, n: int, text: str) -> Header:
    """The checked header of a ``size``-byte file whose ``n``-byte JSON header is ``text``
    (:func:`decode_json`). Each entry is checked and kept as a :class:`TensorInfo` as it is
    parsed, so the JSON objects of one entry at a time are ever held."""
    data_len = size - 8 - n
    tensors: list[TensorInfo] = []
    names: set[str] = set()
    kinds: dict[tuple[str, tuple[int, ...]], Kind] = {}
    metadata: list[tuple[tuple[str, str], ...]] = []

    def member(key: str, at: int) -> int:
        if key in names:
            raise CheckpointError(name, f"header: duplicate key '{key}'; expected each name once")
        names.add(key)
        if key == "__metadata__":
            pairs, end = _metadata(text, at, name)
            metadata.append(pairs)
            return end
        if len(tensors) == MAX_FILE_TENSORS:
            raise CheckpointError(
                name,
                f"header lists over {MAX_FILE_TENSORS:,} tensors; at most that many are read "
                "from one file",
            )
        value, end = _entry(text, at, name, f"tensor '{key}'")
        tensors.append(_check_tensor(key, value, name, kinds))
        return end

    _json_document(text, name, "header", "an object of tensor names", member)
    names.clear()
    for field_name in ("name", "nbytes", "offset"):  # stable: by offset, then size, then name
        tensors.sort(key=attrgetter(field_name))
    expected = 0
    previous = ""
    for tensor in tensors:
        begin = tensor.offset
        end = begin + tensor.nbytes
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
    return Header(name, size, n, tuple(tensors), metadata[0] if metadata else ())


def _metadata(text: str, at: int, name: str) -> tuple[tuple[tuple[str, str], ...], int]:
    """The ``__metadata__`` object at ``at`` as sorted (key, value) pairs, at most MAX_METADATA
    of them, and where it ends; each value is parsed on its own."""
    if text.startswith("null", at):
        return (), at + 4
    if text[at : at + 1] != "{":
        raise CheckpointError(
            name, f"__metadata__ is {_kind_at(text, at)}; expected an object of strings"
        )
    pairs: dict[str, str] = {}

    def member(key: str, start: int) -> int:
        if key in pairs:
            raise CheckpointError(name, f"header: duplicate key '{key}'; expected each name once")
        if len(pairs) == MAX_METADATA:
            raise CheckpointError(
                name,
                f"__metadata__ holds over {MAX_METADATA:,} entries; at most that many are read",
            )
        if text[start : start + 1] != '"':
            raise CheckpointError(
                name, f"__metadata__ '{key}' is {_kind_at(text, start)}; expected a string"
            )
        pairs[key], end = _decode_value(text, start)
        return end

    end = _json_object(text, at, name, "header", "an object", member)
    return tuple(sorted(pairs.items())), end


Kind = tuple[str, tuple[int, ...], int, int]
"""A dtype and shape, checked, with the elements and bytes they take: one per distinct pair in a
header, shared by its tensors (most tensors of a model repeat a few shapes)."""


def _check_tensor(
    key: str, value: dict[str, Any], name: str, kinds: dict[tuple[str, tuple[int, ...]], Kind]
) -> TensorInfo:
    """The tensor an entry describes, checked; ``kinds`` holds the dtypes and shapes checked
    before."""
    where = f"tensor '{key}'"
    for required in ("dtype", "shape", "data_offsets"):
        if required not in value:
            raise CheckpointError(name, f"{where} has no '{required}'")
    dtype, shape = value["dtype"], value["shape"]
    plain = type(dtype) is str and type(shape) is list and set(map(type, shape)) <= {int}
    kind = kinds.get((dtype, tuple(shape))) if plain else None
    if kind is None:
        kind = _check_kind(where, dtype, shape, name)
        kinds[kind[:2]] = kind
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
    dtype, shape, numel, nbytes = kind
    if nbytes != end - begin:
        raise CheckpointError(
            name,
            f"{where}: shape {_show(list(shape))} of {dtype} is {nbytes:,} bytes but "
            f"data_offsets [{begin}, {end}] span {end - begin:,}; expected them equal",
        )
    return TensorInfo(key, dtype, shape, numel, nbytes, name, begin)


def _check_kind(where: str, dtype: Any, shape: Any, name: str) -> Kind:
    """A tensor's dtype and shape, checked: a known dtype, at most MAX_DIMS sizes from 0 to
    2**64 - 1 holding at most that many elements, in whole bytes."""
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        shown = f"'{dtype}'" if isinstance(dtype, str) else f"a JSON {_kind(dtype)}"
        raise CheckpointError(
            name, f"{where}: unknown dtype {shown}; expected one of {', '.join(DTYPE_BITS)}"
        )
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
    return _DTYPE_NAMES[dtype], tuple(shape), numel, bits // 8


def _read_folder(folder: Path, source: str, inside: Path | None) -> Checkpoint:
    index = folder / INDEX_NAME
    if _exists(index):
        return read_index(index, source, inside=inside)
    single = folder / SINGLE_NAME
    if _exists(single):
        return build_checkpoint(source, [read_header(single, inside)], None, None)
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
    headers = [read_header(folder / file, inside) for file in sorted(found)]
    return build_checkpoint(source, headers, None, None)


def read_index(
    index: Path,
    source: str,
    read_shard: Callable[[str], Header] | None = None,
    parallel: int = 1,
    inside: Path | None = None,
) -> Checkpoint:
    """A sharded checkpoint through its index: each shard's header, read by ``read_shard``
    (``parallel`` at a time) or, by default, from the index's folder (with ``inside``: every
    file resolving inside that folder)."""
    name = str(index)
    weight_map, declared = _read_index(index, inside)
    listed = Counter(weight_map.values())
    if len(listed) > MAX_FILES:
        raise CheckpointError(
            name, f"weight_map names {len(listed):,} shards; at most {MAX_FILES:,} are read"
        )
    folder = index.parent

    def local_shard(shard: str) -> Header:
        if not _exists(folder / shard):
            raise CheckpointError(
                name, f"weight_map names shard '{shard}', which is not in {folder}"
            )
        return read_header(folder / shard, inside)

    shards = sorted(listed)
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        headers = list(pool.map(read_shard or local_shard, shards))
    for shard, header in zip(shards, headers, strict=True):
        for tensor in header.tensors:
            elsewhere = weight_map.get(tensor.name)
            if elsewhere != shard:
                said = f"puts it in '{elsewhere}'" if elsewhere else "does not list it"
                raise CheckpointError(
                    header.path,
                    f"holds tensor '{tensor.name}', but {index.name} {said}; expected the index "
                    "to list every tensor of every shard",
                )
        if len(header.tensors) != listed[shard]:  # every tensor it holds is listed for it
            held = {tensor.name for tensor in header.tensors}
            absent = min(t for t, s in weight_map.items() if s == shard and t not in held)
            raise CheckpointError(
                name,
                f"weight_map puts tensor '{absent}' in '{shard}', whose header has no such tensor",
            )
    return build_checkpoint(source, headers, name, declared)


def _read_index(index: Path, inside: Path | None = None) -> tuple[dict[str, str], int | None]:
    """An index file's weight map and declared total size (:func:`parse_index`)."""
    name = str(index)
    fd = _open(name, inside)
    try:
        info = os.fstat(fd)
        _check_regular(name, info, "an index file")
        if info.st_size > MAX_INDEX_BYTES:
            raise CheckpointError(
                name,
                f"index is {info.st_size:,} bytes; one over {MAX_INDEX_BYTES:,} is refused",
            )
        text = decode_json(_read_exact(fd, info.st_size, name), name, "index")
    finally:
        os.close(fd)
    return parse_index(text, name)


@dataclass(frozen=True)
class IndexOnly:
    """A folder's index, downloaded without the shards it lists."""

    path: str
    total_size: int | None
    """Its ``metadata.total_size`` (None when it declares none)."""
    dtype: str | None = None
    """The dtype the model's config declares (``torch_dtype`` or ``dtype``), which an
    unquantized checkpoint stores its weights in."""


def index_without_shards(
    folder: str | os.PathLike[str], inside: Path | None = None, partial: bool = False
) -> IndexOnly | None:
    """The folder's index when the folder holds none of the shards it lists (with ``partial``:
    not all of them, as a Hub cache holds only what was downloaded, the index without its
    shards after an online run); None when it has no index or the shards are there (then their
    headers are read). With ``inside``, the index must resolve inside that folder (a cache). A
    malformed index is a CheckpointError, as :func:`read_index` finds it."""
    index = Path(folder) / INDEX_NAME
    if not _exists(index):
        return None
    weight_map, declared = _read_index(index, inside)
    present = [_exists(Path(folder) / shard) for shard in set(weight_map.values())]
    if all(present) if partial else any(present):
        return None
    return IndexOnly(str(index), declared)


def parse_index(text: str, name: str) -> tuple[dict[str, str], int | None]:
    """An index's ``weight_map`` (tensor name -> shard file, each shard's name one string) and
    its ``metadata.total_size`` when it is a size. The weight map is parsed entry by entry; any
    other member whole, the index holding at most MAX_INDEX_VALUES JSON values."""
    items = text.count(",") + text.count("[") + text.count("{")
    if items > MAX_INDEX_VALUES:
        raise CheckpointError(
            name, f"index holds {items:,} JSON values; at most {MAX_INDEX_VALUES:,} are parsed"
        )
    weight_map: dict[str, str] = {}
    shards: dict[str, str] = {}
    found: dict[str, Any] = {}

    def shard_of(tensor: str, at: int) -> int:
        if tensor in weight_map:
            raise CheckpointError(name, f"index: duplicate key '{tensor}'; expected each name once")
        if len(weight_map) == MAX_TENSORS:
            raise CheckpointError(
                name, f"weight_map lists over {MAX_TENSORS:,} tensors; at most that many are read"
            )
        if text[at : at + 1] != '"':
            raise CheckpointError(
                name, f"weight_map '{tensor}' is {_kind_at(text, at)}; expected a file name"
            )
        shard, end = scanstring(text, at + 1)
        if shard not in shards:
            _check_shard_name(tensor, shard, name)
            shards[shard] = shard
        weight_map[tensor] = shards[shard]
        return end

    def member(key: str, at: int) -> int:
        if key in found:
            raise CheckpointError(name, f"index: duplicate key '{key}'; expected each name once")
        if key == "weight_map" and text[at : at + 1] == "{":
            found[key] = weight_map
            return _json_object(text, at, name, "index", "", shard_of)
        found[key], end = _decode_value(text, at)
        return end

    _json_document(text, name, "index", "an object with a weight_map", member)
    if found.get("weight_map") is not weight_map or not weight_map:
        value = found.get("weight_map")
        shown = "missing" if value is None else f"a JSON {_kind(value)}"
        raise CheckpointError(
            name,
            f"weight_map is {'empty' if value is weight_map else shown}; expected an object of "
            "tensor name -> shard file",
        )
    metadata = found.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    return weight_map, total if _is_u64(total) else None


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
        bytes_by_dtype=FrozenMap(sorted(by_bytes.items())),
        parameters_by_dtype=FrozenMap(sorted(by_params.items())),
        index=index,
        declared_total_size=declared,
    )


# --- reading bytes safely ---------------------------------------------------------------------


def _open(name: str, inside: Path | None = None) -> int:
    """A read-only descriptor that never blocks on a FIFO (it is refused after ``fstat``); with
    ``inside``, for a file whose every link resolves inside that folder only."""
    if inside is not None:
        real, root = os.path.realpath(name), os.path.realpath(inside)
        if os.path.commonpath([real, root]) != root:
            raise CheckpointError(name, f"resolves to {real}, outside {inside}; refused")
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
    """Whether ``path`` is there; a link to nothing (a cache whose file was removed) is a
    CheckpointError saying so, not a file that is absent."""
    try:
        os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            target = shown(os.readlink(path))
            raise CheckpointError(str(path), f"a link to {target}, which does not exist") from None
        return False
    except OSError as exc:
        raise CheckpointError(str(path), os_reason(exc)) from None
    return True


# --- parsing JSON safely ----------------------------------------------------------------------


class _RefusedError(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason


def decode_json(raw: bytes, name: str, what: str) -> str:
    """A header's or index's bytes as text: UTF-8, at most MAX_WIDE_HEADER_BYTES of them when any
    is beyond ASCII (such text takes up to four bytes a character)."""
    if raw.isascii():
        return raw.decode("ascii")
    if len(raw) > MAX_WIDE_HEADER_BYTES:
        raise CheckpointError(
            name,
            f"{what} is {len(raw):,} bytes holding characters beyond ASCII; such a {what} is "
            f"read up to {MAX_WIDE_HEADER_BYTES:,} bytes",
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointError(
            name, f"{what} is not UTF-8 (byte {exc.start} of the {what}); expected UTF-8 JSON"
        ) from None


Member = Callable[[str, int], int]
"""A member of a JSON object: given its key and where its value starts, parses the value and
returns where it ends."""

scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
"""A JSON string's text from just after its opening quote, and where it ends (the C scanner)."""

_SPACE = re.compile(r"[ \t\n\r]*")
_FLAT_OBJECT = re.compile(r'\{(?:[^{}"]++|"(?:[^"\\]++|\\.)*+")*+\}')
"""A JSON object holding no object (a tensor's entry), strings skipped whole."""


def _json_document(text: str, name: str, what: str, expected: str, member: Member) -> None:
    """Walk ``text``, one JSON object (:func:`_json_object`) and nothing after it; any fault of
    the JSON is a CheckpointError naming ``what`` (header, index)."""
    try:
        end = _skip(text, _json_object(text, 0, name, what, expected, member))
        if end != len(text):
            raise json.JSONDecodeError("Extra data", text, end)
    except _RefusedError as exc:
        raise CheckpointError(name, f"{what}: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise CheckpointError(
            name, f"{what} is not JSON: {exc.msg} (character {exc.pos}); expected a JSON object"
        ) from None
    except RecursionError:
        raise CheckpointError(name, f"{what} nests too deeply to be a safetensors {what}") from None


def _json_object(text: str, at: int, name: str, what: str, expected: str, member: Member) -> int:
    """Walk the JSON object at ``at``, each member's value parsed by ``member``, and return
    where it ends: the object is never built, so what it holds is kept (or refused) member by
    member."""
    at = _skip(text, at)
    if text[at : at + 1] != "{":
        raise CheckpointError(name, f"{what} is {_kind_at(text, at)}; expected {expected}")
    at = _skip(text, at + 1)
    if text[at : at + 1] == "}":
        return at + 1
    while True:
        if text[at : at + 1] != '"':
            expected_key = "Expecting property name enclosed in double quotes"
            raise json.JSONDecodeError(expected_key, text, at)
        key, at = scanstring(text, at + 1)
        if text[at : at + 1] in _BLANKS:
            at = _skip(text, at)
        if text[at : at + 1] != ":":
            raise json.JSONDecodeError("Expecting ':' delimiter", text, at)
        at += 1
        if text[at : at + 1] in _BLANKS:
            at = _skip(text, at)
        at = member(key, at)
        if text[at : at + 1] in _BLANKS:
            at = _skip(text, at)
        if text[at : at + 1] == "}":
            return at + 1
        if text[at : at + 1] != ",":
            raise json.JSONDecodeError("Expecting ',' delimiter", text, at)
        at += 1
        if text[at : at + 1] in _BLANKS:
            at = _skip(text, at)


_BLANKS = (" ", "\t", "\n", "\r")


def _skip(text: str, at: int) -> int:
    """Where the JSON whitespace at ``at`` ends."""
    return _SPACE.match(text, at).end()  # type: ignore[union-attr]


def _decode_value(text: str, at: int) -> tuple[Any, int]:
    """The JSON value at ``at`` and where it ends. Integers are read by Python's own parser,
    which refuses over 4,300 digits; the value is then read again, each integer looked at, to
    say how long the integer is."""
    try:
        value, end = _FAST.raw_decode(text, at)
    except json.JSONDecodeError:
        raise
    except ValueError:
        value, end = _CAREFUL.raw_decode(text, at)
    return value, int(end)


def _entry(text: str, at: int, name: str, where: str) -> tuple[dict[str, Any], int]:
    """A tensor's entry at ``at``: a JSON object holding no object, within MAX_ENTRY_CHARS."""
    if text[at : at + 1] != "{":
        raise CheckpointError(
            name,
            f"{where} is {_kind_at(text, at)}; expected an object with dtype, shape and "
            "data_offsets",
        )
    if _FLAT_OBJECT.match(text, at, at + MAX_ENTRY_CHARS) is None:
        raise CheckpointError(
            name,
            f"{where} is no object of dtype, shape and data_offsets within "
            f"{MAX_ENTRY_CHARS:,} characters",
        )
    return _decode_value(text, at)


_CONSTANTS = ("NaN", "Infinity", "-Infinity")


def _kind_at(text: str, at: int) -> str:
    """The kind of the JSON value starting at ``at``, from its first character."""
    first = text[at : at + 1]
    for constant in _CONSTANTS:
        if text.startswith(constant, at):
            raise _RefusedError(f"{constant} is not JSON; expected numbers to be integers")
    kinds = {"{": "object", "[": "list", '"': "string", "t": "boolean", "f": "boolean"}
    if first in kinds:
        return f"a JSON {kinds[first]}"
    if text.startswith("null", at):
        return "a JSON null"
    if first and (first.isdigit() or first == "-"):
        return "a JSON number"
    raise json.JSONDecodeError("Expecting value", text, at)


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


_FAST = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_constant=_no_constant)
_CAREFUL = json.JSONDecoder(
    object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_int=_bounded_int
)


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
