"""Serving engines' allocation rules, where they differ from the formula: what llama.cpp and vLLM
actually allocate for the weights and the KV cache (:mod:`costcalc.engines.llamacpp`,
:mod:`costcalc.engines.vllm`). ``transformers``, the default, is the formula itself: every
tensor as PyTorch holds it, the cache as transformers' ``DynamicCache`` grows it."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from costcalc.errors import UsageError, check_choice

ENGINES: tuple[str, ...] = ("transformers", "llamacpp", "vllm")
DEFAULT_ENGINE = "transformers"


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


def engine_setup(
    name: str | None = None,
    cache_type_k: str | None = None,
    cache_type_v: str | None = None,
    swa_full: bool = False,
    block_size: int | None = None,
    max_num_batched_tokens: int | None = None,
    kv_cache_memory: int | None = None,
    utilisation: Fraction | None = None,
    device_memory: int | None = None,
) -> EngineSetup:
    """A checked :class:`EngineSetup`: an engine's options without that engine are errors."""
    from costcalc.compute import check_count

    engine = check_engine(name)
    options: dict[str, dict[str, object]] = {
        "llamacpp": {
            "--cache-type-k": cache_type_k,
            "--cache-type-v": cache_type_v,
            "--swa-full": swa_full or None,
        },
        "vllm": {
            "--block-size": block_size,
            "--max-num-batched-tokens": max_num_batched_tokens,
            "--kv-cache-memory": kv_cache_memory,
            "--gpu-memory-utilization": utilisation,
        },
    }
    for owner, given in options.items():
        named = [option for option, value in given.items() if value is not None]
        if named and engine != owner:
            words = {"llamacpp": "llama.cpp", "vllm": "vLLM"}[owner]
            raise UsageError(f"{', '.join(named)} applies to {words}; add --engine {owner}")
    if engine == "llamacpp":
        from costcalc.engines.llamacpp import check_cache_type

        cache_type_k = None if cache_type_k is None else check_cache_type(cache_type_k)
        cache_type_v = None if cache_type_v is None else check_cache_type(cache_type_v)
    for option, count in {
        "block size": block_size,
        "max_num_batched_tokens": max_num_batched_tokens,
    }.items():
        if count is not None:
            check_count(option, count)
    return EngineSetup(
        engine,
        cache_type_k,
        cache_type_v,
        swa_full,
        block_size,
        max_num_batched_tokens,
        kv_cache_memory,
        utilisation,
        device_memory,
    )
