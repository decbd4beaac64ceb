"""costcalc: exact parameter counts, MACs, FLOPs and bytes of a transformer from its config.

The Python API (docs/api.md): :func:`load` a model from a preset, a path, a dict or a Hub id,
then :func:`count` its parameters, :func:`count_macs`, :func:`count_memory`,
:func:`count_lora` and :func:`count_plan`. Importing costcalc imports nothing else; each
function imports what it needs when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from costcalc.api import count, count_lora, count_macs, count_memory, count_plan, load

__version__ = "0.1.0"
__all__ = [
    "__version__",
    "count",
    "count_lora",
    "count_macs",
    "count_memory",
    "count_plan",
    "load",
]

_API = frozenset({"count", "count_lora", "count_macs", "count_memory", "count_plan", "load"})


def __getattr__(name: str) -> Any:
    if name in _API:
        from costcalc import api

        return getattr(api, name)
    raise AttributeError(f"module 'costcalc' has no attribute {name!r}")
