"""The environment of a benchmark's child processes: compiled bytecode, as installed.

pip compiles a package's modules on install, so an installed costcalc, like the peers it is
timed against, starts from bytecode. Each child reads it from a cache in a temporary directory
(PYTHONPYCACHEPREFIX), filled by the warm-up runs, so PYTHONDONTWRITEBYTECODE in the
environment does not make every run compile the source again; ``source=True`` keeps the
environment as it is (an editable install never written to: every process compiles the
modules it imports that have no cache beside them).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def child_env(source: bool = False) -> Iterator[dict[str, str]]:
    """The environment for child processes, with a bytecode cache that lasts the block."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ)
        if not source:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = cache
        yield env
