"""Golden data for LoRA and QLoRA under FSDP2: each rank's frozen, trainable, gradient and
AdamW-state bytes after one step.

Runs torch's ``fully_shard`` (FSDP2) on the CPU with the gloo backend, 2 and 4 processes on one
machine, over a tiny Llama built from a transformers config in bfloat16, wrapped by peft's
``get_peft_model`` (its default: adapters upcast to float32), every decoder layer a unit, then
the root, and one ``torch.optim.AdamW`` step over the trainable parameters:

- ``qlora``: every linear layer but the head replaced by bitsandbytes' ``Linear4bit`` (nf4,
  double quantization, ``quant_storage=torch.bfloat16``, quantized on the CPU backend), LoRA
  ``all-linear`` at rank 8;
- ``lora``: the bf16 base, LoRA on ``q_proj`` and ``v_proj`` at rank 16.

Each rank records the bytes of the storages behind its frozen and trainable shards, the
gradients and the optimizer state (each storage once), and the bytes of the 4-bit weights'
quantization state it holds (absmax, nested absmax and offset; the code tables are constants),
and each unit's unsharded parameters and gradients in each layer's backward (``in_backward``,
as fsdp2_shards.py records them):

    cd tests/reference && for n in 2 4; do torchrun --nproc_per_node $n fsdp2_lora.py; done
    python fsdp2_lora.py --collect /tmp/fsdp2_lora_*.json

Writes tests/golden/fsdp2_lora.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "golden" / "fsdp2_lora.json"
CONFIG = {
    "model_type": "llama",
    "vocab_size": 2003,
    "hidden_size": 72,
    "intermediate_size": 150,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 64,
    "tie_word_embeddings": False,
}
CASES: dict[str, dict[str, Any]] = {
    "qlora": {"base_dtype": "nf4", "targets": "all-linear", "rank": 8},
    "lora": {"base_dtype": "bf16", "targets": ["q_proj", "v_proj"], "rank": 16},
}


def storage_bytes(tensors: list[Any]) -> int:
    seen: dict[int, int] = {}
    for t in tensors:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


from fsdp2_shards import unsharded  # noqa: E402


def quantize(module: Any) -> None:
    """Replace every ``nn.Linear`` below ``module`` with bitsandbytes' ``Linear4bit``."""
    import bitsandbytes as bnb
    import torch

    for name, child in list(module.named_children()):
        if not isinstance(child, torch.nn.Linear):
            quantize(child)
            continue
        layer = bnb.nn.Linear4bit(
            child.in_features,
            child.out_features,
            bias=child.bias is not None,
            compute_dtype=torch.bfloat16,
            quant_type="nf4",
            compress_statistics=True,
            quant_storage=torch.bfloat16,
        )
        layer.weight = bnb.nn.Params4bit(
            child.weight.data,
            requires_grad=False,
            quant_type="nf4",
            compress_statistics=True,
            quant_storage=torch.bfloat16,
        )
        layer = layer.to("cpu")  # quantizes
        layer.quant_state = layer.weight.quant_state  # as transformers' loader keeps it
        setattr(module, name, layer)


def run() -> None:
    import bitsandbytes as bnb
    import peft
    import torch
    import torch.distributed as dist
    import transformers
    from torch.distributed.fsdp import fully_shard

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    out = []
    for case, spec in CASES.items():
        torch.manual_seed(0)
        config = transformers.LlamaConfig(**{k: v for k, v in CONFIG.items() if k != "model_type"})
        model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
        if spec["base_dtype"] == "nf4":
            for layer in model.model.layers:
                quantize(layer)
        lora = peft.LoraConfig(r=spec["rank"], target_modules=spec["targets"])
        model = peft.get_peft_model(model, lora)
        for layer in model.base_model.model.model.layers:
            fully_shard(layer)
        fully_shard(model)
        trainable = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(trainable, lr=1e-3)
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

        for index, layer in enumerate(model.base_model.model.model.layers):
            layer.self_attn.register_forward_hook(probe(index))
        ids = torch.randint(0, CONFIG["vocab_size"], (1, 16))
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()
        frozen = [p for p in model.parameters() if not p.requires_grad]
        states = [v for s in optimizer.state.values() for k, v in s.items() if k != "step"]
        quant = [
            t
            for m in model.modules()
            if isinstance(m, bnb.nn.Linear4bit)
            for t in (m.quant_state.absmax, m.quant_state.state2.absmax, m.quant_state.offset)
        ]
        out.append(
            {
                "case": case,
                "rank": rank,
                "world_size": world,
                "frozen_bytes": storage_bytes([p.to_local() for p in frozen]),
                "trainable_bytes": storage_bytes([p.to_local() for p in trainable]),
                "trainable_dtype": str(trainable[0].dtype).removeprefix("torch."),
                "grad_bytes": storage_bytes([p.grad.to_local() for p in trainable]),
                "moment_bytes": storage_bytes([v.to_local() for v in states]),
                "step_tensors": sum(1 for s in optimizer.state.values() if "step" in s),
                "quant_state_bytes": storage_bytes(quant),
                "in_backward": moments,
            }
        )
    Path(f"/tmp/fsdp2_lora_{world}_{rank}.json").write_text(json.dumps(out))
    dist.destroy_process_group()


def collect(paths: list[str]) -> None:
    import bitsandbytes
    import peft
    import torch
    import transformers

    records = [r for p in paths for r in json.loads(Path(p).read_text())]
    records.sort(key=lambda r: (r["case"], r["world_size"], r["rank"]))
    data = {
        "source": f"torch {torch.__version__} fully_shard (FSDP2) on the CPU, gloo; "
        f"transformers {transformers.__version__}, peft {peft.__version__}, bitsandbytes "
        f"{bitsandbytes.__version__} (CPU backend): each decoder layer and the root sharded, "
        "one AdamW step; bytes of each rank's storages, each once",
        "config": CONFIG,
        "cases": CASES,
        "records": records,
    }
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {len(records)} records to {OUT}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--collect":
        collect(sys.argv[2:])
    else:
        run()
