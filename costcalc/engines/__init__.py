"""Serving engines' allocation rules, where they differ from the formula: what llama.cpp and vLLM
actually allocate for the weights and the KV cache (:mod:`costcalc.engines.llamacpp`,
:mod:`costcalc.engines.vllm`). ``transformers``, the default, is the formula itself: every
tensor as PyTorch holds it, the cache as transformers' ``DynamicCache`` grows it."""

from __future__ import annotations

from dataclasses import dataclass

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
    ``-ctv``; None: f16, or the --kv-dtype given) and ``swa_full``."""

    name: str = DEFAULT_ENGINE
    cache_type_k: str | None = None
    cache_type_v: str | None = None
    swa_full: bool = False


def engine_setup(
    name: str | None = None,
    cache_type_k: str | None = None,
    cache_type_v: str | None = None,
    swa_full: bool = False,
) -> EngineSetup:
    """A checked :class:`EngineSetup`: an engine's options without that engine are errors."""
    engine = check_engine(name)
    given = {"--cache-type-k": cache_type_k, "--cache-type-v": cache_type_v}
    llamacpp = [option for option, value in given.items() if value is not None]
    if swa_full:
        llamacpp.append("--swa-full")
    if llamacpp and engine != "llamacpp":
        raise UsageError(f"{', '.join(llamacpp)} applies to llama.cpp; add --engine llamacpp")
    if engine == "llamacpp":
        from costcalc.engines.llamacpp import check_cache_type

        cache_type_k = None if cache_type_k is None else check_cache_type(cache_type_k)
        cache_type_v = None if cache_type_v is None else check_cache_type(cache_type_v)
    return EngineSetup(engine, cache_type_k, cache_type_v, swa_full)
