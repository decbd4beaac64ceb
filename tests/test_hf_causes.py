"""Small Hugging Face configs off the golden path, counted against transformers' own build.

Golden values: tests/golden/hf_causes.json, written by tests/reference/make_golden_causes.py
(torch 2.13.0 + transformers 5.24.0, each config built on the meta device): each case sets off one
way of reading a file (a key left to its class default, a key under its other spelling, both
spellings given, a value the class or the modeling code overrides, tying a wrapper decides).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.loaders import LoadedModel, load_file
from costcalc.macs import forward_macs
from costcalc.memory import kv_cache_elements
from costcalc.params import param_report
from costcalc.spec import ModelSpec, structural_problems
from tests.conftest import GOLDEN

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf"


@cache
def cases() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = json.loads(
        (GOLDEN / "hf_causes.json").read_text(encoding="utf-8")
    )["cases"]
    return found


REFUSED = {
    "helium-head-dim": (
        "head_dim",
        "4 heads of 32 span 128, not hidden_size 64: "
        "HeliumAttention builds o_proj hidden_size x hidden_size",
    ),
    "olmoe-head-dim": (
        "head_dim",
        "4 heads of 32 span 128, not hidden_size 64: "
        "OlmoeAttention sizes q_norm and k_norm from hidden_size",
    ),
}
"""Cases transformers builds but costcalc refuses, with the reason: a model whose forward cannot
run (its modules do not fit together), or a layout costcalc has no fields for."""


@pytest.mark.parametrize("name", sorted(n for n in cases() if "build_error" in cases()[n]))
def test_refused_where_transformers_refuses(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="transformers refuses the file"):
        load(tmp_path, name)


def names(step: str = "parameters_total") -> list[str]:
    """The cases with ``step`` recorded that costcalc counts."""
    return [name for name in sorted(cases()) if step in cases()[name] and name not in REFUSED]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_the_reason(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load(tmp_path, name)
    key, reason = REFUSED[name]
    assert f"{key} (line " in str(refused.value)
    assert f"not supported: {reason}" in " ".join(str(refused.value).split())


def load(tmp_path: Path, name: str) -> LoadedModel:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cases()[name]["config"], indent=2), encoding="utf-8")
    return load_file(path)


@pytest.mark.parametrize("name", names())
def test_parameters_and_tying_match_transformers(tmp_path: Path, name: str) -> None:
    record = cases()[name]
    report = param_report(load(tmp_path, name).spec)
    assert report.total == record["parameters_total"]
    assert report.untied_total - report.total == record["parameters_untied_extra"]


@pytest.mark.parametrize("name", names("kv_cache"))
def test_cache_matches_transformers(tmp_path: Path, name: str) -> None:
    kv = cases()[name]["kv_cache"]
    spec = load(tmp_path, name).spec
    windows = [stack.sliding_window for stack in spec.stacks for _ in range(stack.n_layers)]
    assert windows == kv["layer_windows"]
    # Past its window a DynamicSlidingWindowLayer keeps window - 1 tokens after the forward;
    # costcalc counts the window the next token attends to (memory.kv_cache_tokens): equal
    # below it.
    if all(window is None or window > kv["seq_len"] for window in windows):
        assert kv_cache_elements(spec, kv["batch"], kv["seq_len"]) == kv["kv_cache_elements"]


@pytest.mark.parametrize("name", names("macs_forward"))
def test_forward_macs_match_flop_counter(tmp_path: Path, name: str) -> None:
    macs = cases()[name]["macs_forward"]
    spec = load(tmp_path, name).spec
    assert forward_macs(spec, macs["batch"], macs["seq_len"]) == macs["macs_total"]


NOTES = {
    "llama-class-defaults": "read as LlamaConfig's defaults (as transformers builds it): "
    "max_position_embeddings 2,048, intermediate_size 11,008.",
    "phimoe-top-k": "num_experts_per_tok is 3, but PhimoeForCausalLM routes each token to 2",
    "qwen2-width-not-divisible": "hidden_size 66 does not split into 4 equal heads; "
    "Qwen2Config takes it and its attention floors head_dim to 16 (the heads span 64).",
    "stablelm-odd-rotary": "partial_rotary_factor gives 5 rotary dimensions per head, an odd",
    "minimax_m2-odd-partial-rotary": "takes 3 frequencies (torch.arange(0, 5, 2)), so its cos "
    "and sin are 6 wide; counted as 6",
    "llama-head-dim-1": "heads 1 wide, rotated whole: transformers' rotary cos and sin are 2 wide",
    "llama-head-dim-3": "heads 3 wide, rotated whole: transformers builds the model",
    "qwen2-odd-width": "but its rotary cos and sin are 6 wide and its forward fails",
    "recurrent_gemma-width-not-divisible": "hidden_size 66 does not split into 4 equal heads; "
    "RecurrentGemmaConfig takes it and its attention floors head_dim to 16",
    "stablelm-no-rotary": "partial_rotary_factor gives 0 rotary dimensions per head (int(16 x "
    "0.0)): transformers' rotary embedding rotates nothing; read as no positions.",
    "llama-ungrouped-kv-heads": "3 query heads do not group over 2 key/value heads: "
    "transformers builds their projections (H d and K d), but its attention copies each "
    "key/value head H // K = 1 times,",
    "llama-more-kv-heads-than-query-heads": "2 query heads do not group over 4 key/value heads",
    "mixtral-top-k-above-experts": "num_experts_per_tok is 3, but there are 2 experts: "
    "transformers builds them, but its router picks the top 3 of 2 scores and fails; counted "
    "as built, the MACs as if each token ran all 2 experts.",
    "zamba-relu": "hidden_act 'relu' gates the shared MLP",
    "zamba2-relu": "hidden_act 'relu' gates the shared MLP",
    "qwen3_next-ungrouped-value-heads": "3 value heads do not group over 2 key heads: "
    "transformers builds the Gated DeltaNet's projections as sized, but its forward gives each "
    "key head Hv // Hk = 1 value heads,",
}
"""What costcalc says beside a count when it reads a value the file does not state."""


@pytest.mark.parametrize("name", sorted(NOTES))
def test_values_the_file_does_not_state_are_noted(tmp_path: Path, name: str) -> None:
    assert NOTES[name] in " ".join(load(tmp_path, name).notes)


CLASS_REFUSALS = {
    "qwen3-head-dim-7": (
        "head_dim",
        "7-wide heads rotated whole (partial_rotary_factor 1.0): transformers refuses the file "
        "(Qwen3Config's validate_rope",
    ),
    "mistral-odd-width": ("num_attention_heads", "(MistralConfig's validate_rope"),
    "llama-nested-rope-no-layer-types": (
        "head_dim",
        "7-wide heads rotated whole (partial_rotary_factor 1.0): transformers refuses the file "
        "(LlamaConfig's validate_rope",
    ),
    "qwen3-nested-rope-full-rotated-whole": (
        "head_dim",
        "7-wide heads rotated whole (partial_rotary_factor 1.0): transformers refuses the file "
        "(Qwen3Config's validate_rope",
    ),
    "internlm3-biases-differ": (
        "bias",
        "false beside qkv_bias true: transformers refuses the file (InternLM3Config's "
        "validate_architecture",
    ),
    "axk2-groups-half-set": ("n_group", "n_group 8 beside topk_group None"),
    "mellum-two-mtp-layers": ("num_mtp_layers", "2: Mellum has a single MTP layer"),
    "glm5_next-kv-heads": ("text_config.num_key_value_heads", "2 key/value heads beside 4"),
    "glm5_next-index-pool": ("text_config.index_kpool", "pools of 5 do not divide index_topk"),
    "qwen4_exp-output-gate": ("text_config.output_gate_type", "an output gate of 'tanh'"),
    "qwen4_exp-qsa-in-part": ("text_config.indexer_budget", "the QSA indexer needs"),
    "dots3_note-topk-group": ("text_config.topk_group", "2: expected 1 to n_group (1)"),
    "hy_v4_vl-mrope-section": (
        "text_config.qk_rope_head_dim",
        "mrope_section [12, 10, 10] beside qk_rope_head_dim 48: three entries summing to 24",
    ),
    "llama-head-dim-width-not-divisible": (
        "num_attention_heads",
        "hidden_size 66 does not split into 4 equal heads: transformers refuses the file "
        "(LlamaConfig's validate_architecture",
    ),
}
"""Files a configuration class refuses, with the key and the validator named: an odd head
rotated whole wider than 4 (transformers/modeling_rope_utils.py, validate_rope, lines 902-914;
rotary settings nested by layer type are read as one setting, whose factor defaults to 1, by a
class that has no layer types, lines 772-773 and 878-881, and entry by entry by one that has),
a width the heads do not divide whatever head_dim says (LlamaConfig.validate_architecture),
InternLM3's attention and MLP biases that differ (InternLM3Config.validate_architecture), and
the rules of other classes' validate_architecture (A.X K2's, Mellum's, GLM-5.3-Flash's,
Qwen4-Exp's, Dots 3 Note's and HY V4 VL's routing groups, MTP layers, heads, indexer keys and
rotary sections)."""


@pytest.mark.parametrize("name", sorted(CLASS_REFUSALS))
def test_class_validators_name_the_key(tmp_path: Path, name: str) -> None:
    assert "build_error" in cases()[name]
    with pytest.raises(ConfigError) as refused:
        load(tmp_path, name)
    key, reason = CLASS_REFUSALS[name]
    assert f"{key} (line " in str(refused.value)
    assert reason in " ".join(str(refused.value).split())


def test_rotary_widths_as_the_rotary_embedding_builds_them(tmp_path: Path) -> None:
    """cos and sin are 2 ceil(r / 2) wide (torch.arange(0, r, 2) frequencies, doubled): an odd
    partial count rotates one more; a head 1 wide broadcasts its queries and keys to 2
    (the cache and the MACs above check what that costs)."""
    partial = load(tmp_path, "minimax_m2-odd-partial-rotary").spec
    assert (partial.rotary_width, partial.key_width) == (6, 10)
    one = load(tmp_path, "llama-head-dim-1").spec
    assert (one.head_width, one.rotary_width, one.key_width) == (1, 2, 2)


@pytest.mark.parametrize("name", sorted(n for n in cases() if cases()[n].get("forward_error")))
def test_a_model_that_cannot_run_is_counted_as_built_and_says_so(tmp_path: Path, name: str) -> None:
    """transformers builds the model and its forward fails (recorded on the CPU, real
    weights): costcalc counts the weights it builds and says that the forward fails."""
    loaded = load(tmp_path, name)
    assert param_report(loaded.spec).total == cases()[name]["parameters_total"]
    assert "fails" in " ".join(loaded.notes)


GQA = {"vocab_size": 100, "d_model": 64, "n_layers": 1, "context_length": 32, "n_heads": 4}


@pytest.mark.parametrize(
    ("sizes", "problem"),
    [
        ({"n_kv_heads": 3}, "4 query heads cannot be grouped over 3 key/value heads"),
        ({"n_kv_heads": 2, "ungrouped_kv_heads": True}, "4 query heads group over 2"),
        ({"mixer": "mla", "ungrouped_kv_heads": True}, "applies to attention blocks"),
        (
            {"n_kv_heads": 3, "ungrouped_kv_heads": True, "attention_experts": 4},
            "routes whole groups of query heads",
        ),
    ],
)
def test_heads_that_do_not_group_are_marked_as_such(sizes: dict[str, Any], problem: str) -> None:
    """A costcalc config says that its heads do not group (``ungrouped_kv_heads``), as a
    Hugging Face config is read; a mark where they do group is an error too."""
    spec = ModelSpec.model_construct(**{**GQA, **sizes})
    assert any(problem in message for _, message in structural_problems(spec))
    marked = ModelSpec(**{**GQA, "n_kv_heads": 3, "ungrouped_kv_heads": True})
    assert param_report(marked).total > 0


@pytest.mark.parametrize(
    ("value_heads", "ungrouped", "problem"),
    [
        (3, False, "3 value heads cannot be grouped over 2 key heads"),
        (4, True, "4 value heads group over 2 key heads; ungrouped is for heads that do not"),
    ],
)
def test_gated_deltanet_heads_that_do_not_group_are_marked(
    value_heads: int, ungrouped: bool, problem: str
) -> None:
    from costcalc.anatomy.gated_deltanet import PART, GatedDeltaNetSizes

    sizes = GatedDeltaNetSizes(
        key_heads=2,
        value_heads=value_heads,
        key_head_dim=8,
        value_head_dim=8,
        ungrouped=ungrouped,
    )
    assert [message[: len(problem)] for message in PART.problems(sizes)] == [problem]
    assert not list(PART.problems(sizes.model_copy(update={"ungrouped": not ungrouped})))


@pytest.mark.parametrize(
    ("fixture", "key"),
    [
        ("tiny-bamba", "mamba_expand"),
        ("tiny-bamba", "mamba_d_head"),
        ("tiny-falcon-h1", "mamba_d_head"),
    ],
)
def test_a_null_mamba_size_is_refused(tmp_path: Path, fixture: str, key: str) -> None:
    """BambaConfig.validate_architecture multiplies ``mamba_expand * hidden_size`` and
    ``mamba_d_head * mamba_n_heads`` (transformers/models/bamba/configuration_bamba.py, lines
    105-109; FalconH1Config alike): a null fails there (the differential records bamba/12 and
    falcon_h1/15 hold transformers' refusal)."""
    data = json.loads((FIXTURES / f"{fixture}.json").read_text(encoding="utf-8"))
    data[key] = None
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_file(path)
    assert f"{key} (line " in str(refused.value)
    assert "null, which it multiplies" in str(refused.value)
    assert "transformers refuses the file" in " ".join(str(refused.value).split())
