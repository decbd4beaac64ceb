"""Generate costcalc/data/hf_head_one.json: what each family's forward does with heads 1 wide.

Run by hand (it needs torch and transformers; costcalc never imports them):

    nice python tests/reference/make_head_one.py

transformers' rotary embedding gives a head of 1 rotated whole cos and sin 2 wide (one
frequency, ``torch.arange(0, 1, 2)``, doubled). What the attention then does is its own: Llama's
``q * cos + rotate_half(q) * sin`` broadcasts the queries and keys to 2 wide; an attention that
rotates interleaved pairs (``x[..., ::2]`` beside ``x[..., 1::2]``: Cohere's, ERNIE 4.5's) finds
no pair; one that splits cos and sin into ``mrope_section`` parts (GLM-OCR's, PaddleOCR-VL's)
cannot split 2 so. For each family costcalc reads, its fixture (make_differential.py's
``family_bases``) is given heads 1 wide (``head_dim`` 1 where its class has one, else
``hidden_size`` = ``num_attention_heads``) rotated whole (``partial_rotary_factor`` 1) and built
and run as make_differential.py runs a variant (``measured``: meta device, B=1, T=16).
(a class that ignores ``head_dim``, whose cache shows no 1-wide head, is tried by the width too).
``families``: family -> ``broadcast`` (the forward runs, its cache keys 2 wide, values 1; keys
1 wide on layers without positions),
``pairs`` (the forward fails in an interleaved rotation), ``sections`` (it fails splitting cos
and sin into sections); a family whose build is refused, whose forward fails otherwise (on the
meta device: ``Tensor.item()``) or that runs another way is printed and left out.
"""

from __future__ import annotations

import copy
import json
import sys

import transformers
from make_differential import ROOT, family_bases, fixture_family, measured
from make_golden import fixture_path
from make_padding_index import data_text
from transformers import CONFIG_MAPPING

OUTPUT = ROOT / "costcalc" / "data" / "hf_head_one.json"
FAILURES = {
    "Sizes of tensors must match except in dimension": "pairs",
    "split_with_sizes expects split_sizes to sum exactly": "sections",
}
"""The forward's error -> how the attention takes the 2-wide cos and sin."""


def with_head_one(data: dict, path: tuple[str, ...], text: bool, width: bool) -> dict | None:
    """``data`` with heads 1 wide rotated whole (by ``head_dim`` where the file or the class has
    one, and with ``width`` or without one by ``hidden_size`` = ``num_attention_heads``), or
    None when the file cannot say so."""
    changed = copy.deepcopy(data)
    keys = changed
    for key in path:
        keys = keys[key]
    whole = CONFIG_MAPPING[data["model_type"]].from_dict(copy.deepcopy(data))
    config = whole.get_text_config() if text or path else whole
    given = "head_dim" in keys or "head_dim" in type(config).__dataclass_fields__
    if given:
        keys["head_dim"] = 1
    if width or not given:
        if "hidden_size" not in keys or "num_attention_heads" not in keys:
            return None
        keys["hidden_size"] = keys["num_attention_heads"]
    keys["partial_rotary_factor"] = 1.0
    rope = keys.get("rope_parameters")
    if isinstance(rope, dict) and "partial_rotary_factor" in rope:
        rope["partial_rotary_factor"] = 1.0
    return changed


def outcome(record: dict) -> str:
    """``broadcast``, ``pairs``, ``sections``, or what happened instead."""
    if "refused" in record:
        return f"refused: {record['refused']}"
    error = record.get("forward_error")
    if error is not None:
        return next((kind for text, kind in FAILURES.items() if text in error), error)
    kinds = record.get("kv_cache", {}).get("cache_layer_kinds", [])
    widths = {
        (k["tensors"]["keys"][-1], k["tensors"]["values"][-1])
        for k in kinds
        if {"keys", "values"} <= set(k.get("tensors", {}))
    }
    if (2, 1) in widths and widths <= {(2, 1), (1, 1)}:  # (1, 1): layers without positions
        return "broadcast"
    return f"cache widths {sorted(widths)}"


def main() -> int:
    transformers.logging.set_verbosity_error()
    found = {}
    for family, (fixture, text) in sorted(family_bases().items()):
        base = json.loads(fixture_path(fixture).read_text())
        _, path = fixture_family(base)
        seen = "no head key"
        for width in (False, True):  # a class that ignores head_dim (D / H): by the width
            data = with_head_one(base, path, text, width)
            if data is not None:
                seen = outcome(measured(data, text))
            if not seen.startswith("cache widths") or "(2, 1)" in seen:
                break
        print(family, seen[:200], flush=True)
        if seen in ("broadcast", "pairs", "sections"):
            found[family] = seen
    text = data_text("tests/reference/make_head_one.py", "families", found)
    OUTPUT.write_text(text)
    print(len(found), "families")
    return 0


if __name__ == "__main__":
    sys.exit(main())
