"""Step-3.7-Flash's text decoder (step3p5) in both spellings: the Hub's legacy keys
(``moe_layers_enum``, ``attention_other_setting``, ``num_attention_groups``, ``moe_num_experts``,
per-layer lists padded with the prediction layers' entries) and the file transformers 5.24 saves
from it (checked by saving tiny-step3p5 with ``save_pretrained``): ``per_layer_config`` with
the sliding layers' heads, ``mlp_layer_types``, trimmed ``layer_types``. Read either way, the
model is the same one."""

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

RECORD = "tiny-step3p5"


def _file(tmp_path: Path, saved: bool, wrapper: dict[str, object], **text: object) -> Path:
    data = json.loads((ROOT / golden()[RECORD]["config"]).read_text(encoding="utf-8"))
    config = data["text_config"]
    if saved:
        n = config["num_hidden_layers"]
        kinds = config["layer_types"][:n]
        for key in ("moe_layers_enum", "attention_other_setting", "num_attention_groups"):
            del config[key]
        config.update(
            layer_types=kinds,
            mlp_layer_types=["dense", "dense"] + ["sparse"] * (n - 2),
            per_layer_config={
                str(i): {"num_attention_heads": 6}
                for i, kind in enumerate(kinds)
                if kind == "sliding_attention"
            },
            num_sliding_attention_heads=6,
            num_key_value_heads=2,
            n_routed_experts=config.pop("moe_num_experts"),
            num_experts_per_tok=config.pop("moe_top_k"),
        )
    data.update(wrapper)
    config.update(text)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("saved", [False, True])
def test_both_spellings_are_the_recorded_model(tmp_path: Path, saved: bool) -> None:
    record = golden()[RECORD]
    spec = load_file(_file(tmp_path, saved, {})).spec
    assert param_report(spec).total == record["parameters_total"]
    macs = record["macs_forward"]
    assert forward_macs(spec, macs["batch"], macs["seq_len"]) == macs["macs_total"]
    cache = record["kv_cache"]
    assert kv_cache_elements(spec, cache["batch"], cache["seq_len"]) == cache["kv_cache_elements"]


def test_only_the_wrapper_ties(tmp_path: Path) -> None:
    # Step3p7Config has no tie_word_embeddings of its own: untied unless the wrapper sets it.
    table = 128 * 64
    total = golden()[RECORD]["parameters_total"]
    untied = load_file(_file(tmp_path, False, {}, tie_word_embeddings=True)).spec
    assert param_report(untied).total == total
    tied = load_file(_file(tmp_path, False, {"tie_word_embeddings": True})).spec
    assert param_report(tied).total == total - table


def test_a_per_layer_override_costcalc_does_not_count_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path, True, {}, per_layer_config={"1": {"head_dim": 32}})
    with pytest.raises(ConfigError) as raised:
        load_file(path)
    assert [p.field for p in raised.value.problems] == ["text_config.per_layer_config"]
