"""Generate tests/golden/activation_reference.json: the bytes a training forward saves for backward.

Run by hand (pytest does not collect this file); it needs torch and transformers, as
make_golden.py does, and builds small GPT-2, Llama, Qwen3, Mixtral, Qwen3-MoE, Gemma 2, Gemma 3,
OLMo 2, Qwen2-MoE (Qwen1.5-MoE), gpt-oss, StableLM 2 (with and without its per-head query/key
LayerNorms; a rotary a quarter of the head) and GLM (a rotary half the head) models from fixture
configs with their sizes shrunk
(real random weights on CPU, nothing downloaded; transformers refuses SDPA for Gemma 2 and
gpt-oss, which have eager records only):

    python tests/reference/make_activation_reference.py

Each record runs one forward with ``labels`` (the causal-LM loss included) in train mode under
``torch.autograd.graph.saved_tensors_hooks``. Every tensor autograd saves is counted by its
storage, once (deduplicated by ``untyped_storage().data_ptr()``, so views of one buffer and a
tensor saved by several ops count once, with the storage's full size); parameters and buffers
are left out (weights are counted elsewhere). A tensor is attributed to the decoder layer that
saves it (forward pre/post hooks on each layer), to ``outside`` when only code outside the layers
saves it (embeddings, final norm, logits, loss), or to ``shared`` when several layers save it
(rotary cos and sin, computed once per forward). A layer thus owns its input, which the previous
layer produced.

No KV cache: the forward runs with ``use_cache=False``, as a training step needs none (with the
configs' ``use_cache`` true, transformers builds a DynamicCache, whose concatenation copies each
layer's keys and values, and GPT-2's attention then saves those copies).

Dropout: the configs' dropout rates are set to 0 (``DROPOUT_OFF``), but in the records with
``dropout`` true (GPT-2, eager attention, the config's rate 0.1 everywhere). costcalc's specs
carry no dropout rate, most current models train without it, and a CPU measurement of dropout
would not tell what a GPU saves: on CPU ``F.dropout`` multiplies by a scaled noise tensor of the
input's dtype, where CUDA's fused ``native_dropout`` saves a 1-byte mask; with attention dropout
CPU SDPA also falls back to its math kernel (the s x s scores), where GPU kernels keep dropout
fused.
"""

from __future__ import annotations

import datetime
import json
import sys
from collections import defaultdict

import torch
import transformers
from make_golden import ROOT, fixture_path
from torch import nn
from transformers import CONFIG_MAPPING, AutoModelForCausalLM

OUTPUT = ROOT / "tests" / "golden" / "activation_reference.json"
GENERATOR = "tests/reference/make_activation_reference.py"
DROPOUT_OFF = {
    "resid_pdrop": 0.0,
    "embd_pdrop": 0.0,
    "attn_pdrop": 0.0,
    "attention_dropout": 0.0,
}
TINY = {
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 160,
    "num_hidden_layers": 2,
    "vocab_size": 96,
}
"""The sizes the small models share: D 64, H 4, K 2, F 160, 2 layers, V 96."""
NO_SPECIAL_IDS = {"pad_token_id": None, "eos_token_id": None}
"""Token ids the fixtures set beyond the small vocabulary, cleared."""
STABLELM = {**TINY, "bos_token_id": None, "eos_token_id": None}
"""StableLM 2 small, with and without its per-head query/key norms (the fixtures' one key)."""
SMALL = {
    "gpt2": {"n_embd": 64, "n_head": 4, "n_layer": 2, "n_inner": 160, "vocab_size": 96},
    "llama-3.1-8b": {**TINY, "head_dim": 16, "rope_scaling": None},
    "qwen3-8b": {**TINY, "head_dim": 24, "max_window_layers": 2},
    "mixtral-8x7b": {**TINY, "num_local_experts": 4, "num_experts_per_tok": 2},
    "qwen3-30b-a3b": {
        **TINY,
        "head_dim": 16,
        "moe_intermediate_size": 48,
        "max_window_layers": 2,
        "num_experts": 8,
        "num_experts_per_tok": 3,
    },
    "gemma-2-2b": {**TINY, "head_dim": 16, "query_pre_attn_scalar": 16},
    "gemma-3-1b": {**TINY, "head_dim": 16, "query_pre_attn_scalar": 16},
    "olmo-2-1b": {**TINY, **NO_SPECIAL_IDS},
    "qwen1.5-moe-a2.7b": {
        **TINY,
        "moe_intermediate_size": 48,
        "shared_expert_intermediate_size": 96,
        "max_window_layers": 2,
        "num_experts": 8,
        "num_experts_per_tok": 3,
    },
    "gpt-oss-20b": {
        **TINY,
        "head_dim": 16,
        "intermediate_size": 48,
        "layer_types": ["sliding_attention", "full_attention"],
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "experts_per_token": 2,
        **NO_SPECIAL_IDS,
    },
    "stablelm-2-1.6b": STABLELM,
    "stablelm-2-1.6b-qk-layernorm": STABLELM,
    "glm-4-9b-chat-hf": {**TINY, "head_dim": 16, **NO_SPECIAL_IDS},
}
MODELS = list(SMALL)
ATTENTION = ["eager", "sdpa"]
EAGER_ONLY = {"gemma-2-2b", "gpt-oss-20b"}
"""transformers refuses SDPA for them (softcapped logits, sinks): eager records only."""
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
SHAPES = [(1, 16), (2, 40)]


def small_config(name: str, dropout: bool = False):
    """The small config; with ``dropout`` the fixture's dropout rates are kept."""
    data = json.loads(fixture_path(name).read_text())
    data.update(SMALL[name] if dropout else overrides(name))
    return CONFIG_MAPPING[data["model_type"]].from_dict(data)


def overrides(name: str) -> dict:
    """The fixture keys this script changes: the small sizes and dropout off where a key exists."""
    data = json.loads(fixture_path(name).read_text())
    off = {key: value for key, value in DROPOUT_OFF.items() if key in data or name == "gpt2"}
    if name == "gpt2":
        off.pop("attention_dropout")
    return {**SMALL[name], **off}


def layer_list(model: nn.Module, n_layers: int) -> nn.ModuleList:
    for module in model.modules():
        if isinstance(module, nn.ModuleList) and len(module) == n_layers:
            return module
    raise LookupError("no decoder layers")


def measure(
    name: str, attention: str, dtype: str, batch: int, seq: int, dropout: bool = False
) -> dict:
    torch.manual_seed(0)
    config = small_config(name, dropout)
    model = AutoModelForCausalLM.from_config(
        config, attn_implementation=attention, dtype=DTYPES[dtype]
    ).train()
    layers = layer_list(model, config.num_hidden_layers)
    moe = hasattr(config, "num_experts_per_tok")
    region = ["outside"]
    for i, layer in enumerate(layers):
        layer.register_forward_pre_hook(lambda *_, i=i: region.__setitem__(0, f"layer{i}"))
        layer.register_forward_hook(lambda *_: region.__setitem__(0, "outside"))
    weights = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    saved: dict[int, tuple[str, int]] = {}
    savers: dict[int, set[str]] = defaultdict(set)

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in weights:
            key = f"{str(t.dtype).removeprefix('torch.')} {list(t.shape)}"
            saved.setdefault(ptr, (key, storage.nbytes()))
            savers[ptr].add(region[0])
        return t

    ids = torch.randint(0, config.vocab_size, (batch, seq))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(ids, labels=ids, use_cache=False).loss
    totals: dict[str, int] = defaultdict(int)
    tensors: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for ptr, (key, nbytes) in saved.items():
        owner = savers[ptr].pop() if len(savers[ptr]) == 1 else "shared"
        totals[owner] += nbytes
        tensors[owner][f"{key} storage {nbytes}"] += 1
    loss.backward()
    per_layer = [totals[f"layer{i}"] for i in range(len(layers))]
    assert len(set(per_layer)) == 1, per_layer
    return {
        "model": name,
        "dropout": dropout,
        "attention": attention,
        "attention_ran": model.config._attn_implementation,
        "experts_ran": getattr(model.config, "_experts_implementation", None) if moe else None,
        "dtype": dtype,
        "batch": batch,
        "seq_len": seq,
        "layer_bytes": per_layer[0],
        "outside_bytes": totals["outside"],
        "shared_bytes": totals["shared"],
        "total_bytes": sum(totals.values()),
        "layer_tensors": dict(sorted(tensors["layer0"].items())),
        "outside_tensors": dict(sorted(tensors["outside"].items())),
        "shared_tensors": dict(sorted(tensors["shared"].items())),
    }


def main() -> int:
    records = [
        measure(name, attention, dtype, batch, seq)
        for name in MODELS
        for attention in ATTENTION
        if attention == "eager" or name not in EAGER_ONLY
        for dtype in DTYPES
        for batch, seq in SHAPES
    ]
    records += [
        measure("gpt2", "eager", dtype, batch, seq, dropout=True)
        for dtype in DTYPES
        for batch, seq in SHAPES
    ]
    data = {
        "generator": GENERATOR,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "date": datetime.date.today().isoformat(),
        "device": "cpu",
        "configs": {name: {"fixture": name, "overrides": overrides(name)} for name in MODELS},
        "records": records,
    }
    OUTPUT.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {len(records)} records to {OUTPUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
