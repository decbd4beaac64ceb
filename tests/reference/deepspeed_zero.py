"""Golden data for ZeRO: DeepSpeed's own model-state estimators, run on three models.

Runs ``estimate_zero2_model_states_mem_needs`` (deepspeed/runtime/zero/stage_1_and_2.py) and
``estimate_zero3_model_states_mem_needs`` (stage3.py): the functions the ``*_all_live`` and
``*_all_cold`` helpers call and print. They are plain arithmetic, but their modules import torch,
so this script takes their source text from DeepSpeed's source distribution and runs it alone:

    pip download --no-deps --no-binary :all: deepspeed==0.19.8 -d /tmp/ds
    python tests/reference/deepspeed_zero.py /tmp/ds/deepspeed-0.19.8.tar.gz

Inputs are what ``model_to_params`` would find on the live model: the total parameters (each
tied tensor once) and, for stage 3, the largest module's own parameters (the embedding, V x D,
in these three). Writes tests/golden/deepspeed_zero.json.
"""

from __future__ import annotations

import ast
import json
import sys
import tarfile
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "golden" / "deepspeed_zero.json"
FUNCTIONS = {
    "deepspeed/runtime/zero/stage_1_and_2.py": "estimate_zero2_model_states_mem_needs",
    "deepspeed/runtime/zero/stage3.py": "estimate_zero3_model_states_mem_needs",
}
MODELS = {
    # preset: (total parameters as the model cards and transformers count them, V, D)
    "gpt2-small": (124_439_808, 50_257, 768),
    "qwen2.5-0.5b": (494_032_768, 151_936, 896),
    "llama-3.1-8b": (8_030_261_248, 128_256, 4_096),
}
GPU_LAYOUTS = [(1, 1), (2, 1), (8, 1), (8, 2), (8, 16)]
"""(GPUs per node, nodes)."""


def load_estimators(sdist: Path) -> tuple[str, dict[str, Any]]:
    """The two estimator functions, compiled from the sdist's source, and its version."""
    namespace: dict[str, Any] = {}
    with tarfile.open(sdist) as tar:
        root = tar.getnames()[0].split("/")[0]
        for path, name in FUNCTIONS.items():
            member = tar.extractfile(f"{root}/{path}")
            assert member is not None
            tree = ast.parse(member.read().decode())
            node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
            exec(compile(ast.Module([node], []), path, "exec"), namespace)
    return root, namespace


def main(sdist: Path) -> None:
    version, fn = load_estimators(sdist)
    rows = []
    for model, (params, vocab, width) in MODELS.items():
        largest = vocab * width
        for per_node, nodes in GPU_LAYOUTS:
            common = {"num_gpus_per_node": per_node, "num_nodes": nodes, "cpu_offload": False}
            z2_cpu, z2_gpu = fn[FUNCTIONS["deepspeed/runtime/zero/stage_1_and_2.py"]](
                params, **common
            )
            z3_cpu, z3_gpu, z3_layer = fn[FUNCTIONS["deepspeed/runtime/zero/stage3.py"]](
                params, largest, **common, cpu_offload_params=False
            )
            rows.append(
                {
                    "model": model,
                    "total_params": params,
                    "largest_layer_params": largest,
                    "num_gpus_per_node": per_node,
                    "num_nodes": nodes,
                    "zero2": {"gpu_bytes": z2_gpu, "cpu_bytes": z2_cpu},
                    "zero3": {
                        "gpu_bytes": z3_gpu,
                        "cpu_bytes": z3_cpu,
                        "largest_layer_bytes": z3_layer,
                    },
                }
            )
    data = {
        "source": f"{version}: {', '.join(FUNCTIONS.values())} with cpu_offload=False "
        "(zero_init=True, additional_buffer_factor=1.5, their defaults)",
        "cases": rows,
    }
    OUT.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {len(rows)} cases to {OUT}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
