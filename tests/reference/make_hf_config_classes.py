"""Generate costcalc/data/hf_config_classes.json: transformers' configuration classes as data.

Run by hand (it needs transformers; costcalc never imports it):

    python tests/reference/make_hf_config_classes.py

For every ``model_type`` costcalc reads (its family registry) that transformers 5.24 has a
configuration class for (``CONFIG_MAPPING``), the class's fields in declaration order, the
default of each field whose default is a plain JSON value (a number, string, true/false or null;
others, such as a tuple, are left out of ``defaults``), its ``attribute_map`` (alias ->
attribute), and ``heads_divide_width`` when the class refuses a width its heads do not divide
(66 over 4; elsewhere the modeling code floors D / H), ``heads_group`` when it refuses query
heads that are not a multiple of the key/value heads (4 over 3), ``linear_heads_group`` when it
refuses Gated DeltaNet value heads that are not a multiple of its key heads (3 over 2),
``not_null``: the fields whose type admits no None (a file setting one to null is refused by the
class's strict validation), ``null_refused``: the fields whose type admits None and whose default
is not None, but whose null the class refuses over its own defaults (``__post_init__`` computes
with it, or a ``validate_*`` fails), each with the exception's class and the layer lists that,
given, make the null taken (``unless``: the class derives them from the field only when they are
absent), and ``odd_heads``: where the class's ``validate_rope``
(transformers/modeling_rope_utils.py, lines 902-914) finds an odd head it refuses when rotated
whole: ``head_dim`` (a head_dim of 7 or 129 given: Cosmos 3 Edge's rotary sections, which
must sum to half the head, take 129), ``width`` (no head_dim, 28 over 4 heads: the class
derives D // H), ``qk_rope_head_dim`` (a multi-head latent attention's rotary slice of 7, which
the class points ``head_dim`` at), each probed with the whole head rotated
(``partial_rotary_factor`` 1), and ``defaults`` when any is refused with the class's own rotary
settings (a file that states none).
``PretrainedConfig``'s own fields
(``architectures``, ``dtype``, labels) are left out.

For every multimodal class (one with a ``text_config`` sub-config) whose auto mappings name one
``*ForConditionalGeneration`` model, under ``ties``: whether that model, built on the meta
device, ties its LM head to the text decoder's token table (each of its ``PreTrainedModel``
parts ties by its own config's ``tie_word_embeddings``; where the class defaults build no such
model, AutoModelForCausalLM's model, else the built config's key, and never when the model
declares no ``_tied_weights_keys``), for the
wrapper's and the ``text_config``'s key each absent, true or false (``"wrapper/text"``, e.g.
``"absent/false"``). Under ``text_types``, for every class with a ``text_config`` sub-config: the
``model_type`` it builds that config as (``SubConfigSpec``, transformers/configuration_utils.py),
and whether a ``model_type`` the file's ``text_config`` gives is read instead (``file`` true: the
spec names ``AutoConfig``; a spec naming a configuration class builds that class whatever the
file says).

costcalc reads a file's keys through these (costcalc/formats/hf_classes.py): a key the file leaves
out takes the class default, an alias is read as its attribute, and when a file gives an
attribute under two spellings the one transformers sets last wins.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import sys
from pathlib import Path

import torch
import transformers
from transformers import CONFIG_MAPPING, AutoModelForCausalLM, PretrainedConfig
from transformers.models.auto import modeling_auto

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from costcalc.formats.families import registry  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "reference"))
from make_differential import family_bases, fixture_family  # noqa: E402
from make_golden import fixture_path  # noqa: E402

OUTPUT = ROOT / "costcalc" / "data" / "hf_config_classes.json"
BASE_FIELDS = {field.name for field in dataclasses.fields(PretrainedConfig)}


def plain(value: object) -> bool:
    """A default JSON writes as it is: not a tuple, list or sub-config, and finite."""
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, bool | int | str)


def builds(cls: type, width: int, kv_heads: int = 2, **sizes: int) -> bool:
    """The class takes ``hidden_size`` ``width`` over 4 heads (``kv_heads`` key/value heads)
    and ``sizes``."""
    try:
        cls(hidden_size=width, num_attention_heads=4, num_key_value_heads=kv_heads, **sizes)
    except Exception:
        return False
    return True


LINEAR = {"linear_num_key_heads": 2, "linear_num_value_heads": 4}
"""Gated DeltaNet heads that group (4 value heads over 2 key heads)."""

MAMBA = {"mamba_n_heads": 2}
"""Mamba heads that divide ``mamba_expand`` x 66, so a hybrid class's own Mamba check (Bamba,
Granite 4.0: ``mamba_n_heads must divide mamba_expand * hidden_size``) passes and the width
probe finds only a heads check."""


def record(cls: type, keys: dict) -> dict:
    """What costcalc reads of ``cls``; ``keys``: the family fixture's keys for that class."""
    fields = [f for f in dataclasses.fields(cls) if f.name not in BASE_FIELDS]
    found = {
        "class": cls.__name__,
        "fields": [f.name for f in fields],
        "defaults": {f.name: f.default for f in fields if plain(f.default)},
        "attribute_map": dict(cls.attribute_map),
    }
    mamba = MAMBA if set(MAMBA) <= {f.name for f in fields} else {}
    if builds(cls, 64, **mamba) and not builds(cls, 66, **mamba):
        found["heads_divide_width"] = True
    if builds(cls, 64) and not builds(cls, 64, 3):
        found["heads_group"] = True
    linear = set(LINEAR) <= {f.name for f in fields} and builds(cls, 64, **LINEAR)
    if linear and not builds(cls, 64, **{**LINEAR, "linear_num_value_heads": 3}):
        found["linear_heads_group"] = True
    found["not_null"] = [f.name for f in fields if not nullable(f.type)]
    refused = nulls_refused(cls, [f for f in fields if nullable(f.type)], keys)
    if refused:
        found["null_refused"] = refused
    odd = odd_heads(cls)
    if odd:
        found["odd_heads"] = odd
    return found


ODD_HEAD = "RoPE requires an even rotary dimension"
WHOLE = (
    {
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 1.0,
        }
    },
    {"partial_rotary_factor": 1.0},
)
"""Two ways of asking a class to rotate the whole head: a flat ``rope_parameters`` (a class
whose default nests one per layer type takes it for every layer), or the top-level key."""


def refuses_odd(cls: type, **sizes: object) -> bool:
    """The class refuses ``sizes`` over 4 heads (2 key/value heads) for an odd rotary head."""
    try:
        cls(num_attention_heads=4, num_key_value_heads=2, **sizes)
    except Exception as exc:
        return ODD_HEAD in str(exc)
    return False


def odd_heads(cls: type) -> list[str]:
    """Which odd heads the class's validate_rope refuses (see the module docstring)."""
    cases = {
        "head_dim": [{"hidden_size": 32, "head_dim": 7}, {"hidden_size": 32, "head_dim": 129}],
        "width": [{"hidden_size": 28}],
    }
    if "qk_rope_head_dim" in {f.name for f in dataclasses.fields(cls)}:
        cases["qk_rope_head_dim"] = [{"hidden_size": 32, "qk_rope_head_dim": 7}]
    found = [
        name
        for name, tried in cases.items()
        if any(refuses_odd(cls, **sizes, **whole) for sizes in tried for whole in WHOLE)
    ]
    if any(refuses_odd(cls, **sizes) for tried in cases.values() for sizes in tried):
        found.append("defaults")
    return found


def made(cls: type, **values: object) -> str | None:
    """The exception's class name where ``cls(**values)`` raises, else None."""
    try:
        cls(**copy.deepcopy(values))
    except Exception as exc:
        return type(exc).__name__
    return None


def nulls_refused(cls: type, fields: list, keys: dict) -> dict[str, dict]:
    """The keys whose null the class refuses (its ``__post_init__`` or a ``validate_*`` fails
    on it) though the key may be left out: each field whose type admits None and whose
    default is not one, and each key of the family's fixture ``keys`` that is no field (a
    legacy key ``__post_init__`` reads). A null is refused when it is over the class's
    defaults and over the fixture (a field), or over the fixture (a legacy key), wherever the
    key left out builds; each with the exception and the layer lists that, given as the class
    derives them, make the null taken (the class then derives nothing from it)."""
    names = {f.name for f in dataclasses.fields(cls)}
    fixture = {k: v for k, v in keys.items() if k not in BASE_FIELDS and k != "model_type"}
    cases = [f.name for f in fields if f.default is not None]
    cases += [k for k, v in fixture.items() if k not in names and v is not None]
    found = {}
    for key in cases:
        bases = [fixture] if key not in names else [{}, fixture] if fixture else [{}]
        refusals = [null_refusal(cls, base, key) for base in bases]
        if any(r == {} for r in refusals) or all(r is None for r in refusals):
            continue
        found[key] = next(r for r in refusals if r)
    return found


def null_refusal(cls: type, base: dict, key: str) -> dict | None:
    """``{"error", "unless"}`` where ``cls`` refuses ``key`` null over ``base`` (the layer
    lists the class derives left out, where it builds without them), ``{}`` where it takes it,
    None where ``base`` without the key does not build."""
    derivable = [
        f.name for f in dataclasses.fields(cls) if f.name not in BASE_FIELDS and f.default is None
    ]
    left_out = {k: v for k, v in base.items() if k != key}
    if made(cls, **left_out) is not None:
        return None
    derived = cls(**copy.deepcopy(left_out))
    lists = [
        name
        for name in derivable
        if name != key and isinstance(getattr(derived, name, None), list | tuple)
    ]
    stripped = {k: v for k, v in left_out.items() if k not in lists}
    if made(cls, **stripped) is None:
        left_out = stripped
    else:  # the base needs its lists (GPT-Neo's attention_types): the null over them
        lists = [name for name in lists if name not in left_out]
    error = made(cls, **{**left_out, key: None})
    if error is None:
        return {}
    unless = [
        name
        for name in lists
        if made(cls, **{**left_out, key: None, name: list(getattr(derived, name))}) is None
    ]
    return {"error": error, "unless": unless}


def nullable(kind: object) -> bool:
    """A field annotation that admits None (``int | None``, ``Any``): transformers' strict
    dataclass refuses a null for any other."""
    shown = kind if isinstance(kind, str) else repr(kind)
    return "None" in shown or "Optional" in shown or "Any" in shown or "object" in shown


SETTINGS = {"absent": None, "true": True, "false": False}


def generation_class(model_type: str) -> type | None:
    """The ``*ForConditionalGeneration`` class the auto mappings give ``model_type``, if one."""
    names = {
        classes[model_type]
        for mapping in dir(modeling_auto)
        if mapping.endswith("_MAPPING_NAMES")
        and isinstance(classes := getattr(modeling_auto, mapping), dict)
        and isinstance(classes.get(model_type), str)
        and classes[model_type].endswith("ForConditionalGeneration")
    }
    return getattr(transformers, names.pop(), None) if len(names) == 1 else None


def wrapper_ties(model_type: str, cls: type) -> dict[str, bool] | None:
    """The tying a multimodal class ends with for each wrapper/text setting: as its
    conditional-generation model, built on the meta device, ties (:func:`head_is_token_table`;
    each ``PreTrainedModel`` inside it ties by its own config: Kosmos-2's wrapper by the
    wrapper's key and its text model by the text config's, Llama 4's language model by the text
    config's alone); where the class defaults build no such model, as the model
    AutoModelForCausalLM builds of them ties (Emu3ForCausalLM, by the text config: an emu3 file
    without ``vocabulary_map`` builds no Emu3ForConditionalGeneration), else as the built
    config's ``tie_word_embeddings`` says (never when the model declares no
    ``_tied_weights_keys``). None if it has no such model or the class cannot be built."""
    model = generation_class(model_type)
    if model is None:
        return None
    configs = {}
    for wrapper, outer in SETTINGS.items():
        for text, inner in SETTINGS.items():
            data: dict = {"text_config": text_keys(cls)}
            if inner is not None:
                data["text_config"]["tie_word_embeddings"] = inner
            if outer is not None:
                data["tie_word_embeddings"] = outer
            try:
                configs[f"{wrapper}/{text}"] = cls.from_dict(data)
            except Exception:
                return None
    builders = [model._from_config]
    if model_type in modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        builders.append(AutoModelForCausalLM.from_config)
    for build in builders:
        try:
            with torch.device("meta"):
                return {key: head_is_token_table(build(c)) for key, c in configs.items()}
        except Exception:  # the defaults build no such model (a sub-config left empty)
            continue
    declared = bool(model._tied_weights_keys)
    return {
        key: bool(getattr(c, "tie_word_embeddings", False)) and declared
        for key, c in configs.items()
    }


def text_keys(cls: type) -> dict:
    """The keys an empty ``text_config`` of ``cls`` starts from: none, or the ``model_type`` its
    class defaults name, for a class that reads the text config's ``model_type`` before it fills
    the defaults in (Exaone4_5_Config's ``__post_init__``)."""
    spec = getattr(cls, "sub_configs_defaults", {}).get("text_config")
    model_type = getattr(spec, "model_type", None)
    return {"model_type": model_type} if isinstance(model_type, str) else {}


def text_type(cls: type) -> dict | None:
    """The ``model_type`` class ``cls`` builds its ``text_config`` as, and whether a file's
    ``text_config.model_type`` is read instead (``SubConfigSpec.create_subconfig``); None
    without a ``text_config`` sub-config."""
    spec = getattr(cls, "sub_configs_defaults", {}).get("text_config")
    if spec is None or not isinstance(spec.model_type, str):
        return None
    named = isinstance(spec.config_class, type) and issubclass(spec.config_class, PretrainedConfig)
    return {"model_type": spec.model_type, "file": not named}


def head_is_token_table(model: torch.nn.Module) -> bool:
    """The model's LM head holds the very tensor of one of its other parameters (tied)."""
    head = model.get_output_embeddings()
    if head is None:
        return False
    names = [n for n, p in model.named_parameters(remove_duplicate=False) if p is head.weight]
    return len(names) > 1


def fixture_keys() -> dict[str, dict]:
    """Each family's keys in its differential fixture (make_differential.family_bases): the
    text decoder's for a family read from a multimodal file."""
    found = {}
    for family, (fixture, _) in family_bases().items():
        data = json.loads(fixture_path(fixture).read_text())
        keys = data
        for part in fixture_family(data)[1]:
            keys = keys[part]
        found.setdefault(family, keys)
    return found


def main() -> int:
    keys = fixture_keys()
    classes = {
        model_type: record(CONFIG_MAPPING[model_type], keys.get(model_type, {}))
        for model_type in sorted(registry())
        if model_type in CONFIG_MAPPING
    }
    ties = {
        model_type: found
        for model_type, cls in sorted(CONFIG_MAPPING.items())
        if "text_config" in getattr(cls, "sub_configs", {})
        and (found := wrapper_ties(model_type, cls)) is not None
    }
    text_types = {
        model_type: found
        for model_type, cls in sorted(CONFIG_MAPPING.items())
        if (found := text_type(cls)) is not None
    }
    head = {"generator": "tests/reference/make_hf_config_classes.py"}
    head["transformers"] = transformers.__version__
    lines = [f"{json.dumps(name)}: {json.dumps(data)}" for name, data in classes.items()]
    tie_lines = [f"{json.dumps(name)}: {json.dumps(data)}" for name, data in ties.items()]
    text = json.dumps(head)[:-1] + ', "classes": {\n' + ",\n".join(lines) + "\n},\n"
    type_lines = [f"{json.dumps(name)}: {json.dumps(data)}" for name, data in text_types.items()]
    text += '"ties": {\n' + ",\n".join(tie_lines) + "\n},\n"
    text += '"text_types": {\n' + ",\n".join(type_lines) + "\n}}\n"
    json.loads(text)
    OUTPUT.write_text(text)
    print(len(classes), "classes,", OUTPUT.stat().st_size, "bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
