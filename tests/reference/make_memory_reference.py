"""Generate tests/golden/memory_reference.json: optimizer state and sliding-window KV caches.

Run by hand (pytest does not collect this file); it needs torch and transformers, as
make_golden.py does, and reuses its model building (fixture configs, no downloads):

    python tests/reference/make_memory_reference.py

Optimizer state: every parameter gets a gradient, the optimizer takes one step, and the state it
keeps is counted tensor by tensor. AdamW and SGD run on the meta device (state shapes only);
Adafactor reads parameter norms during its step, so it runs on CPU float32 with zero gradients.
Sliding window: Qwen2.5-0.5B's config with every layer sliding (window 8) after a forward of 16
tokens with ``use_cache=True``.
"""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Callable

import torch
import transformers
from make_golden import ROOT, build_model, fixture_path, forward, load_config, token_ids
from torch import nn
from transformers import CONFIG_MAPPING

OUTPUT = ROOT / "tests" / "golden" / "memory_reference.json"
GENERATOR = "tests/reference/make_memory_reference.py"
MODELS = ["gpt2", "qwen2.5-0.5b"]
OPTIMIZERS: dict[str, tuple[str, Callable[[list[nn.Parameter]], torch.optim.Optimizer]]] = {
    "adamw": ("meta", lambda params: torch.optim.AdamW(params)),
    "sgd": ("meta", lambda params: torch.optim.SGD(params, lr=0.1)),
    "sgd-momentum": ("meta", lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9)),
    "adafactor": ("cpu", lambda params: torch.optim.Adafactor(params)),
}
WINDOW_BATCH, WINDOW_SEQ = 1, 16
WINDOW_OVERRIDES = {"use_sliding_window": True, "sliding_window": 8, "max_window_layers": 0}


def optimizer_record(name: str, optimizer: str) -> dict:
    device, make = OPTIMIZERS[optimizer]
    model = build_model(load_config(name), device=device).train()
    params = list(model.parameters())
    for param in params:
        param.grad = torch.zeros_like(param)
    opt = make(params)
    opt.step()
    numel: dict[str, int] = {}
    dtypes: dict[str, str] = {}
    for param in params:
        for key, value in opt.state[param].items():
            if isinstance(value, torch.Tensor):
                numel[key] = numel.get(key, 0) + value.numel()
                dtypes[key] = str(value.dtype)
    return {
        "device": device,
        "param_dtype": str(params[0].dtype),
        "n_param_tensors": len(params),
        "param_numel": sum(p.numel() for p in params),
        "state_numel_by_key": numel,
        "state_dtype_by_key": dtypes,
        "state_numel": sum(numel.values()),
    }


def sliding_window_record() -> dict:
    data = json.loads(fixture_path("qwen2.5-0.5b").read_text())
    data.update(WINDOW_OVERRIDES)
    model = build_model(CONFIG_MAPPING[data["model_type"]].from_dict(data))
    ids = token_ids(WINDOW_BATCH, WINDOW_SEQ, "meta")
    cache = forward(model, ids, use_cache=True).past_key_values
    return {
        "model": "qwen2.5-0.5b",
        "overrides": WINDOW_OVERRIDES,
        "batch": WINDOW_BATCH,
        "seq_len": WINDOW_SEQ,
        "cache_layer_classes": sorted({type(layer).__name__ for layer in cache.layers}),
        "key_shape_layer0": list(cache.layers[0].keys.shape),
        "kv_cache_elements": sum(
            layer.keys.numel() + layer.values.numel() for layer in cache.layers
        ),
    }


def main() -> int:
    models = {
        name: {"optimizers": {opt: optimizer_record(name, opt) for opt in OPTIMIZERS}}
        for name in MODELS
    }
    data = {
        "generator": GENERATOR,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "date": datetime.date.today().isoformat(),
        "models": models,
        "sliding_window_kv_cache": sliding_window_record(),
    }
    OUTPUT.write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
