"""Multimodal wrappers whose configuration class decides what its text decoder is: the tying of
the LM head (EXAONE 4.5: the wrapper's ``tie_word_embeddings`` alone) and the ``model_type`` its
``text_config`` is built as (its sub-config spec's class, or the file's ``model_type``, else the
spec's default; EXAONE 4.5's old ``exaone4_5_text`` and Kimi-K2.5's ``kimi_k2`` renamed). The
totals were counted in transformers 5.24 by building the conditional-generation model on the
meta device (its language model and LM head) from these files."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError, UnsupportedModelError
from costcalc.loaders import load_file
from costcalc.params import param_report

SMALL_EXAONE_4_5: dict[str, Any] = {
    "architectures": ["Exaone4_5_ForConditionalGeneration"],
    "model_type": "exaone4_5",
    "text_config": {
        "model_type": "exaone4",
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 256,
        "sliding_window": 16,
        "layer_types": ["sliding_attention", "full_attention"],
    },
    "vision_config": {
        "depth": 1,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "out_hidden_size": 64,
    },
}
UNTIED, TIED = 94_592, 78_208
"""Exaone4_5_ForConditionalGeneration's language model and LM head, untied and tied (the token
table, 256 x 64, once)."""


def _total(tmp_path: Path, data: dict[str, Any]) -> int:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return param_report(load_file(path).spec).total


@pytest.mark.parametrize(
    ("wrapper", "text", "total"),
    [
        (None, None, UNTIED),  # Exaone4_5_Config's default: false
        (True, False, TIED),
        (False, True, UNTIED),  # the text config's key is not read
        (None, True, UNTIED),
    ],
)
def test_exaone4_5_ties_by_its_own_key(
    tmp_path: Path, wrapper: bool | None, text: bool | None, total: int
) -> None:
    data = copy.deepcopy(SMALL_EXAONE_4_5)
    if wrapper is not None:
        data["tie_word_embeddings"] = wrapper
    if text is not None:
        data["text_config"]["tie_word_embeddings"] = text
    assert _total(tmp_path, data) == total


ROOT = Path(__file__).resolve().parent.parent
GOLDEN = json.loads((ROOT / "tests" / "golden" / "hf_families.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("record", "written", "built"),
    [
        ("exaone-4.5-33b-text", "exaone4_5_text", "exaone4"),
        ("kimi-k2.5-nvfp4-text", "kimi_k2", "deepseek_v3"),
    ],
)
def test_a_renamed_text_config_is_read_as_its_class_builds_it(
    tmp_path: Path, record: str, written: str, built: str
) -> None:
    path = ROOT / GOLDEN["models"][record]["config"]
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["text_config"]["model_type"] == written
    assert GOLDEN["models"][record]["model_type"] == built
    loaded = load_file(path)
    assert param_report(loaded.spec).total == GOLDEN["models"][record]["parameters_total"]
    assert any(f"model_type {written!r}: read as {built!r}" in note for note in loaded.notes)
    # The new name itself reads the same.
    data["text_config"]["model_type"] = built
    assert _total(tmp_path, data) == GOLDEN["models"][record]["parameters_total"]


def test_the_old_name_is_not_renamed_outside_its_wrapper(tmp_path: Path) -> None:
    data = copy.deepcopy(SMALL_EXAONE_4_5)
    data["model_type"] = "llava"
    data["text_config"]["model_type"] = "exaone4_5_text"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UnsupportedModelError):
        load_file(path)


@pytest.mark.parametrize(
    ("record", "written"),
    [
        ("gemma-3-4b", None),  # Gemma3Config builds a Gemma3TextConfig
        ("gemma-3-4b", "gemma2"),  # whatever model_type the file gives
        ("llama-4-scout-text", "llama"),  # Llama4Config: a Llama4TextConfig
        ("llava-1.5-7b-text", None),  # LlavaConfig's spec names AutoConfig, default llama
        ("ministral-3-3b-reasoning-2512-text", None),  # Mistral3Config's: mistral
    ],
)
def test_the_text_config_is_built_as_its_spec_says(
    tmp_path: Path, record: str, written: str | None
) -> None:
    data = json.loads((ROOT / GOLDEN["models"][record]["config"]).read_text(encoding="utf-8"))
    if written is None:
        data["text_config"].pop("model_type")
    else:
        data["text_config"]["model_type"] = written
    assert _total(tmp_path, data) == GOLDEN["models"][record]["parameters_total"]


def test_a_file_model_type_is_read_where_the_spec_names_autoconfig(tmp_path: Path) -> None:
    # LlavaConfig builds the text_config as the model_type the file gives: here a Qwen2Config
    # (its defaults for the sizes the file leaves out, biases on q, k and v).
    record = "llava-1.5-7b-text"
    data = json.loads((ROOT / GOLDEN["models"][record]["config"]).read_text(encoding="utf-8"))
    data["text_config"]["model_type"] = "qwen2"
    assert _total(tmp_path, data) == 11_067_854_848


SMALL_OVIS2: dict[str, Any] = {
    "architectures": ["Ovis2ForConditionalGeneration"],
    "model_type": "ovis2",
    "text_config": {
        "model_type": "qwen2",
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 300,
        "tie_word_embeddings": False,
    },
    "vision_config": {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "vocab_size": 16,
    },
}


@pytest.mark.parametrize(
    ("wrapper", "total"),
    [
        ({"tie_word_embeddings": True}, 81_216),  # the head is the token table, 300 x 64
        ({"tie_word_embeddings": False, "hidden_size": 64, "vocab_size": 300}, 100_416),
        ({"tie_word_embeddings": False, "hidden_size": 64, "vocab_size": 256}, 97_600),
        # Ovis2Config's default vocab_size: 151,643 rows
        ({"tie_word_embeddings": False, "hidden_size": 64}, 9_786_368),
    ],
)
def test_ovis2_sizes_its_untied_head_by_its_own_keys(
    tmp_path: Path, wrapper: dict[str, Any], total: int
) -> None:
    data = copy.deepcopy(SMALL_OVIS2)
    data.update(wrapper)
    assert _total(tmp_path, data) == total


def test_ovis2_head_narrower_than_its_decoder_is_refused(tmp_path: Path) -> None:
    # transformers builds nn.Linear(32, 300) over a decoder of width 64: its forward cannot run.
    data = copy.deepcopy(SMALL_OVIS2)
    data.update(tie_word_embeddings=False, hidden_size=32, vocab_size=300)
    with pytest.raises(ConfigError, match="LM head is 32 wide"):
        _total(tmp_path, data)
