"""Heads 1 wide rotated whole: transformers' rotary cos and sin are 2 wide, and what the
attention does with them is its own. costcalc/data/hf_head_one.json (written by
tests/reference/make_head_one.py, each family's fixture run on the meta device with heads 1 wide)
says, per family: ``broadcast`` (Llama's ``q * cos + rotate_half(q) * sin``: keys 2 wide in the
cache), ``pairs`` (an interleaved rotation finds no pair: Cohere's, ERNIE 4.5's) or
``sections`` (``mrope_section`` cannot split 2: GLM-OCR's, PaddleOCR-VL's), the last two failing
in the forward. The note beside the count says which; the differential sets' records of 1-wide
heads (tests/golden/differential*.json.gz, built independently) agree with the data.
"""

from __future__ import annotations

from typing import Any

import pytest

from costcalc.api import load
from costcalc.errors import CostcalcError
from costcalc.formats.hf_classes import HEAD_ONE, _read, config_class
from costcalc.formats.hf_rotary import HEAD_ONE_FAILS
from tests.test_differential import records

FAILURES = {
    "pairs": "Sizes of tensors must match except in dimension",
    "sections": "split_with_sizes expects split_sizes to sum exactly",
}


def head_one_records() -> list[tuple[str, dict[str, Any], tuple[str, ...]]]:
    """The differential records costcalc reads as heads 1 wide rotated whole, with its notes."""
    found = []
    for case, record in records().items():
        try:
            model = load(record["config"])
        except CostcalcError:
            continue
        if any(note.startswith("heads 1 wide, rotated whole") for note in model.notes):
            found.append((case, record, model.notes))
    return found


def test_the_differential_records_agree_with_the_data() -> None:
    checked = set()
    for case, record, notes in head_one_records():
        kind = _read(HEAD_ONE)["families"].get(record["family"])
        error = record.get("forward_error") or ""
        if kind in FAILURES:
            assert FAILURES[kind] in error, case
            assert HEAD_ONE_FAILS[kind] in " ".join(notes), case
            checked.add(kind)
        elif kind == "broadcast":
            if "kv_cache" not in record:  # no forward on meta, or one that fails otherwise
                fixture_runs = "kv_cache" in records()[f"{record['family']}/00"]
                assert not fixture_runs or any("do not group" in n for n in notes), case
                continue
            widths = {
                (k["tensors"]["keys"][-1], k["tensors"]["values"][-1])
                for k in record["kv_cache"]["cache_layer_kinds"]
            }
            assert widths == {(2, 1)}, case
            checked.add(kind)
    assert checked == {"broadcast", "pairs", "sections"}


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("cohere2_moe/06", "Cohere2MoeConfig's attention rotates interleaved pairs"),
        ("ernie4_5/07", "Ernie4_5Config's attention rotates interleaved pairs"),
        ("glm_ocr_text/02", "GlmOcrTextConfig's attention splits cos and sin into its"),
        ("paddleocr_vl_text/08", "mrope_section parts, which 2 dimensions cannot hold"),
    ],
)
def test_the_note_names_what_the_attention_does(case: str, words: str) -> None:
    notes = " ".join(load(records()[case]["config"]).notes)
    assert words in notes
    assert "transformers builds the model, but its forward fails" in notes
    assert "broadcasts against them" not in notes


def test_an_attention_that_broadcasts_keeps_its_note() -> None:
    notes = " ".join(load(records()["exaone4/03"]["config"]).notes)
    assert "each query and key broadcasts against them to 2 wide" in notes
    assert config_class("exaone4") is not None
    assert config_class("exaone4").head_one == "broadcast"  # type: ignore[union-attr]


def test_cohere2_rotates_sliding_layers_only() -> None:
    """modeling_cohere2.py: ``if self.sliding_window is not None: apply_rotary_pos_emb``. With
    no sliding layer nothing rotates: heads 1 wide stay 1 wide (and the forward runs); with
    one, its rotation of interleaved pairs fails on them."""
    config = {**records()["cohere2/00"]["config"], "head_dim": 1, "num_hidden_layers": 4}
    full = load({**config, "layer_types": ["full_attention"] * 4})
    assert full.spec.position == "none"
    assert {stack.key_width for stack in full.spec.stacks} == {1}
    assert "no layer slides" in " ".join(full.notes)
    mixed = load({**config, "layer_types": ["sliding_attention"] + ["full_attention"] * 3})
    assert mixed.spec.position == "rotary"
    assert HEAD_ONE_FAILS["pairs"] in " ".join(mixed.notes)


@pytest.mark.parametrize(
    ("factors", "head", "rotary", "key_width"),
    [
        ((None, None), 1, None, 1),  # int(1 x 0.334) = 0: nothing rotates
        ((1.0, 1.0), 1, 2, 2),  # cos and sin 2 wide: queries and keys broadcast to 2
        ((0.5, 0.5), 192, 96, 192),
        ((0.5, 1.0), 192, None, 192),  # the layer types differ: the whole head
    ],
)
def test_mimo_rotates_its_factor_of_each_head(
    factors: tuple[float | None, float | None], head: int, rotary: int | None, key_width: int
) -> None:
    """modeling_mimo_v2_flash.py: each layer type's rotary embedding takes ``int(head_dim x
    rope_parameters[type].get("partial_rotary_factor", 0.334))`` dimensions."""
    rope = {
        kind: {"rope_type": "default", "rope_theta": 10000.0}
        | ({} if factor is None else {"partial_rotary_factor": factor})
        for kind, factor in zip(("full_attention", "sliding_attention"), factors, strict=True)
    }
    config = records()["mimo_v2_flash/00"]["config"]
    spec = load({**config, "head_dim": head, "rope_parameters": rope}).spec
    assert spec.rotary_dim == rotary
    assert {stack.key_width for stack in spec.stacks} == {key_width}


def test_beam_refuses_heads_1_wide_rotated_on_some_layers_only() -> None:
    """modeling_beam.py: a layer type whose ``rope_parameters`` entry is None runs without
    positions (keys 1 wide), the others rotate (keys 2 wide): refused, not counted one way."""
    config = {**records()["beam/00"]["config"], "head_dim": 1}
    with pytest.raises(CostcalcError, match="some layers rotated and others not"):
        load(config)
    rope = {"rope_type": "default", "rope_theta": 10000.0}
    both = load({**config, "rope_parameters": {"sliding_attention": rope, "full_attention": rope}})
    assert {stack.key_width for stack in both.spec.stacks} == {2}
