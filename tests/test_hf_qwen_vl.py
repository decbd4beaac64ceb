"""Qwen's multimodal text decoders in the file shapes transformers reads: the published
Qwen2-VL / Qwen2.5-VL files keep the text keys at the top level (``Qwen2VLConfig.__post_init__``
moves them into ``text_config``), newer files nest them under ``text_config``, Omni files under
``thinker_config.text_config``. The LM head is tied by ``tie_word_embeddings`` of the config
holding the text config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError, UnsupportedModelError
from costcalc.loaders import LoadedModel, load_file
from tests.conftest import FIXTURES
from tests.hf_helpers import windows

WRAPPER_KEYS = {
    "architectures",
    "model_type",
    "vision_config",
    "tie_word_embeddings",
    "torch_dtype",
    "transformers_version",
    "image_token_id",
    "video_token_id",
    "vision_start_token_id",
    "vision_end_token_id",
    "vision_token_id",
}
"""Keys of Qwen2VLConfig itself (and the Hub files' metadata); the others are the text
config's."""


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "hf" / f"{name}.json").read_text())
    return data


def load(tmp_path: Path, data: dict[str, Any]) -> LoadedModel:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data, indent=2))
    return load_file(path)


def nested(flat: dict[str, Any], text_type: str, **text: Any) -> dict[str, Any]:
    """The flat file with its text keys moved under ``text_config``, as transformers 5 saves
    it."""
    outer = {k: v for k, v in flat.items() if k in WRAPPER_KEYS}
    inner = {k: v for k, v in flat.items() if k not in WRAPPER_KEYS}
    outer["text_config"] = {**inner, "model_type": text_type, **text}
    return outer


@pytest.mark.parametrize(
    ("name", "text_type"),
    [("qwen2.5-vl-7b-instruct", "qwen2_5_vl_text"), ("qwen2-vl-2b-instruct", "qwen2_vl_text")],
)
def test_flat_and_nested_files_are_the_same_model(
    tmp_path: Path, name: str, text_type: str
) -> None:
    flat = load(tmp_path, fixture(name))
    inner = load(tmp_path, nested(fixture(name), text_type))
    assert flat.spec == inner.spec
    assert flat.spec.n_layers == 28
    for loaded, where in ((flat, "the top-level keys"), (inner, "text_config")):
        (note,) = loaded.notes
        assert f"({text_type}, {where})" in note
        assert "vision tower and projector are not counted" in note


def test_qwen2_vl_ties_when_either_config_says_so(tmp_path: Path) -> None:
    flat = fixture("qwen2-vl-2b-instruct")
    assert load(tmp_path, flat).spec.tie_embeddings
    untied = {**flat, "tie_word_embeddings": False}
    assert not load(tmp_path, untied).spec.tie_embeddings
    # a file written before transformers 5: the text config's true is forwarded
    older = nested(untied, "qwen2_vl_text", tie_word_embeddings=True)
    assert load(tmp_path, older).spec.tie_embeddings


def test_qwen3_vl_ties_by_the_multimodal_config_only(tmp_path: Path) -> None:
    data = fixture("qwen3-vl-8b-instruct")
    data["text_config"]["tie_word_embeddings"] = True
    assert not load(tmp_path, data).spec.tie_embeddings
    data["tie_word_embeddings"] = True
    assert load(tmp_path, data).spec.tie_embeddings


def test_a_bad_top_level_text_key_is_named_where_it_is(tmp_path: Path) -> None:
    data = {**fixture("qwen2.5-vl-7b-instruct"), "num_key_value_heads": "5"}
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, data)
    assert "num_key_value_heads" in {p.field for p in raised.value.problems}


def test_a_wrapper_without_top_level_text_keys_is_refused(tmp_path: Path) -> None:
    # Qwen3VLConfig ignores top-level text keys: with no text_config it builds its defaults.
    data = fixture("qwen3-vl-8b-instruct")
    flat = {k: v for k, v in data.items() if k != "text_config"} | data["text_config"]
    flat["model_type"] = "qwen3_vl"
    with pytest.raises(UnsupportedModelError):
        load(tmp_path, flat)


@pytest.mark.parametrize(
    ("name", "thinker_type"),
    [
        ("qwen2.5-omni-7b", "qwen2_5_omni_thinker"),
        ("qwen3-omni-30b-a3b-instruct", "qwen3_omni_moe_thinker"),
    ],
)
def test_an_omni_file_is_read_for_its_thinker_s_text_decoder(
    tmp_path: Path, name: str, thinker_type: str
) -> None:
    whole = load(tmp_path, fixture(name))
    (note,) = whole.notes
    assert "thinker_config.text_config" in note
    thinker = load(tmp_path, fixture(name)["thinker_config"])
    assert thinker.spec == whole.spec
    assert f"{thinker_type} is multimodal" in thinker.notes[0]


def test_an_omni_thinker_ties_by_its_own_config(tmp_path: Path) -> None:
    data = fixture("qwen2.5-omni-7b")
    data["thinker_config"]["text_config"]["tie_word_embeddings"] = True
    data["tie_word_embeddings"] = True
    assert not load(tmp_path, data).spec.tie_embeddings
    data["thinker_config"]["tie_word_embeddings"] = True
    assert load(tmp_path, data).spec.tie_embeddings


def test_windows_take_each_text_config_s_defaults(tmp_path: Path) -> None:
    # Qwen2VLTextConfig: sliding_window 4,096, max_window_layers 80; Qwen2_5OmniTextConfig:
    # 32,768 and 28; either way only with use_sliding_window.
    vl = {**fixture("qwen2.5-vl-7b-instruct"), "use_sliding_window": True}
    del vl["sliding_window"], vl["max_window_layers"]
    assert windows(load(tmp_path, vl).spec) == [(28, None)]
    vl["max_window_layers"] = 20
    assert windows(load(tmp_path, vl).spec) == [(20, None), (8, 4096)]
    omni = fixture("qwen2.5-omni-7b")
    text = omni["thinker_config"]["text_config"]
    del text["sliding_window"]
    text.update(use_sliding_window=True, max_window_layers=20)
    assert windows(load(tmp_path, omni).spec) == [(20, None), (8, 32_768)]
    del text["max_window_layers"]
    assert windows(load(tmp_path, omni).spec) == [(28, None)]
