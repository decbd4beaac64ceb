"""Finding a model's ``config.json`` in the local Hugging Face cache, without any network.

The cache is where ``huggingface_hub`` keeps it: ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``. A model ``ORG/NAME``
lives in ``models--ORG--NAME/``; ``refs/main`` names the revision whose files are in
``snapshots/<revision>/``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from costcalc.errors import FileReadError, HubCacheError, UsageError
from costcalc.files import os_reason, read_bytes

REPO_ID = re.compile(r"^(?:[\w.-]+/)?[\w.-]+$")
"""``ORG/NAME`` (or a bare ``NAME``) as the Hub spells repository ids."""


COMMIT = re.compile(r"[0-9a-f]{40}")
"""What ``refs/main`` must hold: a commit hash, the name of a folder under ``snapshots/``."""

MAX_REF_BYTES = 256
"""A ref is a 40-character hash and a newline; a larger file is no ref and is not read."""


def hub_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The cache folder, chosen from the environment as ``huggingface_hub`` chooses it."""
    env = os.environ if env is None else env
    if env.get("HF_HUB_CACHE"):
        return _home(env["HF_HUB_CACHE"])
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


def check_repo_id(repo_id: str) -> str:
    """``repo_id`` if it looks like ``ORG/NAME``, else a usage error."""
    if not REPO_ID.match(repo_id) or ".." in repo_id or repo_id.startswith("."):
        raise UsageError(f"--hf expects a model id like ORG/NAME (got {repo_id!r})")
    return repo_id


def cached_config(repo_id: str, env: Mapping[str, str] | None = None) -> Path:
    """The cached ``config.json`` of ``repo_id`` (the revision ``refs/main`` names), refusing
    one that resolves outside the cache; any OS error is a :class:`HubCacheError`."""
    cache = hub_cache_dir(env)
    repo = cache / f"models--{check_repo_id(repo_id).replace('/', '--')}"
    try:
        config = _snapshot_config(repo, repo_id, cache)
        inside = config.resolve().is_relative_to(cache.resolve())
    except HubCacheError:
        raise
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symbolic-link loop
        reason = os_reason(exc) if isinstance(exc, OSError) else str(exc)
        raise HubCacheError(repo_id, str(cache), f"cannot read the cache: {reason}") from None
    if not inside:
        raise HubCacheError(repo_id, str(cache), f"{config} resolves outside the cache; refused")
    return config


def _snapshot_config(repo: Path, repo_id: str, cache: Path) -> Path:
    snapshots = repo / "snapshots"
    ref = repo / "refs" / "main"
    if ref.is_file():
        candidates = [snapshots / _commit(ref, repo_id, cache)]
    else:  # downloaded by revision only: usable when there is exactly one snapshot
        candidates = sorted(snapshots.iterdir()) if snapshots.is_dir() else []
    found = [path / "config.json" for path in candidates if (path / "config.json").is_file()]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        revisions = ", ".join(path.parent.name for path in found)
        raise HubCacheError(
            repo_id, str(cache), f"several revisions and no refs/main to choose ({revisions})"
        )
    raise HubCacheError(repo_id, str(cache), "config.json is not in the cache")


def _commit(ref: Path, repo_id: str, cache: Path) -> str:
    """The commit hash ``ref`` holds, read within MAX_REF_BYTES; anything else is refused."""
    try:
        text = read_bytes(ref, MAX_REF_BYTES).decode("ascii").strip()
    except (FileReadError, UnicodeDecodeError):
        text = ""
    if not COMMIT.fullmatch(text):
        raise HubCacheError(repo_id, str(cache), "refs/main does not hold a commit hash; refused")
    return text
