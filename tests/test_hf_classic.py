"""Settings of the gpt_classic, layernorm_rotary and llama_variants families that the golden
models do not exercise: layer patterns given other ways, optional norms and refused settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from costcalc.errors import ConfigError
from costcalc.loaders import load_file
from costcalc.params import param_report
from costcalc.tensors import mixer_tensors, tensor_count
from tests.hf_helpers import spec_of, windows, write_config
from tests.test_hf_families import golden, load


def test_cohere2_every_nth_layer_is_full(tmp_path: Path) -> None:
    # Cohere2Config: layer i slides unless (i + 1) % sliding_window_pattern == 0.
    spec = spec_of(tmp_path, "c4ai-command-r7b", sliding_window_pattern=3, num_hidden_layers=10)
    assert windows(spec) == [(7, 4096), (3, None)]  # layers 2, 5, 8 are full


def test_cohere2_layer_types_win_over_the_pattern(tmp_path: Path) -> None:
    kinds = ["full_attention"] * 30 + ["sliding_attention"] * 2
    spec = spec_of(tmp_path, "c4ai-command-r7b", layer_types=kinds)
    assert windows(spec) == [(30, None), (2, 4096)]


def test_gpt_neo_attention_types_are_groups(tmp_path: Path) -> None:
    types = [[["global"], 2], [["local", "local", "global"], 2], [["local"], 4]]
    spec = spec_of(tmp_path, "gpt-neo-125m", attention_types=types, attention_layers=...)
    assert windows(spec) == [(4, None), (8, 256)]
    assert spec.layers is not None and len(spec.layers) == 3


def test_gpt_neo_all_global_is_flat(tmp_path: Path) -> None:
    types = [[["global"], 12]]
    spec = spec_of(tmp_path, "gpt-neo-125m", attention_types=types, attention_layers=...)
    assert spec.layers is None and spec.sliding_window is None


def test_gpt_neo_attention_types_must_cover_the_layers(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="gives 10 layers, but the model has 12"):
        types = [[["global", "local"], 5]]
        spec_of(tmp_path, "gpt-neo-125m", attention_types=types, attention_layers=...)


def test_gpt_neo_reads_the_files_attention_layers(tmp_path: Path) -> None:
    """GPTNeoConfig.__post_init__ derives attention_layers from attention_types, then sets the
    file's attention_layers over it (a key that is no field), and each GPTNeoBlock reads its
    kind there; validate_architecture checks that list's length alone (transformers 5.24 builds
    gpt-neo-125m with attention_types covering 10 layers beside its 12 attention_layers)."""
    fixture = spec_of(tmp_path, "gpt-neo-125m")
    covering_ten = spec_of(tmp_path, "gpt-neo-125m", attention_types=[[["global", "local"], 5]])
    assert windows(covering_ten) == windows(fixture) == [(6, None), (6, 256)]
    assert param_report(covering_ten).total == param_report(fixture).total
    listed = ["local"] * 4 + ["global"] * 8
    spec = spec_of(tmp_path, "gpt-neo-125m", attention_layers=listed)
    assert windows(spec) == [(4, 256), (8, None)]
    with pytest.raises(ConfigError, match="lists 11 layers, but the model has 12"):
        spec_of(tmp_path, "gpt-neo-125m", attention_layers=listed[1:])
    with pytest.raises(ConfigError, match=r"attention_layers.*null, but GPTNeoConfig fails"):
        spec_of(tmp_path, "gpt-neo-125m", attention_layers=None)


def test_cohere_qk_norm_adds_a_weight_per_head(tmp_path: Path) -> None:
    plain = param_report(spec_of(tmp_path, "aya-23-8b")).total
    normed = param_report(spec_of(tmp_path, "aya-23-8b", use_qk_norm=True)).total
    assert normed - plain == 32 * (32 + 8) * 128  # L (H + K) d, weights only


def test_phi_qk_layernorm_normalizes_each_head_of_queries_and_keys(tmp_path: Path) -> None:
    plain = spec_of(tmp_path, "phi-2")
    normed = spec_of(tmp_path, "phi-2", qk_layernorm=True)
    norms = [t for t in mixer_tensors(normed) if t not in mixer_tensors(plain)]
    d = 2560 // 32  # PhiAttention: nn.LayerNorm(hidden_size // num_attention_heads)
    assert [(t.name, t.shape) for t in norms] == [
        (f"attn.{qk}_norm.{kind}", (d,)) for qk in "qk" for kind in ("weight", "bias")
    ]
    assert param_report(normed).total - param_report(plain).total == 32 * 4 * d


def test_stablelm_qk_layernorm_is_a_bias_free_norm_per_head() -> None:
    name = "stablelm-2-1.6b-qk-layernorm"
    record, spec = golden()[name], load(name).spec
    built = record["parameters_by_tensor_layer0"]
    norms = [shape for tensor, shape in built.items() if "_layernorm.norms." in tensor]
    assert norms == [[64]] * (32 + 32)  # StableLmLayerNormPerHead: H and K LayerNorms of d
    counted = [(t.name, t.shape, t.copies) for t in mixer_tensors(spec) if "norms" in t.name]
    assert counted == [
        ("attn.q_norm.norms.weight", (64,), 32),
        ("attn.k_norm.norms.weight", (64,), 32),
    ]
    others = record["parameters_by_tensor_other"]
    assert tensor_count(spec) == record["n_layers"] * len(built) + len(others)


def test_apertus_without_xielu_learns_no_scalars(tmp_path: Path) -> None:
    xielu = param_report(spec_of(tmp_path, "apertus-8b")).total
    relu2 = param_report(spec_of(tmp_path, "apertus-8b", hidden_act="relu2")).total
    assert xielu - relu2 == 32 * 2  # alpha_p and alpha_n in every layer


def test_opt_layernorms_without_weights(tmp_path: Path) -> None:
    # modeling_opt.py: nn.LayerNorm(D, elementwise_affine=False): 2 per layer and the final
    # one lose their weight and bias, 2 D each (OPT-125m: 12 layers, D 768).
    plain = spec_of(tmp_path, "opt-125m")
    bare = spec_of(tmp_path, "opt-125m", layer_norm_elementwise_affine=False)
    assert param_report(plain).total - param_report(bare).total == (2 * 12 + 1) * 2 * 768


def test_mpt_builds_no_biases_whatever_no_bias_says(tmp_path: Path) -> None:
    # modeling_mpt.py: Wqkv, out_proj, up_proj, down_proj are bias=False and the norms' biases
    # None; no module reads no_bias.
    loaded = load_file(write_config(tmp_path, "mpt-7b", no_bias=False))
    assert param_report(loaded.spec).total == param_report(spec_of(tmp_path, "mpt-7b")).total
    assert "no_bias is false" in " ".join(loaded.notes)


def test_bigcode_without_multi_query_is_gpt2_attention(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, "starcoderbase-1b", multi_query=False)
    assert spec.kv_heads == spec.n_heads == 16
    # Without multi_query transformers builds GPT-2's crossattention and ln_cross_attn.
    cross = spec_of(tmp_path, "starcoderbase-1b", multi_query=False, add_cross_attention=True)
    D, L = spec.d_model, spec.n_layers
    assert param_report(cross).total - param_report(spec).total == L * (4 * D * D + 6 * D)


def test_settings_transformers_cannot_build_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"add_cross_attention.*not supported"):
        spec_of(tmp_path, "starcoderbase-1b", add_cross_attention=True)


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"expansion_ratio": 8}, "expansion_ratio is 8, but transformers' MPT always builds"),
        ({"attn_config": {"qk_ln": True}}, "attn_config.qk_ln is set, but transformers' MPT"),
    ],
)
def test_mpt_keys_no_module_reads_are_counted_as_built(
    tmp_path: Path, changes: dict[str, Any], said: str
) -> None:
    """modeling_mpt.py's MptMLP is ``4 * hidden_size`` wide and MptAttention builds no q/k
    norms, whatever MptConfig holds: counted as built (the transformers 5.24 differential
    records of MPT with expansion_ratio 1 and 3 agree), with a note."""
    loaded = load_file(write_config(tmp_path, "mpt-7b", **changes))
    assert loaded.spec == spec_of(tmp_path, "mpt-7b")
    assert [note for note in loaded.notes if note.startswith(said)]
    with pytest.raises(ConfigError, match=r"expansion_ratio.*whole number"):
        spec_of(tmp_path, "mpt-7b", expansion_ratio="4")


@pytest.mark.parametrize("key", ["parallel_attn", "multi_query", "alibi"])
def test_a_null_falcon_switch_is_false(tmp_path: Path, key: str) -> None:
    """modeling_falcon.py tests ``if not config.parallel_attn:``, ``not self.multi_query``,
    ``not self.alibi``; FalconConfig takes each as ``bool | None``: a null builds what false
    builds."""
    nulled, false, true = (spec_of(tmp_path, "falcon-7b", **{key: v}) for v in (None, False, True))
    assert nulled == false != true
