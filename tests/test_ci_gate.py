"""`costcalc check` as a CI gate: only models (--models-only), a model inside a larger file
(--key), GitHub annotations and the job summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costcalc import __version__
from tests.conftest import FIXTURES, ROOT, Invoke

TINY = "vocab_size: 512\ncontext_length: 256\nd_model: 128\nn_layers: 2\nn_heads: 4\n"


def write(top: Path, name: str, text: str) -> str:
    path = top / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- Only models -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("package.json", '{"name": "x", "version": "1.0.0"}', "no model_type, architectures"),
        ("tsconfig.json", '{\n  // JSONC\n  "compilerOptions": {},\n}', "not plain JSON/YAML"),
        (".pre-commit-config.yaml", "repos: []\n", "no model_type, architectures"),
        ("ci.yml", "on:\n  push: {}\njobs: {}\n", "no model_type, architectures"),
        ("generation_config.json", '{"bos_token_id": 1}', "written beside one by save_pretrained"),
        ("tokenizer_config.json", '{"model_type": "gpt2"}', "written beside one"),
        ("added_tokens.json", '{"<pad>": 5}', "written beside one"),
        ("hydra.yaml", "defaults: [_self_]\nmodel:\n  d_model: 128\n", "no model_type"),
        ("k8s.yaml", "a: 1\n---\nb: 2\n", "not plain JSON/YAML"),
        ("tagged.yaml", "x: !reference [a, b]\n", "no model_type"),
        ("list.json", "[1, 2]", "no mapping of keys at the top"),
    ],
)
def test_non_model_files_are_skipped_with_a_note(
    cli: Invoke, tmp_path: Path, name: str, text: str, reason: str
) -> None:
    path = write(tmp_path, name, text)
    result = cli("check", "--models-only", path)
    assert result.exit_code == 0, result.stdout
    [line, total] = result.stdout.splitlines()
    assert line.startswith(f"skip  {path}  not a model config (")
    assert reason in line
    assert total == "1 file, 0 failed, 1 skipped"
    # Without --models-only every file is a config: {"model_type": "gpt2"} is GPT2Config's
    # defaults, as transformers builds it; the others fail.
    assert cli("check", path).exit_code == (0 if text == '{"model_type": "gpt2"}' else 1)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("config.json", json.dumps({"architectures": ["GPT2LMHeadModel"], "n_head": 7})),
        ("gpt.json", '{"model_type": "gpt2", "n_layer": true}'),
        ("nano.json", '{"n_embd": 10, "n_layer": 1, "n_head": 3}'),
        ("mine.yaml", "d_model: 128\nn_heads: 3\n"),
        ("marked.yaml", "# yaml-language-server: $schema=../costcalc.schema.json\nfoo: 1\n"),
        ("marked.json", '{"$schema": "https://example.org/costcalc.schema.json"}'),
        ("broken.yaml", "d_model: [128\n"),
        ("broken.json", '{"model_type": "gpt2",}'),
    ],
)
def test_model_configs_are_checked(cli: Invoke, tmp_path: Path, name: str, text: str) -> None:
    path = write(tmp_path, name, text)
    result = cli("check", "--models-only", path)
    assert result.exit_code == 1
    assert result.stdout.startswith(f"FAIL  {path}")


def test_models_only_in_a_tree(cli: Invoke, tmp_path: Path) -> None:
    write(tmp_path, "m/config.json", (FIXTURES / "hf" / "gpt2.json").read_text())
    write(tmp_path, "m/generation_config.json", '{"bos_token_id": 50256}')
    write(tmp_path, "tiny.yaml", TINY)
    write(tmp_path, "package.json", "{}")
    result = cli("check", "--models-only", str(tmp_path), "-f", "json")
    assert result.exit_code == 0
    records = {
        Path(r["path"]).relative_to(tmp_path).as_posix(): r for r in json.loads(result.stdout)
    }
    assert {name: r["skipped"] is None for name, r in records.items()} == {
        "m/config.json": True,
        "m/generation_config.json": False,
        "package.json": False,
        "tiny.yaml": True,
    }
    assert records["m/config.json"]["parameters"] == 124_439_808


# --- A model inside a larger file ------------------------------------------------------------

HYDRA = (
    "defaults:\n  - _self_\nmodel:\n  _target_: lab.GPT\n  vocab_size: 512\n"
    "  context_length: ${data.seq_len}\n  d_model: 128\n  n_layers: 2\n  n_heads: 3\n"
    "data:\n  seq_len: 256\n"
)


def test_key_reads_a_nested_model_with_the_file_lines(cli: Invoke, tmp_path: Path) -> None:
    path = write(tmp_path, "train.yaml", HYDRA)
    result = cli("check", path, "--key", "model", "-f", "json")
    [record] = json.loads(result.stdout)
    assert [(f["field"], f["line"], f["message"]) for f in record["findings"]] == [
        (
            "context_length",
            6,
            "${data.seq_len} is an unresolved interpolation; costcalc reads values as written: "
            "resolve the config first (OmegaConf.to_yaml(cfg, resolve=True)) or write the value",
        ),
        (
            "n_heads",
            9,
            "d_model 128 does not split into 3 equal heads (128 % 3 = 2); nearest valid head "
            "counts: 2, 4; or give head_dim explicitly",
        ),
    ]
    fixed = HYDRA.replace("${data.seq_len}", "256").replace("n_heads: 3", "n_heads: 4")
    result = cli("check", write(tmp_path, "fixed.yaml", fixed), "--key", "model")
    assert result.exit_code == 0, result.stdout


def test_a_missing_key_points_at_the_mapping_that_lacks_it(cli: Invoke, tmp_path: Path) -> None:
    text = "seed: 1\nmodel:\n  d_model: 128\n  n_layers: 2\n  n_heads: 4\n"
    path = write(tmp_path, "train.yaml", text)
    result = cli("check", path, "--key", "model", "-f", "json")
    [record] = json.loads(result.stdout)
    assert {(f["field"], f["line"]) for f in record["findings"]} == {
        ("vocab_size", 2),
        ("context_length", 2),
    }
    path = write(tmp_path, "top.yaml", "# a model\nd_model: 128\nn_layers: 2\nn_heads: 4\n")
    [record] = json.loads(cli("check", path, "-f", "json").stdout)
    assert {(f["field"], f["line"]) for f in record["findings"]} == {
        ("vocab_size", 2),
        ("context_length", 2),
    }


def test_key_lightning_init_args(cli: Invoke, tmp_path: Path) -> None:
    nested = "".join(f"      {line}\n" for line in TINY.splitlines())
    text = f"model:\n  class_path: lab.GPT\n  init_args:\n{nested}"
    path = write(tmp_path, "lightning.yaml", text)
    result = cli("check", path, "--key", "model.init_args")
    assert result.exit_code == 0, result.stdout


@pytest.mark.parametrize(
    ("text", "models_only", "outcome"),
    [
        ("seed: 1\n", False, "FAIL: no key 'model' (--key)"),
        ("model: 5\n", False, "FAIL: 'model' holds no mapping of keys (--key)"),
        ("seed: 1\n", True, "skip: not a model config (no 'model' key)"),
    ],
)
def test_key_not_there(
    cli: Invoke, tmp_path: Path, text: str, models_only: bool, outcome: str
) -> None:
    path = write(tmp_path, "train.yaml", text)
    args = ["--models-only"] if models_only else []
    [record] = json.loads(cli("check", path, "--key", "model", *args, "-f", "json").stdout)
    verdict = f"skip: {record['skipped']}" if record["skipped"] else "FAIL: "
    verdict += "".join(f["message"] for f in record["findings"])
    assert verdict == outcome


def test_a_malformed_key_is_a_usage_error(cli: Invoke, tmp_path: Path) -> None:
    result = cli("check", write(tmp_path, "a.yaml", TINY), "--key", "model..net")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --key 'model..net' is not a path of keys (like model or model.init_args)\n"
    )


# --- GitHub annotations and the job summary --------------------------------------------------


def test_annotations_carry_the_column_where_known(cli: Invoke, tmp_path: Path) -> None:
    path = write(tmp_path, "a.json", '{\n  "d_model": 128,,\n}')
    result = cli("check", path, "-f", "github")
    escaped = path.replace(":", "%3A").replace(",", "%2C")
    assert result.stdout.splitlines()[0] == (
        f"::error file={escaped},line=2,col=18,title=costcalc check::malformed JSON: Expecting "
        "property name enclosed in double quotes (column 18)"
    )


def bad_files(top: Path, count: int) -> list[str]:
    return [write(top, f"bad{i:02d}.yaml", "d_model: 1\nd_model: 2\n") for i in range(count)]


def test_ten_findings_are_ten_annotations(cli: Invoke, tmp_path: Path) -> None:
    lines = cli("check", *bad_files(tmp_path, 10), "-f", "github").stdout.splitlines()
    assert [line.startswith("::error file=") for line in lines] == [True] * 10 + [False]
    assert lines[-1] == "10 files, 10 failed"


def test_eleven_findings_are_nine_annotations_and_a_count(cli: Invoke, tmp_path: Path) -> None:
    paths = bad_files(tmp_path, 11)
    lines = cli("check", *paths, "-f", "github").stdout.splitlines()
    assert all(line.startswith("::error file=") for line in lines[:9])
    assert lines[9] == (
        "::error title=costcalc check::2 more findings in 2 files, listed in the log below"
    )
    assert lines[10:] == [
        f"{paths[9]}:2:1: duplicate key 'd_model' (first on line 1)",
        f"{paths[10]}:2:1: duplicate key 'd_model' (first on line 1)",
        "11 files, 11 failed",
    ]


def test_job_summary_is_appended(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    good = write(tmp_path, "good.yaml", TINY)
    bad = write(tmp_path, "bad|name.yaml", TINY.replace("n_heads: 4", "n_heads: 3"))
    skipped = write(tmp_path, "package.json", "{}")
    result = cli("check", "--models-only", good, bad, skipped, "-f", "github")
    assert result.exit_code == 1
    assert summary.read_text(encoding="utf-8").splitlines() == [
        "# earlier step",
        "## costcalc check",
        "",
        "**3 files, 1 failed, 1 skipped**",
        "",
        "| file | line | field | finding |",
        "|---|---|---|---|",
        f"| {bad.replace('|', chr(92) + '|')} | 5 | n_heads | d_model 128 does not split into 3 "
        "equal heads (128 % 3 = 2); nearest valid head counts: 2, 4; or give head_dim explicitly |",
        "",
        "| passed | model | parameters |",
        "|---|---|---:|",
        f"| {good} | good (costcalc) | 495,104 |",
        "",
    ]


def test_no_summary_outside_github(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert cli("check", write(tmp_path, "a.yaml", TINY), "-f", "github").exit_code == 0
    assert list(tmp_path.iterdir()) == [tmp_path / "a.yaml"]


# --- Docs ------------------------------------------------------------------------------------


def test_ci_docs_pin_a_commit_of_the_documented_version(cli: Invoke) -> None:
    docs = (ROOT / "docs" / "ci.md").read_text()
    assert cli("--version").stdout == f"costcalc {__version__}\n"
    assert f"costcalc {__version__}" in docs
    assert "rev: v" not in docs  # no tag is published: pin a commit
    assert "--models-only" in docs and "--key" in docs and "GITHUB_STEP_SUMMARY" in docs
