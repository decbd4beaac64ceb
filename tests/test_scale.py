"""`costcalc scale`: seed 000's six terms, their ratios, the chart and the JSON contract."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costcalc.cli.scale import LIST_OPTIONS, spread_values
from costcalc.scale import TERM_WORDS, TERMS, format_ratio, leading_terms, ratios
from costcalc.spec import ModelSpec
from tests.conftest import Invoke
from tests.expect import expect_error

# seed 000: leading_cost(50257, 1024, 256, batch=2, length=4), printed by the seed's model.
SEED_VALUES_D256 = {
    "token_parameters": 12_865_792,
    "position_parameters": 262_144,
    "block_matrix_parameters": 786_432,
    "projection_ffn_macs": 6_291_456,
    "attention_pair_macs": 16_384,
    "lm_head_macs": 102_926_336,
}
# seed 000: "D:256->512 <term> ratio=2.0 / 4.0" lines.
SEED_RATIOS = {
    "token_parameters": "2.0",
    "position_parameters": "2.0",
    "block_matrix_parameters": "4.0",
    "projection_ffn_macs": "4.0",
    "attention_pair_macs": "2.0",
    "lm_head_macs": "2.0",
}


def test_seed_000_table(cli: Invoke) -> None:
    result = cli("scale", "--d", "256", "512")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    for term, value in SEED_VALUES_D256.items():
        row = next(line for line in lines if line.startswith(f"│ {TERM_WORDS[term]} "))
        cells = [cell.strip() for cell in row.strip("│").split("│")]
        assert cells[1] == f"{value:,}"
        assert cells[3] == SEED_RATIOS[term]
    assert "Ratio to D=256" in result.stdout  # the bar chart
    flat = " ".join(result.stdout.split())
    assert "Base: the cost example of the course notes on embeddings: V=50,257" in flat
    assert "seed" not in flat.lower()


def test_chart_bars_are_proportional(cli: Invoke) -> None:
    # D = 256 -> 1,024: the k^2 terms (16x) get the full bar, the k terms (4x) a quarter of it.
    result = cli("scale", "--d", "256", "1024")
    bars = {
        line.split("│")[1].strip(): line.count("█")
        for line in result.stdout.splitlines()
        if "█" in line
    }
    assert bars["projection/FFN MACs"] == bars["block matrices"] == 24
    assert bars["LM head MACs"] == bars["token table"] == 6
    assert "16.0x" in result.stdout


def test_seed_000_json(cli: Invoke) -> None:
    result = cli("scale", "--d", "256", "512", "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["d"] == [256, 512]
    assert list(data["terms"]) == list(TERMS)
    for term, value in SEED_VALUES_D256.items():
        values = data["terms"][term]["values"]
        assert values[0] == value
        ratio = data["terms"][term]["ratios"][1]
        assert f"{ratio['numerator'] / ratio['denominator']:.1f}" == SEED_RATIOS[term]
        assert ratio["percent"] == f"{float(SEED_RATIOS[term]) * 100:.1f}%"
        assert data["terms"][term]["ratios"][0] == {
            "numerator": 1,
            "denominator": 1,
            "percent": "100.0%",
        }
    assert data["workload"] == {"batch": 2, "length": 4}
    assert data["attention"] == "full"


@given(st.integers(1, 64), st.integers(2, 5), st.integers(1, 4), st.integers(1, 16))
def test_width_ratios_are_k_k_k2_k2_k_k(d: int, k: int, B: int, T: int) -> None:
    # Issue 3 / seed 000: D -> kD multiplies the six terms of a plain block by k, k, k^2, k^2, k, k.
    def spec(width: int) -> ModelSpec:
        return ModelSpec(vocab_size=1000, context_length=16, d_model=width, n_layers=2, n_heads=1)

    small, large = leading_terms(spec(d), B, T), leading_terms(spec(k * d), B, T)
    expected = [k, k, k * k, k * k, k, k]
    assert [Fraction(large[t], small[t]) for t in TERMS] == expected


def test_what_scale_holds_fixed_and_derives(cli: Invoke) -> None:
    """Doubling Llama 3.1 8B's width keeps its FFN width (the config gives 14,336) and its
    heads; the head width follows D / H. Given -T, no default T is claimed."""
    args = ["scale", "-p", "llama-3.1-8b", "--d", "4096", "8192", "-T", "2048"]
    out = " ".join(cli(*args).stdout.split())
    assert "Base: llama-3.1-8b, 32 blocks, B=2, T=2,048. B=2: the cost example's default." in out
    assert "Held fixed as D grows: V 128,256, L 32, H 32, K 8, FFN width 14,336 (the config" in out
    assert "Derived from D: head width = D / H: 128 -> 256." in out
    assert "T=4" not in out
    data = json.loads(cli(*args, "-f", "json").stdout)
    assert data["fixed"]["ffn_hidden"] == 14_336 and data["derived"] == {"head_dim": [128, 256]}
    assert data["terms"]["position_parameters"]["ratios"] == [None, None]
    gpt2 = " ".join(cli("scale", "-p", "gpt2", "--d", "768", "1536", "-B", "1").stdout.split())
    assert "FFN width = 4 x D: 3,072 -> 6,144" in gpt2
    assert "T=4: the cost example's default." in gpt2
    given = cli("scale", "--d", "256", "512", "-B", "4", "-T", "8").stdout
    assert "default" not in " ".join(given.split())


def test_ratios_are_exact_fractions() -> None:
    assert ratios([50257, 50304]) == [Fraction(1), Fraction(50304, 50257)]
    assert ratios([0, 0]) == [None, None]  # no position table at either width: no ratio
    assert format_ratio(None) == "-"


@pytest.mark.parametrize(
    ("ratio", "shown"),
    [
        (Fraction(2), "2.0"),
        (Fraction(9, 4), "2.25"),
        (Fraction(1, 8), "0.125"),
        (Fraction(50304, 50257), "~1.001"),
        (Fraction(2, 3), "~0.667"),
    ],
)
def test_format_ratio(ratio: Fraction, shown: str) -> None:
    assert format_ratio(ratio) == shown


def test_spread_values() -> None:
    args = ["--d", "256", "512", "-5", "--batch", "2", "--length=4", "8", "-f", "json"]
    assert spread_values(args, LIST_OPTIONS) == [
        "--d", "256", "--d", "512", "--d", "-5", "--batch", "2", "--length=4", "--length", "8",
        "-f", "json",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("option", "values", "key", "doubles"),
    [
        ("--vocab", ["50257", "100514"], "vocab", {"token_parameters", "lm_head_macs"}),
        ("--context", ["1024", "2048"], "context", {"position_parameters"}),
        (
            "--layers",
            ["1", "2"],
            "layers",
            {"block_matrix_parameters", "projection_ffn_macs", "attention_pair_macs"},
        ),
        ("--length", ["4", "8"], "length", {"projection_ffn_macs", "lm_head_macs"}),
    ],
)
def test_other_dimensions(
    cli: Invoke, option: str, values: list[str], key: str, doubles: set[str]
) -> None:
    # Doubling one dimension doubles the terms linear in it and leaves the others alone
    # (attention pairs are quadratic in T).
    result = cli("scale", option, *values, "-f", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data[key] == [int(v) for v in values]
    for term in TERMS:
        expected = [4, 1] if key == "length" and term == "attention_pair_macs" else None
        expected = expected or ([2, 1] if term in doubles else [1, 1])
        ratio = data["terms"][term]["ratios"][1]
        assert [ratio["numerator"], ratio["denominator"]] == expected, term


def test_preset_base_and_workload(cli: Invoke) -> None:
    result = cli(
        "scale", "-p", "gpt2-small", "--d", "768", "1536", "-B", "1", "-T", "128", "-f", "json"
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["model"] == "gpt2-small"
    # GPT-2 small token table, 38,597,376, and at D=1536 77,194,752 (seed 000).
    assert data["terms"]["token_parameters"]["values"] == [38_597_376, 77_194_752]
    # FlopCounterMode, GPT-2 small at B=1, T=128 (issue 3): LM head and attention pairs.
    assert data["terms"]["lm_head_macs"]["values"][0] == 4_940_464_128
    assert data["terms"]["attention_pair_macs"]["values"][0] == 301_989_888


def test_config_base(cli: Invoke, tmp_path: Path) -> None:
    # A costcalc config file as the base: book-gpt-small (seed 004), widths 256 -> 512.
    path = tmp_path / "book.yaml"
    path.write_text(cli("presets", "show", "book-gpt-small").stdout)
    data = json.loads(cli("scale", "-c", str(path), "--d", "256", "512", "-f", "json").stdout)
    assert data["model"] == "book-gpt-small"
    # seed 004: the 4,096 x 256 token table, 1,048,576; 4 blocks of 12 d^2 = 786,432.
    assert data["terms"]["token_parameters"]["values"] == [1_048_576, 2_097_152]
    assert data["terms"]["block_matrix_parameters"]["values"][0] == 4 * 786_432


def test_causal_option(cli: Invoke) -> None:
    full = json.loads(cli("scale", "--d", "256", "512", "-f", "json").stdout)
    causal = json.loads(cli("scale", "--d", "256", "512", "--causal", "-f", "json").stdout)
    assert causal["attention"] == "causal"
    # T = 4: 10 of the 16 pairs.
    full_pairs = full["terms"]["attention_pair_macs"]["values"][0]
    assert causal["terms"]["attention_pair_macs"]["values"][0] * 16 == full_pairs * 10


def test_markdown_and_csv_have_no_chart(cli: Invoke) -> None:
    for fmt in ("markdown", "csv"):
        result = cli("scale", "--d", "256", "512", "-f", fmt)
        assert result.exit_code == 0
        row = "projection/FFN MACs" if fmt == "markdown" else "projection_ffn_macs"
        assert row in result.stdout
        assert "█" not in result.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--d", "256"], 2, "nothing to compare"),
        ([], 2, "nothing to compare"),
        (["--d", "256", "512", "--layers", "1", "2"], 2, "one dimension at a time"),
        (["--d", "256", "500"], 1, "does not split into 8 equal heads"),
        (["--d", "256", "0"], 2, "--d: '0' is not a positive count"),
        (["--d", "256", "512", "-T", "2048"], 1, "past the learned position table"),
        (["--context", "2", "8"], 1, "past the learned position table"),
        (["--d", "256", "512", "-B", "0"], 2, "--batch: '0' is not a positive count"),
        (["--d", "768", "1536", "-p", "gpt2", "-c", "gpt2.yaml"], 2, "one model"),
        (["--d", "768", "1536", "-p", "gpt2", "-p", "gpt2-medium"], 2, "one model"),
        (["--d", "768", "1536", "-p", "gtp2"], 1, "unknown preset 'gtp2'"),
    ],
)
def test_bad_input(cli: Invoke, args: list[str], code: int, message: str) -> None:
    result = cli("scale", *args)
    expect_error(result, code, message)


def test_non_integer_is_a_usage_error(cli: Invoke) -> None:
    result = cli("scale", "--d", "256", "2.5")
    assert result.exit_code == 2
    assert result.stderr == "error: --d: '2.5' is 2.5: not a whole number\n"
