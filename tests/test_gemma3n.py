"""Gemma 3n's pieces as costcalc keys: AltUp (``altup_streams``) and LAuReL (``laurel_rank``),
counted by hand from ``Gemma3nTextAltUp`` and ``Gemma3nTextLaurelBlock`` (transformers 5.24,
``models/gemma3n/modeling_gemma3n.py``), and the family's layers read in closed form; the
golden E2B, E4B and defaults records check them together (tests/test_hf_families.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from costcalc.activations import measured
from costcalc.errors import ConfigError
from costcalc.loaders import load_file
from costcalc.macs import forward_macs, residual_stream_macs_per_token
from costcalc.params import param_report
from costcalc.spec import ModelSpec
from tests.conftest import Invoke

D, N, R, V, L = 32, 3, 4, 50, 2
PLAIN: dict[str, Any] = {
    "vocab_size": V,
    "d_model": D,
    "n_layers": L,
    "n_heads": 4,
    "context_length": 64,
    "position": "rotary",
    "norm": "rmsnorm",
    "ffn": "geglu",
    "ffn_hidden": 48,
    "qkv_bias": False,
    "attn_out_bias": False,
    "ffn_bias": False,
    "fused_qkv": False,
}


def test_altup_and_laurel_parameters_by_hand() -> None:
    plain = param_report(ModelSpec.model_validate(PLAIN))
    both = param_report(ModelSpec.model_validate({**PLAIN, "altup_streams": N, "laurel_rank": R}))
    # Per block: router n x D + its norm D, prediction n^2 x n, correction n x n, output scale
    # D; LAuReL D x r + r x D + its norm D. Model: 2 (n - 1) projections of D x D.
    altup_block = N * D + D + N * N * N + N * N + D
    laurel_block = 2 * D * R + D
    assert both.blocks - plain.blocks == L * (altup_block + laurel_block)
    assert both.altup_projections == 2 * (N - 1) * D * D
    assert both.total - plain.total == L * (altup_block + laurel_block) + 2 * (N - 1) * D * D


def test_altup_and_laurel_macs_by_hand() -> None:
    plain = ModelSpec.model_validate(PLAIN)
    both = ModelSpec.model_validate({**PLAIN, "altup_streams": N, "laurel_rank": R})
    B, T = 2, 5
    # Per token and block: the router twice (2 n D), the coefficients (n^3 + n^2), the streams
    # mixed (n^2 D), LAuReL (2 D r); per token: the model's 2 (n - 1) D^2.
    per_block = 2 * N * D + N**3 + N * N + N * N * D + 2 * D * R
    extra = B * T * (L * per_block + 2 * (N - 1) * D * D)
    assert forward_macs(both, B, T) - forward_macs(plain, B, T) == extra
    assert residual_stream_macs_per_token(both) == L * (N * N * D + N * D) + 2 * (N - 1) * D * D


def test_one_altup_stream_still_builds_the_block_tensors() -> None:
    """``altup_num_inputs`` 1: the router, coefficients and scale remain, no projections."""
    one = param_report(ModelSpec.model_validate({**PLAIN, "altup_streams": 1}))
    plain = param_report(ModelSpec.model_validate(PLAIN))
    assert one.altup_projections == 0
    assert one.total - plain.total == L * (D + D + 1 + 1 + D)


def test_streams_are_bounded() -> None:
    with pytest.raises(ValidationError, match="altup_streams"):
        ModelSpec.model_validate({**PLAIN, "altup_streams": 1025})


def test_activations_of_the_new_blocks_are_estimates() -> None:
    assert measured(ModelSpec.model_validate(PLAIN))
    for keys in ({"altup_streams": 2}, {"laurel_rank": 2}):
        assert not measured(ModelSpec.model_validate({**PLAIN, **keys}))


def test_schema_covers_the_keys(cli: Invoke) -> None:
    properties = json.loads(cli("schema").stdout)["properties"]
    assert {"altup_streams", "laurel_rank"} <= set(properties)
    assert properties["altup_streams"]["anyOf"][0]["maximum"] == 1024


def _text(tmp_path: Path, **keys: Any) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma3n_text", **keys}))
    return path


def test_default_layers_are_groups_in_closed_form(tmp_path: Path) -> None:
    """35 layers, each 5th full, the last 15 sharing: 4 groups, not 35."""
    spec = load_file(_text(tmp_path)).spec
    assert spec.layers is not None and len(spec.layers) == 2
    shared = [s for s in spec.stacks if s.shares_kv]
    assert sum(s.n_layers for s in shared) == 15
    assert sum(s.n_layers for s in spec.stacks if s.sliding_window is None) == 7


def test_widths_per_layer(tmp_path: Path) -> None:
    widths = [64] * 3 + [128] * 2
    config = _text(tmp_path, num_hidden_layers=5, num_kv_shared_layers=0, intermediate_size=widths)
    stacks = [(s.n_layers, s.ffn_hidden, s.sliding_window) for s in load_file(config).spec.stacks]
    assert stacks == [(3, 64, 512), (1, 128, 512), (1, 128, None)]


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"num_hidden_layers": 5, "num_kv_shared_layers": 5}, "every layer would reuse"),
        (
            {"num_hidden_layers": 5, "num_kv_shared_layers": 0, "intermediate_size": [64, 64]},
            "one whole width per layer",
        ),
        ({"hidden_size_per_layer_input": 0}, "per-layer inputs of width 0"),
        ({"num_hidden_layers": 6, "num_kv_shared_layers": 3}, "no earlier layer computes"),
    ],
)
def test_refused(tmp_path: Path, keys: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_file(_text(tmp_path, **keys))
