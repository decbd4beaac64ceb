"""100 model configs through costcalc's Python API against llm-analysis' API.

Run: python tests/bench/bench_api.py [--runs N] [--llm-analysis-python PYTHON] [--source].
costcalc runs in this interpreter's environment, llm-analysis in PYTHON's (default: this one),
since the two want different huggingface_hub releases: ``python -m venv /tmp/la &&
/tmp/la/bin/pip install llm-analysis``. Prints, for each tool, the median of N passes (default
9; the passes interleaved, so that machine load cancels out) of a whole process that imports the
tool and answers for the 100 configs, of the 100 answers alone within it (imports done, the
first pass a warm-up), and the ratios costcalc / llm-analysis run by run (their median and
range). Goal: a whole process at most 1/3 of llm-analysis'. llm-analysis' answers are a handful
of float products per config, which build and check no model: within a process, costcalc's
validated model and tensor list cannot come near that, and the second ratio shows how far it
is. Both tools read compiled bytecode, as installed (installed.py; ``--source``: costcalc's
modules compiled in every process, as from an editable install never written to).

The same 100 Llama-style configurations (seeded, widths from 512 to 8,192, 2 to 80 layers,
grouped key/value heads) go through both, each asked the same three things from scratch: the
parameter total, the forward FLOPs of one sequence of 2,048 tokens, and the KV cache of that
sequence in 16 bits. costcalc reads each as a Hugging Face ``config.json`` mapping
(``costcalc.load``), then ``count``, ``count_macs`` and ``count_memory``; llm-analysis builds its
``ModelConfig`` and ``LLMAnalysis`` (an A100 and 16-bit weights), then
``get_num_params_total``, ``get_num_flops_fwd_total`` and ``get_memory_kv_cache_per_layer``.
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from installed import child_env

CONFIGS = 100
LENGTH = 2048
GOAL = 1 / 3


def configs(n: int = CONFIGS, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` Llama configurations as ``config.json`` holds them."""
    rng = random.Random(seed)
    found = []
    for _ in range(n):
        head_dim = rng.choice((64, 128))
        heads = rng.randrange(8, 65, 8)
        hidden = heads * head_dim
        found.append(
            {
                "model_type": "llama",
                "vocab_size": rng.choice((32000, 50304, 128256, 151936)),
                "hidden_size": hidden,
                "intermediate_size": rng.randrange(2, 7) * hidden // 2 * 2,
                "num_hidden_layers": rng.randrange(2, 81),
                "num_attention_heads": heads,
                "num_key_value_heads": rng.choice([k for k in (1, 2, 4, 8) if heads % k == 0]),
                "max_position_embeddings": 4096,
                "tie_word_embeddings": False,
            }
        )
    return found


def with_costcalc(items: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    import costcalc

    answers = []
    for config in items:
        model = costcalc.load(config)
        total = costcalc.count(model).parameters.total
        forward = costcalc.count_macs(model, length=LENGTH).forward
        memory = costcalc.count_memory(model, length=LENGTH).report.bytes_kv_cache
        answers.append((total, 0 if forward is None else 2 * forward.total, memory))
    return answers


def with_llm_analysis(items: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    from llm_analysis.analysis import LLMAnalysis
    from llm_analysis.config import ModelConfig, get_dtype_config_by_name, get_gpu_config_by_name

    gpu = get_gpu_config_by_name("a100-sxm-80gb")
    dtype = get_dtype_config_by_name("w16a16e16")
    answers = []
    for c in items:
        model = ModelConfig(
            name="llama",
            num_layers=c["num_hidden_layers"],
            n_head=c["num_attention_heads"],
            hidden_dim=c["hidden_size"],
            vocab_size=c["vocab_size"],
            max_seq_len=c["max_position_embeddings"],
            num_key_value_heads=c["num_key_value_heads"],
            ffn_embed_dim=c["intermediate_size"],
            model_type="llama",
        )
        analysis = LLMAnalysis(model, gpu, dtype)
        total = analysis.get_num_params_total()
        flops = analysis.get_num_flops_fwd_total(batch_size=1, seq_len=LENGTH)
        kv = analysis.get_memory_kv_cache_per_layer(1, LENGTH) * model.num_layers
        answers.append((total, flops, int(kv)))
    return answers


RUNNERS: dict[str, Callable[[list[dict[str, Any]]], object]] = {
    "costcalc": with_costcalc,
    "llm-analysis": with_llm_analysis,
}


def child(tool: str, passes: int) -> None:
    """In a process of its own: import ``tool``, answer for the configs ``passes`` times, print
    the seconds of the last pass (imports done, the first a warm-up)."""
    logging.disable(logging.WARNING)  # llm-analysis logs every model it builds
    items = configs()
    seconds = 0.0
    for _ in range(passes):
        start = time.perf_counter()
        RUNNERS[tool](items)
        seconds = time.perf_counter() - start
    print(seconds)


def paired(a: list[float], b: list[float]) -> str:
    """The ratio a / b run by run (each pair timed back to back, under the same load): its
    median, and its range."""
    ratios = sorted(x / y for x, y in zip(a, b, strict=True))
    return f"{statistics.median(ratios):.2f}x (runs: {ratios[0]:.2f}-{ratios[-1]:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--llm-analysis-python", default=sys.executable)
    parser.add_argument("--source", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("TOOL", "PASSES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    pythons = {"costcalc": sys.executable, "llm-analysis": args.llm_analysis_python}
    probe = [args.llm_analysis_python, "-c", "import llm_analysis.analysis"]
    if subprocess.run(probe, capture_output=True).returncode:
        sys.exit(f"llm-analysis cannot be imported by {args.llm_analysis_python}")
    whole: dict[str, list[float]] = {tool: [] for tool in pythons}
    alone: dict[str, list[float]] = {tool: [] for tool in pythons}
    with child_env(args.source) as env:
        for run in range(args.runs + 1):  # the first fills the bytecode cache, uncounted
            for tool, python in pythons.items():
                for passes, times in ((1, whole), (2, alone)):
                    argv = [python, __file__, "--child", tool, str(passes)]
                    start = time.perf_counter()
                    out = subprocess.run(
                        argv, check=True, capture_output=True, text=True, env=env
                    ).stdout
                    if run and passes == 1:
                        times[tool].append(time.perf_counter() - start)
                    elif run:
                        times[tool].append(float(out))
    print(f"{CONFIGS} configs, median of {args.runs} runs")
    for label, times in (("whole process", whole), ("the answers alone", alone)):
        found = {tool: statistics.median(values) for tool, values in times.items()}
        print(f"{label}:")
        for tool, seconds in found.items():
            print(f"  {tool:13} {seconds * 1000:8.1f} ms")
        print(f"  costcalc / llm-analysis: {paired(times['costcalc'], times['llm-analysis'])}")
    print(f"goal: the whole process at most {GOAL:.2f}x")


if __name__ == "__main__":
    main()
