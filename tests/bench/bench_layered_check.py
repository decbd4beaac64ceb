"""Benchmark: `costcalc check` over 1,000 layered config files versus one, each in a fresh process.

The configs mix the layouts a layered spec describes: a cycling pattern of sliding-window and
full-attention layers (Gemma 2 style), dense layers then MoE layers (DeepSeek style), MLA layers
with a dense-then-MoE split, and Hugging Face files whose per-layer rules become layer groups
(Qwen2's max_window_layers, Qwen2-MoE's decoder_sparse_step). Start-up dominates; the layered
work per file is closed form, so checking 1,000 files should take no more than about 3x one.

Measured (2 CPU cores shared with other jobs, load ~5, Python 3.11): 1 file 787 ms, 1,000 files
2,996 ms, ratio 3.81x; a second run 960 / 3,047 ms, 3.17x (bench_check.py's flat files in the same
conditions: 1.72x, 0.63 ms per extra file). Over the target: about 2.1 ms per extra layered file.
In-process per file (cProfile and timeit): YAML parsing ~0.8-1.3 ms (the hardened loader walks
the node tree for sizes and key lines, then constructs; a `layers:` list of mappings costs ~50%
more than the same keys flat), validation ~0.2-0.35 ms (the structural rules run once per layer
run on a model_copy), total_params ~0.2-0.3 ms (ModelSpec.stacks is a property recomputed on every
call: 3+ times per total, ~0.07 ms each).
Run: python tests/bench/bench_layered_check.py   (prints the times and the ratio; not a pytest test)
"""

from __future__ import annotations

import json
from pathlib import Path

from check_timing import best_time, one_and_many

FILES = 1000

SLIDING_FULL = """\
name: sliding-full-{i}
vocab_size: 256000
context_length: 8192
d_model: {d}
n_heads: 8
n_kv_heads: 4
head_dim: 256
position: rotary
norm: rmsnorm
ffn: geglu
ffn_hidden: {h}
qkv_bias: false
attn_out_bias: false
ffn_bias: false
fused_qkv: false
norms_per_block: 4
layers:
  - count: {layers}
    pattern:
      - {{count: {period}, sliding_window: 4096}}
      - {{count: 1}}
budget:
  max_params: 100B
"""

DENSE_MOE = """\
name: dense-moe-{i}
vocab_size: 151936
context_length: 32768
d_model: {d}
n_heads: 16
n_kv_heads: 4
position: rotary
norm: rmsnorm
ffn: swiglu
ffn_hidden: {h}
qkv_bias: false
attn_out_bias: false
ffn_bias: false
fused_qkv: false
tie_embeddings: false
layers:
  - count: {dense}
  - count: {layers}
    moe_experts: 64
    moe_top_k: 8
    moe_ffn_hidden: 512
    moe_shared_ffn_hidden: 1024
budget:
  max_params: 1T
"""

MLA = """\
name: mla-{i}
vocab_size: 129280
context_length: 16384
d_model: {d}
n_heads: 16
mixer: mla
q_lora_rank: 768
kv_lora_rank: 256
qk_rope_head_dim: 64
qk_nope_head_dim: 128
v_head_dim: 128
position: rotary
norm: rmsnorm
ffn: swiglu
ffn_hidden: {h}
qkv_bias: false
attn_out_bias: false
ffn_bias: false
fused_qkv: false
tie_embeddings: false
layers:
  - count: {dense}
  - count: {layers}
    moe_experts: 64
    moe_top_k: 6
    moe_ffn_hidden: 512
    moe_shared_ffn_hidden: 1024
budget:
  max_params: 1T
"""


def hf_config(i: int, d: int, layers: int) -> dict[str, object]:
    """A Qwen2 file with sliding layers from max_window_layers on, or a Qwen2-MoE file with a
    sparse layer every other layer: per-layer rules that become layer groups."""
    common = {
        "vocab_size": 151936,
        "hidden_size": d,
        "intermediate_size": 4 * d,
        "num_hidden_layers": layers,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "max_position_embeddings": 32768,
        "sliding_window": 4096,
    }
    if i % 2:
        return {
            **common,
            "model_type": "qwen2",
            "architectures": ["Qwen2ForCausalLM"],
            "use_sliding_window": True,
            "max_window_layers": layers // 2,
        }
    return {
        **common,
        "model_type": "qwen2_moe",
        "architectures": ["Qwen2MoeForCausalLM"],
        "num_experts": 16,
        "num_experts_per_tok": 4,
        "moe_intermediate_size": 256,
        "shared_expert_intermediate_size": 1024,
        "decoder_sparse_step": 2,
    }


def write_configs(directory: Path, count: int) -> None:
    """``count`` valid layered configs, a quarter of each layout."""
    for i in range(count):
        d, layers = 256 * (1 + i % 8), 4 + i % 60
        fields = {"i": i, "d": d, "h": 3 * d, "layers": layers, "dense": 1 + i % 3}
        kind = i % 4
        if kind == 0:
            text = SLIDING_FULL.format(period=1 + i % 5, **fields)
        elif kind == 1:
            text = DENSE_MOE.format(**fields)
        elif kind == 2:
            text = MLA.format(**fields)
        else:
            path = directory / f"model-{i}.json"
            path.write_text(json.dumps(hf_config(i // 4, d, layers)))
            continue
        (directory / f"model-{i}.yaml").write_text(text)


def main() -> None:
    with one_and_many(write_configs, FILES) as (one, many):
        t_one = best_time([str(one)])
        t_many = best_time([str(many)])
    per_file_ms = (t_many - t_one) / (FILES - 1) * 1000
    print(f"check 1 layered file:        {t_one * 1000:8.1f} ms")
    print(f"check {FILES:,} layered files:  {t_many * 1000:8.1f} ms")
    print(f"per extra file:              {per_file_ms:8.3f} ms")
    print(f"ratio {FILES:,} / 1:             {t_many / t_one:8.2f}x  (target: <= about 3x)")


if __name__ == "__main__":
    main()
