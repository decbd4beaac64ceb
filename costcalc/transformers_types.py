"""What transformers 5.24 says about its model types, as data (costcalc never imports it).

``costcalc/data/transformers_model_types.json`` is written by
``tests/reference/make_model_types.py`` from transformers' own tables and classes:

- ``encoders``: the types it builds as no decoder language model: those with a masked-LM class
  (bert, roberta, ...) and those with no causal-LM, image-text-to-text or multimodal-LM class
  (t5's encoder-decoder, vit, ...);
- ``ignored_on_load``: for each type costcalc reads, the checkpoint keys its class drops on load
  without a word (``_keys_to_ignore_on_load_unexpected``).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources


@cache
def _data() -> dict[str, object]:
    text = resources.files("costcalc").joinpath("data/transformers_model_types.json").read_text()
    data: dict[str, object] = json.loads(text)
    return data


@cache
def encoders() -> frozenset[str]:
    """The model types transformers builds as no decoder language model."""
    found = _data()["encoders"]
    assert isinstance(found, list)
    return frozenset(found)


def ignored_on_load(model_type: str) -> tuple[str, ...]:
    """The patterns (``re.search``) of checkpoint keys ``model_type``'s class drops on load."""
    table = _data()["ignored_on_load"]
    assert isinstance(table, dict)
    return tuple(table.get(model_type, ()))
