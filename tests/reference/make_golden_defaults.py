"""Generate tests/golden/hf_reference_extra.json: each family built from a minimal config.

Run by hand, like make_golden.py (it reuses that script's builder and records):

    python tests/reference/make_golden_defaults.py

Each tests/fixtures/hf-defaults/<model_type>.json gives only the sizes a family cannot do
without, so transformers fills in every other setting from its configuration class's defaults
(key/value heads, head_dim, biases, rotary fraction, tying, experts). The records check that
costcalc applies the same defaults. Models are built on the meta device; nothing is downloaded.
"""

from __future__ import annotations

import datetime
import json
import sys

import torch
import transformers
from make_golden import ROOT, build_model, params_record
from transformers import CONFIG_MAPPING

FIXTURES = ROOT / "tests" / "fixtures" / "hf-defaults"
OUTPUT = ROOT / "tests" / "golden" / "hf_reference_extra.json"


def main() -> int:
    models = {}
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text())
        config = CONFIG_MAPPING[data["model_type"]].from_dict(data)
        record = {"config": str(path.relative_to(ROOT))}
        record.update(params_record(build_model(config), config))
        record["config_defaults"] = {
            key: getattr(config, key)
            for key in ("num_key_value_heads", "head_dim", "sliding_window", "tie_word_embeddings")
            if hasattr(config, key)
        }
        models[path.stem] = record
        print(path.stem, record["parameters_total"], flush=True)
    output = {
        "generator": "tests/reference/make_golden_defaults.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "date": datetime.date.today().isoformat(),
        "models": models,
    }
    OUTPUT.write_text(json.dumps(output, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
