"""GLM's vision-language text decoders: what the modeling code fixes whatever the file says, and
which key ties the LM head. The totals were counted by building the conditional-generation model
in transformers 5.24 on the meta device (language model and LM head) from the changed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costcalc.loaders import load_file
from costcalc.params import param_report
from tests.test_hf_families import ROOT, golden

TABLE = 151_552 * 4096
"""GLM-4.1V's token table, V x D: what tying saves."""


def _total(tmp_path: Path, record: str, wrapper: dict[str, object], **text: object) -> int:
    data = json.loads((ROOT / golden()[record]["config"]).read_text(encoding="utf-8"))
    data.update(wrapper)
    data["text_config"].update(text)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return param_report(load_file(path).spec).total


@pytest.mark.parametrize(
    ("wrapper", "text_tie", "tied"),
    [
        ({}, True, True),  # Glm4vConfig forwards the text_config's key
        ({"tie_word_embeddings": True}, False, True),
        ({"model_type": "glm46v"}, True, False),  # Glm46VConfig reads its own key only
        ({"model_type": "glm46v", "tie_word_embeddings": True}, False, True),
    ],
)
def test_the_wrapper_decides_the_tie(
    tmp_path: Path, wrapper: dict[str, object], text_tie: bool, tied: bool
) -> None:
    record = "glm-4.1v-9b-thinking"
    total = _total(tmp_path, record, wrapper, tie_word_embeddings=text_tie)
    assert total == golden()[record]["parameters_total"] - (TABLE if tied else 0)


def test_glm4v_attention_reads_neither_head_dim_nor_attention_bias(tmp_path: Path) -> None:
    # Glm4vTextAttention: heads D / H wide, a bias on q/k/v always; a null key/value head count
    # is the head count (Glm4vTextConfig.__post_init__).
    total = _total(
        tmp_path,
        "glm-4.1v-9b-thinking",
        {},
        head_dim=64,
        attention_bias=False,
        num_key_value_heads=None,
    )
    assert total == 10_658_877_440


def test_glm4v_moe_builds_no_query_key_norms(tmp_path: Path) -> None:
    record = "glm-4.5v"
    total = _total(tmp_path, record, {}, use_qk_norm=True)
    assert total == golden()[record]["parameters_total"]


def test_glm_image_is_never_tied(tmp_path: Path) -> None:
    record = "glm-image-defaults"
    total = _total(tmp_path, record, {"tie_word_embeddings": True}, tie_word_embeddings=True)
    assert total == golden()[record]["parameters_total"]
