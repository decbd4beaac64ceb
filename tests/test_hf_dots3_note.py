"""Dots 3 Note as transformers saves it: ``per_layer_config`` gives the sliding layers' attention
sizes by layer index (``Dots3NoteTextConfig.__post_init__`` writes it from the ``swa_*``
defaults), ``layer_types`` lists the layers. Read either way, the model is the same one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costcalc.errors import ConfigError
from costcalc.loaders import load_file
from costcalc.macs import forward_macs
from costcalc.memory import kv_cache_elements
from costcalc.params import param_report
from tests.test_hf_families import ROOT, golden

RECORD = "dots3-note-defaults-text"


def _saved(tmp_path: Path, **changes: object) -> Path:
    data = json.loads((ROOT / golden()[RECORD]["config"]).read_text(encoding="utf-8"))
    text = data["text_config"]
    n = text["num_hidden_layers"]
    kinds = ["indexed_attention" if i < 2 or i % 4 == 1 else "sliding_attention" for i in range(n)]
    sliding = {
        "num_attention_heads": 64,
        "num_key_value_heads": 64,
        "kv_lora_rank": 1024,
        "qk_nope_head_dim": 192,
    }
    text.update(
        layer_types=kinds,
        sliding_window=512,
        per_layer_config={str(i): sliding for i, kind in enumerate(kinds) if kind != kinds[0]},
    )
    text.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_saved_form_is_the_same_model(tmp_path: Path) -> None:
    record = golden()[RECORD]
    spec = load_file(_saved(tmp_path)).spec
    assert param_report(spec).total == record["parameters_total"]
    macs = record["macs_forward"]
    assert forward_macs(spec, macs["batch"], macs["seq_len"]) == macs["macs_total"]
    cache = record["kv_cache"]
    indexer = cache["cache_elements_by_kind"]["indexer_keys"]
    expected = cache["kv_cache_elements"] + indexer
    assert kv_cache_elements(spec, cache["batch"], cache["seq_len"]) == expected


def test_an_override_costcalc_does_not_count_is_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path, per_layer_config={"2": {"moe_intermediate_size": 7}})
    with pytest.raises(ConfigError) as raised:
        load_file(path)
    assert [p.field for p in raised.value.problems] == ["text_config.per_layer_config"]
