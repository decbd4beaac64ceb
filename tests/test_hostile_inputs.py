"""Inputs that other tools refuse, or that would be silently ignored, are refused with a clear
error: layer types transformers refuses (whatever the window), and overrides a layered model's
own groups would win over while the model's name claimed them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, Invoke

QWEN2 = json.loads((FIXTURES / "hf" / "qwen2.5-0.5b.json").read_text())
LAYERS = QWEN2["num_hidden_layers"]


@pytest.mark.parametrize("window", [True, False])
@pytest.mark.parametrize(
    ("layer_types", "message"),
    [
        (["bogus"] * LAYERS, "unknown layer type 'bogus'"),
        (["full_attention"] * 3, f"lists 3 layers, but the model has {LAYERS}"),
        ("full_attention", "expected a list of layer types (strings)"),
    ],
)
def test_layer_types_transformers_refuses_fail_check(
    cli: Invoke, tmp_path: Path, window: bool, layer_types: object, message: str
) -> None:
    """transformers' Qwen2Config refuses these (validate_layer_type) with or without
    use_sliding_window, so costcalc does too."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN2 | {"layer_types": layer_types, "use_sliding_window": window}))
    result = cli("check", str(path), "-f", "json")
    assert result.exit_code == 1
    [record] = json.loads(result.stdout)
    assert [f["field"] for f in record["findings"]] == ["layer_types"]
    assert message in record["findings"][0]["message"]


def test_layer_types_transformers_takes_pass_without_a_window(cli: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    kinds = ["sliding_attention", "full_attention", "mamba", "attention"] * (LAYERS // 4)
    path.write_text(json.dumps(QWEN2 | {"layer_types": kinds, "use_sliding_window": False}))
    result = cli("check", str(path), "-f", "json")
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout)[0]["parameters"] == 494_032_768


@pytest.mark.parametrize(
    "args",
    [
        ["-p", "gemma-4-31b", "--head-dim", "128"],
        ["-p", "gemma-4-31b:kv_heads=2"],
        ["-c", str(FIXTURES / "hf" / "laguna-xs-2.1.json"), "--heads", "8"],
    ],
)
def test_an_override_a_layer_group_would_ignore_is_refused(cli: Invoke, args: list[str]) -> None:
    """A group's own key wins over a model-wide one, so such an override would not change the
    layers of that group while the model's name said it did: it is refused, naming the group."""
    for command in ("params", "memory"):
        result = cli(command, *args)
        assert result.exit_code == 1, result.stdout
        assert "sets " in result.stderr and "itself, and a layer group's own value wins" in (
            result.stderr
        )
        assert "(command line): layers." in result.stderr


def test_an_override_no_group_sets_still_applies(cli: Invoke) -> None:
    """Gemma 2's groups set only their window: the heads override reaches every block."""
    result = cli("params", "-p", "gemma-2-2b:heads=4", "-f", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["name"] == "gemma-2-2b (n_heads=4)"
    assert data["model"]["n_heads"] == 4


def test_an_api_override_clearing_what_a_group_sets_is_refused() -> None:
    """``sliding_window=None`` would clear the model's window while every group keeps its own:
    refused as any other override the groups would ignore; the FFN width's other form, cleared
    alongside the one given, is not."""
    import costcalc
    from costcalc.errors import ConfigError

    with pytest.raises(ConfigError, match=r"sliding_window \(override\): layers\.0"):
        costcalc.load("gemma-2-2b", sliding_window=None)
    cleared = costcalc.load("gemma-2-2b", ffn_hidden=4096, ffn_mult=None)
    assert cleared.spec.ffn_hidden == 4096
