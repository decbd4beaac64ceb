"""Which YAML/JSON files are model configs, for a gate that checks only models.

A file is a model config when, at the top (or under ``--key``), it is a mapping that

- marks a Hugging Face model: a ``model_type`` or ``architectures`` key;
- is a nanoGPT-style config: ``n_embd``, ``n_layer`` and ``n_head``;
- is a costcalc config: a ``$schema`` naming costcalc's schema (or a ``yaml-language-server``
  modeline doing so), or ``d_model`` and another of costcalc's model keys (``vocab_size``,
  ``n_layers``, ...): a data config's ``vocab_size`` and ``context_length`` are no model.

A Hugging Face config of a type transformers builds as no decoder language model (an encoder
such as ``bert``, an encoder-decoder such as ``t5``, a vision model) is skipped too, unless
costcalc reads the type.

Files ``save_pretrained`` writes beside a model's config (``generation_config.json``,
``tokenizer_config.json``, ...) never are. A file that cannot be parsed is judged by whether a
model key appears in its text: a broken model config still fails, while JSON with comments
(``tsconfig.json``) or YAML with custom tags (``!reference``) is no model config. Reading here
is lenient (any tag, duplicate keys); the strict reading is :mod:`costcalc.files`'s, when the
file is checked.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from costcalc.errors import FileReadError
from costcalc.file_limits import KeyPath
from costcalc.files import MAX_FILE_BYTES, read_text
from costcalc.spec import ModelSpec

COMPANIONS = frozenset(
    {
        "generation_config.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "tokenizer.json",
        "preprocessor_config.json",
        "processor_config.json",
        "adapter_config.json",
    }
)
"""Files written beside a model's config.json that are no model config."""

HF_MARKERS = ("model_type", "architectures")
NANOGPT_KEYS = frozenset({"n_embd", "n_layer", "n_head"})
MODEL_KEYS = frozenset(ModelSpec.model_fields)

_MODELINE = re.compile(r"^#\s*yaml-language-server:\s*\$schema=\S*costcalc", re.MULTILINE)
_MODEL_KEY_TEXT = re.compile(r"""["']?\b(?:model_type|architectures|n_embd|d_model)\b["']?\s*:""")


def skip_reason(path: str, key: KeyPath = ()) -> str | None:
    """Why ``path`` is no model config (a one-line note), or None when it is one (or when
    reading it fails in a way the check itself reports: missing, unreadable)."""
    name = Path(path).name.lower()
    if name in COMPANIONS:
        return "not a model config (written beside one by save_pretrained)"
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            return "not a model config (over 1 MiB)"
        text = read_text(path)
    except (OSError, FileReadError):
        return None
    try:
        data: Any = json.loads(text) if name.endswith(".json") else _lenient_yaml(text)
    except (ValueError, yaml.YAMLError, RecursionError):
        if _MODEL_KEY_TEXT.search(text):
            return None  # a broken model config: the check says what is wrong
        return "not a model config (not plain JSON/YAML, and no model key in it)"
    for part in key:
        if not isinstance(data, Mapping) or part not in data:
            return f"not a model config (no '{'.'.join(key)}' key)"
        data = data[part]
    if not isinstance(data, Mapping):
        return "not a model config (no mapping of keys at the top)"
    encoder = _encoder(data)
    if encoder is not None:
        return encoder
    if _is_model(data) or (not key and _MODELINE.search(text)):
        return None
    return "not a model config (no model_type, architectures or model keys)"


def _encoder(data: Mapping[Any, Any]) -> str | None:
    """Why a Hugging Face config of a model type transformers builds as no decoder language
    model (bert, t5, vit: :func:`costcalc.transformers_types.encoders`) is skipped; None for any
    other file, and for a type costcalc reads."""
    from costcalc.formats.families import LOCATED_IN, MODULE_OF
    from costcalc.transformers_types import encoders

    model_type = data.get("model_type")
    if not isinstance(model_type, str) or model_type in MODULE_OF or model_type in LOCATED_IN:
        return None
    if "text_config" in data or model_type not in encoders():
        return None
    return (
        f"not a decoder config (model_type {model_type}: transformers builds it as an encoder, "
        "an encoder-decoder or no language model; costcalc counts decoders)"
    )


def _is_model(data: Mapping[Any, Any]) -> bool:
    keys = {str(k) for k in data}
    schema = data.get("$schema")
    return (
        any(marker in keys for marker in HF_MARKERS)
        or keys >= NANOGPT_KEYS
        or (isinstance(schema, str) and "costcalc" in schema)
        or ("d_model" in keys and len(keys & MODEL_KEYS) >= 2)
    )


def _lenient_yaml(text: str) -> Any:
    """YAML as data, any tag read as plain text, lists or mappings (nothing is built)."""
    return yaml.load(text, Loader=yaml.BaseLoader)
