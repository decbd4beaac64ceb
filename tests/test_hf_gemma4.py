"""Gemma 4's text decoder: the settings its golden model (gemma-4-31b) leaves out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.loaders import load_file
from costcalc.lora import family_names, sites
from costcalc.macs import attention_pair_macs, forward_macs
from costcalc.memory import kv_cache_elements
from costcalc.params import param_report
from costcalc.spec import ModelSpec
from costcalc.tensors import block_tensors
from tests.conftest import FIXTURES, GOLDEN


def text_spec(tmp_path: Path, **changes: Any) -> ModelSpec:
    """gemma-4-31b.json with keys of its ``text_config`` changed (``...`` deletes a key)."""
    data = json.loads((FIXTURES / "hf" / "gemma-4-31b.json").read_text())
    text = data["text_config"]
    for key, value in changes.items():
        if value is ...:
            text.pop(key, None)
        else:
            text[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return load_file(path).spec


def test_full_layers_have_their_own_heads_and_reuse_keys_as_values(tmp_path: Path) -> None:
    sliding, full = text_spec(tmp_path).stacks
    assert (sliding.n_layers, sliding.head_width, sliding.kv_heads) == (50, 256, 16)
    assert (sliding.sliding_window, sliding.keys_as_values) == (1024, False)
    assert (full.n_layers, full.head_width, full.kv_heads) == (10, 512, 4)
    assert (full.sliding_window, full.keys_as_values) == (None, True)


def test_without_keys_as_values_full_layers_keep_the_key_value_heads(tmp_path: Path) -> None:
    full = text_spec(tmp_path, attention_k_eq_v=False).stacks[1]
    assert (full.head_width, full.kv_heads, full.keys_as_values) == (512, 16, False)


@pytest.mark.parametrize(
    ("layers", "kinds"), [(8, [(6, 1024), (2, None)]), (4, [(3, 1024), (1, None)])]
)
def test_default_layers_end_with_a_full_layer(
    tmp_path: Path, layers: int, kinds: list[tuple[int, int | None]]
) -> None:
    """Every 6th layer is full and transformers forces the last one full too."""
    spec = text_spec(tmp_path, num_hidden_layers=layers, layer_types=...)
    assert [(s.n_layers, s.sliding_window) for s in spec.stacks] == kinds


def test_a_listed_last_layer_is_forced_full(tmp_path: Path) -> None:
    listed = ["sliding_attention"] * 6
    spec = text_spec(tmp_path, num_hidden_layers=6, layer_types=listed)
    assert [(s.n_layers, s.sliding_window) for s in spec.stacks] == [(5, 1024), (1, None)]


def test_the_moe_block_needs_its_sizes(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"text_config\.num_experts.*required"):
        text_spec(tmp_path, enable_moe_block=True)


def test_the_moe_block_runs_the_dense_mlp_beside_the_experts(tmp_path: Path) -> None:
    """26B-A4B: 128 experts of 704, top 8, beside the MLP of 2,112; the router's scales, 3 more
    norms; 3.8B active of 25.2B (the model card's figures)."""
    spec = load_file(FIXTURES / "hf" / "gemma-4-26b-a4b.json").spec
    block = spec.stacks[0]
    assert (block.moe_experts, block.moe_top_k, block.expert_width) == (128, 8, 704)
    assert (block.moe_shared_ffn_hidden, block.norms_per_block) == (2112, 7)
    names = {t.name for t in block_tensors(block)}
    assert {"mlp.router.scale", "mlp.router.per_expert_scale"} <= names
    report = param_report(spec)
    assert (report.total, report.active) == (25_233_141_760, 3_822_530_560)


def test_per_layer_inputs_are_on_by_default(tmp_path: Path) -> None:
    """A config that leaves out hidden_size_per_layer_input builds per-layer inputs of 256,
    with a table of 262,144 rows whatever vocab_size is."""
    spec = text_spec(tmp_path, hidden_size_per_layer_input=..., vocab_size=1000)
    assert (spec.per_layer_input_width, spec.per_layer_rows) == (256, 262_144)
    assert text_spec(tmp_path).per_layer_input_width is None


def test_per_layer_inputs_add_a_table_a_projection_and_a_branch_per_block(tmp_path: Path) -> None:
    plain = text_spec(tmp_path)
    spec = text_spec(tmp_path, hidden_size_per_layer_input=8, vocab_size_per_layer_input=100)
    D, L, P = 5376, 60, 8
    report, before = param_report(spec), param_report(plain)
    assert report.per_layer_embedding == 100 * L * P
    assert report.per_layer_projection == D * L * P + P
    assert report.total - before.total == 100 * L * P + D * L * P + P + L * (2 * D * P + D)
    assert report.non_embedding == report.total - 100 * L * P
    assert forward_macs(spec, 1, 1) - forward_macs(plain, 1, 1) == D * L * P + L * 2 * D * P


def gemma_4_e2b(tmp_path: Path, **changes: Any) -> ModelSpec:
    data = json.loads((FIXTURES / "hf" / "gemma-4-e2b.json").read_text())
    data["text_config"].update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return load_file(path).spec


def test_the_last_layers_share_keys_and_values(tmp_path: Path) -> None:
    """E2B: 35 layers, the last 20 read layers 13 (sliding) and 14 (full); double-wide MLPs."""
    stacks = gemma_4_e2b(tmp_path).stacks
    kinds = [(s.n_layers, s.sliding_window, s.shares_kv, s.ffn_width) for s in stacks]
    assert kinds == [
        (12, 512, False, 6144),
        (3, None, False, 6144),
        (16, 512, True, 12288),
        (4, None, True, 12288),
    ]


def test_shared_layers_cache_nothing_and_skip_key_value_projections(tmp_path: Path) -> None:
    spec = gemma_4_e2b(tmp_path)
    plain = gemma_4_e2b(tmp_path, num_kv_shared_layers=0, use_double_wide_mlp=False)
    # 1 key/value head of 256 (sliding) or 512 (full), keys and values, B = 1, T = 16
    assert kv_cache_elements(spec, 1, 16) == 16 * 2 * (12 * 256 + 3 * 512)
    assert kv_cache_elements(plain, 1, 16) == 16 * 2 * (28 * 256 + 7 * 512)
    assert attention_pair_macs(spec, 1, 16) == attention_pair_macs(plain, 1, 16)
    names = {t.name for t in block_tensors(spec.stacks[2])}
    assert not names & {"attn.k_proj.weight", "attn.v_proj.weight", "attn.k_norm.weight"}


@pytest.mark.parametrize(("layers", "shared"), [(35, 20), (36, 7), (40, 33), (13, 1), (14, 2)])
def test_default_layers_with_shared_ones_match_the_rule(
    tmp_path: Path, layers: int, shared: int
) -> None:
    """Without layer_types, the closed form agrees with transformers' per-layer rule."""
    spec = text_spec(
        tmp_path, num_hidden_layers=layers, layer_types=..., num_kv_shared_layers=shared
    )
    kinds = [
        ("full" if (i + 1) % 6 == 0 or i == layers - 1 else "sliding", i >= layers - shared)
        for i in range(layers)
    ]
    expected: dict[tuple[str, bool], int] = {}
    for kind in kinds:
        expected[kind] = expected.get(kind, 0) + 1
    got = {
        ("sliding" if s.sliding_window else "full", s.shares_kv): s.n_layers for s in spec.stacks
    }
    assert got == expected


@pytest.mark.parametrize(("layers", "shared"), [(8, 3), (35, 35)])
def test_shared_layers_need_a_layer_computing_their_keys(
    tmp_path: Path, layers: int, shared: int
) -> None:
    with pytest.raises(ConfigError, match="num_kv_shared_layers"):
        text_spec(tmp_path, num_hidden_layers=layers, layer_types=..., num_kv_shared_layers=shared)


@pytest.mark.parametrize(
    ("fixture", "record"),
    [("gemma-4-26b-a4b", "gemma-4-26b-a4b-text"), ("gemma-4-e2b", "gemma-4-e2b-text")],
)
def test_lora_sites_are_the_modules_transformers_builds(fixture: str, record: str) -> None:
    """Every block weight LoRA can adapt is named as in the golden record's layers (the MoE
    block's ``router.proj``, ``experts.*`` and its dense ``mlp.*``)."""
    model = load_file(FIXTURES / "hf" / f"{fixture}.json")
    kinds = json.loads((GOLDEN / "hf_families.json").read_text())["models"][record]["layer_kinds"]
    built = {name for kind in kinds for name in kind["tensors"]}
    model_level = {
        "per_layer_model_projection",
        "lm_head",
        "embed_tokens",
        "embed_tokens_per_layer",
    }
    paths = {
        site.path if site.kind == "parameter" else f"{site.path}.weight"
        for site in sites(model.spec, family_names(model.family))
        if site.path not in model_level
    }
    assert paths <= built
    assert {p.removesuffix(".weight") for p in built if p.endswith("proj.weight")} <= {
        p.removesuffix(".weight") for p in paths
    }


def test_per_layer_config_as_to_dict_writes_it(tmp_path: Path) -> None:
    """``to_dict()`` writes the full layers' sizes as ``per_layer_config`` (zero-padded keys)
    and transformers then reads them there, not from ``global_head_dim`` and
    ``num_global_key_value_heads``: the same model as the file without it; an empty mapping
    leaves the full layers the global sizes."""
    sizes = {"head_dim": 512, "num_key_value_heads": 4}
    saved = {f"{i:02d}": sizes for i in range(5, 60, 6)}
    spec = text_spec(tmp_path, per_layer_config=saved, global_head_dim=128)
    assert param_report(spec).total == param_report(text_spec(tmp_path)).total
    full = text_spec(tmp_path, per_layer_config={}).stacks[1]
    assert (full.head_width, full.kv_heads, full.keys_as_values) == (256, 16, True)


@pytest.mark.parametrize(
    ("per_layer_config", "message"),
    [
        ({"05": {"head_dim": 512}}, "sizes that differ between full_attention layers"),
        ({"0": {"intermediate_size": 7}}, "per-layer intermediate_size"),
        ({"60": {"head_dim": 512}}, "layer indices below 60"),
    ],
)
def test_per_layer_config_refusals(
    tmp_path: Path, per_layer_config: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        text_spec(tmp_path, per_layer_config=per_layer_config)


def test_bidirectional_attention_halves_the_cache_window_and_widens_the_pairs(
    tmp_path: Path,
) -> None:
    """use_bidirectional_attention "all": the cache keeps 1024 // 2 + 1 = 513, the masks keys
    at most 513 away (fewer than 514); the parameters do not change."""
    data = json.loads((FIXTURES / "hf" / "gemma-4-31b.json").read_text())
    data["text_config"]["use_bidirectional_attention"] = "all"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    model = load_file(path)
    sliding, full = model.spec.stacks
    assert (sliding.sliding_window, sliding.bidirectional_window) == (513, 514)
    assert full.bidirectional_attention and full.bidirectional_window is None
    (note,) = [note for note in model.notes if "use_bidirectional_attention" in note]
    assert "Gemma4TextConfig halves the window, sliding_window // 2 + 1 = 1,024 // 2 + 1" in note
    assert "at most 513 positions away on either side (up to 1,027" in note
    assert param_report(model.spec).total == param_report(text_spec(tmp_path)).total


def test_vision_bidirectional_attention_leaves_text_causal(tmp_path: Path) -> None:
    spec = text_spec(tmp_path, use_bidirectional_attention="vision")
    assert spec.stacks == text_spec(tmp_path).stacks


def test_a_bidirectional_window_belongs_to_a_bidirectional_block() -> None:
    with pytest.raises(ValueError, match="bidirectional_window: windows the pairs"):
        ModelSpec(
            vocab_size=10, d_model=8, n_heads=2, n_layers=1, context_length=8,
            sliding_window=4, bidirectional_window=5,
        )  # fmt: skip
