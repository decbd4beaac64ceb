"""`costcalc check` over a repository-style tree of good and bad configs, in one run.

tests/fixtures/repo/ holds configs in all three formats (costcalc YAML/JSON, nanoGPT-style JSON,
Hugging Face config.json); every finding of every file is asserted exactly.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, Invoke

REPO = FIXTURES / "repo"

# (path under the tree, format, name, parameters, [(field, line, message), ...])
EXPECTED = [
    (
        "configs/bad/broken.yaml",
        None,
        None,
        None,
        [(None, 3, "malformed YAML: did not find expected ',' or ']' (column 9)")],
    ),
    (
        "configs/bad/budget-typo.yaml",
        None,
        None,
        None,
        [
            (
                "budget.max_params",
                7,
                "'30X' is not a count: unknown unit 'X' (units: k, M, B, T, Ki, Mi, Gi, Ti)",
            ),
            (
                "budget.dtype",
                9,
                "unknown dtype or format 'fp7' (did you mean 'fp8'?); expected one of fp32, fp16, "
                "bf16, fp8, int8, int4, nf4, fp4, llm-int8, gptq-int4, gptq-int8, awq-int4, "
                "fp8-tensor, fp8-channel, fp8-block, mxfp4, nvfp4, w4a16, w8a16, w8a8, gguf",
            ),
        ],
    ),
    (
        "configs/bad/duplicate.json",
        None,
        None,
        None,
        [(None, 7, "duplicate key 'd_model' (first on line 4)")],
    ),
    (
        "configs/bad/heads-7.yaml",
        None,
        None,
        None,
        [
            (  # seed 000: D=256, H=7 -> invalid equal split
                "n_heads",
                7,
                "d_model 256 does not split into 7 equal heads (256 % 7 = 4); nearest valid head "
                "counts: 4, 8; or give head_dim explicitly",
            )
        ],
    ),
    (
        "configs/bad/nanogpt-7-heads.json",
        None,
        None,
        None,
        [
            (
                "n_head",
                5,
                "n_embd 768 does not split into 7 equal heads (768 % 7 = 5); nearest valid head "
                "counts: 6, 8; or give head_dim explicitly",
            ),
            ("dropuot", 8, "unknown key in a nanoGPT-style config; did you mean 'dropout'?"),
        ],
    ),
    (
        "configs/bad/over-budget.yaml",
        "costcalc",
        "book-gpt-fairytale",
        27_579_392,  # seed 004, problem 3
        [
            ("budget.max_params", 9, "27,579,392 parameters exceed the limit of 25,000,000"),
            (
                "budget.max_weight_bytes",
                10,
                "fp32 weights take 110,317,568 bytes (110.32 MB, 105.21 MiB), over the limit of "
                "100,000,000 bytes (100.00 MB, 95.37 MiB)",
            ),
        ],
    ),
    (
        "configs/bad/rotary.yaml",
        None,
        None,
        None,
        [
            ("head_dim", 6, "rotary positions rotate pairs of dimensions; 75 is odd"),
            ("position_offset", 9, "an offset only applies to a learned or sinusoidal table"),
        ],
    ),
    (
        "configs/bad/strict-types.json",
        None,
        None,
        None,
        [
            ("d_model", 4, "Input should be a valid integer (got 768.0)"),
            ("n_layers", 5, "Input should be a valid integer (got True)"),
            ("n_heads", 6, "Input should be a valid integer (got 12.5)"),
        ],
    ),
    (
        "configs/bad/typos.yaml",
        None,
        None,
        None,
        [
            ("n_layers", 1, "required (Number of transformer blocks L.)"),  # the top mapping
            ("n_layer", 4, "unknown key; did you mean 'n_layers'?"),
            (
                "n_kv_heads",
                6,
                "12 query heads cannot be grouped over 5 key/value heads "
                "(n_heads must be a multiple of n_kv_heads)",
            ),
            ("tie_embedings", 7, "unknown key; did you mean 'tie_embeddings'?"),
        ],
    ),
    (
        "configs/bad/hf-gpt2/config.json",
        None,
        None,
        None,
        [
            (
                "n_head",
                15,
                "n_embd 768 does not split into 7 equal heads (768 % 7 = 5); nearest valid head "
                "counts: 6, 8; or give head_dim explicitly",
            )
        ],
    ),
    # seed 004: book-gpt-small, 4,273,664 parameters (as a nanoGPT-style GPTConfig)
    ("configs/good/book-gpt-small.json", "nanogpt", "book-gpt-small", 4_273_664, []),
    # transformers' count of GPT-2 small (tests/golden/hf_reference.json)
    ("configs/good/gpt2-small.yaml", "costcalc", "gpt2-small", 124_439_808, []),
    ("configs/good/hf-gpt2/config.json", "huggingface", "hf-gpt2", 124_439_808, []),
    (  # transformers' count of GPT-2 medium (tests/golden/hf_reference.json)
        "experiments/gpt2-medium.yml",
        "costcalc",
        "gpt2-medium",
        354_823_168,
        [("--max-params", None, "354,823,168 parameters exceed the limit of 200,000,000")],
    ),
]


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


@pytest.mark.usefixtures("in_repo")
def test_the_whole_tree_in_one_run(cli: Invoke) -> None:
    result = cli("check", "configs", "experiments/*.yml", "--max-params", "200M", "-f", "json")
    assert result.exit_code == 1
    records = json.loads(result.stdout)
    expected = [
        {
            "path": path,
            "ok": not findings,
            "format": fmt,
            "name": name,
            "parameters": parameters,
            "skipped": None,
            "findings": [
                {"field": field, "line": line, "message": message}
                for field, line, message in findings
            ],
            "warnings": [],
        }
        for path, fmt, name, parameters, findings in EXPECTED
    ]
    assert records == expected


@pytest.mark.usefixtures("in_repo")
def test_table_report_groups_findings_by_file_and_sums_up(cli: Invoke) -> None:
    result = cli("check", "configs", "experiments/*.yml", "--max-params", "200M")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[-1] == "14 files, 11 failed"
    heads = lines.index("FAIL  configs/bad/heads-7.yaml")
    assert lines[heads + 1].startswith(
        "      line 7    n_heads: d_model 256 does not split into 7 equal heads"
    )
    assert "ok    configs/good/gpt2-small.yaml  gpt2-small (costcalc), 124,439,808 parameters" in (
        lines
    )
    assert (
        "FAIL  configs/bad/over-budget.yaml  book-gpt-fairytale (costcalc), 27,579,392 parameters"
        in lines
    )
    assert not any(".drafts" in line or "README" in line for line in lines)


@pytest.mark.usefixtures("in_repo")
def test_github_annotations_stop_at_ten(cli: Invoke) -> None:
    result = cli("check", "configs", "experiments/*.yml", "--max-params", "200M", "-f", "github")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    findings = [(item[0], finding) for item in EXPECTED for finding in item[4]]
    assert len(findings) == 20
    annotations = [line for line in lines if line.startswith("::error ")]
    assert len(annotations) == 10  # GitHub shows no more of a step
    assert annotations[0] == (
        "::error file=configs/bad/broken.yaml,line=3,col=9,title=costcalc check::malformed YAML: "
        "did not find expected ',' or ']' (column 9)"
    )
    assert any(
        line.startswith("::error file=configs/bad/heads-7.yaml,line=7,title=costcalc check::")
        for line in annotations
    )
    assert annotations[-1] == (
        "::error title=costcalc check::11 more findings in 5 files, listed in the log below"
    )
    rest = lines[lines.index(annotations[-1]) + 1 : -1]
    assert len(rest) == 11
    assert rest[-1] == (
        "experiments/gpt2-medium.yml: --max-params: 354,823,168 parameters exceed the limit of "
        "200,000,000"
    )
    assert lines[-1] == "14 files, 11 failed"


@pytest.mark.usefixtures("in_repo")
def test_good_configs_pass(cli: Invoke) -> None:
    result = cli("check", "configs/good")
    assert result.exit_code == 0, result.stdout
    assert result.stdout.splitlines()[-1] == "3 files, 0 failed"
