"""A model's files from the Hugging Face Hub, through ``huggingface_hub``: its ``config.json``
(downloaded into the shared cache, or read from it) and its safetensors headers (read with HTTP
range requests: 8 bytes, then the header; the weights are never fetched).

Settings are read from the environment each time, exactly as ``huggingface_hub.constants``
reads them (tests/test_hostile_hub.py compares the two): the cache is ``$HF_HUB_CACHE``, else
``$HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub``,
else ``~/.cache/huggingface/hub``, each taken as set (an empty value too), ``~`` then ``$VAR``
expanded, a ``$VAR`` not set left as written; the Hub is ``$HF_ENDPOINT``
(``https://huggingface.co``; the staging Hub with ``$HUGGINGFACE_CO_STAGING``); ``$HF_TOKEN``
authenticates. Offline is the first of ``$HF_HUB_OFFLINE`` and ``$TRANSFORMERS_OFFLINE`` that is
not empty, when it is 1, ON, YES or TRUE: then nothing connects and files come from the cache
only; when the Hub cannot be reached, or gives no complete answer within the deadline of a file,
the cache is used too. Whatever ``huggingface_hub`` or ``httpx`` raises becomes a HubError.

A revision is a branch, a tag or a commit. The cache maps a branch or tag to a commit with
``refs/<revision>``, read here within :data:`MAX_REF_BYTES` and used only when it holds a commit
hash; a file found must resolve inside the cache. ``huggingface_hub`` is imported only when a
model is fetched, so a command that reads no Hub model never pays for it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from costcalc.errors import FileReadError, HubError, UsageError
from costcalc.files import MAX_FILE_BYTES, os_reason, read_bytes

if TYPE_CHECKING:
    from costcalc.checkpoint import Checkpoint, Header

REPO_ID = re.compile(r"(?:\b[\w.-]{1,96}\b/)?\b[\w.-]{1,96}\b", re.ASCII)
"""``ORG/NAME`` (or a bare ``NAME``) as ``huggingface_hub``'s ``REPO_ID_REGEX`` spells them."""

MAX_REVISION_CHARS = 256
"""Longest branch, tag or commit read (git refs are rarely over 100 characters)."""

REVISION = re.compile(r"^[\w.-]+(?:/[\w.-]+)*$")
"""A branch, tag or commit (``main``, ``v1.0``, ``refs/pr/1``, a 40-hex hash)."""

COMMIT = re.compile(r"[0-9a-f]{40}")
"""A commit hash: what a ref must hold, the name of a folder under ``snapshots/``."""

MAX_REF_BYTES = 256
"""A ref is a 40-character hash and a newline; a larger file is no ref and is not read."""

CONFIG_NAME = "config.json"
DEFAULT_ENDPOINT = "https://huggingface.co"
STAGING_ENDPOINT = "https://hub-ci.huggingface.co"
TIMEOUT_SECONDS = 10.0
"""How long one request may wait for the Hub before it counts as unreachable."""
DEADLINE_SECONDS = 15.0
"""How long reading one file from the Hub may take in all, however its answer trickles in,
plus a second for each MiB of a larger range (a link slower than 1 MiB/s counts as down)."""
MAX_PARALLEL = 8
"""Most shard headers read at once."""
LARGE_HEADER_BYTES = 8 * 2**20
"""Headers longer than this are read one at a time: each may take up to the memory goal of
:data:`costcalc.checkpoint.MEMORY_GOAL`, and the small ones beside it little."""
_LARGE_HEADERS = threading.Lock()


@dataclass(frozen=True)
class HubSettings:
    """Where the cache is, which Hub to ask, and whether to ask at all."""

    cache: Path
    endpoint: str
    offline: bool


def hub_settings(env: Mapping[str, str] | None = None) -> HubSettings:
    """The settings the environment gives, chosen as ``huggingface_hub.constants`` chooses
    them."""
    env = os.environ if env is None else env
    offline = _is_true(env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE"))
    endpoint = env.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")
    if _is_true(env.get("HUGGINGFACE_CO_STAGING")):
        endpoint = STAGING_ENDPOINT
    return HubSettings(hub_cache_dir(env), endpoint, offline)


def _is_true(value: str | None) -> bool:
    return value is not None and value.upper() in {"1", "ON", "YES", "TRUE"}


def hub_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The cache folder, chosen from the environment as ``huggingface_hub.constants`` chooses
    it: a variable set (even empty) is used as it is, ``~`` and then ``$VAR`` expanded."""
    env = os.environ if env is None else env
    default_home = os.path.join(_expanduser("~", env), ".cache")
    home = env.get("HF_HOME", os.path.join(env.get("XDG_CACHE_HOME", default_home), "huggingface"))
    legacy = env.get("HUGGINGFACE_HUB_CACHE", os.path.join(_expanded(home, env), "hub"))
    return Path(_expanded(env.get("HF_HUB_CACHE", legacy), env))


def _expanded(path: str, env: Mapping[str, str]) -> str:
    """``os.path.expandvars(os.path.expanduser(path))`` over ``env``."""
    return _VARIABLE.sub(
        lambda m: env.get(m.group(1) or m.group(2), m.group(0)), _expanduser(path, env)
    )


_VARIABLE = re.compile(r"\$(?:(\w+)|\{([^}]*)\})", re.ASCII)
"""``$NAME`` or ``${NAME}``, as ``posixpath.expandvars`` finds them."""


def _expanduser(path: str, env: Mapping[str, str]) -> str:
    """``os.path.expanduser(path)`` with ``$HOME`` from ``env``: a ``~user`` who does not
    exist, or no home at all, leaves the path as it is."""
    if not path.startswith("~"):
        return path
    end = path.find("/", 1)
    end = len(path) if end < 0 else end
    import pwd

    try:
        if end == 1:
            home = env["HOME"] if "HOME" in env else pwd.getpwuid(os.getuid()).pw_dir
        else:
            home = pwd.getpwnam(path[1:end]).pw_dir
    except KeyError:
        return path
    return (home.rstrip("/") + path[end:]) or "/"


def split_hub_id(text: str, revision: str | None = None) -> tuple[str, str]:
    """``ORG/NAME[@REVISION]`` as (repository id, revision); ``revision`` is used when the id
    names none, ``main`` when neither does. An id ``huggingface_hub`` would refuse (its
    ``validate_repo_id``: at most 96 characters a part, ``-``, ``_``, ``.`` and ASCII letters
    and digits, no ``--`` or ``..``, no ``.git`` at the end) or a malformed revision is a usage
    error."""
    from costcalc.files import looks_like_path
    from costcalc.option_names import in_api

    repo_id, at, own = text.partition("@")
    shown = repr(text) if len(text) <= 100 else f"{text[:60]!r}... ({len(text):,} characters)"
    if looks_like_path(text):
        where = "load() reads a file by its path" if in_api() else "a file is read with --config"
        raise UsageError(f"{shown} is a path, not a Hub id ORG/NAME; {where}")
    if (
        not REPO_ID.fullmatch(repo_id)
        or "--" in repo_id
        or ".." in repo_id
        or repo_id.endswith(".git")
    ):
        expects = "a Hub id is" if in_api() else "--hf expects"
        raise UsageError(
            f"{expects} a model id like ORG/NAME or ORG/NAME@REVISION, each part at most 96 "
            f"letters, digits, '-', '_' or '.' (got {shown})"
        )
    chosen = own if at else ("main" if revision is None else revision)
    if len(chosen) > MAX_REVISION_CHARS or not REVISION.match(chosen) or ".." in chosen.split("/"):
        shown = repr(chosen) if len(chosen) <= 100 else f"{chosen[:60]!r}..."
        raise UsageError(
            f"a revision is a branch, tag or commit like main, v1.0 or a 40-hex hash (got {shown})"
        )
    return repo_id, chosen


@dataclass(frozen=True)
class HubConfig:
    """A model's ``config.json`` as found: the file, and the commit it belongs to."""

    repo_id: str
    revision: str
    commit: str
    path: Path
    downloaded: bool
    """Fetched from the Hub now (True) or read from the cache (False)."""

    @property
    def label(self) -> str:
        """``ORG/NAME``, with ``@REVISION`` when it is not ``main``."""
        return self.repo_id if self.revision == "main" else f"{self.repo_id}@{self.revision}"


def fetch_config(
    repo_id: str, revision: str = "main", env: Mapping[str, str] | None = None
) -> HubConfig:
    """The ``config.json`` of ``repo_id`` at ``revision``: downloaded into the cache when the
    Hub can be reached and offline mode is off, else from the cache."""
    settings = hub_settings(env)
    label = repo_id if revision == "main" else f"{repo_id}@{revision}"
    _import_library(label)
    if settings.offline:
        return _from_cache(repo_id, revision, settings, _offline_reason(env))
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    def fetch() -> tuple[str, str]:
        url = hf_hub_url(repo_id, CONFIG_NAME, revision=revision, endpoint=settings.endpoint)
        metadata = get_hf_file_metadata(url, timeout=TIMEOUT_SECONDS, endpoint=settings.endpoint)
        if metadata.size is not None and metadata.size > MAX_FILE_BYTES:
            raise HubError(label, f"config.json is {metadata.size:,} bytes; over 1 MiB is refused")
        path = hf_hub_download(
            repo_id,
            CONFIG_NAME,
            revision=revision,
            cache_dir=settings.cache,
            endpoint=settings.endpoint,
            etag_timeout=TIMEOUT_SECONDS,
        )
        return path, metadata.commit_hash or ""

    try:
        path, commit = within_deadline(DEADLINE_SECONDS, fetch)
    except HubError:
        raise
    except Exception as exc:
        failed = library_failure(label, exc, settings, CONFIG_NAME)
        if isinstance(failed, HubError):
            raise failed from None
        why = f"the Hub ({settings.endpoint or repr('')}) cannot be reached: {failed}"
        return _from_cache(repo_id, revision, settings, why)
    found = _inside_cache(Path(path), settings.cache, label)
    return HubConfig(repo_id, revision, commit, found, downloaded=True)


def _import_library(label: str) -> None:
    """Import ``huggingface_hub``, which reads its settings from the environment as it loads:
    a value it cannot take (an ``HF_ENDPOINT`` that is no URL, an ``HF_HUB_ETAG_TIMEOUT`` that
    is no number) is a HubError naming it, not the library's own error."""
    try:
        import huggingface_hub.constants  # noqa: F401
    except Exception as exc:
        raise HubError(
            label,
            f"huggingface_hub cannot start from this environment ({type(exc).__name__}: "
            f"{exc}); check the HF_* variables (HF_ENDPOINT is the Hub's address, like "
            f"{DEFAULT_ENDPOINT}; HF_HUB_ETAG_TIMEOUT and HF_HUB_DOWNLOAD_TIMEOUT are seconds)",
        ) from None


def _offline_reason(env: Mapping[str, str] | None) -> str:
    """Why nothing is downloaded: the variable that set offline mode, named."""
    env = os.environ if env is None else env
    name = "HF_HUB_OFFLINE" if env.get("HF_HUB_OFFLINE") else "TRANSFORMERS_OFFLINE"
    return f"{name} is set (unset it to download)"


T = TypeVar("T")


class LateError(Exception):
    """A read from the Hub that did not end within its deadline."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"no complete answer within {seconds:.3g} seconds")


def within_deadline(seconds: float, call: Callable[[], T]) -> T:
    """``call()``, in a thread of its own, given at most ``seconds`` in all: past them it is
    left to end by its own timeouts (a daemon, so it never keeps the process) and LateError is
    raised; what it raises is raised here."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append((False, exc))

    worker = threading.Thread(target=run, name="costcalc-hub", daemon=True)
    worker.start()
    worker.join(seconds)
    if not outcome:
        raise LateError(seconds)
    done, value = outcome[0]
    if not done:
        raise value
    result: T = value
    return result


def library_failure(
    label: str, exc: Exception, settings: HubSettings, filename: str
) -> HubError | str:
    """What ``huggingface_hub`` or ``httpx`` raised reading ``filename``, in words: a HubError,
    or (a str) why the Hub cannot be reached, when the cache may still answer."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError, HFValidationError, OfflineModeIsEnabled

    if isinstance(exc, HfHubHTTPError):
        return http_error(label, exc, settings.endpoint, filename)
    if isinstance(exc, httpx2.TransportError | OfflineModeIsEnabled | LateError):
        return _transport_reason(exc)
    if isinstance(exc, httpx2.InvalidURL | HFValidationError) or (
        isinstance(exc, ValueError) and "URL" in str(exc)
    ):
        return HubError(
            label,
            f"no request for {filename} can be made to HF_ENDPOINT {settings.endpoint!r}: "
            f"{exc}; set HF_ENDPOINT to the Hub's address, like {DEFAULT_ENDPOINT}",
        )
    if isinstance(exc, UnicodeError):
        shown = (
            f"{exc.object[exc.start : exc.end]!r}"
            if isinstance(exc, UnicodeEncodeError)
            else "characters"
        )
        return HubError(
            label,
            f"HF_TOKEN (or the saved token) holds {shown}, which a request's headers cannot "
            "carry (ASCII only); set it to the token as the Hub shows it",
        )
    if isinstance(exc, OSError):
        return HubError(label, f"cannot write the cache ({settings.cache}): {os_reason(exc)}")
    return HubError(label, f"reading {filename} failed: {type(exc).__name__}: {exc}")


def _transport_reason(exc: Exception) -> str:
    """A network failure in words: the cause's reason when there is one."""
    import httpx2

    if isinstance(exc, LateError):
        return str(exc)
    if isinstance(exc, httpx2.TimeoutException):
        return f"no answer within {TIMEOUT_SECONDS:g} seconds"
    match = _ERRNO.fullmatch(str(exc))  # "[Errno 111] Connection refused"
    reason = match.group(1) if match else str(exc) or type(exc).__name__
    return reason[:1].lower() + reason[1:]


_ERRNO = re.compile(r"\[Errno -?\d+\] (.+)", re.DOTALL)


def http_error(label: str, exc: Any, endpoint: str, filename: str) -> HubError:
    """What the Hub's answer means, and what to do about it."""
    from huggingface_hub.errors import (
        GatedRepoError,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    status = exc.response.status_code
    answered = f"(the Hub at {endpoint} answered {status})"
    repo_id = label.partition("@")[0]
    if isinstance(exc, GatedRepoError):
        reason = (
            f"a gated model {answered}; request access at {endpoint}/{repo_id}, then set HF_TOKEN "
            "to a token of the account that has it"
        )
    elif isinstance(exc, RepositoryNotFoundError):
        reason = (
            f"no such model, or a private one {answered}; check the name, or set HF_TOKEN to a "
            "token that can read it"
        )
    elif isinstance(exc, RevisionNotFoundError):
        reason = f"no such revision (branch, tag or commit) {answered}"
    elif isinstance(exc, RemoteEntryNotFoundError):
        reason = f"the model has no {filename} {answered}"
    elif status in (401, 403):
        reason = f"access refused {answered}; set HF_TOKEN to a token that can read this model"
    else:
        reason = f"the request for {filename} failed {answered}"
    return HubError(label, reason)


def _from_cache(repo_id: str, revision: str, settings: HubSettings, why: str) -> HubConfig:
    """The cached ``config.json`` of ``repo_id`` at ``revision``; ``why`` says why the Hub
    was not asked. The file must resolve inside the cache; any OS error is a HubError."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    label = repo_id if revision == "main" else f"{repo_id}@{revision}"
    cache = settings.cache
    storage = cache / f"models--{repo_id.replace('/', '--')}"
    try:
        commit = revision if COMMIT.fullmatch(revision) else _ref(storage, revision, label)
        if commit is None:
            raise HubError(label, _no_ref(storage, revision, cache, why))
        try:
            found = hf_hub_download(
                repo_id, CONFIG_NAME, revision=commit, cache_dir=cache, local_files_only=True
            )
        except LocalEntryNotFoundError:
            os.stat(storage / "snapshots" / commit / CONFIG_NAME)  # an OS error says more
            found = ""
        if not found:
            raise HubError(label, f"config.json is not in the cache ({cache}) and {why}")
        path = _inside_cache(Path(found), cache, label)
    except HubError:
        raise
    except FileNotFoundError:
        raise HubError(label, f"config.json is not in the cache ({cache}) and {why}") from None
    except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: a symbolic-link loop
        reason = os_reason(exc) if isinstance(exc, OSError) else str(exc)
        raise HubError(label, f"cannot read the cache ({cache}): {reason}") from None
    return HubConfig(repo_id, revision, commit, path, downloaded=False)


def _inside_cache(path: Path, cache: Path, label: str) -> Path:
    """``path``, when it and every link on the way resolve inside ``cache``; else a HubError
    (one that cannot be resolved too)."""
    try:
        inside = path.resolve(strict=True).is_relative_to(cache.resolve())
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symbolic-link loop
        reason = os_reason(exc) if isinstance(exc, OSError) else str(exc)
        raise HubError(label, f"cannot read the cache ({cache}): {reason}") from None
    if not inside:
        raise HubError(label, f"{path} resolves outside the cache ({cache}); refused")
    return path


def _ref(storage: Path, revision: str, label: str) -> str | None:
    """The commit ``refs/<revision>`` holds, read within MAX_REF_BYTES; None when there is no
    such ref; anything but a commit hash is refused."""
    ref = storage / "refs" / revision
    if not os.path.lexists(ref):
        os.stat(storage)  # an unreadable cache says so; a missing model is reported later
        return None
    _inside_cache(ref, storage.parent, label)
    try:
        text = read_bytes(ref, MAX_REF_BYTES).decode("ascii").strip()
    except (FileReadError, UnicodeDecodeError):
        text = ""
    if not COMMIT.fullmatch(text):
        raise HubError(label, f"refs/{revision} does not hold a commit hash; refused")
    return text


def _no_ref(storage: Path, revision: str, cache: Path, why: str) -> str:
    """Why a revision without a ref cannot be read: the commits cached, when there are any."""
    snapshots = storage / "snapshots"
    cached = sorted(
        entry.name
        for entry in (os.scandir(snapshots) if os.path.isdir(snapshots) else ())
        if os.path.isfile(os.path.join(entry.path, CONFIG_NAME))
    )
    if not cached:
        return f"config.json is not in the cache ({cache}) and {why}"
    return (
        f"the cache ({cache}) has no refs/{revision} to say which commit '{revision}' is, and "
        f"{why}; cached commits with a config.json: {', '.join(cached)}; choose one with "
        "--revision COMMIT"
    )


def fetch_checkpoint(config: HubConfig) -> Checkpoint | None:
    """The safetensors headers of the model ``config`` came from, or None when it has none.

    Online, each header is read from the Hub at the config's commit with two range requests
    (the 8-byte length, then the header); a sharded model's index is downloaded into the cache.
    From the cache, the snapshot folder is read when it holds safetensors files (None when it
    holds an index without all its shards)."""
    from costcalc.checkpoint import (
        INDEX_NAME,
        SINGLE_NAME,
        build_checkpoint,
        find_checkpoint,
        index_without_shards,
        read_index,
    )

    if not config.downloaded:
        cache = hub_settings().cache
        if index_without_shards(config.path.parent, cache, partial=True) is not None:
            return None  # the index alone was cached: no headers to read offline
        return find_checkpoint(config.path.parent, cache)
    remote = _Remote(config, hub_settings())
    if remote.exists(SINGLE_NAME):
        return build_checkpoint(remote.source, [remote.header(SINGLE_NAME)], None, None)
    if not remote.exists(INDEX_NAME):
        return None
    index = remote.download(INDEX_NAME)
    return read_index(index, remote.source, remote.header, MAX_PARALLEL, remote.settings.cache)


class _Remote:
    """The files of one model at one commit on the Hub, read without their weights."""

    def __init__(self, config: HubConfig, settings: HubSettings) -> None:
        self.config = config
        self.settings = settings
        self.source = f"hf://{config.repo_id}@{config.commit}"

    def url(self, name: str) -> str:
        from huggingface_hub import hf_hub_url

        return hf_hub_url(
            self.config.repo_id, name, revision=self.config.commit, endpoint=self.settings.endpoint
        )

    def exists(self, name: str) -> bool:
        """Whether the model has file ``name`` (a HEAD request)."""
        from huggingface_hub import get_hf_file_metadata
        from huggingface_hub.errors import RemoteEntryNotFoundError

        try:
            self.timed(
                name, 0, lambda: get_hf_file_metadata(self.url(name), timeout=TIMEOUT_SECONDS)
            )
        except HubError as exc:
            if isinstance(exc.__context__, RemoteEntryNotFoundError):
                return False
            raise
        return True

    def download(self, name: str) -> Path:
        """A small file (an index) downloaded into the cache."""
        from huggingface_hub import get_hf_file_metadata, hf_hub_download

        from costcalc.checkpoint import MAX_INDEX_BYTES

        def size() -> int | None:
            found: int | None = get_hf_file_metadata(self.url(name), timeout=TIMEOUT_SECONDS).size
            return found

        known = self.timed(name, 0, size)
        if known is not None and known > MAX_INDEX_BYTES:
            raise HubError(
                self.config.label,
                f"{name} is {known:,} bytes; one over {MAX_INDEX_BYTES:,} is refused",
            )

        def download() -> str:
            path: str = hf_hub_download(
                self.config.repo_id,
                name,
                revision=self.config.commit,
                cache_dir=self.settings.cache,
                endpoint=self.settings.endpoint,
                etag_timeout=TIMEOUT_SECONDS,
            )
            return path

        return Path(self.timed(name, known or 0, download))

    def timed(self, name: str, size: int, call: Callable[[], T]) -> T:
        """``call()`` within the deadline of reading ``size`` bytes of ``name``
        (:data:`DEADLINE_SECONDS`), whatever it raises a HubError (or a CheckpointError)."""
        from costcalc.errors import CheckpointError

        try:
            return within_deadline(DEADLINE_SECONDS + size / 2**20, call)
        except (HubError, CheckpointError):
            raise
        except Exception as exc:
            failed = library_failure(self.config.label, exc, self.settings, name)
            if isinstance(failed, str):
                failed = HubError(self.config.label, f"reading {name}: {failed}")
            raise failed from None

    def header(self, name: str) -> Header:
        """The header of safetensors file ``name``: bytes 0-7 give its length N and the file's
        size, bytes 8 to 8+N-1 the header; nothing past it is asked for or read."""
        from costcalc.checkpoint import check_header_length, decode_json, parse_header

        where = f"{self.source}/{name}"
        first, size = self.range(name, 0, 8)
        n = int.from_bytes(first, "little")
        check_header_length(where, n, size)
        with _LARGE_HEADERS if n > LARGE_HEADER_BYTES else nullcontext():
            text = decode_json(self.range(name, 8, n)[0] if n else b"", where, "header")
            return parse_header(where, size, n, text)

    def range(self, name: str, start: int, length: int) -> tuple[bytes, int]:
        """``length`` bytes of file ``name`` from ``start``, and the file's size, by one range
        request within its deadline; an answer that is not exactly that range is refused
        unread."""
        from huggingface_hub import get_session, hf_raise_for_status
        from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

        from costcalc.errors import CheckpointError

        where = f"{self.source}/{name}"
        asked = f"bytes={start}-{start + length - 1}"

        def read() -> tuple[bytes, int]:
            headers = {**build_hf_headers(), "Range": asked, "Accept-Encoding": "identity"}
            with get_session().stream(
                "GET",
                self.url(name),
                headers=headers,
                timeout=TIMEOUT_SECONDS,
                follow_redirects=True,
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    hf_raise_for_status(response)
                total = _content_range(response.headers.get("Content-Range"), start, length)
                if response.status_code != 206 or total is None:
                    raise CheckpointError(
                        where,
                        f"the server answered {response.status_code} without the byte range "
                        f"{start}-{start + length - 1}; only headers are read, never weights",
                    )
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > length:
                        break
            if len(body) != length:
                raise CheckpointError(
                    where, f"the server sent {len(body):,} bytes for a range of {length:,}"
                )
            return bytes(body), total

        return self.timed(name, length, read)


_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


def _content_range(value: str | None, start: int, length: int) -> int | None:
    """The file size a ``Content-Range`` header gives, when it names exactly the range asked."""
    match = _CONTENT_RANGE.fullmatch(value or "")
    if match is None:
        return None
    first, last, total = (int(group) for group in match.groups())
    return total if (first, last) == (start, start + length - 1) and last < total else None
