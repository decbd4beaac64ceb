"""Generate the golden reference numbers in tests/golden/hf_reference.json.

Run by hand (pytest does not collect this file). It needs torch and transformers, which the
costcalc package itself never imports:

    pip install torch==2.13.0 transformers==5.24.0
    python tests/reference/make_golden.py                     # every model, every step
    python tests/reference/make_golden.py --only gpt2 opt-125m --steps params macs

Every model is built from its fixture config (tests/fixtures/hf/<name>.json) with
``AutoModelForCausalLM.from_config(config, attn_implementation="eager")`` inside
``torch.device("meta")``: no weights are downloaded and nothing contacts the Hugging Face Hub.
Results are merged into the existing output file, so steps and models can be (re)run
separately. See tests/reference/README.md for the meaning of each field.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import torch
import transformers
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
from transformers import CONFIG_MAPPING, AutoModelForCausalLM
from transformers.models.auto.modeling_auto import (
    MODEL_FOR_CAUSAL_LM_MAPPING,
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "hf"
OUTPUT = ROOT / "tests" / "golden" / "hf_reference.json"
GENERATOR = "tests/reference/make_golden.py"

MODELS = [
    "gpt2",
    "gpt2-medium",
    "gpt2-large",
    "gpt2-xl",
    "openai-gpt",
    "pythia-160m",
    "opt-125m",
    "opt-350m",
    "smollm2-135m",
    "llama-3.2-1b",
    "llama-3.1-8b",
    "mistral-7b-v0.1",
    "qwen2.5-0.5b",
    "qwen2.5-1.5b",
    "qwen2.5-3b",
    "qwen2.5-7b",
    "gemma-2b",
    "phi-2",
    "phi-3-mini-4k",
    "mixtral-8x7b",
    "tiny-mixtral",
    "book-gpt-small",
    "book-gpt-fairytale",
]
STEPS = ["params", "macs", "kv", "adamw"]

MACS_BATCH, MACS_SEQ = 1, 128
KV_BATCH, KV_SEQ = 1, 16
ADAMW_BATCH, ADAMW_SEQ = 1, 8
MOE_BATCH, MOE_SEQ = 1, 16

MOE_MODELS = {"mixtral-8x7b", "tiny-mixtral"}
# Expert routing (nonzero/where) needs real values, so the eager expert loop only runs on real
# weights. The "batched_mm" implementation gathers each token's top-k expert matrices and runs one
# bmm per projection: no data-dependent shapes, so it also runs on meta and does the same MACs.
MOE_IMPL = {"cpu": "eager", "meta": "batched_mm"}
EXPERTS = "mlp.experts"
ROUTER = "mlp.gate"
ADAMW_MODELS = {"gpt2", "qwen2.5-0.5b"}
ATTENTION_PAIR_OPS = {"aten.bmm", "aten.baddbmm"}
LINEAR_OPS = {"aten.mm", "aten.addmm"}


# --------------------------------------------------------------------------- building


def fixture_path(name: str) -> Path:
    return FIXTURES / f"{name}.json"


def load_config(name: str):
    """Turn a fixture config.json into the transformers config object of its model_type."""
    data = json.loads(fixture_path(name).read_text())
    return CONFIG_MAPPING[data["model_type"]].from_dict(data)


def causal_lm_class(config) -> type | None:
    """The causal-LM class of a config AutoModelForCausalLM does not map by its own class: the
    registered causal-LM class that takes it (Mllama's text decoder: MllamaForCausalLM,
    registered under ``mllama``, takes MllamaTextConfig); None when AutoModelForCausalLM maps
    it, or when no class does."""
    if type(config) in MODEL_FOR_CAUSAL_LM_MAPPING:
        return None
    for name in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values():
        cls = getattr(transformers, name, None) if isinstance(name, str) else None
        if cls is not None and getattr(cls, "config_class", None) is type(config):
            return cls
    return None


def build_model(
    config, device: str = "meta", dtype: torch.dtype = torch.float32, **kwargs
) -> nn.Module:
    """Build an untrained causal-LM in `dtype` on `device` ("meta" allocates nothing)."""
    cls = causal_lm_class(config)
    build = AutoModelForCausalLM.from_config if cls is None else cls._from_config
    with torch.device(device):
        model = build(config, attn_implementation="eager", dtype=dtype, **kwargs)
    return model.eval()


def model_kwargs(name: str, device: str) -> dict:
    """MoE models need an explicit experts implementation, chosen by device (see MOE_IMPL)."""
    return {"experts_implementation": MOE_IMPL[device]} if name in MOE_MODELS else {}


def token_ids(batch: int, seq: int, device: str, vocab: int = 1) -> torch.Tensor:
    if device == "meta":
        return torch.zeros((batch, seq), dtype=torch.long, device=device)
    return torch.arange(batch * seq, device=device).reshape(batch, seq) % vocab


def forward(model: nn.Module, ids: torch.Tensor, use_cache: bool):
    """An explicit all-ones mask keeps transformers from inspecting values (impossible on meta)."""
    with torch.no_grad():
        return model(ids, attention_mask=torch.ones_like(ids), use_cache=use_cache)


# --------------------------------------------------------------------------- parameters


def decoder_layers(model: nn.Module, config) -> tuple[str, nn.ModuleList]:
    """The ModuleList holding the repeated decoder blocks (shallowest list of n_layers)."""
    n_layers = config.num_hidden_layers
    for name, module in model.named_modules():
        if isinstance(module, nn.ModuleList) and len(module) == n_layers:
            return name, module
    raise LookupError(f"no ModuleList of {n_layers} layers in {type(model).__name__}")


def shapes(named_params) -> dict[str, list[int]]:
    return {name: list(param.shape) for name, param in named_params}


def is_tied(model: nn.Module) -> bool:
    out = model.get_output_embeddings()
    return out is not None and out.weight is model.get_input_embeddings().weight


def params_record(model: nn.Module, config) -> dict:
    total = sum(p.numel() for p in model.parameters())
    prefix, layers = decoder_layers(model, config)
    per_layer = [sum(p.numel() for p in layer.parameters()) for layer in layers]
    other = {
        name: param for name, param in model.named_parameters() if not name.startswith(prefix + ".")
    }
    other_numel = sum(p.numel() for p in other.values())
    assert sum(per_layer) + other_numel == total, "layers + other != total"
    untied_extra = model.get_output_embeddings().weight.numel() if is_tied(model) else 0
    uniform = len(set(per_layer)) == 1
    return {
        "model_class": type(model).__name__,
        "parameters_total": total,
        "parameters_untied_extra": untied_extra,
        "parameters_per_layer": per_layer[0] if uniform else per_layer,
        "n_layers": len(layers),
        "parameters_other": other_numel,
        "parameters_by_tensor_layer0": shapes(layers[0].named_parameters()),
        "parameters_by_tensor_other": shapes(other.items()),
    }


# --------------------------------------------------------------------------- MACs


def count_flops(model: nn.Module, ids: torch.Tensor) -> FlopCounterMode:
    counter = FlopCounterMode(display=False)
    with counter:
        forward(model, ids, use_cache=False)
    return counter


def module_key(model: nn.Module, module: nn.Module) -> str:
    """FlopCounterMode keys modules as '<ModelClass>.<dotted name>'."""
    for name, candidate in model.named_modules():
        if candidate is module:
            return f"{type(model).__name__}.{name}"
    raise LookupError("module not found in model")


def ops_total(counts: dict, ops: set[str]) -> int:
    return sum(n for op, n in counts.items() if str(op) in ops)


def by_op(counts: dict) -> dict[str, int]:
    return {str(op): int(n) for op, n in sorted(counts.items(), key=lambda kv: str(kv[0]))}


def check_linear_ops(model: nn.Module, flops: dict) -> None:
    """Every weight-matrix leaf (nn.Linear, GPT-2 Conv1D) must run as mm/addmm, never bmm."""
    prefix = type(model).__name__
    for name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        leaf = not any(True for _ in module.children())
        if not leaf or not isinstance(weight, torch.Tensor) or weight.dim() != 2:
            continue
        ops = {str(op) for op in flops.get(f"{prefix}.{name}", {})}
        assert ops <= LINEAR_OPS, f"{name} uses {ops}, expected only mm/addmm"


def submodule_flops(model: nn.Module, flops: dict, suffix: str) -> dict[str, int]:
    """Per-op FLOPs summed over all modules whose dotted name ends with `suffix`."""
    prefix = type(model).__name__ + "."
    total: dict[str, int] = {}
    for name, _ in model.named_modules():
        if name.endswith(suffix):
            for op, n in flops.get(prefix + name, {}).items():
                total[str(op)] = total.get(str(op), 0) + n
    return total


def attention_pair_flops(model: nn.Module, flops: dict) -> int:
    """bmm/baddbmm FLOPs (Q.K^T and weights.V) outside the experts (batched_mm uses bmm too)."""
    experts = submodule_flops(model, flops, EXPERTS)
    return ops_total(flops["Global"], ATTENTION_PAIR_OPS) - ops_total(experts, ATTENTION_PAIR_OPS)


def macs_record(model: nn.Module, batch: int, seq: int, device: str = "meta") -> dict:
    ids = token_ids(batch, seq, device, model.config.vocab_size)
    counter = count_flops(model, ids)
    flops = counter.get_flop_counts()
    check_linear_ops(model, flops)
    lm_head = flops[module_key(model, model.get_output_embeddings())]
    total = counter.get_total_flops()
    record = {
        "batch": batch,
        "seq_len": seq,
        "flops_total": total,
        "macs_total": total // 2,
        "macs_lm_head": sum(lm_head.values()) // 2,
        "macs_attention_pair": attention_pair_flops(model, flops) // 2,
        "flops_by_op": by_op(flops["Global"]),
    }
    if model.config.model_type == "mixtral":
        record.update(moe_fields(model, flops))
    return record


def moe_fields(model: nn.Module, flops: dict) -> dict:
    config = model.config
    return {
        "experts_implementation": config._experts_implementation,
        "macs_router": sum(submodule_flops(model, flops, ROUTER).values()) // 2,
        "macs_experts": sum(submodule_flops(model, flops, EXPERTS).values()) // 2,
        "num_experts": config.num_local_experts,
        "experts_per_token": config.num_experts_per_tok,
        "expert_parameters": expert_numel(model),
    }


def expert_numel(model: nn.Module) -> int:
    """Parameters of one expert: its slice of the stacked gate_up_proj and down_proj tensors."""
    _, layers = decoder_layers(model, model.config)
    return sum(p[0].numel() for p in layers[0].mlp.experts.parameters())


def real_moe_macs(name: str, batch: int, seq: int) -> dict:
    """The eager expert loop on real random weights: each token visits exactly top_k experts."""
    torch.manual_seed(0)
    model = build_model(load_config(name), device="cpu", **model_kwargs(name, "cpu"))
    record = macs_record(model, batch, seq, device="cpu")
    record["weights"] = "real float32 on CPU, torch.manual_seed(0)"
    return record


def macs_for(name: str, model: nn.Module) -> dict:
    """tiny-mixtral: real weights at B=1, T=16, cross-checked against the meta/batched_mm count."""
    if name != "tiny-mixtral":
        return macs_record(model, MACS_BATCH, MACS_SEQ)
    real = real_moe_macs(name, MOE_BATCH, MOE_SEQ)
    meta = macs_record(model, MOE_BATCH, MOE_SEQ)
    for key in ("macs_total", "macs_lm_head", "macs_attention_pair", "macs_router", "macs_experts"):
        assert real[key] == meta[key], f"{key}: eager {real[key]} != batched_mm {meta[key]}"
    real["cross_check"] = "same MACs from meta weights with experts_implementation=batched_mm"
    return real


# --------------------------------------------------------------------------- KV cache


def kv_record(model: nn.Module, batch: int, seq: int) -> dict:
    ids = token_ids(batch, seq, "meta")
    output = forward(model, ids, use_cache=True)
    cache = getattr(output, "cache", None) or getattr(output, "past_key_values", None)
    if cache is None:
        return {"note": f"{type(model).__name__} returns no KV cache"}
    keys = sum(layer.keys.numel() for layer in cache.layers)
    values = sum(layer.values.numel() for layer in cache.layers)
    return {
        "batch": batch,
        "seq_len": seq,
        "cache_class": type(cache).__name__,
        "n_cache_layers": len(cache.layers),
        "cache_layer_classes": sorted({type(layer).__name__ for layer in cache.layers}),
        "sliding_window": getattr(cache.layers[0], "sliding_window", None),
        "key_shape_layer0": list(cache.layers[0].keys.shape),
        "key_elements": keys,
        "value_elements": values,
        "kv_cache_elements": keys + values,
    }


# --------------------------------------------------------------------------- AdamW


def adamw_record(name: str, batch: int, seq: int) -> dict:
    torch.manual_seed(0)
    model = build_model(load_config(name), device="cpu").train()
    ids = token_ids(batch, seq, "cpu", model.config.vocab_size)
    model(ids, labels=ids, use_cache=False).loss.backward()
    optimizer = torch.optim.AdamW(model.parameters())
    optimizer.step()
    states = [optimizer.state[p] for p in model.parameters()]
    steps = [s["step"] for s in states]
    return {
        "batch": batch,
        "seq_len": seq,
        "param_dtype": str(next(model.parameters()).dtype),
        "n_param_tensors": len(states),
        "param_numel": sum(p.numel() for p in model.parameters()),
        "exp_avg_numel": sum(s["exp_avg"].numel() for s in states),
        "exp_avg_sq_numel": sum(s["exp_avg_sq"].numel() for s in states),
        "moments_numel": sum(s["exp_avg"].numel() + s["exp_avg_sq"].numel() for s in states),
        "n_step_tensors": sum(isinstance(t, torch.Tensor) for t in steps),
        "step_numel": sum(t.numel() for t in steps if isinstance(t, torch.Tensor)),
        "step_dtype": str(steps[0].dtype) if isinstance(steps[0], torch.Tensor) else "python",
    }


# --------------------------------------------------------------------------- driver


def run_model(name: str, steps: list[str], record: dict) -> dict:
    config = load_config(name)
    model = build_model(config, **model_kwargs(name, "meta"))
    record["config"] = str(fixture_path(name).relative_to(ROOT))
    if "params" in steps:
        record.update(params_record(model, config))
    if "macs" in steps:
        record["macs_forward"] = macs_for(name, model)
    if "kv" in steps:
        record["kv_cache"] = kv_record(model, KV_BATCH, KV_SEQ)
        record["kv_cache_elements"] = record["kv_cache"].get("kv_cache_elements")
    if "adamw" in steps and name in ADAMW_MODELS:
        record["adamw_state"] = adamw_record(name, ADAMW_BATCH, ADAMW_SEQ)
    return record


def load_output(output: Path) -> dict:
    """The golden file as it stands (records are merged into it), or an empty one."""
    if output.exists():
        return json.loads(output.read_text())
    return {"models": {}}


def save_output(data: dict, output: Path, generator: str, models: list[str]) -> None:
    """Write ``data`` to ``output``: the generator, torch and transformers versions, the date,
    then the records in the order of ``models``."""
    data.update(
        {
            "generator": generator,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "date": datetime.date.today().isoformat(),
        }
    )
    ordered = {k: data[k] for k in ("generator", "torch", "transformers", "date")}
    ordered["models"] = {n: data["models"][n] for n in models if n in data["models"]}
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(ordered, indent=2) + "\n")


def parse_args(
    argv: list[str], doc: str, models: list[str], steps: list[str]
) -> argparse.Namespace:
    """``--only`` some of ``models`` and ``--steps`` some of ``steps`` (default: all)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=models, default=models)
    parser.add_argument("--steps", nargs="+", choices=steps, default=steps)
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv, __doc__, MODELS, STEPS)
    data = load_output(OUTPUT)
    for name in args.only:
        print(f"{name}: {' '.join(args.steps)}", flush=True)
        record = data["models"].get(name, {})
        data["models"][name] = run_model(name, args.steps, record)
        save_output(data, OUTPUT, GENERATOR, MODELS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
