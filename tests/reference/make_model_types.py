"""Generate costcalc/data/transformers_model_types.json (costcalc.transformers_types).

Run by hand (pytest does not collect this file; costcalc reads the JSON, never transformers):

    python tests/reference/make_model_types.py

Two facts, read from transformers' own tables and classes (nothing is built):

- ``encoders``: the model types transformers knows (``CONFIG_MAPPING_NAMES``) that are no
  decoder language model: those with a masked-LM class (``MODEL_FOR_MASKED_LM_MAPPING_NAMES``:
  bert, roberta, ...) and those with no causal-LM, image-text-to-text or multimodal-LM class
  (t5's encoder-decoder, vit, ...). ``costcalc check --models-only`` skips them, unless costcalc
  reads the type.
- ``ignored_on_load``: for each model type costcalc reads, the patterns of checkpoint keys its
  causal-LM class drops without a word on load (``_keys_to_ignore_on_load_unexpected``, matched
  with ``re.search`` as ``PreTrainedModel._adjust_missing_and_unexpected_keys`` does), such as
  GPT-2's saved causal masks (``attn.bias``). ``costcalc check`` does not count them against
  the config's formula.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import transformers
from transformers.models.auto import configuration_auto, modeling_auto

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "costcalc/data/transformers_model_types.json"


def _class(mapping: dict[str, object], model_type: str) -> type | None:
    name = mapping.get(model_type)
    if isinstance(name, tuple | list):
        name = name[0]
    return getattr(transformers, name, None) if isinstance(name, str) else None


def main() -> None:
    from costcalc.formats.families import registry

    known = configuration_auto.CONFIG_MAPPING_NAMES
    masked = modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES
    decoders = (
        modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        modeling_auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
        modeling_auto.MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES,
    )
    encoders = sorted(
        t for t in known if t in masked or not any(t in mapping for mapping in decoders)
    )
    ignored: dict[str, list[str]] = {}
    for model_type in sorted(registry()):
        for mapping in decoders:
            cls = _class(mapping, model_type)
            if cls is not None:
                patterns = getattr(cls, "_keys_to_ignore_on_load_unexpected", None) or ()
                if patterns:
                    ignored[model_type] = sorted(patterns)
                break
    data = {
        "generator": "tests/reference/make_model_types.py",
        "transformers": transformers.__version__,
        "encoders": encoders,
        "ignored_on_load": ignored,
    }
    OUT.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"{len(encoders)} encoders, {len(ignored)} families with ignored keys -> {OUT}")


if __name__ == "__main__":
    main()
