"""Golden data for FSDP2: each rank's parameter, gradient and AdamW-state bytes after one step.

Runs torch's ``fully_shard`` (torch.distributed.fsdp, FSDP2) on the CPU with the gloo backend,
2 and 4 processes on one machine, over small real models built from transformers configs (random
weights, float32): every decoder layer is a unit of its own, then the root; mixed precision as
it is usually run (``MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32)``: fp32
sharded parameters, bf16 all-gathers). After one forward, backward and ``torch.optim.AdamW``
step, each rank records the bytes of the storages behind its sharded parameters
(``FSDPParam._sharded_param_data``, padded), its gradients (views of each unit's
reduce-scatter output) and the optimizer state, each storage once; and, in the backward of each
layer (when its attention output's gradient arrives), each unit's unsharded parameters and
gradients (``in_backward``; unit 0 is the root):

    cd tests/reference && for n in 2 4; do
      torchrun --nproc_per_node $n fsdp2_shards.py; done
    python fsdp2_shards.py --collect /tmp/fsdp2_*.json

Writes tests/golden/fsdp2_shards.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "golden" / "fsdp2_shards.json"
CONFIGS: dict[str, dict[str, Any]] = {
    "tiny-llama": {
        "model_type": "llama",
        "vocab_size": 2003,
        "hidden_size": 72,
        "intermediate_size": 150,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 64,
        "tie_word_embeddings": False,
    },
    "tiny-qwen2": {
        "model_type": "qwen2",
        "vocab_size": 1001,
        "hidden_size": 56,
        "intermediate_size": 130,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 64,
        "tie_word_embeddings": True,
    },
}
"""Widths and tables whose rows do not divide by 4, so the padding shows."""


def storage_bytes(tensors: list[Any]) -> int:
    """Bytes of the storages behind ``tensors``, each once."""
    seen: dict[int, int] = {}
    for t in tensors:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


def unsharded(groups: list[Any]) -> list[dict[str, int]]:
    """Each unit's unsharded parameters (the all-gather output, or the parameters copied out of
    it) and unsharded gradients, in bytes, for the units that hold any."""
    out = []
    for index, group in enumerate(groups):
        params: dict[int, int] = {}
        grads: dict[int, int] = {}
        result = getattr(group, "_all_gather_result", None)
        tensors = [result.all_gather_output] if result is not None else []
        for fsdp_param in group.fsdp_params:
            tensors += list(getattr(fsdp_param, "all_gather_outputs", None) or [])
            whole = getattr(fsdp_param, "_unsharded_param", None)
            if whole is not None:
                tensors.append(whole)
                if whole.grad is not None:
                    storage = whole.grad.untyped_storage()
                    grads[storage.data_ptr()] = storage.nbytes()
        for t in tensors:
            storage = t.untyped_storage()
            params[storage.data_ptr()] = storage.nbytes()
        if sum(params.values()) or grads:
            out.append(
                {"unit": index, "params": sum(params.values()), "grads": sum(grads.values())}
            )
    return out


def run() -> None:
    import torch
    import torch.distributed as dist
    import transformers
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    out = []
    for name, config in CONFIGS.items():
        torch.manual_seed(0)
        cfg = transformers.AutoConfig.for_model(**config)
        model = transformers.AutoModelForCausalLM.from_config(cfg)
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.model.layers:
            fully_shard(layer, mp_policy=policy)
        fully_shard(model, mp_policy=policy)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        groups = [
            m._get_fsdp_state()._fsdp_param_group
            for m in model.modules()
            if hasattr(m, "_get_fsdp_state") and m._get_fsdp_state()._fsdp_param_group is not None
        ]
        moments: list[Any] = []

        def probe(layer: int, moments: list[Any] = moments, groups: list[Any] = groups) -> Any:
            def hook(module: Any, args: Any, output: Any) -> None:
                def record(grad: Any) -> None:
                    moments.append({"layer": layer, "units": unsharded(groups)})

                output[0].register_hook(record)

            return hook

        for index, layer in enumerate(model.model.layers):
            layer.self_attn.register_forward_hook(probe(index))
        ids = torch.randint(0, config["vocab_size"], (1, 16))
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()
        params = list(model.parameters())
        locals_ = [p.to_local() for p in params]
        state = [
            v.to_local() if hasattr(v, "to_local") else v
            for s in optimizer.state.values()
            for v in s.values()
        ]
        fsdp_params = [
            fp
            for m in model.modules()
            if hasattr(m, "_get_fsdp_state")
            for g in [m._get_fsdp_state()._fsdp_param_group]
            if g is not None
            for fp in g.fsdp_params
        ]
        out.append(
            {
                "model": name,
                "rank": rank,
                "world_size": world,
                "param_bytes": storage_bytes(locals_),
                "padded_shard_elements": sum(fp._sharded_param_data.numel() for fp in fsdp_params),
                "param_dtype": str(locals_[0].dtype).removeprefix("torch."),
                "grad_bytes": storage_bytes([p.grad.to_local() for p in params]),
                "moment_bytes": storage_bytes([t for t in state if t.dim() > 0]),
                "step_tensors": sum(1 for t in state if t.dim() == 0),
                "tensors": [[n, list(p.shape)] for n, p in model.named_parameters()],
                "in_backward": moments,
            }
        )
    Path(f"/tmp/fsdp2_{world}_{rank}.json").write_text(json.dumps(out))
    dist.destroy_process_group()


def collect(paths: list[str]) -> None:
    import torch
    import transformers

    records = [r for p in paths for r in json.loads(Path(p).read_text())]
    tensors = {r["model"]: r.pop("tensors") for r in records}
    records.sort(key=lambda r: (r["model"], r["world_size"], r["rank"]))
    data = {
        "source": f"torch {torch.__version__} fully_shard (FSDP2) on the CPU, gloo, "
        f"transformers {transformers.__version__}: each decoder layer and the root sharded, "
        "MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32), fp32 weights, one "
        "torch.optim.AdamW step; bytes of each rank's storages, each once",
        "configs": CONFIGS,
        "tensors": tensors,
        "records": records,
    }
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {len(records)} records to {OUT}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--collect":
        collect(sys.argv[2:])
    else:
        run()
