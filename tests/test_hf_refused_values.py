"""Values transformers 5.24 refuses, refused by costcalc too, with the key and the reason.

Each case edits one key of a family's published config (the differential set's unedited
variant, ``<family>/00``, which costcalc counts as transformers builds it) to a value the
family's configuration class refuses (its strict types, ``__post_init__`` or validators) or its
modeling code cannot build from (an activation it has no entry for, a per-layer list too short).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from costcalc.api import load
from costcalc.errors import CostcalcError
from costcalc.params import param_report
from tests.test_differential import records

DROP = object()
"""The key is left out."""


def layers(config: dict[str, Any], *path: str) -> int:
    """The layer count of the config at key path ``path``."""
    for key in path:
        config = config[key]
    count: int = config["num_hidden_layers"]
    return count


CASES: dict[str, tuple[str, tuple[str, ...], Any, str]] = {
    "openai-gpt-afn": ("openai-gpt", ("afn",), "gule", "expected one of relu, silu, gelu, swish"),
    "hunyuan-moe-topk-short": (
        "hunyuan_v1_moe",
        ("moe_topk",),
        lambda c: [8] * (layers(c) - 1),
        "moe_topk[layer_idx], an IndexError",
    ),
    "gemma3n-sparsity-long": (
        "gemma3n_text",
        ("text_config", "activation_sparsity_pattern"),
        lambda c: [0.0] * (layers(c, "text_config") + 1),
        "one value for every layer",
    ),
    "laguna-router-weight-on-input": (
        "laguna",
        ("moe_apply_router_weight_on_input",),
        True,
        "NotImplementedError",
    ),
    "hunyuan-vl-sections": (
        "hunyuan_vl_text",
        ("text_config", "head_dim"),
        2,
        "does not split the 2-wide head",
    ),
    "nemotron-h-null-layer-types": (
        "nemotron_h",
        ("layer_types",),
        None,
        "validate_layer_type",
    ),
    "qwen2-vl-null-tie": ("qwen2_vl_text", ("tie_word_embeddings",), None, "takes true or false"),
    "qwen2.5-vl-undivided-width": (
        "qwen2_5_vl_text",
        ("num_attention_heads",),
        27,
        "raises a ValueError unless they divide",
    ),
    "falcon-h1-time-step-limit": (
        "falcon_h1",
        ("time_step_limit",),
        [0.0],
        "expected a pair of floats",
    ),
    "granite-4-time-step-limit": (
        "granitemoehybrid",
        ("time_step_limit",),
        [0.0, 1.0, 2.0],
        "expected a pair of floats",
    ),
    "bamba-time-step-limit": (
        "bamba",
        ("time_step_limit",),
        [0.0],
        "BambaConfig types it so",
    ),
    "nemotron-h-time-step-limit": (
        "nemotron_h",
        ("time_step_limit",),
        [0, 1],
        "expected a list of floats",
    ),
    "recurrent-gemma-zero-wide-mlp": (
        "recurrent_gemma",
        ("intermediate_size",),
        1,
        "intermediate_size // 2 = 0 wide",
    ),
    "kimi-linear-layer-past-the-model": (
        "kimi_linear",
        ("linear_attn_config", "full_attn_layers"),
        lambda c: [4, 8, 12, 16, 20, 24, 28],
        "KimiLinearConfig's __post_init__ raises an IndexError",
    ),
    "kimi-linear-layer-left-unset": (
        "kimi_linear",
        ("num_hidden_layers",),
        28,
        "leave layer 28 without a kind",
    ),
    "arcee-one-wide-heads-beside-yarn": (
        "arcee",
        ("head_dim",),
        1,
        "transformers' cos and sin, queries and keys are 0 wide",
    ),
    "cosmos3-edge-odd-head": (
        "cosmos3_edge_text",
        ("text_config", "head_dim"),
        129,
        "Cosmos3EdgeTextConfig's validate_rope",
    ),
    "bamba-null-mamba-heads": (
        "bamba",
        ("mamba_n_heads",),
        None,
        "BambaConfig fails on a null here (TypeError)",
    ),
    "qwen3-next-null-attention-interval": (
        "qwen3_next",
        ("full_attention_interval",),
        None,
        "or give layer_types",
    ),
    "cohere2-null-window-pattern": (
        "cohere2",
        ("sliding_window_pattern",),
        None,
        "Cohere2Config fails on a null here (TypeError)",
    ),
    "lfm2-attention-index": ("lfm2", ("full_attn_idxs",), 2, "expected a list of layer indices"),
    "lfm2-null-ff-dim": ("lfm2", ("block_ff_dim",), None, "intermediate_size takes no null"),
    "molmo2-scaled-layers": (
        "molmo2_text",
        ("text_config", "rope_scaling_layers"),
        2,
        "expected a list of layer indices",
    ),
    "gemma4-null-global-head": (
        "gemma4_text",
        ("text_config", "global_head_dim"),
        None,
        "the last layer is always one",
    ),
    "gemma4-bidirectional-true": (
        "gemma4_text",
        ("text_config", "use_bidirectional_attention"),
        True,
        'expected "all", "vision" or null (got True)',
    ),
    "exaone-moe-null-pattern": (
        "exaone_moe",
        ("sliding_window_pattern",),
        None,
        "(i + 1) % sliding_window_pattern",
    ),
    "deepseek-v3-odd-rope-head": (
        "deepseek_v3",
        ("qk_rope_head_dim",),
        63,
        "DeepseekV3Config's validate_rope: RoPE requires an even rotary dimension",
    ),
    "glm-moe-dsa-odd-rope-head": (
        "glm_moe_dsa",
        ("qk_rope_head_dim",),
        65,
        "GlmMoeDsaConfig's validate_rope",
    ),
    "dots3-note-narrow-indexer": (
        "dots3_note_text",
        ("text_config", "index_head_dim"),
        2,
        "below qk_rope_head_dim 64 in the indexed layers",
    ),
}
"""name -> (family, key path edited, its value (or a function of the config), what the error
says)."""

NAMED = {
    "hunyuan-vl-sections": "text_config.rope_scaling.xdrope_section",
    "kimi-linear-layer-left-unset": "linear_attn_config",
}
"""The key the error names, where it is not the key edited: the sections that no longer split
the narrower head; the layer lists that no longer cover the layers."""


def edited(family: str, path: tuple[str, ...], value: Any) -> dict[str, Any]:
    config: dict[str, Any] = copy.deepcopy(records()[f"{family}/00"]["config"])
    holder = config
    for key in path[:-1]:
        holder = holder[key]
    new = value(config) if callable(value) else value
    if new is DROP:
        holder.pop(path[-1], None)
    else:
        holder[path[-1]] = new
    return config


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_unedited_config_counts_as_transformers_builds_it(name: str) -> None:
    family = CASES[name][0]
    record = records()[f"{family}/00"]
    assert param_report(load(record["config"]).spec).total == record["parameters_total"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_with_the_key_and_why(name: str) -> None:
    family, path, value, why = CASES[name]
    with pytest.raises(CostcalcError) as caught:
        load(edited(family, path, value))
    message = str(caught.value)
    named = NAMED.get(name, ".".join(path))
    assert f"  {named}: " in message
    assert why in message
    assert "transformers" in message.split(named, 1)[1]


@pytest.mark.parametrize(
    ("family", "key", "other"),
    [
        ("qwen3_next", "full_attention_interval", "linear_attention"),
        ("cohere2", "sliding_window_pattern", "sliding_attention"),
    ],
)
def test_a_null_the_class_derives_layer_types_from_is_taken_beside_them(
    family: str, key: str, other: str
) -> None:
    """Qwen3NextConfig and Cohere2Config derive ``layer_types`` from ``key`` (every n-th layer
    full attention, the others ``other``) only when the file gives none (the probe's
    ``unless``): beside the list they would derive, the null is taken and counts the same."""
    config = records()[f"{family}/00"]["config"]
    n = config[key]
    types = [other if (i + 1) % n else "full_attention" for i in range(layers(config))]
    nulled = {**copy.deepcopy(config), key: None}
    with pytest.raises(CostcalcError, match=f"{key}.*or give layer_types"):
        load(nulled)
    listed = load({**nulled, "layer_types": types}).spec
    assert param_report(listed).total == param_report(load(config).spec).total
