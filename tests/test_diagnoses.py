"""Errors name the real cause: a missing file is no such file (never a Hub lookup), Python is
never executed, a misspelt family, format or key gets the spelling meant, and the Python API
names its own parameters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import costcalc
from costcalc.errors import ConfigError, FileReadError, UsageError
from costcalc.files import looks_like_path
from tests.conftest import Invoke


def fails(cli: Invoke, *args: str, code: int = 1) -> str:
    result = cli(*args)
    assert result.exit_code == code, result.stdout
    assert "Traceback" not in result.stderr + result.stdout
    return result.stderr


@pytest.mark.parametrize(
    "source", ["configs/smal.yaml", "./nonexist.json", "nonexist.json", "a/b/c", "../x", "~/x"]
)
def test_a_missing_path_is_no_such_file_in_the_api(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(FileReadError) as caught:
        costcalc.load(source)
    assert str(caught.value).endswith(": no such file")
    assert "Hub" not in str(caught.value) and "--" not in str(caught.value)


def test_a_missing_path_is_no_such_file_on_the_command_line(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert fails(cli, "params", "-c", "configs/smal.yaml") == (
        "error: configs/smal.yaml: no such file\n"
    )
    message = fails(cli, "params", "--hf", "./nonexist.json", code=2)
    assert message == (
        "error: './nonexist.json' is a path, not a Hub id ORG/NAME; a file is read with --config\n"
    )


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("Qwen/Qwen2.5-0.5B", False),
        ("Qwen/Qwen3-8B@refs/pr/1", False),
        ("gpt2", False),
        ("meta-llama/Llama-3.1-8B@v1.0", False),
        ("configs/small.yaml", True),
        ("./model", True),
        ("/abs/model", True),
        ("org/name/extra", True),
        ("small.json", True),
        ("C:\\models\\x", True),
    ],
)
def test_what_looks_like_a_path(text: str, path: bool) -> None:
    assert looks_like_path(text) is path


def test_a_hub_id_error_from_the_api_names_no_option() -> None:
    with pytest.raises(UsageError) as caught:
        costcalc.load("hf://./x.json")
    assert str(caught.value) == (
        "'./x.json' is a path, not a Hub id ORG/NAME; load() reads a file by its path"
    )
    with pytest.raises(UsageError) as caught:
        costcalc.load("hf://a b/c")
    assert str(caught.value).startswith("a Hub id is a model id like ORG/NAME")


@pytest.mark.parametrize("name", ["train_shakespeare_char.py", "CONFIG.PY"])
def test_python_configs_are_refused_with_a_sentence(cli: Invoke, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("n_layer = 6\nn_head = 6\nn_embd = 384\n")
    expected = (
        f"{path}: a Python file: costcalc never executes Python; write its values as YAML "
        "(n_layer: 12 for nanoGPT's n_layer = 12) or JSON, and pass that file (docs/config.md)"
    )
    assert fails(cli, "params", "-c", str(path)) == f"error: {expected}\n"
    with pytest.raises(FileReadError) as caught:
        costcalc.load(str(path))
    assert str(caught.value) == expected


def test_a_missing_python_file_is_no_such_file(cli: Invoke, tmp_path: Path) -> None:
    assert fails(cli, "params", "-c", str(tmp_path / "train.py")).endswith(": no such file\n")


@pytest.mark.parametrize(
    ("model_type", "hint"),
    [
        ("lama", " (did you mean 'llama'?)"),
        ("Llama", " (did you mean 'llama'?)"),
        ("gpt_2", " (did you mean 'gpt2'?)"),
        ("no-such-family-at-all", ""),
    ],
)
def test_an_unknown_model_type_suggests_and_points_to_the_list(
    cli: Invoke, tmp_path: Path, model_type: str, hint: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, "hidden_size": 64}))
    message = fails(cli, "params", "-c", str(path))
    assert f"unsupported model_type '{model_type}'{hint}; costcalc has no formula" in message
    assert "families, listed in docs/huggingface.md" in message
    assert "afmoe" not in message  # the full list is in the docs, not on one line
    assert len(message) < 600


@pytest.mark.parametrize(
    ("dtype", "hint"),
    [
        ("q4_k_m", "did you mean 'gguf:Q4_K_M'?"),
        ("Q8_0", "did you mean 'gguf:Q8_0'?"),
        ("gguf:q4_k_m", "did you mean 'Q4_K_M'?"),
        ("BF16", "did you mean 'bf16'?"),
        ("nf44", "did you mean 'nf4'?"),
    ],
)
def test_a_format_suggests_across_gguf_types(cli: Invoke, dtype: str, hint: str) -> None:
    message = fails(cli, "params", "-p", "gpt2", "--dtype", dtype, code=2)
    assert hint in message


def test_a_model_key_in_a_layer_group_is_named_as_one(cli: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "d_model: 64\nn_layers: 2\nn_heads: 2\nvocab_size: 100\ncontext_length: 8\n"
        "layers:\n  - {count: 2, vocab_size: 3, n_haeds: 4}\n"
    )
    message = fails(cli, "params", "-c", str(path))
    assert "did you mean 'vocab_size'" not in message
    assert (
        "layers.0.vocab_size (line 7): a key of the whole model, not of a layer group (a group "
        "sets count, pattern and block keys); give vocab_size at the top level"
    ) in message
    assert "layers.0.n_haeds (line 7): unknown key; did you mean 'n_heads'?" in message


@pytest.mark.parametrize(
    ("field", "hint"),
    [("width", "; did you mean 'd_model'?"), ("d_mdel", "; did you mean 'd_model'?"), ("zz", ".")],
)
def test_an_unknown_field_after_the_colon_suggests(cli: Invoke, field: str, hint: str) -> None:
    message = fails(cli, "params", "-p", f"gpt2:{field}=3", code=2)
    assert message.startswith(f"error: unknown field '{field}' after ':'{hint} Fields: vocab_size")


def test_the_api_names_its_parameters() -> None:
    with pytest.raises(UsageError) as caught:
        costcalc.count_lora("gpt2-small", targets=["c_attn"], base_dtype="nf4")
    assert str(caught.value) == "base_dtype= applies to training memory; add train=True"
    with pytest.raises(ConfigError) as caught:
        costcalc.load("gpt2-small", n_heads=5)
    assert "--" not in str(caught.value) and "n_heads (override)" in str(caught.value)


def test_an_unknown_model_type_in_a_github_annotation(cli: Invoke, tmp_path: Path) -> None:
    """The annotation GitHub shows beside the line suggests the family, without 163 names."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "lama", "hidden_size": 64}))
    result = cli("check", "--format", "github", str(path))
    assert result.exit_code == 1
    [annotation] = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    assert "unsupported model_type 'lama' (did you mean 'llama'?)" in annotation
    assert "listed in docs/huggingface.md" in annotation and len(annotation) < 600


def test_the_api_points_to_load_for_a_model_folder() -> None:
    with pytest.raises(ConfigError) as caught:
        costcalc.load({"model_type": "lama"})
    assert "(load(MODEL_FOLDER))" in str(caught.value) and "--config" not in str(caught.value)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: costcalc.count_memory("gpt2-small", train=True, dtype="nf4", length=8),
            "(frozen quantized weights: count_lora(base_dtype=...))",
        ),
        (
            lambda: costcalc.count_memory("gpt2-small", train=True, recompute="flash", length=8),
            "use attention='flash'",
        ),
        (lambda: costcalc.count_memory("gpt2-small", reserve="1GiB"), "add gpu= or fits="),
        (
            lambda: costcalc.count_lora("gpt2-small", targets=[]),
            "name what to adapt: targets=['q_proj', 'v_proj']",
        ),
        (lambda: costcalc.count_lora("gpt2-small", targets=["q"], rank=0), "rank= must be"),
        (
            lambda: costcalc.count_memory(
                "gpt2-small", train=True, length=8, gpus=2, fsdp="hybrid"
            ),
            "fsdp='hybrid' shards within a node: give node_gpus=",
        ),
    ],
)
def test_api_messages_name_parameters(call: object, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        call()  # type: ignore[operator]
    assert message in str(caught.value) and " --" not in str(caught.value)


def test_a_path_given_as_a_preset_points_to_config(cli: Invoke) -> None:
    message = fails(cli, "params", "-p", "configs/small.yaml", code=2)
    assert message == (
        "error: 'configs/small.yaml' is a path, not a preset name; a file is read with --config\n"
    )
    from costcalc.presets import aliases, preset_names

    assert not [name for name in (*preset_names(), *aliases()) if looks_like_path(name)]
