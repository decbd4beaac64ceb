"""Blocks reused at several depths (``shared_weight_sets``): parameters once per weight set,
MACs and caches once per use; adapters and per-use projections per use (Zamba 2)."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from pydantic import ValidationError

from costcalc.macs import forward_macs
from costcalc.memory import kv_cache_elements, optimizer_moment_elements
from costcalc.params import block_params, param_report, shared_params
from costcalc.spec import ModelSpec
from costcalc.tensors import parameter_tensors
from tests.conftest import ROOT, Invoke

BASE = {
    "vocab_size": 100,
    "d_model": 64,
    "n_layers": 6,
    "n_heads": 4,
    "context_length": 32,
    "position": "rotary",
    "norm": "rmsnorm",
    "ffn": "swiglu",
    "qkv_bias": False,
    "attn_out_bias": False,
    "ffn_bias": False,
}


def spec(**extra: object) -> ModelSpec:
    return ModelSpec.model_validate({**BASE, **extra})


def test_a_reused_block_counts_its_sets_once_and_its_uses_every_time() -> None:
    own, reused = spec(), spec(shared_weight_sets=2)
    block = block_params(own)
    assert block_params(reused) == 0  # nothing of its own: all in the two sets
    assert shared_params(reused) == 2 * block
    assert param_report(reused).total == param_report(own).total - 4 * block
    # The per-block rows would hide the sets: the report gives the kind's parts instead.
    assert param_report(reused).per_block is None
    assert param_report(reused).stacks[0].shared == 2 * block
    assert forward_macs(reused, 1, 16) == forward_macs(own, 1, 16)
    assert kv_cache_elements(reused, 1, 16) == kv_cache_elements(own, 1, 16)
    # Optimizer state follows the tensors: one set of moments per weight set.
    assert optimizer_moment_elements(reused, "adamw") == 2 * param_report(reused).total


def test_more_sets_than_layers_hold_one_per_layer() -> None:
    assert shared_params(spec(shared_weight_sets=9)) == 6 * block_params(spec())


def test_adapters_and_projection_are_per_use() -> None:
    # D = 64, h = 4 D = 256 gated (2h = 512), r = 8: an adapter 8 x 64 + 512 x 8 per use; the
    # q/k/v adapters 3 x (8 x 64 + 64 x 8); the projection 64 x 64 each layer's own.
    base = spec(shared_weight_sets=1)
    ffn = spec(shared_weight_sets=1, adapter_rank=8)
    qkv = spec(shared_weight_sets=1, adapter_rank=8, qkv_adapters=True)
    projected = spec(shared_weight_sets=1, use_projection=True)
    assert shared_params(ffn) - shared_params(base) == 6 * (8 * 64 + 512 * 8)
    assert shared_params(qkv) - shared_params(ffn) == 6 * 3 * (8 * 64 + 64 * 8)
    assert block_params(projected) == 64 * 64
    macs = forward_macs(qkv, 1, 16) - forward_macs(base, 1, 16)
    assert macs == 16 * 6 * (8 * 64 + 512 * 8 + 3 * (8 * 64 + 64 * 8))


def test_concatenated_embeddings_widen_the_attention_input() -> None:
    # q, k, v read 2 D = 128 (H d = 4 x 32 = 128 each), o_proj 128 -> 64, input norm 2 D.
    wide = spec(concat_embeddings=True, head_dim=32, norms_per_block=2)
    attention = 3 * 128 * 128 + 64 * 128
    ffn = 3 * 64 * 256
    assert block_params(wide) == attention + ffn + 128 + 64


def test_norms_past_the_first_two_are_each_layers_own() -> None:
    reused = spec(shared_weight_sets=1, norms_per_block=3)
    assert block_params(reused) == 64
    scopes = {t.name: t.scope for t in parameter_tensors(reused) if t.part == "norms"}
    assert scopes == {"norm.weight": "set", "own_norm.weight": "layer"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"adapter_rank": 8}, "adapter_rank: belongs to a block reused"),
        ({"use_projection": True}, "use_projection: belongs to a block reused"),
        ({"shared_weight_sets": 1, "qkv_adapters": True}, "qkv_adapters: sized by adapter_rank"),
        ({"shared_weight_sets": 1, "adapter_rank": 8, "ffn": "none"}, "adapts a dense FFN"),
        ({"concat_embeddings": True}, "head_dim: required with concat_embeddings"),
        (
            {"concat_embeddings": True, "mixer": "none", "n_heads": None},
            "concat_embeddings: applies to attention blocks",
        ),
    ],
)
def test_rules(extra: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        spec(**extra)


def test_schema_describes_the_keys(cli: Invoke) -> None:
    properties = json.loads(cli("schema").stdout)["properties"]
    for key in (
        "shared_weight_sets",
        "adapter_rank",
        "qkv_adapters",
        "use_projection",
        "parallel_mamba",
    ):
        assert key in properties
        assert properties[key]["description"]
    assert "concat_embeddings" in properties
    group = json.dumps(json.loads(cli("schema").stdout))
    assert group.count('"shared_weight_sets"') >= 2  # a model key and a layer group's


def test_documented_example_is_valid_and_counts_one_set(tmp_path: object) -> None:
    text = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    section = text.split("### Blocks reused at several depths", 1)[1]
    example = yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])
    model = ModelSpec.model_validate(example)
    (hybrid,) = [s for s in model.stacks if s.shared_weight_sets]
    assert hybrid.n_layers == 2
    assert shared_params(hybrid) > 0 and block_params(hybrid) > 0


def test_params_shows_the_shared_part(cli: Invoke) -> None:
    path = str(ROOT / "tests" / "fixtures" / "hf" / "zamba2-2.7b.json")
    out = cli("params", "-c", path).stdout
    assert "shared weight sets and adapters" in out
    data = json.loads(cli("params", "-c", path, "-f", "json").stdout)
    stacks = data["parameters"]["stacks"]
    assert [s["shared"] for s in stacks] == [0, 367_344_640]  # golden parameters_shared


MAMBA = {"inner": 128, "state": 16, "dt_rank": 8}


def test_mamba_heads_change_shapes_not_counts() -> None:
    # Zamba's multi-head Mamba stacks each head's x_proj and dt_proj: (h, R + 2N, I / h) and
    # (h, I / h, R) hold as many elements as one x_proj (R + 2N) x I and dt_proj I x R.
    one = spec(mixer="mamba", n_heads=None, mamba=MAMBA)
    two = spec(mixer="mamba", n_heads=None, mamba={**MAMBA, "heads": 2})
    assert param_report(two).total == param_report(one).total
    assert forward_macs(two, 1, 16) == forward_macs(one, 1, 16)
    shapes = {t.name: t.shape for t in parameter_tensors(two)}
    assert shapes["mixer.x_proj_weight"] == (2, 8 + 32, 64)


def test_a_mamba_beside_attention_keeps_its_state() -> None:
    hybrid = spec(parallel_mamba=True, mamba=MAMBA)
    plain = spec()
    assert block_params(hybrid) > block_params(plain)
    assert kv_cache_elements(hybrid, 1, 16) == kv_cache_elements(plain, 1, 16)
    assert hybrid.recurrent_mixer == "mamba"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"mixer": "mamba", "n_heads": None, "parallel_mamba": True, "mamba": MAMBA},
            "parallel_mamba: applies to attention blocks",
        ),
        (
            {"parallel_mamba": True, "parallel_mamba2": True, "mamba": MAMBA},
            "not two",
        ),
        (
            {"mixer": "mamba", "n_heads": None, "mamba": {**MAMBA, "heads": 3}},
            "does not split into 3 equal heads",
        ),
        ({"parallel_mamba": True}, "mamba: required for mamba blocks"),
    ],
)
def test_mamba_beside_attention_rules(extra: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        spec(**extra)


def test_a_concatenation_width_sizes_the_input_norm_and_q_k_v() -> None:
    # concat_width 100: q, k, v read 100 (H d = 128 each), o_proj 128 -> 64, input norm 100.
    built = spec(concat_embeddings=True, concat_width=100, head_dim=32, norms_per_block=2)
    assert block_params(built) == 3 * 128 * 100 + 64 * 128 + 3 * 64 * 256 + 100 + 64
    with pytest.raises(ValidationError, match="concat_width: the width of concat_embeddings"):
        spec(concat_width=100)
