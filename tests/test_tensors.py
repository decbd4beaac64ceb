"""Parameter tensors: shapes and counts against the tensors transformers builds."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given

from costcalc.loaders import load_preset
from costcalc.params import total_params
from costcalc.presets import preset_names
from costcalc.spec import ModelSpec
from costcalc.tensors import Tensor, block_tensors, parameter_tensors, tensor_count
from tests.golden_models import every_model, golden, golden_spec, memory_reference
from tests.spec_strategies import specs


def as_multiset(shapes: list[list[int]]) -> Counter[tuple[int, ...]]:
    """Shapes with their dimensions sorted: GPT-2's Conv1D stores (in, out), nn.Linear (out, in)."""
    return Counter(tuple(sorted(shape)) for shape in shapes)


def tensor_multiset(tensors: list[Tensor]) -> Counter[tuple[int, ...]]:
    """The same for costcalc's tensors, each counted ``copies`` times."""
    counts: Counter[tuple[int, ...]] = Counter()
    for t in tensors:
        counts[tuple(sorted(t.shape))] += t.copies
    return counts


def elements_of(tensors: list[Tensor]) -> int:
    return sum(t.elements for t in tensors)


GOLDEN_SHAPES = sorted(every_model())


@pytest.mark.parametrize("name", GOLDEN_SHAPES)
def test_block_tensors_are_those_transformers_builds(name: str) -> None:
    # hf_reference(_extra).json: parameters_by_tensor_layer0 (make_golden(_defaults).py)
    expected = golden(name)["parameters_by_tensor_layer0"].values()
    assert tensor_multiset(block_tensors(golden_spec(name))) == as_multiset(list(expected))


@pytest.mark.parametrize("name", GOLDEN_SHAPES)
def test_model_tensors_are_those_transformers_builds(name: str) -> None:
    # hf_reference(_extra).json: layer-0 tensors x layers + parameters_by_tensor_other
    record = golden(name)
    expected = list(record["parameters_by_tensor_layer0"].values()) * record["n_layers"]
    expected += record["parameters_by_tensor_other"].values()
    assert tensor_multiset(parameter_tensors(golden_spec(name))) == as_multiset(expected)


@pytest.mark.parametrize(("name", "tensors"), [("gpt2", 148), ("qwen2.5-0.5b", 290)])
def test_tensor_count_is_what_the_optimizer_sees(name: str, tensors: int) -> None:
    # tests/golden/memory_reference.json: len(model.parameters()) given to torch.optim.AdamW
    recorded = memory_reference()["models"][name]["optimizers"]["adamw"]["n_param_tensors"]
    assert recorded == tensors
    assert tensor_count(golden_spec(name)) == tensors


def test_fusing_qkv_changes_tensors_not_parameters() -> None:
    qwen = load_preset("qwen2.5-0.5b").spec
    fused = qwen.model_copy(update={"fused_qkv": True})
    # q/k/v weights and biases: 6 tensors become 2 in each of the 24 blocks
    assert tensor_count(qwen) - tensor_count(fused) == 4 * 24
    assert elements_of(parameter_tensors(fused)) == total_params(qwen)


@pytest.mark.parametrize("name", preset_names())
def test_preset_tensors_add_up_to_the_parameter_count(name: str) -> None:
    spec = load_preset(name).spec
    assert elements_of(parameter_tensors(spec)) == total_params(spec)


@given(specs())
def test_tensors_add_up_to_the_parameter_count(spec: ModelSpec) -> None:
    assert elements_of(parameter_tensors(spec)) == total_params(spec)


@given(specs())
def test_tensor_count_is_linear_in_layers(spec: ModelSpec) -> None:
    deeper = spec.model_copy(update={"n_layers": spec.n_layers + 1})
    block = sum(t.copies for t in block_tensors(spec))
    assert tensor_count(deeper) - tensor_count(spec) == block


@pytest.mark.parametrize(
    ("preset", "name"),
    [
        ("gpt2-small", "gpt2"),
        ("qwen2.5-0.5b", "qwen2.5-0.5b"),
        ("book-gpt-small", "book-gpt-small"),
    ],
)
def test_presets_have_the_tensors_of_their_models(preset: str, name: str) -> None:
    # the preset and the model's config.json describe the same tensors (golden shapes above)
    spec = load_preset(preset).spec
    assert parameter_tensors(spec) == parameter_tensors(golden_spec(name))


def test_fusing_gate_and_up_needs_a_gate() -> None:
    with pytest.raises(ValueError, match="a plain mlp FFN has no gate to fuse"):
        load_preset("gpt2-small", {"fused_gate_up": True})
