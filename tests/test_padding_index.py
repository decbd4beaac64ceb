"""A ``pad_token_id`` outside the token table: transformers refuses the file where the model
builds its table with ``padding_idx=pad_token_id`` (torch's ``nn.Embedding`` asserts
``-rows <= padding_idx < rows``), and so does costcalc, naming both keys; where the table takes
no padding index, any ``pad_token_id`` is counted. XGLM and Kosmos-2 also zero a padding row in
their sinusoidal position table (max_position_embeddings + 2 rows): a ``pad_token_id`` outside
it is refused too.

Which tables take one: costcalc/data/hf_padding_index.json, written by
tests/reference/make_padding_index.py (each family's fixture built on the meta device with
transformers 5.24; the edges N, -N - 1 refused and N - 1 built). The differential sets hold 36
configs transformers refuses so (tests/test_differential.py, glm/04, smollm3/fresh-06, ...).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.api import load
from costcalc.compute import position_limit
from costcalc.errors import ConfigError
from costcalc.formats.families import registry
from costcalc.formats.hf_classes import PADDING, _read, config_class
from costcalc.params import param_report
from tests.conftest import Invoke
from tests.hf_helpers import config_data
from tests.test_differential import records

LLAMA_VOCAB = 128_256


def refusal(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        load(data)
    return " ".join(str(caught.value).split())


@pytest.mark.parametrize("pad", [LLAMA_VOCAB, LLAMA_VOCAB + 5, -LLAMA_VOCAB - 1])
def test_a_pad_outside_the_table_is_refused(pad: int) -> None:
    text = refusal(config_data("llama-3.2-1b", pad_token_id=pad))
    assert f"pad_token_id: {pad:,} is outside the token table of 128,256 rows (vocab_size)" in text
    assert "transformers refuses the file" in text
    assert "nn.Embedding(vocab_size, hidden_size, padding_idx=pad_token_id)" in text
    assert "-128,256 to 128,255" in text


@pytest.mark.parametrize("pad", [LLAMA_VOCAB - 1, -1, -LLAMA_VOCAB, 0, None])
def test_a_pad_within_the_table_is_counted(pad: int | None) -> None:
    # LLaMA's original configs give -1: padding_idx -1 is the table's last row.
    spec = load(config_data("llama-3.2-1b", pad_token_id=pad)).spec
    assert param_report(spec).total == 1_235_814_400


def test_the_class_default_is_checked_when_the_file_gives_none() -> None:
    # ApertusConfig's pad_token_id defaults to 3 (differential record apertus/fresh-05).
    text = refusal(config_data("apertus-8b", pad_token_id=..., vocab_size=3))
    assert "pad_token_id: 3 (ApertusConfig's default) is outside the token table of 3 rows" in text
    assert load(config_data("apertus-8b", pad_token_id=..., vocab_size=4)).spec.vocab_size == 4


def test_the_vocabulary_the_class_defaults_to_is_checked() -> None:
    # Olmo2Config's vocab_size defaults to 50,304 (differential record olmo2/fresh-06).
    data = config_data("olmo-2-1b", vocab_size=..., pad_token_id=50_304)
    assert "of 50,304 rows (vocab_size)" in refusal(data)


def test_the_to_dict_form_is_read_alike() -> None:
    data = config_data("llama-3.2-1b", pad_token_id=LLAMA_VOCAB)
    data["transformers_version"], data["dtype"] = "5.24.0", "bfloat16"
    assert "pad_token_id" in refusal(data)


def text_decoder(fixture: str, **changes: Any) -> dict[str, Any]:
    data = config_data(fixture)
    data["text_config"].update(changes)
    return data


def test_mllama_table_has_eight_rows_beyond_the_vocabulary() -> None:
    # MllamaTextModel: nn.Embedding(config.vocab_size + 8, hidden_size, self.padding_idx).
    fixture = "llama-3.2-11b-vision-instruct"
    assert load(text_decoder(fixture, pad_token_id=LLAMA_VOCAB + 7)).spec.vocab_size
    text = refusal(text_decoder(fixture, pad_token_id=LLAMA_VOCAB + 8))
    assert "text_config.pad_token_id: 128,264 is outside the token table of 128,264 rows" in text
    assert "(vocab_size + 8)" in text


def test_gemma3n_per_layer_table_is_padded_too() -> None:
    # Gemma3nTextModel pads embed_tokens (vocab_size) and embed_tokens_per_layer
    # (vocab_size_per_layer_input, 262,144 of 262,400 here).
    text = refusal(text_decoder("gemma-3n-e2b-it", pad_token_id=262_144))
    assert "of 262,144 rows (vocab_size_per_layer_input)" in text
    assert load(text_decoder("gemma-3n-e2b-it", pad_token_id=262_143)).spec


XGLM_POSITIONS = 2048 + 2
"""XGLMSinusoidalPositionalEmbedding (models/xglm/modeling_xglm.py; Kosmos-2's copy in
models/kosmos2/modeling_kosmos2.py, both M2M100's): ``get_embedding(num_positions + offset,
embedding_dim, padding_idx)`` makes max_position_embeddings + 2 rows and zeroes
``emb[padding_idx, :]``, an IndexError outside them; the table is ``nn.Buffer(...,
persistent=False)``, no parameter."""


@pytest.mark.parametrize("pad", [XGLM_POSITIONS, -XGLM_POSITIONS - 1, 100_000])
def test_xglm_pad_outside_its_position_table_is_refused(pad: int) -> None:
    text = refusal(config_data("xglm-564m", pad_token_id=pad))
    assert (
        f"pad_token_id: {pad:,} is outside the sinusoidal position table of 2,050 rows "
        "(max_position_embeddings + 2): transformers refuses the file"
    ) in text
    assert "-2,050 to 2,049" in text


@pytest.mark.parametrize("pad", [XGLM_POSITIONS - 1, -XGLM_POSITIONS])
def test_xglm_pad_within_its_position_table_is_counted(pad: int) -> None:
    spec = load(config_data("xglm-564m", pad_token_id=pad)).spec
    assert param_report(spec).total == 564_463_616


def test_kosmos_2_position_table_follows_max_position_embeddings() -> None:
    data = text_decoder("kosmos-2-defaults", max_position_embeddings=100, pad_token_id=101)
    assert load(data).spec.context_length == 100
    text = refusal(text_decoder("kosmos-2-defaults", max_position_embeddings=100, pad_token_id=102))
    assert "text_config.pad_token_id: 102 is outside the sinusoidal position table of 102" in text


@pytest.mark.parametrize(
    "cases", [("xglm/00", "xglm/02"), ("kosmos_2_text_model/00", "kosmos_2_text_model/09")]
)
def test_the_sinusoidal_table_holds_no_parameters(cases: tuple[str, str]) -> None:
    # Differential records of max_position_embeddings 2,048 and 1: tables of 2,050 rows and of 3,
    # the same parameters in transformers' count and in costcalc's.
    counts = set()
    for case in cases:
        record = records()[case]
        counts |= {record["parameters_total"], param_report(load(record["config"]).spec).total}
    assert len(counts) == 1


def test_the_sinusoidal_table_limits_no_length() -> None:
    # XGLMSinusoidalPositionalEmbedding.forward: max_pos = 2 + seq_len + cache_length; past the
    # table's rows it calls make_weights(max_pos, ...), a longer table.
    spec = load(config_data("xglm-564m")).spec
    assert position_limit(spec, 4 * spec.context_length) is None


@pytest.mark.parametrize(("fixture", "vocab"), [("gpt2", 50_257), ("bloom-560m", 250_880)])
def test_a_table_without_padding_index_takes_any_pad(fixture: str, vocab: int) -> None:
    assert config_class(fixture.split("-")[0]) is not None
    spec = load(config_data(fixture, pad_token_id=vocab + 1)).spec
    assert spec.vocab_size == vocab


def test_every_family_is_probed() -> None:
    data = _read(PADDING)
    probed = set(data["tables"]) | set(data["unpadded"])
    assert set(registry()) <= probed
    assert data["positions"] == {
        "kosmos_2_text_model": [["max_position_embeddings", 2]],
        "xglm": [["max_position_embeddings", 2]],
    }
    assert not set(data["tables"]) & set(data["unpadded"])
    assert data["transformers"] == "5.24.0"


def test_the_command_line_names_both_keys(cli: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config_data("llama-3.2-1b", pad_token_id=LLAMA_VOCAB), indent=2))
    result = cli("params", "--config", str(path))
    assert result.exit_code != 0
    text = " ".join(result.stderr.split())
    assert "Traceback" not in text
    assert "pad_token_id" in text and "vocab_size" in text and str(path.name) in text
