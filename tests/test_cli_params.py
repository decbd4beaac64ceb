"""`costcalc params` through the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from costcalc.loaders import load_file
from costcalc.params import stack_reports
from tests.conftest import FIXTURES, Invoke


def params_json(cli: Invoke, *args: str) -> dict:
    result = cli("params", *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_table_for_gpt2_small(cli: Invoke) -> None:
    result = cli("params", "--preset", "gpt2-small")
    assert result.exit_code == 0
    # Radford et al. 2019 / transformers: 124,439,808; seed 000: token table 38,597,376.
    assert "124,439,808" in result.stdout
    assert "38,597,376" in result.stdout
    assert "786,432" in result.stdout
    # fp32 bytes of the whole model: 4 x 124,439,808, labelled in both unit systems.
    assert "497,759,232" in result.stdout
    assert "497.76 MB" in result.stdout
    assert "474.70 MiB" in result.stdout


def test_alias(cli: Invoke) -> None:
    assert params_json(cli, "-p", "gpt2")["parameters"]["total"] == 124_439_808


def test_json_contract(cli: Invoke) -> None:
    data = params_json(cli, "--preset", "book-gpt-small")
    p = data["parameters"]
    # seed 004, sources/gpt/train_gpt_small.out section 1.
    assert p["token_embedding"] == 1_048_576
    assert p["position_embedding"] == 65_536
    assert "embedding_projection" not in p  # a part only some families have (docs/json.md)
    assert p["attention"] == 263_168
    assert p["ffn"] == 525_568
    assert p["norms"] == 1_024
    assert p["per_block"] == 789_760
    assert p["blocks"] == 3_159_040
    assert p["final_norm"] == 512
    assert p["lm_head"] == 0
    assert p["total"] == 4_273_664
    assert p["untied_total"] == 5_322_240
    assert p["active"] == 4_273_664  # dense: every parameter is active
    assert p["tying_saving"] == 5_322_240 - 4_273_664
    # (5,322,240 - 4,273,664) / 4,273,664 = 1,048,576 / 4,273,664 = 2,048 / 8,347
    assert p["untied_increase"] == {"numerator": 2048, "denominator": 8347, "percent": "24.5%"}
    assert data["bytes"]["fp32"] == 4 * 4_273_664
    assert data["bytes"]["fp16"] == 2 * 4_273_664
    assert data["bytes"]["fp8"] == data["bytes"]["int8"] == 4_273_664
    assert data["bytes"]["bf16"] == 2 * 4_273_664
    assert data["bytes"]["int4"] == 4_273_664 // 2
    assert data["model"]["d_model"] == 256
    assert data["model"]["head_dim"] == 64
    assert isinstance(p["total"], int)


def test_tying_saving_of_an_untied_model(cli: Invoke) -> None:
    # seed 000: lrn-gpt is untied (tie_embeddings false); its token table V x D = 50,257 x 256 =
    # 12,865,792 is what tying would save, and the percentage is the same as for its tied twin.
    untied = params_json(cli, "-p", "lrn-gpt")["parameters"]
    tied = params_json(cli, "-p", "lrn-gpt", "--tie")["parameters"]
    assert untied["tying_saving"] == tied["tying_saving"] == 12_865_792
    assert untied["total"] - tied["total"] == 12_865_792
    assert untied["untied_increase"] == tied["untied_increase"]
    assert untied["untied_increase"]["numerator"] * tied["total"] == (
        12_865_792 * untied["untied_increase"]["denominator"]
    )
    table = cli("params", "-p", "lrn-gpt").stdout
    assert "tying saves" not in table  # an untied model saves nothing: its note says what it would
    assert (
        "lrn-gpt is not tied; tying would save V x E = 12,865,792 parameters "
        f"({untied['tying_share']['percent']} of the untied model; the untied model is "
        f"{untied['untied_increase']['percent']} larger)"
    ) in " ".join(table.split())


def test_several_models_side_by_side(cli: Invoke) -> None:
    data = params_json(cli, "-p", "book-gpt-small", "-p", "book-gpt-fairytale")
    # seed 004: 4,273,664 and 27,579,392.
    assert [d["parameters"]["total"] for d in data] == [4_273_664, 27_579_392]
    table = cli("params", "-p", "book-gpt-small", "-p", "book-gpt-fairytale").stdout
    assert re.search(r"total\s+│\s+4,273,664\s+│\s+27,579,392", table)


def test_explain_rows_evaluate_to_the_counts(cli: Invoke) -> None:
    result = cli("params", "-p", "book-gpt-small", "--explain")
    assert result.exit_code == 0
    # The GPT book writes the block as "12d^2 + 13d" with d the width; costcalc writes the width D
    # and keeps d for the head width.
    assert "12D^2 + 13D, D = 256 => 786,432 + 3,328 = 789,760" in result.stdout
    flat = " ".join(result.stdout.split())
    assert "final norm │ layernorm weight and bias, 2D = 2 x 256 = 512" in flat


def test_explain_arithmetic_is_right() -> None:
    from costcalc.explain import explain
    from costcalc.loaders import load_preset
    from costcalc.params import param_report

    checked = 0
    for name in (
        "gpt2-small",
        "qwen2.5-0.5b",
        "lrn-gpt",
        "book-gpt-fairytale",
        "opt-125m",
        "mixtral-8x7b",
    ):
        spec = load_preset(name).spec
        report = param_report(spec)
        for row, text in explain(spec, report).items():
            *_, expression, value = re.split(r" = | => ", text)
            assert int(value.replace(",", "")) == getattr(report, row), (name, row)
            if re.fullmatch(r"[\d,x+() -]+", expression):
                expression = expression.replace(",", "").replace("x", "*")
                assert eval(expression) == getattr(report, row), (name, row, text)
                checked += 1
    assert checked >= 40


@pytest.mark.parametrize(
    "fixture",
    ["gpt2", "qwen3-0.6b", "persimmon-8b", "jetmoe-8b", "apertus-8b", "bitnet-b1.58-2b-4t"],
)
def test_block_rows_add_up(fixture: str) -> None:
    """Each block row's numbers give its count: a formula is shown only where nothing else is in
    the row (JetMoE's attention and FFN experts, Apertus' activation scalars, BitNet's inner norm,
    Persimmon's q/k norms beside a GPT-2-like block)."""
    from costcalc.explain import explain
    from costcalc.params import param_report

    spec = load_file(FIXTURES / "hf" / f"{fixture}.json").spec
    rows = explain(spec, param_report(spec))
    for row in ("attention", "ffn", "norms", "per_block"):
        *_, expression, value = re.split(r" = | => ", rows[row])
        expression = expression.split(": ")[-1]
        assert re.fullmatch(r"[\d,x+() -]+", expression), (row, rows[row])
        assert eval(expression.replace(",", "").replace("x", "*")) == int(value.replace(",", ""))


@pytest.mark.parametrize(
    ("args", "field", "expected"),
    [
        (["--vocab", "4096"], "vocab_size", 4096),
        (["--context", "512"], "context_length", 512),
        (["--d", "1536"], "d_model", 1536),
        (["--layers", "4"], "n_layers", 4),
        (["--heads", "16"], "n_heads", 16),
        (["--kv-heads", "4"], "n_kv_heads", 4),
        (["--head-dim", "128"], "head_dim", 128),
        (["--ffn", "swiglu"], "ffn", "swiglu"),
        (["--ffn-mult", "2"], "ffn_hidden", 1536),
        (["--ffn-hidden", "3072"], "ffn_hidden", 3072),
        (["--norm", "rmsnorm"], "norm", "rmsnorm"),
        (["--no-tie"], "tie_embeddings", False),
        (["--position", "rotary"], "position", "rotary"),
    ],
)
def test_each_override(cli: Invoke, args: list[str], field: str, expected: object) -> None:
    data = params_json(cli, "-p", "gpt2-small", *args)
    assert data["model"][field] == expected


def test_override_changes_counts(cli: Invoke) -> None:
    # seed 000: D 768 -> 1536 doubles the token table to 77,194,752.
    assert params_json(cli, "-p", "gpt2", "--d", "1536")["parameters"]["token_embedding"] == (
        77_194_752
    )
    # Untying GPT-2 small adds its 38,597,376-parameter output matrix (seed 004, problem 4 (c)).
    untied = params_json(cli, "-p", "gpt2", "--no-tie")["parameters"]
    assert untied["lm_head"] == 38_597_376
    assert untied["total"] == 124_439_808 + 38_597_376
    # A position scheme without a table drops the 786,432 learned positions (seed 000).
    assert params_json(cli, "-p", "gpt2", "--position", "rotary")["parameters"]["total"] == (
        124_439_808 - 786_432
    )
    tied = params_json(cli, "-p", "lrn-gpt", "--tie")["parameters"]
    assert tied["lm_head"] == 0


def test_config_file_from_presets_show(cli: Invoke, tmp_path: Path) -> None:
    shown = cli("presets", "show", "book-gpt-fairytale")
    assert shown.exit_code == 0
    path = tmp_path / "fairytale.yaml"
    path.write_text(shown.stdout)
    data = params_json(cli, "--config", str(path))
    assert data["parameters"]["total"] == 27_579_392  # seed 004, problem 3


def test_json_config_file(cli: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "small.json"
    spec = {"vocab_size": 4096, "context_length": 256, "d_model": 256, "n_layers": 4, "n_heads": 4}
    path.write_text(json.dumps(spec))
    assert params_json(cli, "-c", str(path))["parameters"]["total"] == 4_273_664  # seed 004


def test_markdown_and_csv(cli: Invoke) -> None:
    md = cli("params", "-p", "book-gpt-small", "--format", "markdown")
    assert md.exit_code == 0
    assert "| total | 4,273,664 |" in md.stdout
    csv = cli("params", "-p", "book-gpt-small", "--format", "csv")
    assert csv.exit_code == 0
    assert "book-gpt-small,parameters,total,4273664,parameters," in csv.stdout


def test_vocab_padding(tmp_path: Path, cli: Invoke) -> None:
    # nanoGPT pads GPT-2's 50,257 tokens to 50,304 rows: 47 more rows of 768.
    path = tmp_path / "padded.yaml"
    path.write_text(cli("presets", "show", "gpt2-small").stdout + "vocab_pad_multiple: 64\n")
    data = params_json(cli, "-c", str(path))
    assert data["parameters"]["token_embedding"] == 50_304 * 768
    assert data["parameters"]["total"] == 124_439_808 + 47 * 768


@pytest.mark.parametrize("columns", ["60", "80", "120"])
@pytest.mark.parametrize(
    "presets",
    [
        ["llama-3.1-8b", "qwen2.5-7b", "mistral-7b-v0.1", "gemma-2b"],
        ["gpt2-small", "gpt2-medium", "gpt2-large", "gpt2-xl"],
        ["deepseek-v3", "gpt-oss-20b", "gemma-3-1b"],
    ],
)
def test_no_number_is_cut_at_any_width(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch, columns: str, presets: list[str]
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    args = [arg for name in presets for arg in ("-p", name)]
    table = cli("params", *args).stdout
    assert "…" not in table
    data = params_json(cli, *args)
    digits = re.sub(r"[^0-9]", "", table)
    for record in data:
        # every total appears whole (its digits consecutive, folded lines joined)
        assert str(record["parameters"]["total"]) in digits


def test_blocks_that_differ_are_shown_by_kind(cli: Invoke) -> None:
    table = cli("params", "-p", "deepseek-v3").stdout
    # transformers builds 3 dense and 58 MoE blocks (tests/golden/hf_families.json, deepseek-v3)
    assert "Blocks of deepseek-v3, by kind" in table
    assert re.search(r"dense FFN\s+┃\s+256 experts, top 8", table)
    assert re.search(r"layers\s+│\s+3\s+│\s+58", table)
    data = params_json(cli, "-p", "deepseek-v3")
    stacks = data["parameters"]["stacks"]
    assert [s["layers"] for s in stacks] == [3, 58]
    assert sum(s["blocks"] for s in stacks) == data["parameters"]["blocks"]
    assert data["parameters"]["per_block"] is None


def test_blocks_without_an_ffn_beside_experts_say_so() -> None:
    # NemotronHBlock holds one mixer per layer (Mamba-2, attention, MoE or MLP): the Mamba-2
    # and attention blocks have no FFN, which the experts' kind must not call a dense one
    spec = load_file(FIXTURES / "hf" / "tiny-nemotron-h-latent-moe.json").spec
    assert [report.kind for report in stack_reports(spec)] == [
        "Mamba-2, no FFN",
        "no token mixer, 8 experts, top 2",
        "attention, no FFN",
        "no token mixer, dense FFN",
    ]
