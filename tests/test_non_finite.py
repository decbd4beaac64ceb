"""Numbers that are not finite in a Hugging Face config.json, read as transformers reads them.

NVIDIA's Nemotron-H files hold ``"time_step_limit": [0.0, Infinity]`` (Python's ``json`` writes a
float infinity so), and transformers 5 writes ``{"__float__": "Infinity"}`` for one
(``PreTrainedConfig._encode_special_floats``). Both are read as the float, in keys that size
nothing; a key the count reads that holds one is a clear error naming it. costcalc's own
formats hold sizes and settings only, so there any such number is refused.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import costcalc
from costcalc.errors import ConfigError, FileReadError
from costcalc.files import parse_document, read_document
from costcalc.loaders import load_document, load_file
from costcalc.params import param_report
from tests.conftest import FIXTURES, Invoke

NEMOTRON_H_56B = FIXTURES / "hf" / "nemotron-h-56b.json"
GOLDEN = Path(__file__).parent / "golden" / "hf_families.json"


def golden_total(record: str) -> int:
    models = json.loads(GOLDEN.read_text(encoding="utf-8"))["models"]
    return int(models[record]["parameters_total"])


def nemotron_text(**replace: str) -> str:
    """The Nemotron-H-56B file's text, with ``"key": old`` text replaced as given."""
    text = NEMOTRON_H_56B.read_text(encoding="utf-8")
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    return text


def test_the_published_nemotron_h_file_with_infinity_counts_as_transformers() -> None:
    """The file holds ``Infinity`` as written; transformers 5.24 builds 56,324,350,464."""
    assert "    Infinity\n" in NEMOTRON_H_56B.read_text(encoding="utf-8")
    model = load_file(NEMOTRON_H_56B)
    assert param_report(model.spec).total == golden_total("nemotron-h-56b") == 56_324_350_464


@pytest.mark.parametrize(
    "written",
    [
        '{"__float__": "Infinity"}',
        "-Infinity",
        "NaN",
        '{"__float__": "NaN"}',
        "1e999",
    ],
)
def test_each_spelling_of_a_number_not_finite_is_read_where_nothing_reads_it(
    written: str,
) -> None:
    text = nemotron_text(**{"    Infinity\n": f"    {written}\n"})
    doc = parse_document(text, "config.json", json_text=True)
    assert math.isnan(doc.data["time_step_limit"][1]) or math.isinf(doc.data["time_step_limit"][1])
    assert param_report(load_document(doc).spec).total == 56_324_350_464


def test_a_float_tag_is_read_only_as_transformers_reads_one() -> None:
    """``_decode_special_floats`` reads a mapping of ``__float__`` alone, naming one of the three;
    any other mapping stays a mapping."""
    text = (
        '{"a": {"__float__": "Infinity"}, "b": {"__float__": "Infinity", "c": 1}, '
        '"d": {"__float__": "inf"}, "e": [{"__float__": "-Infinity"}]}'
    )
    data = parse_document(text, "x.json", json_text=True).data
    assert data["a"] == math.inf
    assert data["b"] == {"__float__": "Infinity", "c": 1}
    assert data["d"] == {"__float__": "inf"}
    assert data["e"] == [-math.inf]


def test_key_lines_survive_a_float_tag() -> None:
    text = '{\n "a": {"__float__": "NaN"},\n "b": 1\n}'
    doc = parse_document(text, "x.json", json_text=True)
    assert doc.line_of(("b",)) == 3


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('"hidden_size": 8192', '"hidden_size": Infinity', "hidden_size"),
        ('"num_attention_heads": 64', '"num_attention_heads": NaN', "num_attention_heads"),
        ('"mamba_head_dim": 64', '"mamba_head_dim": {"__float__": "Infinity"}', "mamba_head_dim"),
        ('"vocab_size": 131072', '"vocab_size": -Infinity', "vocab_size"),
        ('"mlp_bias": false', '"mlp_bias": NaN', "mlp_bias"),
    ],
)
def test_a_key_the_count_reads_that_is_not_finite_is_named(old: str, new: str, key: str) -> None:
    """(``num_hidden_layers`` is no such key here: NemotronHConfig derives the count from the
    pattern and ignores it.)"""
    doc = parse_document(nemotron_text(**{old: new}), "config.json", json_text=True)
    with pytest.raises(ConfigError) as caught:
        load_document(doc)
    [problem] = [p for p in caught.value.problems if p.field == key]
    assert "is not a finite number" in problem.message or "expected" in problem.message
    assert problem.line == doc.line_of((key,))


def test_the_size_error_says_why(cli: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(nemotron_text(**{'"hidden_size": 8192': '"hidden_size": Infinity'}), "utf-8")
    result = cli("params", "--config", str(path))
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert (
        "hidden_size (line 18): Infinity is not a finite number, and the count reads this key"
        in result.stderr
    )


def test_check_and_params_read_the_file(cli: Invoke) -> None:
    checked = cli("check", str(NEMOTRON_H_56B))
    assert checked.exit_code == 0, checked.stdout
    assert "56,324,350,464 parameters" in checked.stdout
    counted = cli("params", "--config", str(NEMOTRON_H_56B), "--format", "json")
    assert counted.exit_code == 0
    assert "Infinity" not in counted.stdout and "NaN" not in counted.stdout


def test_the_python_api_takes_the_mapping_json_load_gives() -> None:
    data: dict[str, Any] = json.loads(NEMOTRON_H_56B.read_text(encoding="utf-8"))
    assert data["time_step_limit"][1] == math.inf
    assert costcalc.count(costcalc.load(data)).parameters.total == 56_324_350_464


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"vocab_size": 64, "n_layers": 2, "gap": Infinity}', "gap: inf is not a number"),
        ('{"n_embd": 64, "n_layer": 2, "n_head": 4, "dropout": NaN}', "dropout: nan is not"),
    ],
)
def test_costcalc_and_nanogpt_files_refuse_any(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "model.json"
    path.write_text(text, encoding="utf-8")
    doc = read_document(path)
    with pytest.raises(FileReadError, match=message):
        load_document(doc)
