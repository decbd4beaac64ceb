"""`costcalc heads`: seed 000's head splits, GQA grouping, explicit head widths; never corrected."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costcalc.heads import check_heads, divisors, head_splits, nearest_splits
from tests.conftest import Invoke
from tests.expect import expect_error


@pytest.mark.parametrize(
    ("d", "h", "head_dim"),
    [(256, 8, 32), (48, 4, 12), (192, 4, 48)],  # seed 000: "D=..., heads=...: head_dim=..."
)
def test_seed_000_valid_splits(cli: Invoke, d: int, h: int, head_dim: int) -> None:
    result = cli("heads", "--d", str(d), "--h", str(h), "-f", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["head_dim"] == head_dim
    assert data["valid"] is True


def test_long_option_names(cli: Invoke) -> None:
    # seed 000: D=192, heads=4 -> head_dim 48, spelled with the long names.
    result = cli("heads", "--d-model", "192", "--heads", "4", "-f", "json")
    assert json.loads(result.stdout)["head_dim"] == 48


def test_seed_000_invalid_split(cli: Invoke) -> None:
    # seed 000: "D=256, heads=7: head_dim=invalid equal split"
    result = cli("heads", "--d", "256", "--h", "7")
    assert result.exit_code == 1
    assert "invalid equal split" in result.stdout
    assert "H=4 (head_dim 64), H=8 (head_dim 32)" in result.stdout
    assert result.stderr.startswith("error: d_model 256 does not split into 7 equal heads")


def test_invalid_split_json_lists_nearest(cli: Invoke) -> None:
    result = cli("heads", "--d", "256", "--h", "7", "-f", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["verdict"] == "invalid equal split"
    assert data["head_dim"] is None
    assert data["nearest"] == [{"n_heads": 4, "head_dim": 64}, {"n_heads": 8, "head_dim": 32}]


def test_d_alone_lists_every_split(cli: Invoke) -> None:
    result = cli("heads", "--d", "48", "-f", "json")
    assert result.exit_code == 0
    splits = json.loads(result.stdout)["splits"]
    assert [(s["n_heads"], s["head_dim"]) for s in splits] == [
        (1, 48), (2, 24), (3, 16), (4, 12), (6, 8), (8, 6), (12, 4), (16, 3), (24, 2), (48, 1),
    ]  # fmt: skip
    table = cli("heads", "--d", "48")
    assert "Equal splits of D=48" in table.stdout


def test_kv_heads_grouping(cli: Invoke) -> None:
    # Qwen2.5-0.5B: 14 query heads over 2 key/value heads, D=896 -> head_dim 64.
    ok = cli("heads", "--d", "896", "--h", "14", "--kv-heads", "2", "-f", "json")
    assert ok.exit_code == 0
    assert json.loads(ok.stdout)["head_dim"] == 64
    bad = cli("heads", "--d", "896", "--h", "14", "--kv-heads", "4", "-f", "json")
    assert bad.exit_code == 1
    data = json.loads(bad.stdout)
    assert data["verdict"] == "invalid grouping"
    assert data["nearest"] == [{"n_heads": 8, "head_dim": 112}, {"n_heads": 16, "head_dim": 56}]
    listed = json.loads(cli("heads", "--d", "48", "--kv-heads", "4", "-f", "json").stdout)
    assert [s["n_heads"] for s in listed["splits"]] == [4, 8, 12, 16, 24, 48]


def test_explicit_head_dim_is_valid(cli: Invoke) -> None:
    # Gemma-7B style: 16 heads of 256 on D=3,072, so H x head_dim = 4,096 != D.
    result = cli("heads", "--d", "3072", "--h", "16", "--head-dim", "256")
    assert result.exit_code == 0
    assert "valid explicit head width" in result.stdout
    assert "4,096 differs from D = 3,072" in result.stdout
    data = json.loads(
        cli("heads", "--d", "3072", "--h", "16", "--head-dim", "256", "-f", "json").stdout
    )
    assert data["query_width"] == 4096
    assert data["explicit_head_dim"] is True


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--d", "0", "--h", "8"], 2, "--d: '0' is not a positive count"),
        (["--d", "256", "--h", "-2"], 2, "--heads: '-2': a count cannot be negative"),
        (["--d", "256", "--h", "8", "--kv-heads", "0"], 2, "--kv-heads: '0' is not a positive"),
        (["--d", "256", "--h", "8", "--head-dim", "0"], 2, "--head-dim: '0' is not a positive"),
        (["--d", "256", "--head-dim", "32"], 2, "--head-dim needs --h"),
        (["--d", str(2**40)], 1, "expected at most"),
    ],
)
def test_bad_input(cli: Invoke, args: list[str], code: int, message: str) -> None:
    result = cli("heads", *args)
    expect_error(result, code, message)


def test_non_integer_and_missing_width(cli: Invoke) -> None:
    assert cli("heads", "--d", "25.6", "--h", "8").exit_code == 2
    assert cli("heads", "--h", "8").exit_code == 2


@given(st.integers(1, 5000))
def test_divisors_are_exactly_the_divisors(n: int) -> None:
    assert divisors(n) == [k for k in range(1, n + 1) if n % k == 0]


@given(st.integers(1, 2000), st.integers(1, 100))
def test_never_corrected(d: int, h: int) -> None:
    # A check reports; it never changes the head count, and a valid split has head_dim x H = D.
    check = check_heads(d, h)
    assert check.n_heads == h
    assert check.valid == (d % h == 0)
    if check.valid:
        assert check.head_dim is not None and check.head_dim * h == d
    else:
        assert all(d % s.n_heads == 0 for s in check.nearest)
        assert check.nearest == nearest_splits(d, h)


def test_head_splits_with_grouping() -> None:
    assert [s.n_heads for s in head_splits(256, kv_heads=8)] == [8, 16, 32, 64, 128, 256]


def test_a_model_s_own_split(cli: Invoke) -> None:
    """heads -p checks the model's D, H, K and head width; a given option changes one of them."""
    data = json.loads(cli("heads", "-p", "gpt2-small", "-f", "json").stdout)
    assert (data["model"], data["d_model"], data["n_heads"], data["head_dim"]) == (
        "gpt2-small",
        768,
        12,
        64,
    )
    assert data["verdict"] == "valid equal split"
    seven = cli("heads", "-p", "gpt2-small", "-H", "7")
    assert seven.exit_code == 1
    assert "gpt2-small: D=768, heads=7" in seven.stdout
    assert seven.stderr.startswith("error: gpt2-small: d_model 768 does not split into 7 equal")
    both = json.loads(cli("heads", "-p", "qwen3-8b", "-p", "gemma-2b", "-f", "json").stdout)
    assert [(r["model"], r["n_kv_heads"], r["head_dim"], r["valid"]) for r in both] == [
        ("qwen3-8b", 8, 128, True),
        ("gemma-2b", 1, 256, True),
    ]


def test_a_model_without_attention_heads(cli: Invoke) -> None:
    result = cli("heads", "-p", "deepseek-v3")
    assert result.exit_code == 2
    assert "deepseek-v3 has no attention blocks to split into heads (its blocks: mla" in (
        result.stderr
    )
    assert cli("heads").exit_code == 2
    assert "or a model: -p, -c or --hf" in cli("heads", "-H", "8").stderr
