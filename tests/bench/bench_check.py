"""Benchmark: `costcalc check` over 1,000 config files versus one, each in a fresh process.

Start-up (Python, typer, rich, pydantic, PyYAML) dominates; the per-file work must be a fraction
of a millisecond, so checking 1,000 files should take no more than about 3x checking one.
Run: python tests/bench/bench_check.py   (prints the times and the ratio; not a pytest test)
"""

from __future__ import annotations

from pathlib import Path

from check_timing import best_time, one_and_many

FILES = 1000

CONFIG = """\
name: model-{i}
vocab_size: 50257
context_length: 1024
d_model: {d}
n_layers: {layers}
n_heads: 8
budget:
  max_params: 1B
  max_weight_bytes: 2GiB
  dtype: bf16
"""


def write_configs(directory: Path, count: int) -> None:
    """``count`` valid configs, a third each as YAML, nanoGPT-style JSON and Hugging Face JSON."""
    for i in range(count):
        d, layers = 64 * (1 + i % 8), 1 + i % 12
        if i % 3 == 0:
            (directory / f"model-{i}.yaml").write_text(CONFIG.format(i=i, d=d, layers=layers))
        elif i % 3 == 1:
            nanogpt = (
                f'{{"vocab_size": 50304, "block_size": 1024, "n_layer": {layers}, '
                f'"n_head": 8, "n_embd": {d}, "dropout": 0.0, "bias": false}}'
            )
            (directory / f"model-{i}.json").write_text(nanogpt)
        else:
            hf = (
                f'{{"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, '
                f'"n_embd": {d}, "n_layer": {layers}, "n_head": 8, "activation_function": '
                f'"gelu_new", "architectures": ["GPT2LMHeadModel"]}}'
            )
            (directory / f"model-{i}.json").write_text(hf)


def main() -> None:
    with one_and_many(write_configs, FILES) as (one, many):
        t_one = best_time([str(one)])
        t_many = best_time([str(many)])
        t_json = best_time([str(many), "--format", "json"])
    per_file_ms = (t_many - t_one) / (FILES - 1) * 1000
    print(f"check 1 file:        {t_one * 1000:8.1f} ms")
    print(f"check {FILES:,} files:  {t_many * 1000:8.1f} ms  (table)")
    print(f"check {FILES:,} files:  {t_json * 1000:8.1f} ms  (json)")
    print(f"per extra file:      {per_file_ms:8.3f} ms")
    print(f"ratio {FILES:,} / 1:     {t_many / t_one:8.2f}x  (target: <= about 3x)")


if __name__ == "__main__":
    main()
