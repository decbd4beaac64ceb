"""Laws every Hugging Face family obeys (hypothesis): the parts add up to the total, tying
removes exactly the output matrix, and a mixture of experts uses at most all its parameters.

Each family's configs are drawn by changing the sizes of one real fixture config.json, through
the keys that family's translator reports reading.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from costcalc.files import parse_document
from costcalc.formats.families import registry
from costcalc.loaders import load_document
from costcalc.params import param_report
from costcalc.spec import ModelSpec

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf"
TEMPLATES = {
    "gpt2": "gpt2",
    "openai-gpt": "openai-gpt",
    "gpt_neox": "pythia-160m",
    "opt": "opt-350m",
    "llama": "smollm2-135m",
    "mistral": "mistral-7b-v0.1",
    "qwen2": "qwen2.5-0.5b",
    "gemma": "gemma-2b",
    "phi": "phi-2",
    "phi3": "phi-3-mini-4k",
    "mixtral": "tiny-mixtral",
}


def test_every_family_has_a_template() -> None:
    assert set(TEMPLATES) <= set(registry())
    for family, fixture in TEMPLATES.items():
        assert json.loads((FIXTURES / f"{fixture}.json").read_text())["model_type"] == family


@st.composite
def hf_configs(draw: st.DrawFn) -> dict[str, Any]:
    """A config.json of some family with drawn sizes (tying left to the caller)."""
    family = draw(st.sampled_from(sorted(TEMPLATES)))
    data = json.loads((FIXTURES / f"{TEMPLATES[family]}.json").read_text())
    kv = draw(st.integers(1, 4))
    heads = kv * draw(st.integers(1, 4))
    head_dim = 8 * draw(st.integers(1, 8))  # rotary halves and quarters stay even
    width = heads * head_dim
    sizes = {
        "vocab_size": draw(st.integers(1, 5000)),
        "hidden_size": width,
        "n_embd": width,
        "num_hidden_layers": draw(st.integers(1, 6)),
        "n_layer": draw(st.integers(1, 6)),
        "num_attention_heads": heads,
        "n_head": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "intermediate_size": draw(st.integers(1, 512)),
        "ffn_dim": draw(st.integers(1, 512)),
        "n_inner": draw(st.integers(1, 512)),
        "word_embed_proj_dim": draw(st.sampled_from([width, draw(st.integers(1, 256))])),
        "partial_rotary_factor": 0.5,
    }
    data.update({key: value for key, value in sizes.items() if key in data})
    # a padding index inside the drawn vocabulary, as transformers' token table requires
    data["pad_token_id"] = draw(st.integers(0, sizes["vocab_size"] - 1))
    if family == "mixtral":
        experts = draw(st.integers(1, 8))
        data.update(num_local_experts=experts, num_experts_per_tok=draw(st.integers(1, experts)))
    return data


def spec_of(data: dict[str, Any], **changes: Any) -> ModelSpec:
    doc = parse_document(json.dumps({**data, **changes}), "config.json", json_text=True)
    return load_document(doc).spec


@settings(max_examples=150, deadline=None)
@given(hf_configs(), st.booleans())
def test_parts_add_up_to_the_total(data: dict[str, Any], tie: bool) -> None:
    spec = spec_of(data, tie_word_embeddings=tie)
    r = param_report(spec)
    assert r.per_block == r.attention + r.ffn + r.norms
    assert r.blocks == spec.n_layers * r.per_block
    parts = r.token_embedding + r.position_embedding + r.embedding_projection
    assert parts + r.blocks + r.final_norm + r.lm_head == r.total


@settings(max_examples=150, deadline=None)
@given(hf_configs())
def test_tied_and_untied_differ_by_the_output_matrix(data: dict[str, Any]) -> None:
    tied = spec_of(data, tie_word_embeddings=True)
    untied = spec_of(data, tie_word_embeddings=False)
    output_matrix = tied.vocab_size * tied.embed_width
    assert param_report(untied).total - param_report(tied).total == output_matrix
    assert param_report(tied).untied_total == param_report(untied).total


@settings(max_examples=150, deadline=None)
@given(hf_configs(), st.booleans())
def test_active_parameters_never_exceed_the_total(data: dict[str, Any], tie: bool) -> None:
    spec = spec_of(data, tie_word_embeddings=tie)
    r = param_report(spec)
    assert r.active <= r.total
    assert (r.active == r.total) == (spec.experts_active == spec.experts)
