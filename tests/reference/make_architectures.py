"""Generate tests/golden/causal_lm_classes.json: every causal-LM class transformers maps, with the
``model_type`` of the configuration class it builds from, and every ``model_type`` it knows.

Run by hand (pytest does not collect this file); it needs transformers only:

    python tests/reference/make_architectures.py

For each ``model_type`` -> class name of ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``, the class's own
``config_class.model_type`` is recorded (``DeepseekV3ForCausalLM`` builds from
``DeepseekV3Config``, ``deepseek_v3``, whichever ``model_type`` maps to it), and the keys of
``CONFIG_MAPPING_NAMES``. costcalc reads a config whose ``model_type`` transformers does not
know by the class its ``architectures`` names
(costcalc/formats/architectures.py); tests/test_architectures.py checks that table against
this file.
"""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path

import transformers
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "golden" / "causal_lm_classes.json"


def classes() -> dict[str, str]:
    """Class name -> the model_type of its configuration class, sorted by class name."""
    found: dict[str, str] = {}
    for names in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values():
        for name in names if isinstance(names, tuple) else (names,):
            cls = getattr(transformers, name, None)
            if cls is not None:
                found[name] = cls.config_class.model_type
    return dict(sorted(found.items()))


def main() -> int:
    data = {
        "generator": "tests/reference/make_architectures.py",
        "transformers": transformers.__version__,
        "date": datetime.date.today().isoformat(),
        "source": "transformers.models.auto.modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, "
        "each class's config_class.model_type",
        "classes": classes(),
        "model_types": sorted(CONFIG_MAPPING_NAMES),
    }
    OUTPUT.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"{len(data['classes'])} classes -> {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
