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
        # a data config: vocab_size and context_length, but no d_model
        ("data.yaml", "vocab_size: 50257\ncontext_length: 1024\nbatch_size: 8\n", "no model_type"),
        ("broken-data.yaml", "vocab_size: [50257\n", "not plain JSON/YAML"),
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
        ("two-keys.yaml", "d_model: 128\nvocab_size: 512\n"),
        ("remote.json", '{"model_type": "my_remote_decoder", "hidden_size": 64}'),
    ],
)
def test_model_configs_are_checked(cli: Invoke, tmp_path: Path, name: str, text: str) -> None:
    path = write(tmp_path, name, text)
    result = cli("check", "--models-only", path)
    assert result.exit_code == 1
    assert result.stdout.startswith(f"FAIL  {path}")


@pytest.mark.parametrize(
    ("model_type", "kind"),
    [("bert", "an encoder"), ("roberta", "an encoder"), ("t5", "an encoder-decoder"), ("vit", "")],
)
def test_encoders_are_skipped_with_a_note(
    cli: Invoke, tmp_path: Path, model_type: str, kind: str
) -> None:
    """Types transformers 5.24 builds as no decoder language model (a masked-LM class, or no
    causal-LM one) are no config costcalc counts."""
    config = {"architectures": ["BertForMaskedLM"], "model_type": model_type, "hidden_size": 768}
    path = write(tmp_path, "config.json", json.dumps(config))
    result = cli("check", "--models-only", path)
    assert result.exit_code == 0, result.stdout
    [line, total] = result.stdout.splitlines()
    assert line.startswith(f"skip  {path}  not a decoder config (model_type {model_type}: ")
    assert total == "1 file, 0 failed, 1 skipped"
    assert cli("check", path).exit_code == 1  # without --models-only it is checked, and refused


def test_a_type_costcalc_reads_is_never_skipped_as_an_encoder(tmp_path: Path) -> None:
    """Text decoders transformers builds only inside their wrapper (qwen2_vl_text, step3p5)
    have no causal-LM class of their own, yet costcalc reads them: they are checked."""
    from costcalc.formats.families import LOCATED_IN, MODULE_OF
    from costcalc.selection import skip_reason
    from costcalc.transformers_types import encoders

    assert "bert" in encoders() and "gpt2" not in encoders() and "llama" not in encoders()
    read = sorted(encoders() & {*MODULE_OF, *LOCATED_IN})
    assert "qwen2_vl_text" in read
    for model_type in read:
        path = write(tmp_path, "config.json", json.dumps({"model_type": model_type}))
        assert skip_reason(path) is None, model_type


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


GROUP = "_target_: lab.GPT\nn_embd: 768\nn_head: 7\nn_layer: 2\nblock_size: 64\nvocab_size: 100\n"
"""A Hydra config-group file (conf/model/gpt.yaml): the model, with an instantiation key."""


@pytest.mark.parametrize(
    "text",
    [
        GROUP,
        GROUP.replace("_target_: lab.GPT\n", "_target_: lab.GPT\n_recursive_: false\n"),
        "_target_: lab.GPT\n_convert_: all\n_partial_: true\n_args_: [1]\n" + GROUP[17:],
    ],
)
def test_a_hydra_config_group_file_is_checked(cli: Invoke, tmp_path: Path, text: str) -> None:
    path = write(tmp_path, "conf/model/gpt.yaml", text)
    result = cli("check", "--models-only", path, "-f", "json")
    assert result.exit_code == 1
    [record] = json.loads(result.stdout)
    [finding] = record["findings"]
    assert (finding["field"], finding["line"]) == (
        "n_head",
        text.splitlines().index("n_head: 7") + 1,
    )
    assert finding["message"].startswith("n_embd 768 does not split into 7 equal heads")
    fixed = write(tmp_path, "conf/model/good.yaml", text.replace("n_head: 7", "n_head: 8"))
    assert cli("check", "--models-only", fixed).exit_code == 0


def test_instantiation_keys_are_dropped_at_any_level(cli: Invoke, tmp_path: Path) -> None:
    text = (
        "model:\n  _target_: lab.Lit\n  net:\n    _target_: lab.GPT\n    _partial_: true\n"
        "    d_model: 128\n    n_layers: 2\n    n_heads: 4\n    vocab_size: 512\n"
        "    context_length: 256\n    layers:\n      - {count: 2, _target_: lab.Block}\n"
    )
    path = write(tmp_path, "train.yaml", text)
    result = cli("check", path, "--key", "model.net")
    assert result.exit_code == 0, result.stdout
    # anything else starting and ending with _ is no instantiation key: still a finding
    path = write(tmp_path, "other.yaml", text.replace("_partial_", "_size_"))
    assert "_size_" in cli("check", path, "--key", "model.net").stdout


def test_the_documented_two_hook_recipe_checks_every_model(cli: Invoke, tmp_path: Path) -> None:
    """docs/ci.md's Hydra hooks, applied to a Hydra tree as pre-commit applies them (``files``
    and ``exclude`` searched in each path; the hook's types): every model is checked once, and
    the config-group file with 768 % 7 heads fails."""
    import re

    import yaml

    docs = (ROOT / "docs" / "ci.md").read_text()
    section = docs[docs.index("### Hydra and Lightning configs") :]
    block = section[section.index("```yaml\n") + 8 : section.index("```\n", 8)]
    hooks = yaml.safe_load(block)
    [base] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    tree = {
        "conf/config.yaml": "defaults:\n  - model: gpt\n  - _self_\ntrainer:\n  max_steps: 10\n",
        "conf/train.yaml": "seed: 1\nmodel:\n  _target_: lab.GPT\n"
        + "".join(f"  {line}\n" for line in TINY.splitlines()),
        "conf/model/gpt.yaml": GROUP,
        "conf/model/small.yaml": "_target_: lab.GPT\n" + TINY,
        "configs/tiny.yaml": TINY,
        "package.json": "{}",
    }
    for name, text in tree.items():
        write(tmp_path, name, text)
    checked: dict[str, list[str]] = {}
    for hook in hooks:
        files = [
            name
            for name in tree
            if re.search(hook.get("files", ""), name)
            and not re.search(hook.get("exclude", "^$"), name)
        ]
        args = base["entry"].split()[2:] + hook.get("args", [])
        paths = [str(tmp_path / name) for name in files]
        result = cli("check", *args, *paths, "-f", "json")
        for record in json.loads(result.stdout):
            name = Path(record["path"]).relative_to(tmp_path).as_posix()
            verdict = "skipped" if record["skipped"] else "ok" if record["ok"] else "failed"
            checked.setdefault(name, []).append(verdict)
    assert checked == {
        "conf/config.yaml": ["skipped"],  # its model comes from the group
        "conf/train.yaml": ["ok"],
        "conf/model/gpt.yaml": ["failed"],
        "conf/model/small.yaml": ["ok"],
        "configs/tiny.yaml": ["ok"],
        "package.json": ["skipped"],
    }


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
