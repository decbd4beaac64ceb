"""A model's files from the Hugging Face Hub, through ``huggingface_hub``: its ``config.json``
(downloaded into the shared cache, or read from it) and its safetensors headers (read with HTTP
range requests: 8 bytes, then the header; the weights are never fetched).

Settings are read from the environment each time, as ``huggingface_hub`` reads them: the cache is
``$HF_HUB_CACHE``, else ``$HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``; the Hub is
``$HF_ENDPOINT`` (``https://huggingface.co``); ``$HF_TOKEN`` authenticates. With
``$HF_HUB_OFFLINE`` (or ``$TRANSFORMERS_OFFLINE``) set, nothing connects and files come from the
cache only; when the Hub cannot be reached, the cache is used too.

A revision is a branch, a tag or a commit. The cache maps a branch or tag to a commit with
``refs/<revision>``, read here within :data:`MAX_REF_BYTES` and used only when it holds a commit
hash; a file found must resolve inside the cache. ``huggingface_hub`` is imported only when a
model is fetched, so a command that reads no Hub model never pays for it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from costcalc.errors import FileReadError, HubError, UsageError
from costcalc.files import MAX_FILE_BYTES, os_reason, read_bytes

if TYPE_CHECKING:
    from costcalc.checkpoint import Checkpoint, Header

REPO_ID = re.compile(r"^(?:[\w.-]+/)?[\w.-]+$")
"""``ORG/NAME`` (or a bare ``NAME``) as the Hub spells repository ids."""

REVISION = re.compile(r"^[\w.-]+(?:/[\w.-]+)*$")
"""A branch, tag or commit (``main``, ``v1.0``, ``refs/pr/1``, a 40-hex hash)."""

COMMIT = re.compile(r"[0-9a-f]{40}")
"""A commit hash: what a ref must hold, the name of a folder under ``snapshots/``."""

MAX_REF_BYTES = 256
"""A ref is a 40-character hash and a newline; a larger file is no ref and is not read."""

CONFIG_NAME = "config.json"
DEFAULT_ENDPOINT = "https://huggingface.co"
TIMEOUT_SECONDS = 10.0
"""How long one request may wait for the Hub before it counts as unreachable."""
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
    """The settings the environment gives, chosen as ``huggingface_hub`` chooses them."""
    env = os.environ if env is None else env
    offline = any(
        env.get(name, "").upper() in {"1", "ON", "YES", "TRUE"}
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )
    endpoint = (env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    return HubSettings(hub_cache_dir(env), endpoint, offline)


def hub_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The cache folder, chosen from the environment as ``huggingface_hub`` chooses it."""
    env = os.environ if env is None else env
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(name):
            return _home(env[name])
    if env.get("HF_HOME"):
        return _home(env["HF_HOME"]) / "hub"
    cache_home = env.get("XDG_CACHE_HOME") or "~/.cache"
    return _home(cache_home) / "huggingface" / "hub"


def _home(path: str) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded; a usage error when it cannot be."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        message = f"the cache folder {path!r} names a home directory that does not exist"
        raise UsageError(message) from None


def split_hub_id(text: str, revision: str | None = None) -> tuple[str, str]:
    """``ORG/NAME[@REVISION]`` as (repository id, revision); ``revision`` is used when the id
    names none, ``main`` when neither does. A malformed id or revision is a usage error."""
    repo_id, at, own = text.partition("@")
    if not REPO_ID.match(repo_id) or ".." in repo_id or repo_id.startswith("."):
        raise UsageError(
            f"--hf expects a model id like ORG/NAME or ORG/NAME@REVISION (got {text!r})"
        )
    chosen = own if at else ("main" if revision is None else revision)
    if not REVISION.match(chosen) or ".." in chosen.split("/"):
        raise UsageError(
            f"a revision is a branch, tag or commit like main, v1.0 or a 40-hex hash "
            f"(got {chosen!r})"
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
    if settings.offline:
        return _from_cache(
            repo_id, revision, settings, "HF_HUB_OFFLINE is set (unset it to download)"
        )
    import httpx2
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    url = hf_hub_url(repo_id, CONFIG_NAME, revision=revision, endpoint=settings.endpoint)
    try:
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
    except (httpx2.TransportError, OfflineModeIsEnabled) as exc:
        why = f"the Hub ({settings.endpoint}) cannot be reached: {_transport_reason(exc)}"
        return _from_cache(repo_id, revision, settings, why)
    except HfHubHTTPError as exc:
        raise http_error(label, exc, settings.endpoint, CONFIG_NAME) from None
    except OSError as exc:
        raise HubError(
            label, f"cannot write the cache ({settings.cache}): {os_reason(exc)}"
        ) from None
    commit = metadata.commit_hash or ""
    return HubConfig(repo_id, revision, commit, Path(path), downloaded=True)


def _transport_reason(exc: Exception) -> str:
    """A network failure in words: the cause's reason when there is one."""
    import httpx2

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
        path = Path(found)
        inside = path.resolve().is_relative_to(cache.resolve())
    except HubError:
        raise
    except FileNotFoundError:
        raise HubError(label, f"config.json is not in the cache ({cache}) and {why}") from None
    except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: a symbolic-link loop
        reason = os_reason(exc) if isinstance(exc, OSError) else str(exc)
        raise HubError(label, f"cannot read the cache ({cache}): {reason}") from None
    if not inside:
        raise HubError(label, f"{path} resolves outside the cache ({cache}); refused")
    return HubConfig(repo_id, revision, commit, path, downloaded=False)


def _ref(storage: Path, revision: str, label: str) -> str | None:
    """The commit ``refs/<revision>`` holds, read within MAX_REF_BYTES; None when there is no
    such ref; anything but a commit hash is refused."""
    ref = storage / "refs" / revision
    if not os.path.lexists(ref):
        os.stat(storage)  # an unreadable cache says so; a missing model is reported later
        return None
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
    From the cache, the snapshot folder is read when it holds safetensors files."""
    from costcalc.checkpoint import (
        INDEX_NAME,
        SINGLE_NAME,
        build_checkpoint,
        find_checkpoint,
        read_index,
    )

    if not config.downloaded:
        return find_checkpoint(config.path.parent, hub_settings().cache)
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
            get_hf_file_metadata(self.url(name), timeout=TIMEOUT_SECONDS)
        except RemoteEntryNotFoundError:
            return False
        except Exception as exc:
            raise self.failure(name, exc) from None
        return True

    def download(self, name: str) -> Path:
        """A small file (an index) downloaded into the cache."""
        from huggingface_hub import get_hf_file_metadata, hf_hub_download

        from costcalc.checkpoint import MAX_INDEX_BYTES

        try:
            size = get_hf_file_metadata(self.url(name), timeout=TIMEOUT_SECONDS).size
            if size is not None and size > MAX_INDEX_BYTES:
                raise HubError(
                    self.config.label,
                    f"{name} is {size:,} bytes; one over {MAX_INDEX_BYTES:,} is refused",
                )
            return Path(
                hf_hub_download(
                    self.config.repo_id,
                    name,
                    revision=self.config.commit,
                    cache_dir=self.settings.cache,
                    endpoint=self.settings.endpoint,
                    etag_timeout=TIMEOUT_SECONDS,
                )
            )
        except HubError:
            raise
        except Exception as exc:
            raise self.failure(name, exc) from None

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
        request; an answer that is not exactly that range is refused unread."""
        import httpx2
        from huggingface_hub import get_session, hf_raise_for_status
        from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

        from costcalc.errors import CheckpointError

        where = f"{self.source}/{name}"
        headers = {
            **build_hf_headers(),
            "Range": f"bytes={start}-{start + length - 1}",
            "Accept-Encoding": "identity",
        }
        try:
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
        except (CheckpointError, HubError):
            raise
        except httpx2.TransportError as exc:
            raise HubError(self.config.label, f"reading {name}: {_transport_reason(exc)}") from None
        except Exception as exc:
            raise self.failure(name, exc) from None
        if len(body) != length:
            raise CheckpointError(
                where, f"the server sent {len(body):,} bytes for a range of {length:,}"
            )
        return bytes(body), total

    def failure(self, name: str, exc: Exception) -> HubError:
        import httpx2
        from huggingface_hub.errors import HfHubHTTPError

        if isinstance(exc, HfHubHTTPError):
            return http_error(self.config.label, exc, self.settings.endpoint, name)
        if isinstance(exc, httpx2.TransportError):
            return HubError(self.config.label, f"reading {name}: {_transport_reason(exc)}")
        if isinstance(exc, OSError):
            return HubError(self.config.label, f"reading {name}: {os_reason(exc)}")
        raise exc


_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


def _content_range(value: str | None, start: int, length: int) -> int | None:
    """The file size a ``Content-Range`` header gives, when it names exactly the range asked."""
    match = _CONTENT_RANGE.fullmatch(value or "")
    if match is None:
        return None
    first, last, total = (int(group) for group in match.groups())
    return total if (first, last) == (start, start + length - 1) and last < total else None
