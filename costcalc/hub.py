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

from costcalc.errors import HubCacheError, UsageError

REPO_ID = re.compile(r"^(?:[\w.-]+/)?[\w.-]+$")
"""``ORG/NAME`` (or a bare ``NAME``) as the Hub spells repository ids."""


def hub_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The cache folder, chosen from the environment as ``huggingface_hub`` chooses it."""
    env = os.environ if env is None else env
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    cache_home = env.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(cache_home).expanduser() / "huggingface" / "hub"


def check_repo_id(repo_id: str) -> str:
    """``repo_id`` if it looks like ``ORG/NAME``, else a usage error."""
    if not REPO_ID.match(repo_id) or ".." in repo_id or repo_id.startswith("."):
        raise UsageError(f"--hf expects a model id like ORG/NAME (got {repo_id!r})")
    return repo_id


def cached_config(repo_id: str, env: Mapping[str, str] | None = None) -> Path:
    """The cached ``config.json`` of ``repo_id`` (the revision ``refs/main`` names)."""
    cache = hub_cache_dir(env)
    repo = cache / f"models--{check_repo_id(repo_id).replace('/', '--')}"
    snapshots = repo / "snapshots"
    ref = repo / "refs" / "main"
    if ref.is_file():
        revision = ref.read_text(encoding="utf-8").strip()
        candidates = [snapshots / revision]
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
