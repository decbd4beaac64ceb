"""A model folder (`save_pretrained`'s output) is read wherever a config file is: `params`,
`memory` and `check` all take `./my-model`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Invoke
from tests.test_checkpoint_cli import elements, gpt2_folder


def model_folder(tmp_path: Path) -> Path:
    """gpt2_folder's tiny GPT-2 with the files save_pretrained writes beside it."""
    tmp_path.mkdir()
    folder = gpt2_folder(tmp_path)
    (folder / "generation_config.json").write_text('{"bos_token_id": 1}')
    (folder / "tokenizer_config.json").write_text('{"model_max_length": 4}')
    return folder


def test_check_takes_a_model_folder_as_one_model(cli: Invoke, tmp_path: Path) -> None:
    folder = model_folder(tmp_path / "my-model")
    result = cli("check", str(folder), "--format", "json")
    assert result.exit_code == 0, result.stdout
    (report,) = json.loads(result.stdout)
    assert report["path"] == str(folder)
    assert report["format"] == "huggingface"
    assert report["parameters"] == elements(folder)


def test_check_reports_a_broken_header_of_a_model_folder(cli: Invoke, tmp_path: Path) -> None:
    folder = model_folder(tmp_path / "my-model")
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[:-2])
    result = cli("check", str(folder), "--format", "json")
    assert result.exit_code == 1
    (report,) = json.loads(result.stdout)
    (finding,) = report["findings"]
    assert finding["message"].startswith(f"{folder / 'model.safetensors'}: ")


def test_a_folder_without_weights_is_searched_as_before(cli: Invoke, tmp_path: Path) -> None:
    folder = model_folder(tmp_path / "my-model")
    (folder / "model.safetensors").unlink()
    result = cli("check", str(folder), "--format", "json")
    checked = [report["path"] for report in json.loads(result.stdout)]
    assert checked == [
        str(folder / name)
        for name in ("config.json", "generation_config.json", "tokenizer_config.json")
    ]


def test_memory_takes_a_model_folder(cli: Invoke, tmp_path: Path) -> None:
    folder = model_folder(tmp_path / "my-model")
    result = cli("memory", "-c", str(folder), "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["name"] == "my-model"
