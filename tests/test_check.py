"""`costcalc check`: the rules, the budgets, finding files, the output formats, the exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import FIXTURES, ROOT, Invoke

PRESETS = ROOT / "presets"
GPT2_SMALL = PRESETS / "gpt2-small.yaml"

# seed 000: lrn-gpt's GPTConfig defaults (D=256, H=8, 6 layers, untied)
LRN_GPT: dict[str, Any] = {
    "vocab_size": 50257,
    "context_length": 1024,
    "d_model": 256,
    "n_layers": 6,
    "n_heads": 8,
    "tie_embeddings": False,
}


@pytest.fixture
def write(tmp_path: Path) -> Any:
    """Write a config (a mapping as YAML, or text as it is) and return its path."""

    def write_config(config: dict[str, Any] | str, name: str = "model.yaml") -> Path:
        path = tmp_path / name
        text = config if isinstance(config, str) else yaml.safe_dump(config, sort_keys=False)
        path.write_text(text, encoding="utf-8")
        return path

    return write_config


def findings(cli: Invoke, *args: str) -> list[dict[str, Any]]:
    """The findings of the single file ``costcalc check ARGS`` checks (exit code checked too)."""
    result = cli("check", *args, "--format", "json")
    [record] = json.loads(result.stdout)
    assert result.exit_code == (1 if record["findings"] else 0)
    return list(record["findings"])


def messages(cli: Invoke, *args: str) -> list[tuple[str | None, str]]:
    return [(f["field"], f["message"]) for f in findings(cli, *args)]


# --- Rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("d", "h", "valid"),
    [(256, 8, True), (256, 7, False), (48, 4, True), (192, 4, True)],  # seed 000's four lines
)
def test_equal_head_split(cli: Invoke, write: Any, d: int, h: int, valid: bool) -> None:
    path = write({**LRN_GPT, "d_model": d, "n_heads": h})
    found = messages(cli, str(path))
    if valid:
        assert found == []
    else:
        assert found == [
            (
                "n_heads",
                "d_model 256 does not split into 7 equal heads (256 % 7 = 4); nearest valid head "
                "counts: 4, 8; or give head_dim explicitly",
            )
        ]


def test_explicit_head_dim_needs_no_equal_split(cli: Invoke, write: Any) -> None:
    assert messages(cli, str(write({**LRN_GPT, "n_heads": 7, "head_dim": 32}))) == []


@pytest.mark.parametrize(
    ("kv", "valid"), [(8, True), (4, True), (1, True), (3, False), (16, False)]
)
def test_heads_divisible_by_kv_heads(cli: Invoke, write: Any, kv: int, valid: bool) -> None:
    found = messages(cli, str(write({**LRN_GPT, "n_kv_heads": kv})))
    expected = [
        (
            "n_kv_heads",
            f"8 query heads cannot be grouped over {kv} key/value heads "
            "(n_heads must be a multiple of n_kv_heads)",
        )
    ]
    assert found == ([] if valid else expected)


def test_rotary_head_dim_must_be_even(cli: Invoke, write: Any) -> None:
    rotary = {**LRN_GPT, "position": "rotary"}
    assert messages(cli, str(write({**rotary, "head_dim": 32}))) == []
    assert messages(cli, str(write({**rotary, "head_dim": 33}))) == [
        ("head_dim", "rotary positions rotate pairs of dimensions; 33 is odd")
    ]
    assert messages(cli, str(write({**rotary, "rotary_dim": 15}))) == [
        ("rotary_dim", "rotary positions rotate pairs of dimensions; 15 is odd")
    ]
    assert messages(cli, str(write({**rotary, "rotary_dim": 64}))) == [
        ("rotary_dim", "rotary_dim 64 exceeds head_dim 32")
    ]
    # an odd head_dim is fine without rotary positions
    assert messages(cli, str(write({**LRN_GPT, "head_dim": 33}))) == []


@pytest.mark.parametrize(
    ("value", "spelled", "message"),
    [
        ("true", "True", "Input should be a valid integer (got True)"),
        ("768.0", "768.0", "Input should be a valid integer (got 768.0)"),
        ("768.5", "768.5", "Input should be a valid integer (got 768.5)"),
        ('"768"', "'768'", "Input should be a valid integer (got '768')"),
        ("0", "0", "Input should be greater than or equal to 1 (got 0)"),
        ("-768", "-768", "Input should be greater than or equal to 1 (got -768)"),
        ("[768]", "list", "Input should be a valid integer (got list)"),
    ],
)
def test_sizes_are_positive_integers(
    cli: Invoke, write: Any, value: str, spelled: str, message: str
) -> None:
    text = yaml.safe_dump({k: v for k, v in LRN_GPT.items() if k != "d_model"}, sort_keys=False)
    path = write(text + f"d_model: {value}\n")
    assert findings(cli, str(path)) == [{"field": "d_model", "line": 6, "message": message}]
    assert f"(got {spelled})" in message


def test_every_problem_of_a_file_at_once(cli: Invoke, write: Any) -> None:
    path = write(
        "vocab_size: 50257\ncontext_length: 1024\nd_model: 256\nn_heads: 7\nn_layers: yes\n"
        "norm: rmsnorm\nrotary_dim: 16\nffn_mult: 4\nffn_hidden: 1000\ntie_embedings: false\n"
    )
    assert findings(cli, str(path)) == [
        {
            "field": "n_heads",
            "line": 4,
            "message": "d_model 256 does not split into 7 equal heads (256 % 7 = 4); nearest "
            "valid head counts: 4, 8; or give head_dim explicitly",
        },
        {"field": "n_layers", "line": 5, "message": "Input should be a valid integer (got 'yes')"},
        {
            "field": "rotary_dim",
            "line": 7,
            "message": "rotary_dim is given but position is not rotary",
        },
        {
            "field": "ffn_hidden",
            "line": 9,
            "message": "ffn_hidden 1000 contradicts ffn_mult 4 (which means 1024); "
            "give one of them",
        },
        {
            "field": "tie_embedings",
            "line": 10,
            "message": "unknown key; did you mean 'tie_embeddings'?",
        },
    ]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            {"position": "rotary", "position_offset": 2},
            [("position_offset", "an offset only applies to a learned or sinusoidal table")],
        ),
        (
            {"rotary_dim": 16},
            [("rotary_dim", "rotary_dim is given but position is not rotary")],
        ),
        (
            {"moe_experts": 8},
            [("moe_top_k", "a mixture of experts needs both moe_experts and moe_top_k")],
        ),
        (
            {"moe_experts": 2, "moe_top_k": 3},
            [("moe_top_k", "cannot route to 3 of 2 experts")],
        ),
        (
            {"final_norm": False, "final_norm_bias": True},
            [("final_norm_bias", "a bias of the final norm needs final_norm")],
        ),
        (
            {"position": "learned", "ffn": "relu"},
            [
                (
                    "ffn",
                    "Input should be 'mlp', 'swiglu', 'geglu', 'channel_mix' or 'none' "
                    "(got 'relu')",
                )
            ],
        ),
    ],
)
def test_more_structural_rules(
    cli: Invoke, write: Any, extra: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert messages(cli, str(write({**LRN_GPT, **extra}))) == expected


@pytest.mark.parametrize("value", ["0", "-2"])
def test_length_must_be_positive_as_in_params(cli: Invoke, value: str) -> None:
    result = cli("check", str(GPT2_SMALL), "-T", value)
    assert result.exit_code == 2
    reason = " is not a positive count" if value == "0" else ": a count cannot be negative"
    assert result.stderr == f"error: --length: '{value}'{reason}\n"
    assert result.stdout == ""


def test_length_within_the_learned_position_table(cli: Invoke, write: Any) -> None:
    learned = write(LRN_GPT, "learned.yaml")
    assert messages(cli, str(learned), "--length", "1024") == []
    assert findings(cli, str(learned), "--length", "1025") == [
        {
            "field": "context_length",
            "line": 2,
            "message": "--length 1,025 needs 1,025 positions, past the learned position table "
            "of 1,024 positions (context_length); a learned table has no embedding for later "
            "positions",
        }
    ]
    rotary = write({**LRN_GPT, "position": "rotary"}, "rotary.yaml")
    assert messages(cli, str(rotary), "--length", "4096") == []
    nanogpt = FIXTURES / "repo" / "configs" / "good" / "book-gpt-small.json"
    assert findings(cli, str(nanogpt), "--length", "512") == [
        {
            "field": "block_size",
            "line": 3,
            "message": "--length 512 needs 512 positions, past the learned position table of 256 "
            "positions (context_length); a learned table has no embedding for later positions",
        }
    ]


def test_unknown_key_with_hint(cli: Invoke, write: Any) -> None:
    assert messages(cli, str(write({**LRN_GPT, "n_head": 8}))) == [
        ("n_head", "unknown key; did you mean 'n_heads'?")
    ]
    assert messages(cli, str(write({**LRN_GPT, "colour": "red"}))) == [("colour", "unknown key")]


def test_hugging_face_ignores_unrelated_keys_but_needs_required_ones(
    cli: Invoke, write: Any
) -> None:
    config = json.loads((FIXTURES / "hf" / "gpt2.json").read_text())
    assert messages(cli, str(write(json.dumps(config), "config.json"))) == []
    del config["n_layer"], config["vocab_size"]  # GPT2Config's defaults: 12 and 50,257
    assert messages(cli, str(write(json.dumps(config), "config.json"))) == []
    config.update(n_head=7)
    assert messages(cli, str(write(json.dumps(config), "config.json")))[0][0] == "n_head"
    # Dots1Config has no default expert count nor top-k: they are required.
    dots = json.loads((FIXTURES / "hf" / "dots.llm1.base.json").read_text())
    del dots["n_routed_experts"], dots["num_experts_per_tok"]
    found = messages(cli, str(write(json.dumps(dots), "config.json")))
    assert [field.split(" or ")[0] for field, _ in found] == [
        "n_routed_experts",
        "num_experts_per_tok",
    ]
    assert all(message.startswith("required key is missing") for _, message in found)


def test_nanogpt_problems_come_together(cli: Invoke, write: Any) -> None:
    config = {"vocab_size": 65, "n_layer": True, "n_head": 6, "n_embd": 384, "bias": "no"}
    config |= {"dropout": 1.5, "n_emb": 1}
    found = findings(cli, str(write(json.dumps(config, indent=0), "nano.json")))
    assert [(f["field"], f["line"], f["message"]) for f in found] == [
        ("block_size", 2, "required (Longest sequence (rows of a learned position table).)"),
        ("n_layer", 3, "Input should be a valid integer (got True)"),
        ("bias", 6, "Input should be a valid boolean (got 'no')"),
        ("dropout", 7, "a probability in [0, 1) (got 1.5)"),
        ("n_emb", 8, "unknown key in a nanoGPT-style config; did you mean 'n_embd'?"),
    ]


# --- Budgets -------------------------------------------------------------------------------


def test_max_params(cli: Invoke) -> None:
    # transformers' count of GPT-2 small: 124,439,808 (tests/golden/hf_reference.json)
    assert messages(cli, str(GPT2_SMALL), "--max-params", "124439808") == []
    assert messages(cli, str(GPT2_SMALL), "--max-params", "125M") == []
    assert messages(cli, str(GPT2_SMALL), "--max-params", "30M") == [
        ("--max-params", "124,439,808 parameters exceed the limit of 30,000,000")
    ]
    assert messages(cli, str(GPT2_SMALL), "--max-params", "0.1B") == [
        ("--max-params", "124,439,808 parameters exceed the limit of 100,000,000")
    ]


def test_max_weight_bytes_si_and_binary(cli: Invoke) -> None:
    # bf16: 2 bytes x 124,439,808 = 248,879,616 bytes
    assert messages(cli, str(GPT2_SMALL), "--max-weight-bytes", "248879616B") == []
    assert messages(cli, str(GPT2_SMALL), "--max-weight-bytes", "248879615B") == [
        (
            "--max-weight-bytes",
            "bf16 weights take 248,879,616 bytes (248.88 MB, 237.35 MiB), over the limit of "
            "248,879,615 bytes (248.88 MB, 237.35 MiB)",
        )
    ]
    assert messages(cli, str(GPT2_SMALL), "--max-weight-bytes", "1GiB", "--dtype", "fp32") == []
    # 237.35 MiB is over 200 MiB but 248.88 MB is under 250 MB
    assert messages(cli, str(GPT2_SMALL), "--max-weight-bytes", "250MB") == []
    assert messages(cli, str(GPT2_SMALL), "--max-weight-bytes", "200MiB") == [
        (
            "--max-weight-bytes",
            "bf16 weights take 248,879,616 bytes (248.88 MB, 237.35 MiB), over the limit of "
            "209,715,200 bytes (209.72 MB, 200.00 MiB)",
        )
    ]
    # int4 packs two weights per byte: 62,219,904 bytes
    assert (
        messages(cli, str(GPT2_SMALL), "--max-weight-bytes", "62219904B", "--dtype", "int4") == []
    )


def test_budget_in_the_file_and_on_the_command_line(cli: Invoke, write: Any) -> None:
    text = GPT2_SMALL.read_text() + "budget:\n  max_params: 100M\n  max_weight_bytes: 1GB\n"
    path = write(text)
    assert findings(cli, str(path), "--max-params", "50M") == [
        {
            "field": "budget.max_params",
            "line": 19,
            "message": "124,439,808 parameters exceed the limit of 100,000,000",
        },
        {
            "field": "--max-params",
            "line": None,
            "message": "124,439,808 parameters exceed the limit of 50,000,000",
        },
    ]


@pytest.mark.parametrize(
    ("budget", "field", "message"),
    [
        (
            "max_params: 30X",
            "budget.max_params",
            "'30X' is not a count: unknown unit 'X' (units: k, M, B, T, Ki, Mi, Gi, Ti)",
        ),
        ('max_params: "1.5"', "budget.max_params", "'1.5' is 1.5: not a whole number"),
        (
            "max_params: 0",
            "budget.max_params",
            "Input should be greater than or equal to 1 (got 0)",
        ),
        ("max_params: true", "budget.max_params", "Input should be a valid integer (got True)"),
        (
            "max_weight_bytes: 1GiBs",
            "budget.max_weight_bytes",
            "'1GiBs' is not a byte size: unknown unit 'GiBs' "
            "(units: B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)",
        ),
        (
            "max_weight_bytes: 1.5",
            "budget.max_weight_bytes",
            "Input should be a valid integer (got 1.5)",
        ),
        (
            "dtype: fp7",
            "budget.dtype",
            "unknown dtype or format 'fp7' (did you mean 'fp8'?); "
            "expected one of fp32, fp16, bf16, fp8, int8, int4, nf4, fp4, llm-int8, gptq-int4, "
            "gptq-int8, awq-int4, fp8-tensor, fp8-channel, fp8-block, mxfp4, nvfp4, w4a16, "
            "w8a16, w8a8, gguf",
        ),
        ("max_param: 30M", "budget.max_param", "unknown key; did you mean 'max_params'?"),
    ],
)
def test_malformed_budget_is_a_finding_with_its_line(
    cli: Invoke, write: Any, budget: str, field: str, message: str
) -> None:
    path = write(GPT2_SMALL.read_text() + f"budget:\n  {budget}\n")
    assert findings(cli, str(path)) == [{"field": field, "line": 19, "message": message}]


def test_a_budget_format_that_cannot_store_the_model_is_a_finding(cli: Invoke, write: Any) -> None:
    """AWQ needs widths divisible by its group size: a width-200 model cannot be stored so. The
    file fails on its own finding, with every figure of the report still printed, and a file
    beside it is reported as usual."""
    text = "d_model: 200\nn_layers: 2\nn_heads: 4\nvocab_size: 1000\ncontext_length: 128\n"
    bad = write(text + "budget: {max_weight_bytes: 1GiB, dtype: awq-int4}\n")
    [(field, message)] = messages(cli, str(bad))
    assert field == "budget.dtype"
    assert message.startswith("cannot size the weights as awq-int4:g128: AWQ needs out divisible")
    result = cli("check", str(bad), str(GPT2_SMALL))
    assert result.exit_code == 1
    assert "model (costcalc), 1,191,200 parameters" in result.stdout
    assert "ok    " in result.stdout and "2 files, 1 failed" in result.stdout
    listed = cli(
        "check",
        str(GPT2_SMALL),
        "--max-weight-bytes",
        "1GiB",
        "--dtype",
        "gguf:Q4_K_M,+nosuch",
        "--format",
        "json",
    )
    [record] = json.loads(listed.stdout)
    assert [f["field"] for f in record["findings"]] == ["--dtype"]
    assert "'nosuch' names no matrix of this model" in record["findings"][0]["message"]
    assert record["parameters"] == 124_439_808


@pytest.mark.parametrize("where", ["--dtype", "budget"])
def test_a_dtype_given_without_a_byte_limit_still_applies_to_the_model(
    cli: Invoke, write: Any, where: str
) -> None:
    """No --max-weight-bytes, so nothing is measured in the dtype; a selection naming no tensor
    of the model still fails, never passes unread."""
    if where == "--dtype":
        result = cli("check", str(GPT2_SMALL), "--dtype", "gguf:Q4_K_M,+nosuch", "-f", "json")
    else:
        path = write(GPT2_SMALL.read_text() + "budget: {dtype: 'gguf:Q4_K_M,+nosuch'}\n")
        result = cli("check", str(path), "-f", "json")
    assert result.exit_code == 1
    [record] = json.loads(result.stdout)
    [finding] = record["findings"]
    assert finding["field"] == ("--dtype" if where == "--dtype" else "budget.dtype")
    assert "'nosuch' names no matrix of this model" in finding["message"]
    good = cli("check", str(GPT2_SMALL), "--dtype", "gguf:Q4_K_M")
    assert good.exit_code == 0, good.stdout


def test_budget_must_be_a_mapping(cli: Invoke, write: Any) -> None:
    path = write(GPT2_SMALL.read_text() + "budget: 30M\n")
    assert messages(cli, str(path)) == [
        ("budget", "Input should be a valid dictionary or instance of Budget (got '30M')")
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--max-params", "30X"],
            "--max-params: '30X' is not a count: unknown unit 'X' "
            "(units: k, M, B, T, Ki, Mi, Gi, Ti)",
        ),
        (
            ["--max-weight-bytes", "lots"],
            "--max-weight-bytes: 'lots' is not a byte size "
            "(expected e.g. 24GiB, 80GB, 512MiB or 1.5e9B)",
        ),
        (
            ["--dtype", "fp7"],
            "unknown dtype or format 'fp7' (did you mean 'fp8'?); "
            "expected one of fp32, fp16, bf16, fp8, int8, int4, nf4, fp4, llm-int8, gptq-int4, "
            "gptq-int8, awq-int4, fp8-tensor, fp8-channel, fp8-block, mxfp4, nvfp4, w4a16, "
            "w8a16, w8a8, gguf",
        ),
        (["--max-params", "0"], "--max-params: '0' is not a positive count"),
        (["--max-weight-bytes", "0GiB"], "--max-weight-bytes: '0GiB' is not a positive byte size"),
    ],
)
def test_malformed_limits_are_usage_errors(cli: Invoke, args: list[str], message: str) -> None:
    result = cli("check", str(GPT2_SMALL), *args)
    assert result.exit_code == 2
    assert result.stderr == f"error: {message}\n"
    assert result.stdout == ""


def test_no_paths_is_a_usage_error(cli: Invoke) -> None:
    result = cli("check")
    assert result.exit_code == 2
    assert "Missing argument" in result.stderr


# --- Finding files -------------------------------------------------------------------------


def test_directories_globs_and_duplicates(cli: Invoke, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / ".hidden").mkdir()
    for path in ("a.yaml", "sub/b.yml", ".hidden/d.yaml", ".e.yaml"):
        (tmp_path / path).write_text(GPT2_SMALL.read_text())
    (tmp_path / "sub" / "c.json").write_text(json.dumps(yaml.safe_load(GPT2_SMALL.read_text())))
    (tmp_path / "notes.txt").write_text("not a config")
    result = cli("check", str(tmp_path), str(tmp_path / "sub" / "*.y*ml"), "-f", "json")
    assert result.exit_code == 0
    assert [r["path"] for r in json.loads(result.stdout)] == [
        str(tmp_path / "a.yaml"),
        str(tmp_path / "sub" / "b.yml"),
        str(tmp_path / "sub" / "c.json"),
    ]


def test_glob_matching_nothing_is_a_finding(cli: Invoke, tmp_path: Path) -> None:
    pattern = str(tmp_path / "*.yaml")
    result = cli("check", pattern, str(GPT2_SMALL), "-f", "json")
    assert result.exit_code == 1
    records = json.loads(result.stdout)
    assert records[0] == {
        "path": pattern,
        "ok": False,
        "format": None,
        "name": None,
        "parameters": None,
        "skipped": None,
        "findings": [{"field": None, "line": None, "message": "no file matches this pattern"}],
        "warnings": [],
    }
    assert records[1]["ok"]


# --- Output --------------------------------------------------------------------------------


def test_json_record_of_a_passing_file(cli: Invoke) -> None:
    result = cli("check", str(GPT2_SMALL), "-f", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == [
        {
            "path": str(GPT2_SMALL),
            "ok": True,
            "format": "costcalc",
            "name": "gpt2-small",
            "parameters": 124_439_808,  # transformers' count (tests/golden/hf_reference.json)
            "skipped": None,
            "findings": [],
            "warnings": [],
        }
    ]


def test_table_report(cli: Invoke, write: Any) -> None:
    bad = write({**LRN_GPT, "n_heads": 7})
    result = cli("check", str(GPT2_SMALL), str(bad))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"ok    {GPT2_SMALL}  gpt2-small (costcalc), 124,439,808 parameters",
        f"FAIL  {bad}",
        "      line 5    n_heads: d_model 256 does not split into 7 equal heads (256 % 7 = 4); "
        "nearest valid head counts: 4, 8; or give head_dim explicitly",
        "2 files, 1 failed",
    ]


def test_github_annotations_escape_their_values(cli: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "a,b:c%.yaml"
    path.write_text("d_model: 1\nd_model: 2\n")
    result = cli("check", str(path), "-f", "github")
    assert result.exit_code == 1
    escaped = str(path).replace("%", "%25").replace(":", "%3A").replace(",", "%2C")
    assert result.stdout.splitlines() == [
        f"::error file={escaped},line=2,col=1,title=costcalc check::duplicate key 'd_model' "
        "(first on "
        "line 1)",
        "1 file, 1 failed",
    ]


def test_github_format_of_passing_files_is_only_the_summary(cli: Invoke) -> None:
    result = cli("check", str(GPT2_SMALL), "-f", "github")
    assert result.exit_code == 0
    assert result.stdout == "1 file, 0 failed\n"


# --- Schema --------------------------------------------------------------------------------


def test_schema_describes_the_config_format(cli: Invoke) -> None:
    result = cli("schema")
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    assert schema["additionalProperties"] is False
    assert sorted(schema["required"]) == sorted(["vocab_size", "d_model", "context_length"])
    assert schema["anyOf"] == [{"required": ["n_layers"]}, {"required": ["layers"]}]
    preset = yaml.safe_load(GPT2_SMALL.read_text())
    assert set(preset) <= set(schema["properties"])
    assert schema["properties"]["d_model"]["type"] == "integer"
    assert "$schema" in schema["properties"]
    budget = schema["definitions"]["Budget"]
    assert set(budget["properties"]) == {"max_params", "max_weight_bytes", "dtype"}
    dtypes, formats = budget["properties"]["dtype"]["anyOf"]
    assert dtypes["enum"] == ["fp32", "fp16", "bf16", "fp8", "int8", "int4"]
    assert re.fullmatch(formats["pattern"].split("|^gguf")[0].removeprefix("^"), "gptq-int4:g128")


# --- Ecosystem -----------------------------------------------------------------------------


def test_pre_commit_hook_checks_the_models_among_yaml_and_json() -> None:
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "costcalc-check"
    assert hook["entry"] == "costcalc check --models-only"
    assert hook["types_or"] == ["yaml", "json"]
    assert hook["require_serial"] is True  # one run, one summary
    assert f"id: {hook['id']}" in (ROOT / "docs" / "ci.md").read_text()


@pytest.mark.parametrize("command", ["check", "schema"])
def test_commands_have_help_and_docs(cli: Invoke, command: str) -> None:
    result = cli(command, "--help")
    assert result.exit_code == 0
    docs = (ROOT / "docs" / "check.md").read_text() + (ROOT / "docs" / "ci.md").read_text()
    assert f"costcalc {command}" in docs
    if command == "check":
        for option in ("--max-params", "--max-weight-bytes", "--dtype", "--length", "--format"):
            assert option in result.stdout
            assert option in docs
