"""Serving engines' allocation rules, where they differ from the formula: what llama.cpp and vLLM
actually allocate for the weights and the KV cache (:mod:`costcalc.engines.llamacpp`,
:mod:`costcalc.engines.vllm`). ``transformers``, the default, is the formula itself: every
tensor as PyTorch holds it, the cache as transformers' ``DynamicCache`` grows it.

This module holds what the memory formulas need to know of an engine (its name and options, the
shape of what it reports) and imports no engine: the engines count with the formulas
(:mod:`costcalc.memory`), and :mod:`costcalc.engines.dispatch` picks one of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from costcalc.errors import check_choice

ENGINES: tuple[str, ...] = ("transformers", "llamacpp", "vllm")
DEFAULT_ENGINE = "transformers"
ENGINE_WORDS = {"transformers": "transformers", "llamacpp": "llama.cpp", "vllm": "vLLM"}
"""Each engine's name as its project writes it."""


def check_engine(name: str | None) -> str:
    """An engine name (``llama.cpp`` is read as ``llamacpp``), or a UsageError listing them."""
    if name is None:
        return DEFAULT_ENGINE
    key = name.strip().lower().replace(".", "").replace("-", "").replace("_", "")
    return check_choice(key if key in ENGINES else name, ENGINES, "engine")


@dataclass(frozen=True)
class EngineSetup:
    """The engine memory is counted for and its options: llama.cpp's cache types (``-ctk``,
    ``-ctv``; None: f16, or the --kv-dtype given) and ``swa_full``; vLLM's ``block_size``,
    ``max_num_batched_tokens`` (None: its default for the device), ``kv_cache_memory_bytes``
    and ``gpu_memory_utilization``, and the device's memory its budget is taken from."""

    name: str = DEFAULT_ENGINE
    cache_type_k: str | None = None
    cache_type_v: str | None = None
    swa_full: bool = False
    block_size: int | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_memory: int | None = None
    utilisation: Fraction | None = None
    device_memory: int | None = None


class EngineMemory(Protocol):
    """What an engine reports beside the memory figures (``LlamaCppMemory``, ``VllmMemory``)."""

    @property
    def name(self) -> str:
        """The engine's key: ``llamacpp``, ``vllm``."""

    @property
    def cache_words(self) -> str:
        """The cache's size in the engine's own unit: ``8,192 cells``, ``2,048 blocks``."""

    def to_dict(self) -> dict[str, Any]:
        """The engine's figures in JSON."""

    def notes(self) -> list[str]:
        """How the figures were counted and what they leave out, in words."""
