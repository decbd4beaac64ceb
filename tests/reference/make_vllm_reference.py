"""Generate tests/golden/vllm_kv_cache.json: vLLM's own KV-cache planning, model by model.

Run by hand (pytest does not collect this file). vLLM's GPU wheel cannot run here, but its
planning is plain Python; the script imports it from vLLM 0.33.0 installed without its
dependencies beside torch (``pip install --no-deps vllm==0.33.0`` and the few pure-Python modules
its imports need: cbor2, pyzmq, msgspec, cloudpickle, fastapi, ...):

    python tests/reference/make_vllm_reference.py

For each Hugging Face config below (read by transformers' ``AutoConfig``, as vLLM reads it),
every decoder layer's KV cache spec is built as vLLM's attention layers build it
(``Attention.get_kv_cache_spec``: ``FullAttentionSpec``, or ``SlidingWindowSpec`` for a layer
with a window, ``config.layer_types`` deciding which; ``MLAAttention.get_kv_cache_spec``: one
head of ``kv_lora_rank + qk_rope_head_dim``), in the model's dtype or fp8. Then vLLM's own
functions plan the cache: ``get_kv_cache_groups``, ``get_kv_cache_config_from_groups`` for a KV
budget, ``get_max_concurrency_for_kv_cache_config`` and ``get_kv_cache_capacity``, with a
``VllmConfig`` of the given ``block_size``, ``max_num_batched_tokens`` and ``max_model_len``, the
hybrid KV cache manager on (vLLM's default on GPUs; this CPU platform would turn it off) and the
default async scheduling.
"""

from __future__ import annotations

import datetime
import json
import types
from importlib.metadata import version
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "golden" / "vllm_kv_cache.json"
FIXTURES = ROOT / "tests" / "fixtures" / "hf"
MODELS = ("llama-3.1-8b", "qwen3-8b", "mixtral-8x7b", "mistral-7b-v0.1", "gemma-2-2b",
          "gemma-3-1b", "gpt-oss-20b", "deepseek-v3")  # fmt: skip
CASES = [
    # block_size, kv_cache_dtype, max_model_len, max_num_batched_tokens, budget bytes
    (16, "auto", 4096, 2048, 10 * 2**30),
    (16, "auto", 32768, 8192, 37_500_000_123),
    (32, "fp8", 8192, 2048, 5 * 2**30 + 7),
    (16, "fp8", None, 16384, 60 * 2**30),
]


def layer_specs(config, block_size: int, dtype: torch.dtype) -> dict:
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MLAAttentionSpec, SlidingWindowSpec

    text = config.get_text_config()
    n = text.num_hidden_layers
    if getattr(text, "kv_lora_rank", None):
        size = text.kv_lora_rank + text.qk_rope_head_dim
        spec = MLAAttentionSpec(block_size=block_size, num_kv_heads=1, head_size=size, dtype=dtype)
        return {f"layers.{i}": spec for i in range(n)}
    heads = text.num_key_value_heads
    head = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    types_ = getattr(text, "layer_types", None)
    window = getattr(text, "sliding_window", None)
    specs = {}
    for i in range(n):
        sliding = window is not None and (types_ is None or types_[i] == "sliding_attention")
        common = {
            "block_size": block_size,
            "num_kv_heads": heads,
            "head_size": head,
            "dtype": dtype,
        }
        specs[f"layers.{i}"] = (
            SlidingWindowSpec(**common, sliding_window=window)
            if sliding
            else FullAttentionSpec(**common)
        )
    return specs


def plan(name: str, case: tuple) -> dict:
    from transformers import AutoConfig
    from vllm.config import CacheConfig, DeviceConfig, SchedulerConfig, VllmConfig
    from vllm.v1.core import kv_cache_planning, kv_cache_utils

    block_size, kv_dtype, max_len, batched, budget = case
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    config = AutoConfig.for_model(**data)
    text = config.get_text_config()
    length = max_len or text.max_position_embeddings
    scheduler = SchedulerConfig(
        max_num_batched_tokens=batched, max_model_len=length, is_encoder_decoder=False
    )
    cache = CacheConfig(block_size=block_size)
    vllm_config = VllmConfig(
        cache_config=cache, scheduler_config=scheduler, device_config=DeviceConfig(device="cuda")
    )
    object.__setattr__(vllm_config, "model_config", types.SimpleNamespace(max_model_len=length))
    scheduler.disable_hybrid_kv_cache_manager = False
    cache.kv_cache_layout = "LBNHC"
    dtype = torch.float8_e4m3fn if kv_dtype == "fp8" else torch.bfloat16
    specs = layer_specs(config, block_size, dtype)
    groups = kv_cache_planning.get_kv_cache_groups(vllm_config, specs)
    kv_config = kv_cache_planning.get_kv_cache_config_from_groups(vllm_config, groups, budget)
    concurrency = kv_cache_utils.get_max_concurrency_for_kv_cache_config(vllm_config, kv_config)
    tokens, _ = kv_cache_utils.get_kv_cache_capacity(vllm_config, kv_config)
    return {
        "block_size": block_size,
        "kv_cache_dtype": kv_dtype,
        "max_model_len": length,
        "max_num_batched_tokens": batched,
        "max_in_flight_tokens": vllm_config.max_in_flight_tokens,
        "budget_bytes": budget,
        "groups": [
            {
                "spec": type(g.kv_cache_spec).__name__,
                "layers": len(g.layer_names),
                "page_bytes": g.kv_cache_spec.page_size_bytes,
            }
            for g in groups
        ],
        "num_blocks": kv_config.num_blocks,
        "tensor_bytes": sorted({t.size for t in kv_config.kv_cache_tensors}),
        "max_concurrency": concurrency,
        "kv_cache_tokens": tokens,
        "log": (
            f"GPU KV cache size: {tokens:,} tokens, Maximum concurrency for {length:,} tokens "
            f"per request: {concurrency:.2f}x"
        ),
    }


def main() -> None:
    records = {name: [plan(name, case) for case in CASES] for name in MODELS}
    data = {
        "generator": "tests/reference/make_vllm_reference.py",
        "date": datetime.date.today().isoformat(),
        "source": (
            f"vLLM {version('vllm')} get_kv_cache_groups, get_kv_cache_config_from_groups, "
            "get_max_concurrency_for_kv_cache_config, get_kv_cache_capacity; layer specs as "
            f"its attention layers build them; configs read by transformers "
            f"{version('transformers')}"
        ),
        "models": records,
    }
    OUTPUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
