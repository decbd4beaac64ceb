"""Every parameter count the seeds print, computed by costcalc."""

from __future__ import annotations

from fractions import Fraction

import pytest

from costcalc.loaders import load_preset
from costcalc.params import ParamReport, param_report, token_embedding_params
from costcalc.spec import ModelSpec
from costcalc.units import dtype_bytes, format_percent


def report(preset: str, **overrides: object) -> ParamReport:
    return param_report(load_preset(preset, overrides).spec)


def test_gpt2_small_tables() -> None:
    # seed 000: "GPT-2 small의 token table은 50,257 × 768 = 38,597,376, position table은
    # 1,024 × 768 = 786,432"; float32 bytes 154,389,504.
    r = report("gpt2-small")
    assert r.token_embedding == 38_597_376
    assert r.position_embedding == 786_432
    assert dtype_bytes(r.token_embedding, "fp32") == 154_389_504


def test_gpt2_small_doubled_width_table() -> None:
    # seed 000: "D=1536: token_parameters=77,194,752, token_fp32_bytes=308,779,008"
    r = report("gpt2-small", d_model=1536)
    assert r.token_embedding == 77_194_752
    assert dtype_bytes(r.token_embedding, "fp32") == 308_779_008


def test_gpt2_small_total_as_transformers_counts() -> None:
    # transformers GPT2LMHeadModel(GPT2Config()): sum(p.numel() for p in model.parameters())
    # (tests/golden/hf_reference.json, "gpt2").
    assert report("gpt2-small").total == 124_439_808


def test_book_gpt_small_breakdown() -> None:
    # seed 004, sources/gpt/train_gpt_small.out section 1.
    r = report("book-gpt-small")
    assert r.token_embedding == 1_048_576
    assert r.position_embedding == 65_536
    assert r.attention == 263_168
    assert r.ffn == 525_568
    assert r.norms == 1_024
    assert r.per_block == 789_760
    assert r.blocks == 3_159_040
    assert r.final_norm == 512
    assert r.total == 4_273_664


def test_book_gpt_small_untied() -> None:
    # seed 004, problem 4 (a): 5,322,240, 24.5% more.
    r = report("book-gpt-small")
    assert r.untied_total == 5_322_240
    assert format_percent(r.untied_increase) == "24.5%"


def test_book_gpt_fairytale() -> None:
    # seed 004, problems 3 and 4 (b): per block 3,152,384; eight blocks 25,219,072;
    # total 27,579,392; untied 29,676,544, 7.6% more.
    r = report("book-gpt-fairytale")
    assert r.per_block == 3_152_384
    assert r.blocks == 25_219_072
    assert r.final_norm == 1_024
    assert r.token_embedding == 2_097_152
    assert r.position_embedding == 262_144
    assert r.total == 27_579_392
    assert r.untied_total == 29_676_544
    assert format_percent(r.untied_increase) == "7.6%"


def test_gpt2_small_tying_saving() -> None:
    # seed 004, problem 4 (c): the output matrix of GPT-2 small is 50,257 x 768 = 38,597,376.
    assert report("gpt2-small").tying_saving == 38_597_376


def test_qwen_token_table() -> None:
    # seed 002: 151,936 x 896 = 136,134,656; BF16 272,269,312 bytes, "272.3 MB".
    r = report("qwen2.5-0.5b")
    assert r.token_embedding == 136_134_656
    assert dtype_bytes(r.token_embedding, "bf16") == 272_269_312


def test_qwen_total_as_transformers_counts() -> None:
    # transformers Qwen2ForCausalLM from Qwen/Qwen2.5-0.5B's config.json
    # (tests/golden/hf_reference.json, "qwen2.5-0.5b").
    assert report("qwen2.5-0.5b").total == 494_032_768


def test_seed_003_table_in_fp16() -> None:
    # seed 003: 50,000 x 4,096 = 204,800,000 parameters; FP16 about 390 MiB.
    spec = ModelSpec(vocab_size=50_000, d_model=4_096, n_layers=1, n_heads=32, context_length=8)
    n = token_embedding_params(spec)
    assert n == 204_800_000
    assert round(Fraction(dtype_bytes(n, "fp16"), 2**20)) == 391  # 390.6 MiB: "약 390MiB"


@pytest.mark.parametrize(
    ("preset", "d", "layers", "heads"),
    [
        # seed 000: GPTConfig defaults D=256, H=8, 6 layers; configs/cpu.json D=48, H=4, 2 layers;
        # configs/nsmc.json D=192, H=4, 4 layers.
        ("lrn-gpt", 256, 6, 8),
        ("lrn-gpt-cpu", 48, 2, 4),
        ("lrn-gpt-nsmc", 192, 4, 4),
    ],
)
def test_lrn_gpt_presets(preset: str, d: int, layers: int, heads: int) -> None:
    spec = load_preset(preset).spec
    assert (spec.d_model, spec.n_layers, spec.n_heads) == (d, layers, heads)
    assert not spec.tie_embeddings  # seed 000: tie_embeddings defaults to false
    r = param_report(spec)
    # 12 d^2 + 13 d per block (seed 004's formula) and an untied V x D head.
    assert r.per_block == 12 * d * d + 13 * d
    assert r.lm_head == 50_257 * d
