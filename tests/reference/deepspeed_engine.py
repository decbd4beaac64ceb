"""Golden data for ZeRO as DeepSpeed allocates it: each rank's tensors after a real step.

Runs DeepSpeed 0.19.8's ZeRO engine (stages 1, 2 and 3, its defaults: contiguous gradients,
``reduce_bucket_size`` 5e8, ``stage3_param_persistence_threshold`` 1e5, ``sub_group_size`` 1e9)
on the CPU accelerator with the gloo backend, 2 and 4 processes on one machine, over a tiny
Llama built from a transformers config (bf16 with fp32 masters, torch's AdamW). Two steps are
run; every tensor alive is found through the garbage collector, each storage counted once, and
named by the optimizer attribute that holds it:

- ``after_backward``: after the second backward, before the step;
- ``in_step``: inside the wrapped base optimizer's second ``step`` (the fp32 gradient partition
  exists, the moments of the first step too);
- ``after_step``: after the second step.

Run (no GPU; DeepSpeed's shared-memory op, a CPU speed-up, is not built)::

    cd tests/reference && for n in 2 4; do for s in 1 2 3; do
      DS_ACCELERATOR=cpu torchrun --nproc_per_node $n deepspeed_engine.py $s; done; done
    for s in 1 2 3; do   # LoRA (peft) on the same model: DeepSpeed over the adapters
      DS_ACCELERATOR=cpu torchrun --nproc_per_node 2 deepspeed_engine.py $s --lora; done
    python deepspeed_engine.py --collect /tmp/ds_engine_*.json

Writes tests/golden/deepspeed_engine.json.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "golden" / "deepspeed_engine.json"
CONFIG = {
    "model_type": "llama",
    "vocab_size": 2003,
    "hidden_size": 72,
    "intermediate_size": 1500,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 64,
    "tie_word_embeddings": False,
}
"""Small, with tensors on both sides of the persistence threshold (1e5 elements)."""
SKIPPED = ("int64", "bool", "float64")
"""The batch's token ids, and DeepSpeed's scalar flags and norms."""


def _walk(obj: Any, path: str, out: dict[int, str], depth: int) -> None:
    import torch

    if isinstance(obj, torch.Tensor):
        if obj.is_meta:
            return
        key = obj.untyped_storage().data_ptr()
        if key:
            out.setdefault(key, path)
        if obj.grad is not None:
            _walk(obj.grad, path + ".grad", out, depth)
        return
    if depth == 0:
        return
    if isinstance(obj, dict):
        for key, value in list(obj.items()):
            _walk(value, f"{path}.{key}" if isinstance(key, str) else f"{path}[]", out, depth - 1)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            _walk(value, f"{path}[]", out, depth - 1)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for field in dataclasses.fields(obj):
            _walk(getattr(obj, field.name), f"{path}.{field.name}", out, depth - 1)


def snapshot(model: Any, optimizer: Any) -> dict[str, int]:
    """Bytes of every live storage, by the attribute holding it and its dtype."""
    import torch

    names: dict[int, str] = {}
    for param in model.parameters():
        if getattr(param, "ds_tensor", None) is not None:
            _walk(param.ds_tensor, "param.ds_tensor", names, 1)
        _walk(param, "param" if param.requires_grad else "frozen_param", names, 1)
    for key, value in vars(optimizer).items():
        if key == "optimizer":
            _walk({"state": list(value.state.values())}, "base_optimizer", names, 4)
        else:
            _walk(value, key, names, 4)
    seen: set[int] = set()
    rows: dict[str, int] = {}
    for obj in gc.get_objects():
        if not isinstance(obj, torch.Tensor) or obj.is_meta:
            continue
        storage = obj.untyped_storage()
        key = storage.data_ptr()
        dtype = str(obj.dtype).removeprefix("torch.")
        if not key or key in seen or dtype in SKIPPED:
            continue
        seen.add(key)
        name = f"{names.get(key, 'other')}:{dtype}"
        rows[name] = rows.get(name, 0) + storage.nbytes()
    return dict(sorted(rows.items()))


LORA = {"r": 16, "target_modules": ["q_proj", "v_proj"]}
"""The LoRA runs (``--lora``): peft's adapters on the frozen model, DeepSpeed over them."""


def run(stage: int, lora: bool) -> None:
    import deepspeed
    import torch
    import transformers

    sys.modules["deepspeed.comm.torch"].build_shm_op = lambda: None  # type: ignore[attr-defined]
    deepspeed.init_distributed(dist_backend="gloo")
    rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
    torch.manual_seed(0)
    config = transformers.LlamaConfig(**{k: v for k, v in CONFIG.items() if k != "model_type"})
    model = transformers.LlamaForCausalLM(config)
    if lora:
        import peft

        model = peft.get_peft_model(model, peft.LoraConfig(**LORA))
    tensors = [[name, p.numel()] for name, p in model.named_parameters()]
    ds_config = {
        "train_micro_batch_size_per_gpu": 1,
        "bf16": {"enabled": True},
        "zero_optimization": {"stage": stage},
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
        "zero_allow_untested_optimizer": True,
        "zero_force_ds_cpu_optimizer": False,
    }
    trainable = [p for p in model.parameters() if p.requires_grad]
    engine, optimizer, _, _ = deepspeed.initialize(
        model=model, model_parameters=trainable, config=ds_config
    )
    snaps: dict[str, Any] = {}
    base = optimizer.optimizer
    base_step = base.step

    def step(*args: Any, **kwargs: Any) -> Any:
        snaps["in_step"] = snapshot(model, optimizer)
        return base_step(*args, **kwargs)

    base.step = step
    ids = torch.randint(0, CONFIG["vocab_size"], (1, 16))
    for _ in range(2):
        engine.backward(engine(input_ids=ids, labels=ids).loss)
        snaps["after_backward"] = snapshot(model, optimizer)
        engine.step()
    snaps["after_step"] = snapshot(model, optimizer)
    record = {
        "lora": lora,
        "stage": stage,
        "world_size": world,
        "rank": rank,
        "optimizer_class": type(optimizer).__name__,
        **snaps,
    }
    if rank == 0:
        record["tensors"] = tensors
    path = Path(f"/tmp/ds_engine_{'lora_' if lora else ''}{stage}_{world}_{rank}.json")
    path.write_text(json.dumps(record))


def collect(paths: list[str]) -> None:
    import deepspeed
    import torch
    import transformers

    records = [{"lora": False, **json.loads(Path(p).read_text())} for p in paths]
    tensors = next(r.pop("tensors") for r in records if "tensors" in r and not r["lora"])
    for r in records:
        r.pop("tensors", None)
    records.sort(key=lambda r: (r["lora"], r["stage"], r["world_size"], r["rank"]))
    data = {
        "source": f"deepspeed {deepspeed.__version__} ZeRO engine on the CPU accelerator, "
        f"gloo backend, torch {torch.__version__}, transformers {transformers.__version__}: "
        "each rank's live tensors (bytes by holder and dtype) after the second backward, in "
        "the second base-optimizer step, and after it; bf16 with fp32 masters, torch AdamW, "
        "DeepSpeed's ZeRO defaults",
        "config": CONFIG,
        "lora": LORA,
        "tensors": tensors,
        "records": records,
    }
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {len(records)} records to {OUT}")


if __name__ == "__main__":
    if sys.argv[1] == "--collect":
        collect(sys.argv[2:])
    else:
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
        run(int(sys.argv[1]), "--lora" in sys.argv[2:])
