"""Internal consistency of tests/golden/hf_families.json (written by make_golden_families.py).

These checks read only the JSON and the fixture files; they need neither torch nor transformers.
"""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = json.loads((ROOT / "tests" / "golden" / "hf_families.json").read_text())
MODELS = DATA["models"]
BUILT = {name: record for name, record in MODELS.items() if "parameters_total" in record}


def test_header():
    assert DATA["generator"] == "tests/reference/make_golden_families.py"
    assert DATA["torch"] and DATA["transformers"] and DATA["date"]
    assert len(BUILT) >= 40


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fixture_exists_and_is_listed(name):
    record = MODELS[name]
    path = ROOT / record["config"]
    assert path.is_file()
    assert json.loads(path.read_text())["model_type"]
    assert f"| {path.name} |" in (ROOT / "tests" / "fixtures" / "hf" / "SOURCES.md").read_text()


@pytest.mark.parametrize("name", sorted(BUILT))
def test_layers_plus_other_is_total(name):
    record = BUILT[name]
    per_layer = record["parameters_per_layer"]
    assert isinstance(per_layer, list) and len(per_layer) == record["n_layers"]
    shared = record.get("parameters_shared", 0)  # held by several layers, counted once
    assert sum(per_layer) + shared + record["parameters_other"] == record["parameters_total"]
    other = sum(_numel(s) for s in record["parameters_by_tensor_other"].values())
    assert other == record["parameters_other"]


@pytest.mark.parametrize("name", sorted(BUILT))
def test_layer_kinds_cover_every_layer(name):
    record = BUILT[name]
    seen = sorted(i for kind in record["layer_kinds"] for i in kind["layers"])
    assert seen == list(range(record["n_layers"]))
    for kind in record["layer_kinds"]:
        own = {n: s for n, s in kind["tensors"].items() if n not in kind.get("shared_tensors", ())}
        assert sum(_numel(s) for s in own.values()) == kind["parameters"]
        for i in kind["layers"]:
            assert record["parameters_per_layer"][i] == kind["parameters"]
    layer0 = next(k for k in record["layer_kinds"] if 0 in k["layers"])
    assert layer0["tensors"] == record["parameters_by_tensor_layer0"]


@pytest.mark.parametrize("name", sorted(BUILT))
def test_tied_extra(name):
    record = BUILT[name]
    assert (record["parameters_untied_extra"] > 0) == record["tied_embeddings"]


@pytest.mark.parametrize("name", sorted(n for n, r in BUILT.items() if "macs_forward" in r))
def test_macs_parts_add_up(name):
    macs = BUILT[name]["macs_forward"]
    assert macs["macs_total"] == macs["flops_total"] // 2
    assert sum(macs["flops_by_op"].values()) == macs["flops_total"]
    parts = (
        macs["macs_lm_head"]
        + macs["macs_attention_pair"]
        + macs["macs_bmm_other"]
        + macs["macs_linear"]
        + macs["macs_experts"]
        + sum(macs["macs_other_ops"].values())
    )
    assert parts == macs["macs_total"]


@pytest.mark.parametrize(
    "name", sorted(n for n, r in BUILT.items() if "cache_elements_total" in r.get("kv_cache", {}))
)
def test_cache_counts_add_up(name):
    kv = BUILT[name]["kv_cache"]
    assert sum(kv["cache_elements_per_layer"]) == kv["cache_elements_total"]
    assert sum(kv["cache_elements_by_kind"].values()) == kv["cache_elements_total"]
    by_kind = kv["cache_elements_by_kind"]
    assert by_kind.get("keys", 0) + by_kind.get("values", 0) == kv["kv_cache_elements"]
    seen = sorted(i for kind in kv["cache_layer_kinds"] for i in kind["layers"])
    assert seen == list(range(kv["n_cache_layers"]))


def test_every_record_has_macs_or_an_error():
    for name, record in BUILT.items():
        assert ("macs_forward" in record) != ("macs_error" in record), name
        assert ("kv_cache" in record) != ("kv_error" in record), name


def test_sliding_window_cap_at_long_sequence():
    # Sliding layers keep sliding_window - 1 tokens once T reaches the window.
    long = MODELS["gemma-2-2b"]["kv_cache_long"]
    kinds = {k["layer_class"]: k for k in long["cache_layer_kinds"]}
    assert kinds["DynamicSlidingWindowLayer"]["tensors"]["keys"][2] == 4095
    assert kinds["DynamicLayer"]["tensors"]["keys"][2] == 4096


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n
