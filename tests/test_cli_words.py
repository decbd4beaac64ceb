"""Output in words a person reads: what-if names, tying in words, shares, help for the terminal."""

from __future__ import annotations

import json
import re
from fractions import Fraction

from costcalc.loaders import load_preset
from costcalc.params import param_report
from tests.conftest import Invoke
from tests.test_docs import command_paths


def flat(text: str) -> str:
    return " ".join(text.split())


def test_one_model_overridden_beside_the_original(cli: Invoke) -> None:
    # seed 000: D 768 -> 1536 doubles the token table, 38,597,376 -> 77,194,752.
    out = cli("params", "-p", "gpt2-small", "-p", "gpt2-small:d_model=1536", "-f", "json")
    first, second = json.loads(out.stdout)
    assert first["name"] == "gpt2-small"
    assert second["name"] == "gpt2-small (d_model=1536)"
    assert first["parameters"]["token_embedding"] == 38_597_376
    assert second["parameters"]["token_embedding"] == 77_194_752
    table = cli("params", "-p", "gpt2-small", "-p", "gpt2-small:d_model=1536").stdout
    assert "gpt2-small (d_model=1536)" in table


def test_option_names_and_field_names_alike(cli: Invoke) -> None:
    by_option = json.loads(cli("params", "-p", "gpt2:d=1536,heads=16", "-f", "json").stdout)
    by_field = json.loads(cli("params", "-p", "gpt2:d_model=1536,n_heads=16", "-f", "json").stdout)
    assert by_option["parameters"] == by_field["parameters"]
    assert by_option["name"] == "gpt2-small (d_model=1536, n_heads=16)"


def test_own_overrides_win_over_the_options(cli: Invoke) -> None:
    out = cli("params", "-p", "gpt2", "-p", "gpt2:layers=24", "--layers", "6", "-f", "json")
    names = [record["name"] for record in json.loads(out.stdout)]
    assert names == ["gpt2-small (n_layers=6)", "gpt2-small (n_layers=24)"]


def test_single_model_override_named(cli: Invoke) -> None:
    out = cli("params", "-p", "gpt2", "--d", "1536", "--no-tie", "-f", "json")
    assert json.loads(out.stdout)["name"] == "gpt2-small (d_model=1536, tie_embeddings=false)"


def test_unknown_per_model_field(cli: Invoke) -> None:
    result = cli("params", "-p", "gpt2:d_modle=1536")
    assert result.exit_code == 2
    assert "unknown field 'd_modle'" in result.stderr and "did you mean 'd_model'" in result.stderr
    bad = cli("params", "-p", "gpt2:d_model=big")
    assert bad.exit_code == 2 and "d_model: 'big' is not a count" in bad.stderr


def test_tying_in_words(cli: Invoke) -> None:
    # seed 004 problem 4 (c): GPT-2 small's output matrix is 50,257 x 768 = 38,597,376.
    out = flat(cli("params", "-p", "gpt2-small").stdout)
    assert (
        "gpt2-small: tying saves V x E = 38,597,376 parameters (23.7% of the untied model; "
        "the untied model is 31.0% larger)"
    ) in out


def test_non_embedding_is_total_minus_position_table(cli: Invoke) -> None:
    record = json.loads(cli("params", "-p", "gpt2-small", "-f", "json").stdout)["parameters"]
    # nanoGPT reports 123.65M for GPT-2 small: 124,439,808 - 786,432.
    assert record["non_embedding"] == 124_439_808 - 786_432 == 123_653_376
    flat = " ".join(cli("params", "-p", "gpt2-small").stdout.split())
    assert "non-embedding (nanoGPT) │ 123,653,376" in flat


def test_parts_add_up_to_the_total() -> None:
    for name in ("gpt2-small", "deepseek-v3", "qwen3-30b-a3b", "opt-125m", "gemma-3-1b"):
        report = param_report(load_preset(name).spec)
        assert sum(report.parts().values()) == report.total, name


def test_shares_of_the_total(cli: Invoke) -> None:
    out = cli("params", "-p", "gpt2-small").stdout
    share = Fraction(38_597_376, 124_439_808)  # 31.0%
    assert round(float(share) * 100, 1) == 31.0
    assert re.search(r"token embedding\s+│\s+31\.0%", out)
    assert re.search(r"FFNs \(all blocks\)\s+│\s+45\.5%", out)


def test_help_has_no_type_on_flags_and_no_docstring_wrapping(cli: Invoke) -> None:
    for path in command_paths():
        text = cli(*path.split(), "--help").stdout
        assert "<bool>" not in text, path
    text = cli("params", "--help").stdout
    assert "Totals count a tied matrix once, as PyTorch's" in text


def test_help_names_values_in_plain_words(cli: Invoke) -> None:
    """An option's number is N and its text TEXT on every command, where the option names no
    value of its own (--preset NAME); no type in angle brackets (``<int>``, ``<list[int]>``)."""
    for path in command_paths():
        options = re.findall(r"^│ +--.*$", cli(*path.split(), "--help").stdout, re.MULTILINE)
        assert options, path
        assert not [line for line in options if re.search(r"<(int|str|list\[\w+\])>", line)]
    text = cli("params", "--help").stdout
    assert re.search(r"--batch\s+-B\s+N\s", text)
    assert re.search(r"--ffn\s+TEXT\s", text)
    assert re.search(r"--preset\s+-p\s+NAME\s", text)


def test_heads_short_form_everywhere(cli: Invoke) -> None:
    assert (
        json.loads(cli("params", "-p", "gpt2", "-H", "16", "-f", "json").stdout)["model"]["n_heads"]
        == 16
    )
    assert cli("heads", "--d", "256", "-H", "8").exit_code == 0
    assert cli("heads", "--d", "256", "--heads", "8").exit_code == 0
    assert cli("heads", "--d", "256", "--h", "8").exit_code == 0


def test_invalid_heads_said_once(cli: Invoke) -> None:
    # seed 000: D=256, H=7 is "invalid equal split".
    result = cli("heads", "--d", "256", "--heads", "7")
    assert result.exit_code == 1
    said = "does not split into 7 equal heads"
    assert (result.stdout + result.stderr).count(said) == 1
    assert "Nearest valid head counts: H=4 (head_dim 64), H=8 (head_dim 32)." in result.stdout


def test_length_past_a_rotary_context_is_a_warning(cli: Invoke) -> None:
    result = cli("params", "-p", "qwen2.5-0.5b", "-T", "40000", "-f", "json")
    assert result.exit_code == 0
    assert (
        "warning: 40,000 tokens is past qwen2.5-0.5b's trained context of 32,768" in result.stderr
    )
    assert "rotary positions run on" in result.stderr
    assert cli("params", "-p", "qwen2.5-0.5b", "-T", "32768").stderr == ""


def test_mac_explain_arithmetic_is_right(cli: Invoke) -> None:
    from costcalc.compute import mac_report
    from costcalc.explain import explain_macs

    checked = 0
    for name in ("gpt2-small", "gemma-2-2b", "mixtral-8x7b", "opt-125m"):
        spec = load_preset(name).spec
        for causal in (False, True):
            report = mac_report(spec, 2, 1000, causal)
            for row, text in explain_macs(spec, report, 2, 1000, causal).items():
                *_, expression, value = re.split(r" = | => ", text)
                assert int(value.replace(",", "")) == getattr(report, row), (name, row)
                if re.fullmatch(r"[\d,x+() ]+", expression):
                    assert eval(expression.replace(",", "").replace("x", "*")) == getattr(
                        report, row
                    )
                    checked += 1
    assert checked >= 40
    out = cli("params", "-p", "gpt2-small", "--length", "1024", "--explain").stdout
    assert "How the forward MACs of gpt2-small are counted" in out


def test_scale_takes_every_override(cli: Invoke) -> None:
    out = json.loads(
        cli("scale", "-p", "gpt2", "--d", "768", "1536", "-H", "16", "-f", "json").stdout
    )
    assert out["model"] == "gpt2-small (n_heads=16)"
    table = flat(cli("scale", "-p", "gpt2", "--d", "768", "1536", "--heads", "16").stdout)
    assert "Base: gpt2-small (n_heads=16), 12 blocks, B=2, T=4." in table
    assert "B=2 and T=4: the cost example's defaults (--batch, --length)." in table
    assert "default" not in flat(cli("scale", "--d", "256", "512", "-B", "4", "-T", "8").stdout)
    help_text = cli("scale", "--help").stdout
    assert all(o in help_text for o in ("--hf", "--head-dim", "--ffn-hidden", "--kv-heads", "-H"))


def test_json_output_does_not_import_rich_tables() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from costcalc.cli.app import app\n"
        "try:\n"
        "    app(['params', '-p', 'gpt2-small', '-f', 'json'], prog_name='costcalc')\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(' '.join(m for m in sys.modules if m.startswith('rich.table')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["parameters"]["total"] == 124_439_808
    assert done.stderr == ""
