"""Generate costcalc/data/hf_padding_index.json: the token tables that take a padding index.

Run by hand (it needs torch and transformers; costcalc never imports them):

    nice python tests/reference/make_padding_index.py

Most decoders build their token table as ``nn.Embedding(vocab_size, hidden_size,
config.pad_token_id)``; torch's ``nn.Embedding.__init__`` (torch/nn/modules/sparse.py) asserts
``padding_idx < num_embeddings`` for a positive index and ``padding_idx >= -num_embeddings`` for
a negative one ("Padding_idx must be within num_embeddings"), so transformers refuses to build a
config whose ``pad_token_id`` is outside such a table. Others build their table without a
padding index and take any ``pad_token_id``.

For each family costcalc reads, its fixture (make_differential.py's ``family_bases``: the
config its differential variants start from) is built as make_differential.py builds a variant
(meta device, inside its conditional-generation model where it is a text decoder) with the text
decoder's ``pad_token_id`` set to 1; every ``nn.Embedding`` whose ``padding_idx`` is then 1 is
a padded table, named by the text config's key its rows equal (``vocab_size`` first), else as
``vocab_size`` plus the rows it has beyond it (Mllama's ``vocab_size + 8``). ``tables``: family
-> its padded tables, ``[key, extra rows]``; ``unpadded``: the families with none. Each is
checked: with the smallest table's N rows, ``pad_token_id`` N and ``-N - 1`` must raise the
assertion and ``N - 1`` must not (``measured``; it builds, but where a position table is
smaller, an IndexError); a family that does not is printed and left out.

A sinusoidal position table built with the padding index (XGLM's and Kosmos-2's, M2M100's
copy: ``get_embedding`` makes ``num_positions + offset`` rows, ``max_position_embeddings + 2``,
and zeroes row ``emb[padding_idx, :]``, which raises an IndexError outside the table) is a
module holding a ``weights`` buffer whose ``padding_idx`` is then 1, named by the key that
equals its ``num_positions`` and its ``offset``. ``positions``: family -> those tables,
``[key, offset]``, checked alike: with the smallest one's N rows, N and ``-N - 1`` must raise
that IndexError and ``N - 1`` must build.
"""

from __future__ import annotations

import copy
import datetime
import json
import re
import sys

import torch
import transformers
from make_differential import ROOT, family_bases, fixture_family, measured
from make_golden import fixture_path
from make_golden_families import build_from
from torch import nn
from transformers import CONFIG_MAPPING

OUTPUT = ROOT / "costcalc" / "data" / "hf_padding_index.json"
GENERATOR = "tests/reference/make_padding_index.py"
ASSERTION = "AssertionError: Padding_idx must be within num_embeddings"
OUTSIDE = r"IndexError: index -?\d+ is out of bounds for dimension 0 with size \d+$"


def data_text(generator: str, name: str, table: dict, **rest: object) -> str:
    """The data file's text: the versions, then ``table`` under ``name`` one entry a line,
    then ``rest``."""
    head = {
        "generator": generator,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "date": datetime.date.today().isoformat(),
    }
    lines = ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in table.items())
    text = json.dumps(head)[:-1] + f', "{name}": {{\n' + lines + "\n}"
    text += "".join(f',\n"{key}": {json.dumps(value)}' for key, value in rest.items()) + "}\n"
    json.loads(text)
    return text


def text_keys(data: dict, path: tuple[str, ...]) -> dict:
    """The mapping of ``data`` its text decoder's keys sit in."""
    for key in path:
        data = data[key]
    return data


def with_pad(data: dict, path: tuple[str, ...], pad: int) -> dict:
    """``data`` with its text decoder's ``pad_token_id`` set to ``pad``."""
    changed = copy.deepcopy(data)
    text_keys(changed, path)["pad_token_id"] = pad
    return changed


def built_config(data: dict, path: tuple[str, ...], text: bool) -> tuple[dict, nn.Module]:
    """The text config's ``to_dict()`` and the model, built as make_differential.py builds it."""
    whole = CONFIG_MAPPING[data["model_type"]].from_dict(copy.deepcopy(data))
    try:
        _, model, _ = build_from(whole, text, "meta", inside=True)
    except ImportError:  # the whole model needs a package not installed here (Gemma 3n: timm)
        _, model, _ = build_from(whole, text, "meta")
    return (whole.get_text_config() if text or path else whole).to_dict(), model


def int_keys(config: dict) -> list[str]:
    """The config's integer keys, ``vocab_size`` first."""
    return [
        "vocab_size",
        *(k for k, v in config.items() if isinstance(v, int) and k != "vocab_size"),
    ]


def padded_tables(data: dict, path: tuple[str, ...], text: bool) -> list[list]:
    """The model's token tables built with ``padding_idx`` ``pad_token_id``: ``[key, extra]``."""
    config, model = built_config(with_pad(data, path, 1), path, text)
    tables = []
    for module in model.modules():
        if not isinstance(module, nn.Embedding) or module.padding_idx != 1:
            continue
        rows = module.num_embeddings
        key = next((k for k in int_keys(config) if config[k] == rows), None)
        table = [key, 0] if key is not None else ["vocab_size", rows - config["vocab_size"]]
        if table not in tables:
            tables.append(table)
    return tables


def position_tables(data: dict, path: tuple[str, ...], text: bool) -> list[list]:
    """The model's sinusoidal position tables built with ``padding_idx`` ``pad_token_id``:
    ``[key, offset]``."""
    config, model = built_config(with_pad(data, path, 1), path, text)
    tables = []
    for module in model.modules():
        if isinstance(module, nn.Embedding) or getattr(module, "padding_idx", None) != 1:
            continue
        if not isinstance(getattr(module, "weights", None), torch.Tensor):
            continue
        key = next(k for k in int_keys(config) if config[k] == module.num_positions)
        if [key, module.offset] not in tables:
            tables.append([key, module.offset])
    return tables


def smallest(data: dict, path: tuple[str, ...], text: bool, tables: list[list]) -> int:
    """Rows of the smallest of ``tables``, as the built config sizes them."""
    whole = CONFIG_MAPPING[data["model_type"]].from_dict(copy.deepcopy(data))
    config = whole.get_text_config() if text or path else whole
    return min(getattr(config, key) + extra for key, extra in tables)


def outcome(data: dict, text: bool) -> str:
    """``refused`` (the padding assertion), ``outside`` (an index outside a table), ``built``,
    or transformers' other error."""
    found = measured(data, text).get("refused")
    if found is None:
        return "built"
    if found.startswith(ASSERTION):
        return "refused"
    return "outside" if re.match(OUTSIDE, found) else found


def edges(base: dict, path: tuple[str, ...], text: bool, rows: int) -> list[str]:
    """The outcomes of ``pad_token_id`` N, -N - 1 and N - 1 for a table of N rows."""
    return [outcome(with_pad(base, path, pad), text) for pad in (rows, -rows - 1, rows - 1)]


def main() -> int:
    transformers.logging.set_verbosity_error()
    tables, positions, unpadded = {}, {}, []
    for family, (fixture, text) in sorted(family_bases().items()):
        base = json.loads(fixture_path(fixture).read_text())
        _, path = fixture_family(base)
        found = padded_tables(base, path, text)
        rows = smallest(base, path, text, found or [["vocab_size", 0]])
        seen = edges(base, path, text, rows)
        print(family, found, rows, seen, flush=True)
        if found and seen[:2] == ["refused", "refused"] and seen[2] != "refused":
            tables[family] = found
        elif not found and seen == ["built"] * 3:
            unpadded.append(family)
        sinusoidal = position_tables(base, path, text)
        if sinusoidal:
            rows = smallest(base, path, text, sinusoidal)
            seen = edges(base, path, text, rows)
            print(family, "positions", sinusoidal, rows, seen, flush=True)
            if seen == ["outside", "outside", "built"]:
                positions[family] = sinusoidal
    text = data_text(GENERATOR, "tables", tables, positions=positions, unpadded=unpadded)
    OUTPUT.write_text(text)
    print(len(tables), "padded,", len(positions), "with positions,", len(unpadded), "unpadded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
