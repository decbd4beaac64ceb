"""Minimal configs of the causes the differential test (tests/test_differential.py) found.

Each figure is ``sum(p.numel())`` of the model transformers 5.24 builds from the fixture with the
keys shown changed (on the meta device, as tests/reference/make_differential.py builds).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.api import load
from costcalc.errors import ConfigError
from costcalc.macs import forward_macs
from costcalc.memory import kv_cache_elements
from costcalc.params import param_report
from tests.conftest import FIXTURES
from tests.hf_helpers import config_data, spec_of
from tests.test_differential import records


def total(tmp_path: Path, fixture: str, **changes: Any) -> int:
    return param_report(spec_of(tmp_path, fixture, **changes)).total


@pytest.mark.parametrize(
    ("fixture", "changes", "built"),
    [
        ("beam-defaults", {"attention_bias": True}, 501_268_292_032),
        ("laguna-xs-2.1", {"attention_bias": True, "gating": False}, 34_067_318_528),
    ],
)
def test_q_k_v_o_biases_beside_a_bias_free_gate(
    tmp_path: Path, fixture: str, changes: dict[str, Any], built: int
) -> None:
    # modeling_beam.py, modeling_laguna.py: q/k/v/o take bias=config.attention_bias, the gate's
    # own projection (gate_proj; g_proj of H d when gating is false) bias=False; ``built`` is
    # sum(p.numel()) of the model transformers 5.24 builds.
    assert total(tmp_path, fixture, **changes) == built


def test_bailing_hybrid_reads_the_linear_keys_to_dict_writes(tmp_path: Path) -> None:
    # BailingHybridConfig.__post_init__ copies head_dim, num_attention_heads and
    # short_conv_kernel_size into linear_head_dim, linear_num_heads and linear_conv_kernel_dim
    # (which the Kimi Delta layers read), then sets head_dim to qk_rope_head_dim (64):
    # to_dict() writes head_dim 64 beside linear_head_dim 128, and a file's own linear_* win.
    published = 124_414_191_072
    assert total(tmp_path, "ling-3.0-flash") == published
    assert total(tmp_path, "ling-3.0-flash", head_dim=64, linear_head_dim=128) == published
    assert (
        total(tmp_path, "ling-3.0-flash", linear_conv_kernel_dim=8, linear_num_heads=16)
        == 123_311_680_432
    )


@pytest.mark.parametrize(
    ("fixture", "text", "expected"),
    [
        ("ling-3.0-flash", False, 124_414_191_072),
        ("kimi-linear-48b-a3b", False, 49_122_675_072),
        ("cosmos3-edge-defaults", True, 1_946_273_792),
    ],
)
def test_families_that_declare_no_tied_weights_never_tie(
    fixture: str, text: bool, expected: int
) -> None:
    # BailingHybridForCausalLM, KimiLinearForCausalLM, Cosmos3EdgeForConditionalGeneration:
    # _tied_weights_keys = {}, so tie_word_embeddings true leaves lm_head its own matrix.
    data = json.loads((FIXTURES / "hf" / f"{fixture}.json").read_text())
    for holder in (data, data["text_config"]) if text else (data,):
        holder["tie_word_embeddings"] = True
    report = param_report(load(data).spec)
    assert (report.total, report.untied_total) == (expected, expected)


def test_dbrx_reads_its_attribute_map_aliases(tmp_path: Path) -> None:
    # DbrxConfig.attribute_map: num_attention_heads -> n_heads, num_hidden_layers -> n_layers,
    # ...; an alias is set after the fields, so it wins beside its field (d = D / H moves Wqkv).
    assert total(tmp_path, "dbrx", n_heads=..., num_attention_heads=48) == 131_596_523_520
    assert total(tmp_path, "dbrx", num_attention_heads=24) == 132_099_840_000
    assert total(tmp_path, "dbrx", num_hidden_layers=2) == 7_751_301_120


@pytest.mark.parametrize(
    ("fixture", "wrapper", "text", "expected"),
    [
        # Ernie4_5_VLMoeConfig.tie_word_embeddings, default true
        ("ernie-4.5-vl-28b-a3b", True, False, 28_624_635_776),
        ("ernie-4.5-vl-28b-a3b", False, True, 28_889_401_216),
        ("ernie-4.5-vl-28b-a3b", ..., False, 28_624_635_776),
        # HYV4VLConfig.tie_word_embeddings, default false
        ("hy-v4-vl-defaults", True, False, 769_164_997_277),
        ("hy-v4-vl-defaults", False, True, 769_907_389_085),
        ("hy-v4-vl-defaults", ..., True, 769_907_389_085),
        # Granite4VisionConfig, default false; GraniteDoclingConfig, default true
        ("granite4-vision-defaults", True, False, 5_802_037_248),
        ("granite4-vision-defaults", ..., True, 5_933_109_248),
        ("granite-docling-defaults", False, True, 523_641_856),
        ("granite-docling-defaults", ..., False, 386_630_656),
        # HunYuanVLConfig, default true, and tied as well when the text_config ties
        ("hunyuanocr", False, True, 539_010_048),
        ("hunyuanocr", False, False, 662_727_680),
        # MuseGlimmerConfig (no tie_word_embeddings of its own: false)
        ("muse-glimmer-defaults", True, False, 26_509_949_440),
        ("muse-glimmer-defaults", ..., True, 27_854_780_928),
    ],
)
def test_the_wrapper_ties_the_head_not_the_text_config(
    fixture: str, wrapper: Any, text: bool, expected: int
) -> None:
    # The conditional-generation model ties by its own config's key; text_config's is unread.
    data = json.loads((FIXTURES / "hf" / f"{fixture}.json").read_text())
    data["text_config"]["tie_word_embeddings"] = text
    if wrapper is ...:
        data.pop("tie_word_embeddings", None)
    else:
        data["tie_word_embeddings"] = wrapper
    assert param_report(load(data).spec).total == expected


@pytest.mark.parametrize("fixture", ["gpt2", "gpt-sw3-356m"])
def test_gpt2_cross_attention_blocks(tmp_path: Path, fixture: str) -> None:
    # modeling_gpt2.py: add_cross_attention builds crossattention (q_attn D x D, c_attn D x 2D,
    # c_proj D x D, biased) and ln_cross_attn in every layer: 4 D^2 + 6 D more (transformers:
    # 152,806,656 for gpt2); a text-only forward skips them: the same MACs and cache.
    plain = spec_of(tmp_path, fixture)
    cross = spec_of(tmp_path, fixture, add_cross_attention=True)
    D, L = plain.d_model, plain.n_layers
    assert param_report(cross).total - param_report(plain).total == L * (4 * D * D + 6 * D)
    if fixture == "gpt2":
        assert param_report(cross).total == 152_806_656
    assert forward_macs(cross, 1, 16) == forward_macs(plain, 1, 16)
    assert kv_cache_elements(cross, 1, 16) == kv_cache_elements(plain, 1, 16)


def test_hunyuan_vl_reads_attention_head_dim() -> None:
    # HunYuanVLTextConfig.attribute_map: attention_head_dim -> head_dim (transformers builds
    # 539,010,048 either way; without it, d = D / H would be read).
    data = json.loads((FIXTURES / "hf" / "hunyuanocr.json").read_text())
    data["text_config"]["attention_head_dim"] = data["text_config"].pop("head_dim")
    assert param_report(load(data).spec).total == 539_010_048


def test_solar_open_biases_q_k_v_but_never_o_proj(tmp_path: Path) -> None:
    # modeling_solar_open.py: q/k/v take bias=config.attention_bias, o_proj bias=False.
    assert total(tmp_path, "solar-open-100b", attention_bias=True) == 102_652_284_928


def test_qwen3_omni_windows_its_cache_by_sliding_window() -> None:
    # Qwen3OmniMoeThinkerTextAttention masks no window, but DynamicCache makes every layer of a
    # config with a sliding_window and no layer_types a DynamicSlidingWindowLayer: with a
    # window of 2, transformers keeps 1 token of each layer's keys and values, (1, 4, 1, 128)
    # (tests/golden/differential.json.gz, qwen3_omni_moe_text/08), costcalc counts the 2 a
    # decoding token attends to. Without the key, every token is kept.
    data = json.loads((FIXTURES / "hf" / "qwen3-omni-30b-a3b-instruct.json").read_text())
    text = data["thinker_config"]["text_config"]
    assert kv_cache_elements(load(data).spec, 1, 16) == 48 * 2 * 4 * 16 * 128
    text["sliding_window"] = 2
    loaded = load(data)
    assert kv_cache_elements(loaded.spec, 1, 16) == 48 * 2 * 4 * 2 * 128
    assert any("DynamicCache" in note for note in loaded.notes)


@pytest.mark.parametrize(
    ("changes", "built", "experts"),
    [
        ({"d_model": ..., "hidden_size": 96}, 4_839_904, 2048),
        ({"hidden_size": 96}, 252_896, 64),
        ({"d_model": 66}, 212_586, None),
        ({"d_model": ..., "hidden_size": 66}, 4_794_970, 2048),
    ],
)
def test_dbrx_counts_what_it_builds_where_its_forward_fails(
    tmp_path: Path, changes: dict[str, Any], built: int, experts: int | None
) -> None:
    # DbrxConfig.__post_init__ sets ffn_config.hidden_size = d_model (the key, else 2,048)
    # before the alias hidden_size -> d_model is set: the experts and the router are built at
    # that width beside an attention of hidden_size (dbrx/fresh-04, 05). DbrxAttention floors
    # head_dim = d_model // n_heads (66 // 4 = 16) but builds Wqkv 66 -> 66 + 2 x 2 x 16 and
    # out_proj 66 x 66 (dbrx/fresh-03). ``built``: sum(p.numel()) transformers 5.24 builds
    # from tiny-dbrx.json so changed; its forward fails on each.
    spec = spec_of(tmp_path, "tiny-dbrx", **changes)
    assert param_report(spec).total == built
    assert spec.moe_width == experts
    assert spec.query_width == (66 if spec.d_model == 66 else None)
    assert total(tmp_path, "dbrx", hidden_size=6144, d_model=6144) == total(tmp_path, "dbrx")


def test_dbrx_refuses_tied_embeddings(tmp_path: Path) -> None:
    # DbrxConfig.validate_architecture: "tie_word_embeddings is not supported for DBRX models"
    # (differential_fresh.json.gz, dbrx/fresh-01).
    with pytest.raises(ConfigError, match=r"tie_word_embeddings \(line \d+\): transformers refus"):
        spec_of(tmp_path, "dbrx", tie_word_embeddings=True)


def test_jamba_with_one_expert_builds_the_dense_mlp(tmp_path: Path) -> None:
    # JambaAttentionDecoderLayer and JambaMambaDecoderLayer build a JambaSparseMoeBlock only
    # with num_experts > 1, else JambaMLP (no router): transformers 9,290,690,432 for
    # jamba-v0.1 with num_experts 1 (differential_fresh.json.gz, jamba/fresh-06).
    assert total(tmp_path, "jamba-v0.1", num_experts=1) == 9_290_690_432


@pytest.mark.parametrize(
    ("fixture", "layers", "built"),
    [
        ("deepseek-ocr2-defaults", 31, 37_295_271_936),
        ("ernie-4.5-vl-28b-a3b", 2, 1_421_161_088),
        ("hy-v3-defaults", 3, 8_667_034_368),
        ("axk1-defaults", 3, 20_050_875_392),
        ("glm-4.7-flash", 3, 1_989_691_136),
    ],
)
def test_a_longer_mlp_layer_types_is_read_for_the_layers_built(
    fixture: str, layers: int, built: int
) -> None:
    # PreTrainedConfig.validate_layer_type returns before mlp_layer_types when the config holds
    # no layer_types (these classes have no such field); each decoder layer reads
    # config.mlp_layer_types[layer_idx]. ``built``: sum(p.numel()) transformers 5.24 builds
    # with num_hidden_layers = ``layers`` (and, in the last three, a list of 6: a dense layer,
    # then sparse ones); given a layer_types beside it, it refuses the file.
    data = json.loads((FIXTURES / "hf" / f"{fixture}.json").read_text())
    text = data.get("text_config", data)
    text["num_hidden_layers"] = layers
    if text is data:
        text["mlp_layer_types"] = ["dense"] + ["sparse"] * 5
    model = load(data)
    assert param_report(model.spec).total == built
    assert any("the rest are ignored, as transformers ignores them" in n for n in model.notes)
    text["layer_types"] = ["full_attention"] * layers
    with pytest.raises(ConfigError, match=r"mlp_layer_types: lists \d+ layers, but the model has"):
        load(data)


@pytest.mark.parametrize(
    ("fixture", "width", "built", "cache", "macs"),
    [
        ("starcoder2-3b", 3073, 343_070_734, 16_384, 5_491_081_216),
        ("minitron-4b", 3073, 1_737_037_834, 65_536, 15_208_251_392),
        ("phi-2", 2561, 419_706_890, 163_840, 4_618_158_080),
    ],
)
def test_a_width_the_heads_do_not_divide_floors_head_dim(
    fixture: str, width: int, built: int, cache: int, macs: int
) -> None:
    # Starcoder2Attention, NemotronAttention (NemotronConfig's head_dim), PhiAttention: head_dim
    # D // H when the file gives none, q_proj D -> H (D // H), o_proj back. ``built``, ``cache``
    # and ``macs``: what transformers 5.24 builds with 2 layers, its cache and FlopCounterMode's
    # MACs after a forward at B=1, T=16 on meta.
    data = json.loads((FIXTURES / "hf" / f"{fixture}.json").read_text())
    data.pop("head_dim", None)
    data.update(hidden_size=width, num_hidden_layers=2)
    model = load(data)
    assert param_report(model.spec).total == built
    assert kv_cache_elements(model.spec, 1, 16) == cache
    assert forward_macs(model.spec, 1, 16) == macs
    assert any("its attention floors head_dim" in note for note in model.notes)


def test_jamba_floors_head_dim_where_the_heads_do_not_divide_the_width(tmp_path: Path) -> None:
    # JambaAttention: head_dim = getattr(config, "head_dim", hidden_size // num_attention_heads)
    # (JambaConfig has no head_dim field), 4,096 // 33 = 124; sum(p.numel()) of the 8 layers
    # transformers 5.24 builds (its forward does not run on meta).
    spec = spec_of(tmp_path, "jamba-v0.1", num_hidden_layers=8, num_attention_heads=33)
    assert param_report(spec).total == 13_294_942_176
    assert [stack.head_dim for stack in spec.stacks if stack.mixer == "attention"] == [124]


@pytest.mark.parametrize(("width", "built"), [(48, 371_312), (100, 384_676), (0, 391_872)])
def test_zamba_builds_the_shared_attention_at_attention_hidden_size(
    tmp_path: Path, width: int, built: int
) -> None:
    # ZambaAttention: q_proj/k_proj/v_proj nn.Linear(config.attention_hidden_size, ...), the
    # layer's input_layernorm of attention_hidden_size; ZambaConfig: attention_hidden_size or
    # 2 x hidden_size (0 is 128 here). ``built``: sum(p.numel()) transformers 5.24 builds (its
    # forward does not run on meta; on any device it concatenates 128 and fails off 128).
    model = load(config_data("tiny-zamba", attention_hidden_size=width))
    assert param_report(model.spec).total == built
    assert any("is not 2 x hidden_size (128)" in note for note in model.notes) == (width != 0)


@pytest.mark.parametrize(
    ("fixture", "key", "groups", "built"),
    [
        ("mamba2-130m", "n_groups", 5, 147_986_880),
        ("nemotron-h-8b", "n_groups", 3, 7_974_870_016),
        ("bamba-9b", "mamba_n_groups", 3, 9_841_127_040),
        ("falcon-h1-7b", "mamba_n_groups", 5, 7_862_788_192),
        ("granite-4.0-h-tiny", "mamba_n_groups", 5, 6_995_844_672),
        ("zamba2-2.7b", "mamba_ngroups", 3, 2_697_673_120),
    ],
)
def test_mamba2_heads_that_do_not_group_are_counted_as_built(
    tmp_path: Path, fixture: str, key: str, groups: int, built: int
) -> None:
    # Mamba2Mixer (and NemotronH's, Bamba's, Falcon-H1's, Granite 4.0's, Zamba2's) sizes
    # in_proj and conv1d by 2 n_groups state_size whatever the heads: transformers 5.24 builds
    # these groups beside 24, 128, 128, 24, 48 and 80 heads (``built``); its forward, which
    # gives each group heads // n_groups heads, fails.
    loaded = load(config_data(fixture, **{key: groups}))
    assert param_report(loaded.spec).total == built
    said = f"Mamba-2 heads do not group over {groups} groups"
    assert [note for note in loaded.notes if said in note]
    assert param_report(loaded.spec).total != total(tmp_path, fixture)


def test_dory_keeps_every_other_layer_type_of_a_paired_list() -> None:
    # DoryConfig.__post_init__ takes layer_types[::2] of a list that names "mlp" and halves
    # num_hidden_layers, checking nothing more: a list one short (its last "mlp" left out)
    # builds the same model (transformers 5.24 built such a list of 71 beside 72 layers).
    config = records()["dory/00"]["config"]
    assert "mlp" in config["layer_types"]
    short = {**config, "layer_types": config["layer_types"][:-1]}
    assert param_report(load(short).spec).total == param_report(load(config).spec).total
    with pytest.raises(ConfigError, match="every other entry"):
        load({**config, "layer_types": config["layer_types"][:-3]})
