"""A key of a Hugging Face config near one its family reads is a warning, never silence:
transformers keeps an unknown key as a plain attribute, so a misspelled optional key leaves its
default in place (Llama-3.1-70B with ``num_key_value_head`` counts as multi-head attention)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costcalc.api import count
from costcalc.errors import ConfigError
from costcalc.files import read_document
from costcalc.loaders import load_document
from costcalc.near_keys import distance, near_keys
from tests.conftest import FIXTURES, Invoke

LLAMA_70B = {
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
}
"""meta-llama/Llama-3.1-70B's sizes; its other keys are those of the 8B fixture."""


def llama_70b(tmp_path: Path, **changes: Any) -> Path:
    config = json.loads((FIXTURES / "hf/llama-3.1-8b.json").read_text())
    config.update(LLAMA_70B)
    for old, new in changes.items():
        config[new] = config.pop(old)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config, indent=2))
    return path


def test_a_misspelled_key_of_llama_3_1_70b_is_a_warning(cli: Invoke, tmp_path: Path) -> None:
    assert count(llama_70b(tmp_path)).parameters.total == 70_553_706_496
    path = llama_70b(tmp_path, num_key_value_heads="num_key_value_head")
    result = cli("check", str(path), "--format", "json")
    assert result.exit_code == 0  # a warning: the file passes
    (record,) = json.loads(result.stdout)
    assert record["parameters"] == 79_948_947_456  # what transformers builds too: 64 kv heads
    assert record["findings"] == []
    (warning,) = record["warnings"]
    assert warning["field"] == "num_key_value_head"
    lines = path.read_text().splitlines()
    assert warning["line"] == 1 + next(i for i, line in enumerate(lines) if '_value_head"' in line)
    assert "did you mean num_key_value_heads, which the file does not give?" in warning["message"]
    assert "transformers ignores it too" in warning["message"]
    table = cli("check", str(path))
    assert table.exit_code == 0
    assert "warning: num_key_value_head: " in table.stdout
    assert table.stdout.splitlines()[-1] == "1 file, 0 failed, 1 warning"


def test_strict_makes_warnings_failures(cli: Invoke, tmp_path: Path) -> None:
    path = llama_70b(tmp_path, num_key_value_heads="num_key_value_head")
    result = cli("check", str(path), "--strict", "--format", "json")
    assert result.exit_code == 1
    (record,) = json.loads(result.stdout)
    assert record["warnings"] == [] and record["findings"][0]["field"] == "num_key_value_head"


def test_github_annotations_carry_warnings(cli: Invoke, tmp_path: Path) -> None:
    path = llama_70b(tmp_path, num_key_value_heads="num_key_value_head")
    lines = cli("check", str(path), "--format", "github").stdout.splitlines()
    assert lines[0].startswith(f"::warning file={path},line=")
    assert "title=costcalc check::num_key_value_head: not a key this family reads, and" in lines[0]
    assert lines[-1] == "1 file, 0 failed, 1 warning"


def test_params_shows_the_warning_as_a_note(cli: Invoke, tmp_path: Path) -> None:
    path = llama_70b(tmp_path, num_key_value_heads="num_key_value_head")
    data = json.loads(cli("params", "-c", str(path), "-f", "json").stdout)
    assert any(
        note.startswith("num_key_value_head: not a key this family reads") for note in data["notes"]
    )
    assert "did you mean num_key_value_heads, which the file does not give?" in " ".join(
        cli("params", "-c", str(path)).stdout.split()
    )


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("num_key_value_head", "num_key_value_heads"),  # a letter left out
        ("num_hidden_layer", "num_hidden_layers"),
        ("intermediate_szie", "intermediate_size"),  # two letters swapped: one edit
        ("Num_Key_Value_Heads", "num_key_value_heads"),  # case
        ("num-key-value-heads", "num_key_value_heads"),  # - for _
        ("rms_norm_epsilon", None),  # 4 edits from rms_norm_eps
        ("tie_word_embedding", "tie_word_embeddings"),
    ],
)
def test_which_keys_are_near(key: str, meant: str | None, tmp_path: Path) -> None:
    path = llama_70b(tmp_path, **{(meant or "rms_norm_eps"): key})
    try:
        warnings = load_document(read_document(path)).warnings
    except ConfigError as exc:  # a required key misspelled: the hint comes with the error
        warnings = tuple(p for p in exc.problems if p.field == key)
    assert [w.field for w in warnings] == ([key] if meant else [])
    if meant:
        assert f"did you mean {meant}, which the file does not give?" in warnings[0].message


def test_the_distance_rule() -> None:
    assert distance("num_key_value_head", "num_key_value_heads", 2) == 1
    assert distance("abcd", "abdc", 2) == 1  # a swap is one edit
    assert distance("kitten", "sitting", 5) == 3
    assert distance("kitten", "sitting", 1) == 2  # past the limit: limit + 1
    # one edit for keys of up to 6 characters, two for longer ones
    assert near_keys(["n_embdd"], {"n_embd"}) == [("n_embdd", ["n_embd"])]
    assert near_keys(["n_emd"], {"n_embd"}) == [("n_emd", ["n_embd"])]
    assert near_keys(["n_ed"], {"n_embd"}) == []
    assert near_keys(["hiden_siz"], {"hidden_size"}) == [("hiden_siz", ["hidden_size"])]
    # a key the file gives is read; one near a key the file gives too is not reported
    assert near_keys(["hidden_size", "hidden_sizes"], {"hidden_size"}) == []


@given(st.text("abcde_", max_size=8), st.text("abcde_", max_size=8), st.integers(0, 3))
def test_a_limit_only_caps_the_distance(a: str, b: str, limit: int) -> None:
    """The cheap bounds (lengths, sets of characters) and the early stop never give another
    answer than the whole table would (with a limit past both lengths none of them applies):
    the distance itself within the limit, a number past the limit beyond it."""
    whole, found = distance(a, b, 16), distance(a, b, limit)
    assert found == whole if whole <= limit else found > limit


def test_no_published_config_has_a_near_key() -> None:
    """Every Hugging Face config the tests hold (real published files and class defaults) reads
    without a warning: the rule flags misspellings, not the keys transformers writes."""
    checked = 0
    for path in sorted((FIXTURES / "hf").glob("*.json")):
        doc = read_document(path)
        try:
            model = load_document(doc)
        except Exception:  # refused files are other tests' business
            continue
        checked += 1
        assert model.warnings == (), path.name
    assert checked > 150


def class_key_warnings(fixture: str, tmp_path: Path, **keys: Any) -> list[str]:
    config = json.loads((FIXTURES / "hf" / f"{fixture}.json").read_text())
    config.update(keys)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config, indent=2))
    return [w.field for w in load_document(read_document(path)).warnings]


def test_a_class_key_costcalc_does_not_read_is_no_typo(tmp_path: Path) -> None:
    """MellumConfig's ``mtp_layer_types`` (the MTP layers' attention kinds, which size nothing
    costcalc counts) is one edit from ``mlp_layer_types``, which the Mellum translator reads and
    this file leaves out: a field of the class is spelled as transformers reads it."""
    assert class_key_warnings("mellum2-12b-a2.5b", tmp_path, mtp_layer_types=None) == []
    assert class_key_warnings("mellum2-12b-a2.5b", tmp_path, mtp_layer_typse=None) == [
        "mtp_layer_typse"
    ]


def test_a_typo_of_a_class_key_is_found(tmp_path: Path) -> None:
    """LlamaConfig's ``pad_token_id`` sizes nothing costcalc counts, but a misspelling of it is
    ignored by transformers too (the class default stays): a warning, as for a key costcalc
    reads."""
    warnings = class_key_warnings("llama-3.2-1b", tmp_path, pad_token_ids=0)
    assert warnings == ["pad_token_ids"]
    assert class_key_warnings("llama-3.2-1b", tmp_path, pad_token_id=0) == []
