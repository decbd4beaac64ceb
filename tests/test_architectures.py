"""A ``model_type`` transformers does not know, read as the class its ``architectures`` names
(Kimi-K2), and Falcon's first files (RefinedWeb, RefinedWebModel).

Golden values: tests/golden/hf_families.json (tests/reference/make_golden_families.py builds a
config of an unknown model_type from the config class of the class its ``architectures`` names,
and RWForCausalLM's files as FalconForCausalLM, its port), compared in tests/test_hf_families.py;
tests/golden/causal_lm_classes.json (tests/reference/make_architectures.py) for the tables.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError, UnsupportedModelError
from costcalc.files import Document
from costcalc.formats.architectures import CLASSES, transformers_model_types
from costcalc.formats.families import model_types
from costcalc.loaders import load_document, load_file
from costcalc.params import param_report
from tests.conftest import FIXTURES, Invoke
from tests.hf_helpers import config_data

HF = FIXTURES / "hf"
GOLDEN = Path(__file__).parent / "golden"


def classes_golden() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / "causal_lm_classes.json").read_text("utf-8"))
    return data


def family_record(name: str) -> dict[str, Any]:
    models = json.loads((GOLDEN / "hf_families.json").read_text(encoding="utf-8"))["models"]
    record: dict[str, Any] = models[name]
    return record


def test_the_class_table_is_transformers_for_every_family_costcalc_reads() -> None:
    golden = classes_golden()
    ours = set(model_types())
    assert golden["transformers"] == "5.24.0"
    assert {c: t for c, t in golden["classes"].items() if t in ours} == CLASSES
    assert CLASSES["DeepseekV3ForCausalLM"] == "deepseek_v3"
    assert transformers_model_types() == frozenset(golden["model_types"])
    assert "kimi_k2" not in transformers_model_types()


def test_kimi_k2_is_read_as_deepseek_v3_with_a_note() -> None:
    model = load_file(HF / "kimi-k2-instruct.json")
    assert param_report(model.spec).total == family_record("kimi-k2-instruct")["parameters_total"]
    assert param_report(model.spec).total == 1_026_408_209_408
    assert model.family == "deepseek_v3"
    [note] = [n for n in model.notes if "kimi_k2" in n]
    assert "read as DeepseekV3ForCausalLM" in note and "deepseek_v3" in note
    same = load_document(
        Document("x.json", config_data("kimi-k2-instruct", model_type="deepseek_v3"))
    )
    assert same.spec == model.spec


def test_the_first_class_costcalc_reads_is_used() -> None:
    data = config_data(
        "kimi-k2-instruct", architectures=["KimiK2ForCausalLM", "DeepseekV3ForCausalLM"]
    )
    assert load_document(Document("x.json", data)).family == "deepseek_v3"


def test_a_model_type_transformers_knows_is_never_read_as_another_class(
    cli: Invoke, tmp_path: Path
) -> None:
    """transformers builds BERT from model_type bert, whatever architectures says."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config_data("gpt2", model_type="bert")), encoding="utf-8")
    result = cli("params", "--config", str(path))
    assert result.exit_code == 1
    assert "unsupported model_type 'bert'" in result.stderr
    assert "architectures names" not in result.stderr


@pytest.mark.parametrize(
    ("architectures", "shown"),
    [
        (["KimiK3ForCausalLM"], "'KimiK3ForCausalLM'"),
        (["NoSuchModel", 4], "'NoSuchModel'"),
    ],
)
def test_nothing_matching_is_refused_naming_the_classes(
    cli: Invoke, tmp_path: Path, architectures: list[Any], shown: str
) -> None:
    path = tmp_path / "config.json"
    data = config_data("kimi-k2-instruct", model_type="kimi_k3", architectures=architectures)
    path.write_text(json.dumps(data), encoding="utf-8")
    result = cli("params", "--config", str(path))
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    text = " ".join(result.stderr.split())
    assert f"unsupported model_type 'kimi_k3' (its architectures names {shown}" in text
    assert "none of them a class costcalc reads" in text


def test_no_architectures_or_a_strange_one_is_the_plain_refusal() -> None:
    for architectures in (..., "DeepseekV3ForCausalLM", {"a": 1}, None):
        data = config_data("kimi-k2-instruct", architectures=architectures)
        with pytest.raises(UnsupportedModelError, match="unsupported model_type 'kimi_k2'"):
            load_document(Document("x.json", data))


def test_a_model_type_nothing_builds_is_refused_whatever_its_classes() -> None:
    """Without auto_map no code of the model's own builds an unknown model_type (a typo, say):
    transformers refuses it, and so does costcalc, without naming the classes."""
    data = config_data("kimi-k2-instruct", auto_map=...)
    with pytest.raises(UnsupportedModelError) as caught:
        load_document(Document("x.json", data))
    assert "architectures names" not in str(caught.value)
    typo = config_data("gpt2", model_type="gpt\u0662")
    with pytest.raises(UnsupportedModelError):
        load_document(Document("x.json", typo))


@pytest.mark.parametrize(
    ("fixture", "same_as"),
    [("falcon-7b-refinedwebmodel", "falcon-7b"), ("falcon-40b-refinedweb", "falcon-40b")],
)
def test_refined_web_files_count_as_falcon_s(fixture: str, same_as: str) -> None:
    """The RW files and transformers' own Falcon files of the same models build alike (7B:
    6,921,720,704, which the RefinedWebModel checkpoint's index confirms: its total_size,
    14,434,379,520 bytes of bf16, holds the tied LM head a second time, 65,024 x 4,544)."""
    model = load_file(HF / f"{fixture}.json")
    total = param_report(model.spec).total
    assert total == family_record(fixture)["parameters_total"]
    assert total == family_record(same_as)["parameters_total"]
    assert model.spec.resolved() == load_file(HF / f"{same_as}.json").spec.resolved()
    if fixture == "falcon-7b-refinedwebmodel":
        assert total + 65_024 * 4_544 == 14_434_379_520 // 2
    assert any("RWForCausalLM" in note for note in model.notes)


def test_refined_web_model_defaults_are_rwconfig_s() -> None:
    """RWConfig: multi_query and parallel_attn false unless given: H key/value heads and two
    norms a block."""
    data = config_data("falcon-7b-refinedwebmodel", multi_query=..., parallel_attn=...)
    spec = load_document(Document("config.json", data)).spec
    assert spec.kv_heads == spec.n_heads == 71
    assert spec.norms_per_block == 2


def test_refined_web_needs_its_sizes() -> None:
    data = config_data("falcon-40b-refinedweb", n_head=..., n_layer=...)
    with pytest.raises(ConfigError) as caught:
        load_document(Document("config.json", data))
    assert {p.field for p in caught.value.problems} == {"n_head", "n_layer"}
