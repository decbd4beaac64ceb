"""Choosing an engine: its options checked, and the memory report it gives
(:func:`costcalc.memory.memory_report` for transformers, the formula itself)."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from costcalc.engines import ENGINE_WORDS, EngineSetup, check_engine
from costcalc.errors import UsageError

if TYPE_CHECKING:
    from costcalc.memory import MemoryReport, MemorySetup
    from costcalc.spec import ModelSpec


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
            raise UsageError(
                f"{', '.join(named)} applies to {ENGINE_WORDS[owner]}; add --engine {owner}"
            )
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


def engine_report(spec: ModelSpec, setup: MemorySetup) -> MemoryReport:
    """The memory of ``setup`` as its engine allocates it: llama.cpp's buffers
    (:func:`~costcalc.engines.llamacpp.llamacpp_report`), vLLM's blocks
    (:func:`~costcalc.engines.vllm.vllm_report`), else the formula
    (:func:`~costcalc.memory.memory_report`)."""
    from costcalc.memory import memory_report, report_length

    if setup.engine.name == "llamacpp":
        from costcalc.engines.llamacpp import llamacpp_report

        return llamacpp_report(spec, setup, report_length(spec, setup))
    if setup.engine.name == "vllm":
        from costcalc.engines.vllm import vllm_report

        return vllm_report(spec, setup, report_length(spec, setup))
    return memory_report(spec, setup)
