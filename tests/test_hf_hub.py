"""`--hf ORG/NAME` offline: config.json from a local Hugging Face cache, built here in tmp_path.
The Hub itself is served in tests/test_hub_server.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from costcalc.errors import HubError, UsageError
from costcalc.hub import fetch_config, hub_cache_dir, split_hub_id

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
Invoke = Callable[..., Result]  # the `cli` fixture of conftest.py

HUB_ENV = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")


def cached_config(hub_id: str, env: dict[str, str]) -> Path:
    """The cached config.json of ``hub_id``, looked up offline with ``env`` as the environment."""
    return fetch_config(*split_hub_id(hub_id), env={**env, "HF_HUB_OFFLINE": "1"}).path


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No cache settings from the machine running the tests leak in; HOME is a fresh folder."""
    for name in HUB_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def cache_model(
    hub: Path, repo_id: str, fixture: str, revision: str = "0123abcd" * 5, ref: bool = True
) -> Path:
    """Lay out one model the way huggingface_hub does; the snapshot's config.json is returned."""
    repo = hub / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True)
    config = snapshot / "config.json"
    config.write_text((FIXTURES / "hf" / f"{fixture}.json").read_text())
    if ref:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(revision)
    return config


def test_cache_dir_follows_huggingface_hub(tmp_path: Path) -> None:
    home = Path("~").expanduser()
    assert hub_cache_dir({"HOME": str(home)}) == home / ".cache" / "huggingface" / "hub"
    assert hub_cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/huggingface/hub")
    assert hub_cache_dir({"HF_HOME": "/h", "XDG_CACHE_HOME": "/x"}) == Path("/h/hub")
    env = {"HUGGINGFACE_HUB_CACHE": "/l", "HF_HOME": "/h", "XDG_CACHE_HOME": "/x"}
    assert hub_cache_dir(env) == Path("/l")
    assert hub_cache_dir({**env, "HF_HUB_CACHE": "/c"}) == Path("/c")


def test_params_from_hf_hub_cache(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    config = cache_model(tmp_path / "hub", "Qwen/Qwen2.5-0.5B", "qwen2.5-0.5b")
    result = cli("params", "--hf", "Qwen/Qwen2.5-0.5B", "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["name"] == "Qwen/Qwen2.5-0.5B"
    assert data["origin"] == str(config)
    assert data["parameters"]["total"] == 494_032_768  # transformers' count (issue 2)


def test_hf_home_and_default_cache(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    cache_model(tmp_path / "hf-home" / "hub", "openai-community/gpt2", "gpt2")
    result = cli("params", "--hf", "openai-community/gpt2", "-f", "json")
    assert json.loads(result.stdout)["parameters"]["total"] == 124_439_808
    monkeypatch.delenv("HF_HOME")
    cache_model(tmp_path / "home" / ".cache" / "huggingface" / "hub", "gpt2", "gpt2-medium")
    result = cli("params", "--hf", "gpt2", "-f", "json")
    # golden: tests/golden/hf_reference.json, gpt2-medium
    assert json.loads(result.stdout)["parameters"]["total"] == 354_823_168


def test_refs_main_chooses_the_snapshot(tmp_path: Path) -> None:
    hub = tmp_path / "hub"
    cache_model(hub, "org/model", "gpt2", revision="old", ref=False)
    newest = cache_model(hub, "org/model", "gpt2-medium", revision="e" * 40)
    assert cached_config("org/model", {"HF_HUB_CACHE": str(hub)}) == newest


def test_snapshots_without_refs_are_named_not_guessed(tmp_path: Path) -> None:
    hub = tmp_path / "hub"
    cache_model(hub, "org/model", "gpt2", revision="a" * 40, ref=False)
    with pytest.raises(HubError) as raised:
        cached_config("org/model", {"HF_HUB_CACHE": str(hub)})
    assert str(raised.value) == (
        f"org/model: the cache ({hub}) has no refs/main to say which commit 'main' is, and "
        f"HF_HUB_OFFLINE is set (unset it to download); cached commits with a config.json: "
        f"{'a' * 40}; choose one with --revision COMMIT"
    )
    cache_model(hub, "org/model", "gpt2", revision="b" * 40, ref=False)
    with pytest.raises(HubError, match=f"config.json: {'a' * 40}, {'b' * 40}; choose"):
        cached_config("org/model", {"HF_HUB_CACHE": str(hub)})
    chosen = cached_config(f"org/model@{'b' * 40}", {"HF_HUB_CACHE": str(hub)})
    assert chosen.parent.name == "b" * 40


def test_missing_model_says_how_to_get_the_file(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    result = cli("params", "--hf", "meta-llama/Llama-3.2-1B")
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: meta-llama/Llama-3.2-1B: config.json is not in the cache ({tmp_path / 'hub'}) "
        "and HF_HUB_OFFLINE is set (unset it to download)\n"
    )


def test_refs_main_naming_a_missing_snapshot(tmp_path: Path) -> None:
    hub = tmp_path / "hub"
    cache_model(hub, "org/model", "gpt2", revision="aaa")
    (hub / "models--org--model" / "refs" / "main").write_text("b" * 40 + "\n")
    with pytest.raises(HubError, match="not in the cache"):
        cached_config("org/model", {"HF_HUB_CACHE": str(hub)})


@pytest.mark.parametrize("repo_id", ["../etc", "org/name/extra", "", "org/", "a b/c"])
def test_malformed_model_id_is_a_usage_error(repo_id: str) -> None:
    with pytest.raises(UsageError, match="ORG/NAME"):
        cached_config(repo_id, {"HF_HUB_CACHE": "/nonexistent"})


def test_malformed_model_id_exits_2(cli: Invoke) -> None:
    result = cli("params", "--hf", "../secret")
    assert result.exit_code == 2
    assert "is a path, not a Hub id ORG/NAME; a file is read with --config" in result.stderr
    result = cli("params", "--hf", "a b/c")
    assert result.exit_code == 2
    assert "--hf expects a model id like ORG/NAME" in result.stderr


def test_hf_with_overrides_and_side_by_side(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    cache_model(tmp_path / "hub", "openai-community/gpt2", "gpt2")
    result = cli("params", "-p", "gpt2-small", "--hf", "openai-community/gpt2", "-f", "json")
    small, cached = json.loads(result.stdout)
    assert small["parameters"]["total"] == cached["parameters"]["total"] == 124_439_808
    result = cli("params", "--hf", "openai-community/gpt2", "--layers", "24", "-f", "json")
    # GPT-2 small's 12 blocks of 7,087,872 (golden, per layer), doubled.
    assert json.loads(result.stdout)["parameters"]["total"] == 124_439_808 + 12 * 7_087_872


def test_errors_in_a_cached_file_name_the_file(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    config = cache_model(tmp_path / "hub", "org/broken", "gpt2")
    data = json.loads(config.read_text())
    data["n_head"] = 7
    config.write_text(json.dumps(data))
    result = cli("params", "--hf", "org/broken")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {config}: invalid model config")
    assert "n_head" in result.stderr
