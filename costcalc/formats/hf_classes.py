"""transformers' configuration classes, as data: each field's default and each alias.

``costcalc/data/hf_config_classes.json`` is written by tests/reference/make_hf_config_classes.py
from transformers 5.24 (``CONFIG_MAPPING[model_type]``, a dataclass): per ``model_type`` the
class's fields in declaration order, the default of each whose default is a plain value, and its
``attribute_map`` (alias -> attribute); and per multimodal class, how it decides tying. A
config is built as ``cls(**file)``: the dataclass sets every field in declaration order, then
``PretrainedConfig.__post_init__`` sets each key that is no field, in the file's order, and
``__setattr__`` turns an alias into its attribute. So when a file gives one attribute under
several spellings, the one set last wins: a key that is no field over a field, the later key in
the file among keys that are no fields, the later field among fields.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import Any

CLASSES = "data/hf_config_classes.json"
HEAD_ONE = "data/hf_head_one.json"
"""Written by tests/reference/make_head_one.py from transformers 5.24 and torch 2.13: per
``model_type``, what its forward does with heads 1 wide rotated whole, found by running it."""
PADDING = "data/hf_padding_index.json"
"""Written by tests/reference/make_padding_index.py from transformers 5.24 and torch 2.13: per
``model_type``, the token tables and the sinusoidal position tables its model builds with a
padding index, found by building it."""


@dataclass(frozen=True)
class ConfigClass:
    """One configuration class: its name, fields (in order), plain defaults and aliases."""

    name: str
    fields: tuple[str, ...]
    defaults: Mapping[str, Any]
    aliases: Mapping[str, str]
    heads_divide_width: bool = False
    """The class refuses a width its heads do not divide (else the modeling code floors D / H)."""
    heads_group: bool = False
    """The class refuses query heads that are not a multiple of the key/value heads (else the
    model is built, and its attention fails)."""
    linear_heads_group: bool = False
    """The class refuses Gated DeltaNet value heads that are not a multiple of its key heads."""
    not_null: frozenset[str] = frozenset()
    """Fields whose type admits no None: the class refuses a file that sets one to null."""
    null_refused: Mapping[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    """Keys the file may leave out but not set to null: the class's ``__post_init__`` or a
    ``validate_*`` fails on the null; each with the exception's class and the layer lists
    that, given, make the null taken (the class derives them from the key only when absent)."""
    odd_heads: frozenset[str] = frozenset()
    """Which odd heads the class's ``validate_rope`` refuses when rotated whole
    (:mod:`costcalc.formats.hf_rotary`): ``head_dim`` (the file's head_dim), ``width`` (D // H,
    no head_dim given), ``qk_rope_head_dim`` (a latent attention's rotary slice), ``defaults``
    (either, with the class's own rotary settings)."""
    padded_tables: tuple[tuple[str, int], ...] = ()
    """The token tables the model builds with ``padding_idx=pad_token_id``, each as the key
    that sizes its rows and the rows it has beyond that key (Mllama's ``vocab_size + 8``):
    torch's ``nn.Embedding`` asserts that the index is within them (``PADDING``)."""
    padded_positions: tuple[tuple[str, int], ...] = ()
    """The sinusoidal position tables the model builds with ``padding_idx=pad_token_id``, each
    as the key that sizes its positions and the rows it has beyond them (XGLM's and Kosmos-2's
    ``max_position_embeddings + 2``): zeroing the padding row raises an IndexError outside them
    (``PADDING``)."""
    head_one: str | None = None
    """What the attention's forward does with heads 1 wide rotated whole (``HEAD_ONE``):
    ``broadcast`` (queries and keys 2 wide), ``pairs`` or ``sections`` (it fails); None when
    not probed."""

    def spellings(self, key: str) -> tuple[str, ...]:
        """``key`` and every other name of the attribute it sets (its alias or attribute)."""
        attribute = self.aliases.get(key, key)
        others = (alias for alias, target in self.aliases.items() if target == attribute)
        return tuple(dict.fromkeys((key, attribute, *others)))

    def default(self, key: str) -> Any:
        """The class default of the attribute ``key`` sets (None when it has none or it is not
        a plain value)."""
        for name in self.spellings(key):
            if self.defaults.get(name) is not None:
                return self.defaults[name]
        return None

    def set_last(self, keys: Iterable[str], order: Iterable[str]) -> str:
        """Of ``keys`` (spellings of one attribute, all in the file), the one transformers sets
        last: keys that are no field are set after every field, in the file's ``order``."""
        keys = list(keys)
        loose = [key for key in order if key in keys and key not in self.fields]
        if loose:
            return loose[-1]
        return max(keys, key=self.fields.index)


@cache
def config_class(model_type: str | None) -> ConfigClass | None:
    """The configuration class transformers builds ``model_type`` with, if costcalc has it."""
    if model_type is None:
        return None
    found = _classes().get(model_type)
    if found is None:
        return None
    return ConfigClass(
        found["class"],
        tuple(found["fields"]),
        found["defaults"],
        found["attribute_map"],
        found.get("heads_divide_width", False),
        found.get("heads_group", False),
        found.get("linear_heads_group", False),
        frozenset(found.get("not_null", ())),
        {
            key: (refused["error"], tuple(refused["unless"]))
            for key, refused in found.get("null_refused", {}).items()
        },
        frozenset(found.get("odd_heads", ())),
        _padded("tables", model_type),
        _padded("positions", model_type),
        _read(HEAD_ONE)["families"].get(model_type),
    )


def wrapper_tie(model_type: str, wrapper: bool | None, text: bool | None) -> bool | None:
    """Whether the multimodal class ``model_type`` ends with ``tie_word_embeddings`` true, given
    the wrapper's key and its ``text_config``'s (None: absent); None when costcalc does not have
    the class. Each class derives it its own way (Gemma 3 from the wrapper's key alone, LLaVA and
    Qwen2-VL from either being true), so the data holds each outcome."""
    ties = _read(CLASSES)["ties"].get(model_type)
    if ties is None:
        return None
    shown = {None: "absent", True: "true", False: "false"}
    tied: bool = ties[f"{shown[wrapper]}/{shown[text]}"]
    return tied


def text_config_type(model_type: str) -> tuple[str, bool] | None:
    """The ``model_type`` the multimodal class ``model_type`` builds its ``text_config`` as, and
    whether a ``model_type`` the file's ``text_config`` gives is built instead (its sub-config
    spec names ``AutoConfig``: LLaVA's ``llama`` is a default; a spec naming a class, Gemma 3's
    ``gemma3_text``, builds that class whatever the file says); None when costcalc does not have
    the class."""
    found = _read(CLASSES).get("text_types", {}).get(model_type)
    if found is None:
        return None
    return str(found["model_type"]), bool(found["file"])


def _padded(field: str, model_type: str) -> tuple[tuple[str, int], ...]:
    """``model_type``'s padded tables of kind ``field`` (``PADDING``), each (key, extra rows)."""
    return tuple((key, extra) for key, extra in _read(PADDING)[field].get(model_type, ()))


def _classes() -> dict[str, dict[str, Any]]:
    classes: dict[str, dict[str, Any]] = _read(CLASSES)["classes"]
    return classes


@cache
def _read(name: str) -> dict[str, Any]:
    """The package's data file ``name`` (``CLASSES``, ``PADDING``, ``HEAD_ONE``), read once."""
    data: dict[str, Any] = json.loads(files("costcalc").joinpath(name).read_text(encoding="utf-8"))
    return data
