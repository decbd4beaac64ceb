"""Per-layer rules of the newer families when a config leaves out ``layer_types``: each
configuration class's own rule (transformers 5.24), evaluated in closed form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.api import load
from costcalc.errors import ConfigError
from costcalc.layer_order import layer_stacks
from costcalc.loaders import load_file
from costcalc.macs import stack_pairs
from costcalc.memory import stored_tokens
from tests.hf_helpers import spec_of, windows, write_config

MASKS = json.loads((Path(__file__).parent / "golden" / "bidirectional_masks.json").read_text())
"""tests/reference/make_bidirectional_masks.py: the pairs Gemma 3's and Gemma 4's bidirectional
masks keep."""


def test_olmo3_slides_on_three_layers_of_four(tmp_path: Path) -> None:
    # Olmo3Config: "sliding_attention" if (i + 1) % 4 != 0.
    spec = spec_of(tmp_path, "olmo-3-7b", layer_types=..., num_hidden_layers=30)
    assert windows(spec) == [(23, 4096), (7, None)]


def test_exaone4_rule_and_no_window(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, "exaone-4.0-1.2b", layer_types=..., sliding_window=128)
    assert windows(spec) == [(23, 128), (7, None)]  # pattern null read as absent: 4
    spec = spec_of(tmp_path, "exaone-4.0-1.2b", layer_types=..., sliding_window=...)
    assert windows(spec) == [(23, 4096), (7, None)]  # no key: the class's 4,096
    assert windows(spec_of(tmp_path, "exaone-4.0-1.2b", layer_types=...)) == [(30, None)]


def test_exaone4_pattern_must_be_a_count(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="sliding_window_pattern"):
        spec_of(tmp_path, "exaone-4.0-1.2b", layer_types=..., sliding_window=8,
                  sliding_window_pattern="LLLG")  # fmt: skip


def test_gemma_null_window_means_full_attention(tmp_path: Path) -> None:
    assert windows(spec_of(tmp_path, "gemma-2-2b", sliding_window=None)) == [(26, None)]
    assert windows(spec_of(tmp_path, "gemma-3-1b", sliding_window_pattern=1)) == [(26, None)]


MULTIMODAL = {
    "gemma3_text": "gemma3",
    "gemma4_text": "gemma4",
    "gemma4_unified_text": "gemma4_unified",
}
"""The model_type of each family's multimodal config, whose text_config the family reads."""


def mask_id(family: str, case: dict[str, Any], model: str) -> str:
    mode = case.get("use_bidirectional_attention")
    return f"{model}-T{case['seq_len']}-W{case['sliding_window']}" + (f"-{mode}" if mode else "")


MASK_CASES = [
    pytest.param(family, case, model, id=mask_id(family, case, model))
    for family, data in MASKS["families"].items()
    for case in data["cases"]
    for model in case
    if model[0].isupper()
]
"""(family, case, model class) of each model make_bidirectional_masks.py built."""


@pytest.mark.parametrize(("family", "case", "model"), MASK_CASES)
def test_bidirectional_attention_keeps_what_transformers_masks(
    family: str, case: dict[str, Any], model: str
) -> None:
    # Gemma3TextModel masks both ways within the halved window, Gemma3Model text causally;
    # Gemma 4's "all" masks keys at most the halved window away in both, "vision" text causally.
    text = {
        "model_type": family,
        **MASKS["families"][family]["text_config"],
        "sliding_window": case["sliding_window"],
    }
    if "use_bidirectional_attention" in case:
        text["use_bidirectional_attention"] = case["use_bidirectional_attention"]
    causal_lm = model.endswith("ForCausalLM")
    data = text if causal_lm else {"model_type": MULTIMODAL[family], "text_config": text}
    T = case["seq_len"]
    sliding, full = load(data).spec.stacks
    assert sliding.sliding_window == case["window"]
    for stack, kind in ((sliding, "sliding_attention"), (full, "full_attention")):
        measured = case[model][kind]
        assert stack_pairs(stack, T, causal=True) == measured["pairs"]
        # DynamicSlidingWindowLayer keeps W - 1 tokens once T reaches W > 1; costcalc counts W.
        window = stack.sliding_window
        left_out = window is not None and 1 < window <= T
        assert stored_tokens(stack, T) == measured["cached"] + left_out


def test_gemma3_bidirectional_attention_needs_a_window(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="use_bidirectional_attention halves it"):
        spec_of(tmp_path, "gemma-3-1b", use_bidirectional_attention=True, sliding_window=None)
    model = load_file(write_config(tmp_path, "gemma-3-1b", use_bidirectional_attention=True))
    spec = model.spec
    assert {window for _, window in windows(spec)} == {512 // 2 + 1, None}
    (note,) = [note for note in model.notes if "use_bidirectional_attention" in note]
    assert "sliding_window // 2 + 1 = 512 // 2 + 1 = 257" in note
    assert "fewer than 257 positions away on either side (up to 513)" in note
    assert all(stack.bidirectional_attention for stack in spec.stacks)


@pytest.mark.parametrize(
    "changes",
    [
        {"max_window_layers": 5, "decoder_sparse_step": 2},
        {"max_window_layers": 42, "mlp_only_layers": [1, 2]},
        {"max_window_layers": 0},
        {"layer_types": ["full_attention", "sliding_attention"] * 4, "decoder_sparse_step": 3},
    ],
)
def test_qwen2_moe_windows_and_experts_layer_by_layer(
    tmp_path: Path, changes: dict[str, Any]
) -> None:
    # Qwen2MoeConfig.__post_init__: layer i slides when i is even and below max_window_layers
    # (unless layer_types lists them); Qwen2MoeDecoderLayer: sparse when (i + 1) % step == 0
    # and i is not in mlp_only_layers.
    on = {"use_sliding_window": True, "sliding_window": 64, "num_hidden_layers": 8, **changes}
    model = load_file(write_config(tmp_path, "qwen1.5-moe-a2.7b", **on))
    spec = model.spec
    step, dense = changes.get("decoder_sparse_step", 1), changes.get("mlp_only_layers", [])
    listed = changes.get("layer_types")
    expected = [
        (
            64
            if (
                listed[i] == "sliding_attention"
                if listed
                else i % 2 == 0 and i < on["max_window_layers"]
            )
            else None,
            60 if (i + 1) % step == 0 and i not in dense else None,
        )
        for i in range(8)
    ]
    layers = layer_stacks(spec, "the test")
    assert [(s.sliding_window, s.moe_experts) for s in layers] == expected
    sliding = sum(window is not None for window, _ in expected)
    below = changes.get("max_window_layers")
    rule = f"below max_window_layers ({below}), where Qwen2 slides those from it on: {sliding:,} "
    rule += "of 8 layers attend within 64, the others fully."
    assert any(note.endswith(rule) for note in model.notes) == (listed is None)


def test_qwen2_moe_window_null_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="use_sliding_window makes Qwen2MoeConfig mark"):
        spec_of(tmp_path, "qwen1.5-moe-a2.7b", use_sliding_window=True, sliding_window=None)


def test_smollm3_windows_fall_on_layers_without_rotary(tmp_path: Path) -> None:
    assert windows(spec_of(tmp_path, "smollm3-3b", sliding_window=64)) == [(36, None)]
    on = {"use_sliding_window": True, "sliding_window": 64}
    assert windows(spec_of(tmp_path, "smollm3-3b", **on)) == [(27, None), (9, 64)]
    spec = spec_of(tmp_path, "smollm3-3b", no_rope_layers=..., no_rope_layer_interval=3, **on)
    assert windows(spec) == [(24, None), (12, 64)]


def test_ministral_window_on_every_layer_unless_null(tmp_path: Path) -> None:
    assert windows(spec_of(tmp_path, "ministral-8b", sliding_window=...)) == [(36, 4096)]
    assert windows(spec_of(tmp_path, "ministral-8b", sliding_window=None)) == [(36, None)]


def test_ernie_null_head_dim_and_kv_heads(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, "ernie-4.5-0.3b", head_dim=None, num_key_value_heads=None)
    assert (spec.head_width, spec.kv_heads) == (1024 // 16, 16)
    spec = spec_of(tmp_path, "ernie-4.5-0.3b", head_dim=..., num_key_value_heads=...)
    assert (spec.head_width, spec.kv_heads) == (128, 2)
