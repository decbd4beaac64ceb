"""Generate costcalc/data/hf_config_classes.json: transformers' configuration classes as data.

Run by hand (it needs transformers; costcalc never imports it):

    python tests/reference/make_hf_config_classes.py

For every ``model_type`` costcalc reads (its family registry) that transformers 5.24 has a
configuration class for (``CONFIG_MAPPING``), the class's fields in declaration order, the
default of each field whose default is a plain JSON value (a number, string, true/false or null;
others, such as a tuple, are left out of ``defaults``), and its ``attribute_map`` (alias ->
attribute). ``PretrainedConfig``'s own fields (``architectures``, ``dtype``, labels) are left out.
costcalc reads a file's keys through these (costcalc/formats/hf_classes.py): a key the file leaves
out takes the class default, an alias is read as its attribute, and when a file gives an
attribute under two spellings the one transformers sets last wins.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import transformers
from transformers import CONFIG_MAPPING, PretrainedConfig

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from costcalc.formats.families import registry  # noqa: E402

OUTPUT = ROOT / "costcalc" / "data" / "hf_config_classes.json"
BASE_FIELDS = {field.name for field in dataclasses.fields(PretrainedConfig)}


def plain(value: object) -> bool:
    """A default JSON writes as it is: not a tuple, list or sub-config, and finite."""
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, bool | int | str)


def record(cls: type) -> dict:
    fields = [f for f in dataclasses.fields(cls) if f.name not in BASE_FIELDS]
    return {
        "class": cls.__name__,
        "fields": [f.name for f in fields],
        "defaults": {f.name: f.default for f in fields if plain(f.default)},
        "attribute_map": dict(cls.attribute_map),
    }


def main() -> int:
    classes = {
        model_type: record(CONFIG_MAPPING[model_type])
        for model_type in sorted(registry())
        if model_type in CONFIG_MAPPING
    }
    head = {"generator": "tests/reference/make_hf_config_classes.py"}
    head["transformers"] = transformers.__version__
    lines = [f"{json.dumps(name)}: {json.dumps(data)}" for name, data in classes.items()]
    text = json.dumps(head)[:-1] + ', "classes": {\n' + ",\n".join(lines) + "\n}}\n"
    json.loads(text)
    OUTPUT.write_text(text)
    print(len(classes), "classes,", OUTPUT.stat().st_size, "bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
