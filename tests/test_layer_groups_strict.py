"""A layer group's block keys are exactly as strict as the model's own: a ``1`` is no ``true``, a
``true`` or ``2.0`` no size, a size out of bounds is refused, in a group and in a pattern run."""

from __future__ import annotations

from typing import Any

import pytest

from costcalc.blocks import BLOCK_FIELDS
from costcalc.errors import ConfigError
from costcalc.files import Document
from costcalc.loaders import load_document
from costcalc.scalars import MAX_SIZE

BASE = {"vocab_size": 256, "context_length": 64, "d_model": 64, "n_layers": 2, "n_heads": 4}
WRONG: list[Any] = [1, 0, True, False, 2.0, "1", "true", -1, MAX_SIZE + 1, [1], {"a": 1}]


def _messages(data: dict[str, Any], field: str) -> list[str]:
    """What costcalc says about ``field`` when ``data`` is loaded (nothing when it loads)."""
    try:
        load_document(Document("model.json", data))
    except ConfigError as exc:
        return [p.message for p in exc.problems if p.field == field]
    return []


@pytest.mark.parametrize("key", BLOCK_FIELDS)
def test_group_keys_refuse_what_the_top_level_refuses(key: str) -> None:
    for value in WRONG:
        top = _messages({**BASE, key: value}, key)
        group = _messages({**BASE, "layers": [{"count": 2, key: value}]}, f"layers.0.{key}")
        run = _messages(
            {**BASE, "layers": [{"count": 2, "pattern": [{"count": 1, key: value}]}]},
            f"layers.0.pattern.0.{key}",
        )
        assert group == top, (key, value)
        assert run == top, (key, value)


def test_group_boolean_as_one_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        load_document(Document("model.json", {**BASE, "layers": [{"count": 2, "qkv_bias": 1}]}))
    [problem] = caught.value.problems
    assert problem.field == "layers.0.qkv_bias"
    assert "valid boolean" in problem.message
