"""Serving engines' allocation rules, where they differ from the formula: what llama.cpp and vLLM
actually allocate for the weights and the KV cache (:mod:`costcalc.engines.llamacpp`,
:mod:`costcalc.engines.vllm`). ``transformers``, the default, is the formula itself: every
tensor as PyTorch holds it, the cache as transformers' ``DynamicCache`` grows it."""

from __future__ import annotations

from costcalc.errors import check_choice

ENGINES: tuple[str, ...] = ("transformers", "llamacpp", "vllm")
DEFAULT_ENGINE = "transformers"


def check_engine(name: str | None) -> str:
    """An engine name (``llama.cpp`` is read as ``llamacpp``), or a UsageError listing them."""
    if name is None:
        return DEFAULT_ENGINE
    key = name.strip().lower().replace(".", "").replace("-", "").replace("_", "")
    return check_choice(key if key in ENGINES else name, ENGINES, "engine")
