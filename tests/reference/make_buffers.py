"""Write tests/golden/buffers.json: the buffers (tensors that are not parameters) each model holds.

Run by hand (pytest does not collect this file):

    nice python tests/reference/make_buffers.py                  # every model
    nice python tests/reference/make_buffers.py --only gpt2 xglm-564m

Every fixture of make_golden.py's and make_golden_families.py's ``MODELS`` is built as those
scripts build it (``build_model``; ``build_from``, a multimodal fixture through its text decoder),
on the meta device, in bfloat16 (``dtype=torch.bfloat16``, as ``from_pretrained`` sets the default
dtype while the modules are made): a buffer made in the default dtype is bfloat16, one its code
makes in a dtype of its own (rotary ``inv_freq``: float32) keeps it. For each model: its buffers
grouped by name pattern (each layer index written ``*``), numel and dtype of one buffer, whether it
is persistent (saved in ``state_dict()``; not when its module's ``_non_persistent_buffers_set``
names it); the totals of buffer elements and bytes; ``parameters_total`` and their bytes; the
parameters the class keeps in a dtype of its own (``parameters_not_in_dtype``, grouped as the
buffers: ``_keep_in_fp32_modules``' routers); and ``model.get_memory_footprint()`` (parameters
and buffers, ``element_size()`` bytes each), or the exception a build raised. Results merge into
the existing file by model.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import traceback

import torch
import transformers
from make_golden import MODELS as LEGACY_MODELS
from make_golden import ROOT, build_model, load_config, model_kwargs
from make_golden_families import MODELS, build
from torch import nn

OUTPUT = ROOT / "tests" / "golden" / "buffers.json"
GENERATOR = "tests/reference/make_buffers.py"
DTYPE = torch.bfloat16
INDEX = re.compile(r"(?<=\.)\d+(?=\.|$)")


def built(name: str) -> nn.Module:
    """The record's model, as its golden script builds it, on meta in ``DTYPE``."""
    if name in LEGACY_MODELS:
        return build_model(load_config(name), "meta", DTYPE, **model_kwargs(name, "meta"))
    fixture, text, _ = MODELS[name]
    return build(fixture, text, "meta", DTYPE)[1]


def grouped(named) -> list[list]:
    """[pattern, count, numel, dtype, persistent] per kind of tensor, in registration order, from
    (full name, tensor, persistent) triples."""
    rows: dict[tuple, list] = {}
    for full, tensor, persistent in named:
        key = (
            INDEX.sub("*", full),
            tensor.numel(),
            str(tensor.dtype).removeprefix("torch."),
            persistent,
        )
        rows.setdefault(key, [key[0], 0, *key[1:]])[1] += 1
    return list(rows.values())


def buffer_rows(model: nn.Module) -> list[list]:
    """Each kind of buffer, persistent unless its module's ``_non_persistent_buffers_set`` names
    it."""
    return grouped(
        (f"{module_name}.{local}" if module_name else local, buffer, local not in skipped)
        for module_name, module in model.named_modules()
        for skipped in [module._non_persistent_buffers_set]
        for local, buffer in module.named_buffers(recurse=False)
        if buffer is not None
    )


def other_dtype_rows(model: nn.Module) -> list[list]:
    """Each kind of parameter not in ``DTYPE`` (a module the class keeps in fp32, such as
    ``_keep_in_fp32_modules``' routers); persistent, as every parameter is."""
    return grouped((n, p, True) for n, p in model.named_parameters() if p.dtype != DTYPE)


def record(name: str) -> dict:
    try:
        model = built(name)
    except Exception as exc:
        return {"error": "".join(traceback.format_exception_only(exc)).strip()[-400:]}
    buffers, parameters = list(model.buffers()), list(model.parameters())
    return {
        "model_class": type(model).__name__,
        "parameters_total": sum(p.numel() for p in parameters),
        "parameter_bytes": sum(p.numel() * p.element_size() for p in parameters),
        "buffer_elements": sum(b.numel() for b in buffers),
        "buffer_bytes": sum(b.numel() * b.element_size() for b in buffers),
        "memory_footprint": model.get_memory_footprint(),
        "buffers": buffer_rows(model),
        "parameters_not_in_dtype": other_dtype_rows(model),
    }


def main(argv: list[str]) -> int:
    names = list(LEGACY_MODELS) + [n for n in MODELS if n not in LEGACY_MODELS]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=names, default=names)
    args = parser.parse_args(argv)
    transformers.logging.set_verbosity_error()
    data = json.loads(OUTPUT.read_text()) if OUTPUT.exists() else {"models": {}}
    for name in args.only:
        print(name, flush=True)
        data["models"][name] = record(name)
    data.update(
        generator=GENERATOR,
        torch=torch.__version__,
        transformers=transformers.__version__,
        date=datetime.date.today().isoformat(),
        dtype=str(DTYPE).removeprefix("torch."),
        row=["pattern", "count", "numel", "dtype", "persistent"],
    )
    models = {n: data["models"][n] for n in names if n in data["models"]}
    head = {k: v for k, v in data.items() if k != "models"}
    lines = ",\n".join(f"  {json.dumps(n)}: {json.dumps(r)}" for n, r in models.items())
    parts = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in head.items()]
    OUTPUT.write_text("{\n" + ",\n".join([*parts, f' "models": {{\n{lines}\n }}']) + "\n}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
