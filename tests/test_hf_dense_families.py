"""Settings of the dense-family translators that their golden models leave out."""

from __future__ import annotations

from pathlib import Path

import pytest

from costcalc.errors import ConfigError
from tests.hf_helpers import spec_of


def test_mellum_layers_follow_both_lists(tmp_path: Path) -> None:
    attention = ["sliding_attention", "sliding_attention", "full_attention"] * 9 + [
        "full_attention"
    ]
    ffns = ["dense"] + ["sparse"] * 27
    spec = spec_of(tmp_path, "mellum2-12b-a2.5b", layer_types=attention, mlp_layer_types=ffns)
    kinds = [(s.n_layers, s.sliding_window, s.moe_experts) for s in spec.stacks]
    assert kinds == [(1, 1024, None), (17, 1024, 64), (10, None, 64)]


def test_gpt_neox_japanese_keeps_the_output_bias_in_its_last_layer(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, "gpt-neox-japanese-2.7b", num_hidden_layers=1)
    assert spec.layers is None and spec.attn_out_bias


def test_cwm_with_a_null_window_is_refused_as_transformers_refuses_it(tmp_path: Path) -> None:
    # CwmConfig types sliding_window as int: its strict dataclass refuses a null.
    with pytest.raises(ConfigError, match=r"sliding_window .*null, but CwmConfig takes no null"):
        spec_of(tmp_path, "cwm", sliding_window=None)


def test_exaone_reads_its_own_key_names(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, "exaone-3.0-7.8b", num_layers=4)
    assert spec.n_layers == 4


def test_hyperclovax_without_post_norms_keeps_two_per_block(tmp_path: Path) -> None:
    peri = spec_of(tmp_path, "hyperclovax-defaults")
    plain = spec_of(tmp_path, "hyperclovax-defaults", use_post_norm=False)
    assert (peri.norms_per_block, plain.norms_per_block) == (4, 2)
