"""A model folder or Hub cache snapshot holding config.json and an index but not the shards it
lists: the count comes from the config, and the index's ``metadata.total_size`` is set beside
the formula's bytes (the dtype the config declares, or the quantization_config's format).

Fixture: tests/fixtures/index-only/llama-3.1-8b, meta-llama/Llama-3.1-8B's published
``model.safetensors.index.json`` (total_size 16,060,522,496 bytes: 8,030,261,248 bf16
parameters) beside its config.json (tests/fixtures/index-only/SOURCES.md). The Hub cache is a
fake one laid out here (no network); tests/test_hub_server.py serves one.
"""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from costcalc.loaders import hub_checkpoint, load_file, load_hub
from costcalc.params import param_report
from costcalc.stored_weights import stored_bytes
from tests.conftest import FIXTURES, Invoke

LLAMA = FIXTURES / "index-only" / "llama-3.1-8b"
LLAMA_BYTES = 16_060_522_496
REVISION = "0123abcd" * 5


def params_json(cli: Invoke, *args: str) -> dict[str, Any]:
    result = cli("params", *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_the_published_index_checks_the_formula() -> None:
    model = load_file(LLAMA)
    assert model.checkpoint is None and model.checkpoint_index is not None
    assert model.checkpoint_index.dtype == "bf16"
    total = param_report(model.spec).total
    found = stored_bytes(model, "bf16", 2 * total)
    assert found is not None and found.bytes == LLAMA_BYTES and found.difference == 0
    assert stored_bytes(model, "fp16", 2 * total) is None  # not what the config declares


def test_params_says_the_index_agrees(cli: Invoke) -> None:
    data = params_json(cli, "--config", str(LLAMA))
    assert data["checkpoint_bytes"]["bytes"] == data["checkpoint_bytes"]["formula"] == LLAMA_BYTES
    text = " ".join(cli("params", "--config", str(LLAMA)).stdout.split())
    assert "Its checkpoint holds 16,060,522,496 bytes (metadata.total_size of" in text
    assert "equal to the formula's" in text


def test_an_index_that_disagrees_is_named(cli: Invoke, tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(LLAMA, folder)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["metadata"]["total_size"] = LLAMA_BYTES + 4096
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    text = " ".join(cli("params", "--config", str(folder)).stdout.split())
    assert f"4,096 more than the formula's {LLAMA_BYTES:,}" in text


def test_no_declared_dtype_no_comparison(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(LLAMA, folder)
    config = json.loads((folder / "config.json").read_text())
    del config["torch_dtype"]
    (folder / "config.json").write_text(json.dumps(config))
    model = load_file(folder)
    assert model.checkpoint_index is not None and model.checkpoint_index.dtype is None
    assert stored_bytes(model, "bf16", LLAMA_BYTES) is None


def cache_snapshot(hub: Path, repo_id: str, shards: tuple[str, ...] = ()) -> Path:
    """A Hub cache holding ``repo_id``'s config.json and index at one commit (refs/main to it),
    with the named shards (empty files: never read here); the snapshot folder is returned."""
    repo = hub / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / REVISION
    snapshot.mkdir(parents=True)
    for name in ("config.json", "model.safetensors.index.json"):
        shutil.copy(LLAMA / name, snapshot / name)
    for shard in shards:
        (snapshot / shard).write_bytes(b"")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    return snapshot


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty Hub cache, offline. huggingface_hub is imported here, not first inside the CLI
    runner: its logger would keep the runner's stderr, closed once the command ends."""
    importlib.import_module("huggingface_hub")
    for name in ("HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "hub"


def test_offline_a_cached_index_without_shards_answers(cli: Invoke, offline: Path) -> None:
    """What an online run leaves in the cache: config.json and the index, no shard."""
    snapshot = cache_snapshot(offline, "meta-llama/Llama-3.1-8B")
    data = params_json(cli, "--hf", "meta-llama/Llama-3.1-8B")
    assert data["parameters"]["total"] == LLAMA_BYTES // 2
    assert data["checkpoint_bytes"]["bytes"] == LLAMA_BYTES
    assert data["checkpoint_bytes"]["difference"] == 0
    assert str(snapshot / "model.safetensors.index.json") in data["checkpoint_bytes"]["source"]


def test_offline_some_shards_cached_is_the_index_too(offline: Path) -> None:
    cache_snapshot(offline, "meta-llama/Llama-3.1-8B", ("model-00001-of-00004.safetensors",))
    model = load_hub("meta-llama/Llama-3.1-8B")
    assert model.checkpoint is None and model.checkpoint_index is not None
    assert model.checkpoint_index.total_size == LLAMA_BYTES


def test_offline_headers_of_an_unsupported_family_are_none_not_an_error(offline: Path) -> None:
    cache_snapshot(offline, "meta-llama/Llama-3.1-8B")
    assert hub_checkpoint("meta-llama/Llama-3.1-8B") is None
