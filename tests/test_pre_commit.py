"""The pre-commit hook, for real: pre-commit installs it from a clone of this project into a git
repository of model configs, non-model YAML/JSON, a save_pretrained-style folder and a Hydra
config, then gates `pre-commit run --all-files` and `git commit`.

pre-commit builds the hook's environment with pip from the clone (no network is needed where
pip's index is local, as here).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

GPT2 = json.loads((FIXTURES / "hf" / "gpt2.json").read_text())
TINY = "vocab_size: 512\ncontext_length: 256\nd_model: 128\nn_layers: 2\nn_heads: 4\n"

GOOD = {
    "models/gpt2/config.json": json.dumps(GPT2, indent=2),
    "models/gpt2-arch-only/config.json": json.dumps(
        {k: v for k, v in GPT2.items() if k != "model_type"}
        | {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"},
        indent=2,
    ),
    "configs/tiny.yaml": TINY,
    "configs/marked.json": json.dumps(
        {"$schema": "../costcalc.schema.json", "vocab_size": 512, "context_length": 256}
        | {"d_model": 128, "n_layers": 2, "n_heads": 4}
    ),
    "nanogpt/shakespeare.json": json.dumps(
        {"vocab_size": 65, "block_size": 256, "n_layer": 6, "n_head": 6, "n_embd": 384}
    ),
    "train/hydra-good.yaml": "defaults:\n  - _self_\n  - data: tiny\nmodel:\n"
    "  _target_: mylab.models.GPT\n  vocab_size: 512\n  context_length: 256\n  d_model: 128\n"
    "  n_layers: 2\n  n_heads: 4\ndata:\n  seq_len: 256\ntrainer:\n  max_steps: 1000\n",
}
BAD = {
    "models/gpt2-7-heads/config.json": json.dumps(GPT2 | {"n_head": 7}, indent=2),
    "configs/heads-7.yaml": TINY.replace("n_heads: 4", "n_heads: 7"),
    "configs/yaml11-bool.yaml": TINY + "qkv_bias: yes\n",
    "configs/broken.yaml": "vocab_size: [512\nd_model: 128\n",
    "configs/over-budget.yaml": TINY + "budget:\n  max_params: 100k\n",
    "train/hydra-interpolated.yaml": "defaults:\n  - _self_\nmodel:\n  vocab_size: 512\n"
    "  context_length: ${data.seq_len}\n  d_model: 128\n  n_layers: 2\n  n_heads: 4\n"
    "data:\n  seq_len: 256\n",
}
NOT_MODELS = {
    "package.json": '{"name": "web", "version": "1.0.0", "scripts": {"test": "jest"}}',
    "tsconfig.json": '{\n  // JSONC\n  "compilerOptions": {"strict": true,},\n}',
    ".github/workflows/ci.yml": "name: ci\non:\n  push:\n    branches: [main]\njobs:\n"
    "  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ok\n",
    "deploy/compose.yaml": "services:\n  web:\n    image: nginx\n    user: 0755\n",
    "models/gpt2/generation_config.json": '{"bos_token_id": 50256, "eos_token_id": 50256}',
    "models/gpt2/tokenizer_config.json": '{"model_max_length": 1024, "vocab_size": 50257}',
    "models/gpt2/added_tokens.json": '{"<|pad|>": 50257}',
    "models/gpt2/special_tokens_map.json": '{"bos_token": "<|endoftext|>"}',
    "ci/gitlab.yml": "build:\n  script:\n    - !reference [.setup, script]\n",
}
HOOK_FILES = (
    "costcalc",
    "presets",
    "pyproject.toml",
    "README.md",
    "LICENSE",
    ".pre-commit-hooks.yaml",
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env=GIT_ENV
    )


GIT_ENV = os.environ | {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def write_tree(top: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A repository of configs with the hook installed from a clone of this project (as it is
    in the working tree), and pre-commit's environment for it."""
    clone = tmp_path_factory.mktemp("costcalc-clone")
    for name in HOOK_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, clone / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, clone / name)
    git(clone, "init", "-q")
    git(clone, "add", ".")
    git(clone, "commit", "-q", "-m", "costcalc")
    sha = git(clone, "rev-parse", "HEAD").stdout.strip()

    repo = tmp_path_factory.mktemp("configs-repo")
    write_tree(repo, GOOD | BAD | NOT_MODELS)
    config = (
        f"repos:\n  - repo: {clone}\n    rev: {sha}\n    hooks:\n"
        "      - id: costcalc-check\n        exclude: ^train/\n"
        "      - id: costcalc-check\n        name: costcalc check (Hydra model blocks)\n"
        "        files: ^train/\n        args: [--key, model]\n"
    )
    (repo / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    env = GIT_ENV | {"PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("pre-commit-home"))}
    return repo, env


def pre_commit(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


def verdicts(output: str) -> dict[str, str]:
    """Each file's verdict (ok, FAIL, skip) from the hooks' reports."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("ok", "FAIL", "skip") and rest.strip():
            path = rest.strip().split("  ")[0]
            assert path not in found, f"{path} reported twice"
            found[path] = word
    return found


def test_run_all_files_passes_exactly_the_good_models(project: tuple[Path, dict[str, str]]) -> None:
    repo, env = project
    result = pre_commit(repo, env, "run", "--all-files", "--verbose")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    found = verdicts(output)
    assert {path for path, verdict in found.items() if verdict == "ok"} == set(GOOD)
    assert {path for path, verdict in found.items() if verdict == "FAIL"} == set(BAD)
    skipped = {path for path, verdict in found.items() if verdict == "skip"}
    assert skipped == set(NOT_MODELS) | {".pre-commit-config.yaml"}
    # require_serial: each hook runs once over all its files, so prints one summary
    summaries = [line for line in output.splitlines() if " failed" in line and "files, " in line]
    assert summaries == ["20 files, 5 failed, 10 skipped", "2 files, 1 failed"], output
    assert "${data.seq_len} is an unresolved interpolation" in output
    assert "'yes' is a boolean only in YAML 1.1" in output


def test_a_commit_of_a_bad_config_is_blocked(project: tuple[Path, dict[str, str]]) -> None:
    repo, env = project
    installed = pre_commit(repo, env, "install")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    for name in BAD:
        git(repo, "rm", "-q", "--cached", name)
    commit = subprocess.run(
        ["git", "commit", "-q", "-m", "good configs"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
    )
    assert commit.returncode == 0, commit.stdout + commit.stderr

    git(repo, "add", "configs/heads-7.yaml")
    blocked = subprocess.run(
        ["git", "commit", "-m", "a bad config"], cwd=repo, capture_output=True, text=True, env=env
    )
    assert blocked.returncode != 0
    assert "FAIL  configs/heads-7.yaml" in blocked.stdout + blocked.stderr
    assert git(repo, "log", "--format=%s").stdout.splitlines() == ["good configs"]
