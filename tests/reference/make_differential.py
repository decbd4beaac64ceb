"""Write tests/golden/differential.json.gz: random configs of each family, built by transformers.

Run by hand (pytest does not collect this file), in chunks if the machine is shared:

    nice python tests/reference/make_differential.py                      # every family
    nice python tests/reference/make_differential.py --only qwen3_moe jamba
    nice python tests/reference/make_differential.py --salt fresh   # differential_fresh.json.gz
    nice python tests/reference/make_differential.py --nulls        # differential_nulls.json.gz

For each family costcalc reads (``costcalc.formats.families.model_types()``), the fixture of
its first record in make_golden.py's or make_golden_families.py's ``MODELS`` (a record on the
meta device first; for a family that is a multimodal model's text decoder, the record built from
the text decoder; and the Gemma 3 wrapper, ``WRAPPERS``) is varied by
``tests/differential_configs.py``: it is given the fields of the family's configuration class
with their defaults (``dataclasses.fields``, less ``PreTrainedConfig``'s own) and its
``attribute_map``. A variant marked ``to_dict`` is rewritten as
``CONFIG_MAPPING[model_type].from_dict(config).to_dict()`` writes it (what ``save_pretrained()``
writes). Each variant is built as make_golden_families.py builds its fixtures (``build_from``,
meta device, eager attention, ``batched_mm`` experts where the family takes them; a text decoder
nested in a multimodal file always inside its conditional-generation model, which decides the
tying, unless that model needs a package not installed: Gemma 3n's timm); a config
transformers refuses (``from_dict`` or the model's constructor raises) is recorded with the
exception. Recorded: ``sum(p.numel())``, the tied output matrix, and, where a forward pass runs
on meta, the cache after a B=1, T=16 forward with ``use_cache=True`` and FlopCounterMode's MACs
of the same pass. With ``--nulls``, each family's variants are its fixture with one key nulled
(each key the class or the fixture holds that sizes something, ``SKIPPED`` left out), kept
where transformers' configuration reads the null otherwise than the key left out: refused,
kept as None, or derived into another value (ids ``<family>/null-<key>``). Results merge into
the existing file by family: a run of some families (``--only``) leaves the others, and the
file's torch, transformers and date, as they were, and stamps each family it makes with its own.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime
import gzip
import json
import signal
import sys
import traceback
from pathlib import Path

import torch
import transformers
from make_golden import MODELS as LEGACY_MODELS
from make_golden import ROOT, fixture_path, is_tied
from make_golden_families import MODELS, build_from, error_text, kv_record
from torch.utils.flop_counter import FlopCounterMode
from transformers import CONFIG_MAPPING, PreTrainedConfig

sys.path.insert(0, str(ROOT))
from costcalc.formats.families import model_types, text_location
from tests.differential_configs import DROP, SKIPPED, _at, family_variants, varied

OUTPUT = ROOT / "tests" / "golden" / "differential.json.gz"
GENERATOR = "tests/reference/make_differential.py"
BATCH, SEQ = 1, 16
SECONDS = 120  # per variant: a build or forward that takes longer is recorded as refused
WRAPPERS = {"gemma3": ("gemma-3-4b", True)}
"""Multimodal wrappers varied as well as their text decoder's own family (whose first record is
a text-only file): name -> (fixture, built from its text decoder)."""
BASE_FIELDS = {f.name for f in dataclasses.fields(PreTrainedConfig)}


def fixture_family(data: dict) -> tuple[str, tuple[str, ...]]:
    """(family costcalc reads the file as, key path of its text decoder's keys)."""
    model_type = data.get("model_type")
    if model_type in model_types():
        return model_type, ()
    located = text_location(model_type)
    if located is not None:
        path, text_type = located
        return text_type, path
    text = data.get("text_config")
    if not isinstance(text, dict):  # a model_type transformers does not know (kimi_k2)
        return str(model_type), ()
    return text["model_type"], ("text_config",)


def family_bases() -> dict[str, tuple[str, bool]]:
    """Family -> (fixture, built from its text decoder): the first record of make_golden's and
    make_golden_families' MODELS on the meta device, of the text decoder for a multimodal family
    where one is recorded; plus ``WRAPPERS``."""
    records = [(name, False, "meta") for name in LEGACY_MODELS] + list(MODELS.values())
    bases: dict[str, tuple[str, bool, int]] = {}
    for fixture, text, device in records:
        data = json.loads(fixture_path(fixture).read_text())
        family, _ = fixture_family(data)
        if family not in model_types():
            continue
        rank = (device != "meta") + 2 * (data.get("model_type") != family and not text)
        if family not in bases or rank < bases[family][2]:
            bases[family] = (fixture, text, rank)
    found = {family: (fixture, text) for family, (fixture, text, _) in bases.items()}
    return {**found, **WRAPPERS}


def class_fields(data: dict, text: bool) -> tuple[dict, dict]:
    """The text configuration class's fields with JSON defaults, and its attribute_map."""
    whole = CONFIG_MAPPING[data["model_type"]].from_dict(copy.deepcopy(data))
    cls = type(whole.get_text_config() if text else whole)
    fields = {}
    for field in dataclasses.fields(cls):
        if field.name in BASE_FIELDS or field.name.startswith("_"):
            continue
        default = field.default
        if default is dataclasses.MISSING and field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        try:
            default = json.loads(json.dumps(default))
        except (TypeError, ValueError):
            default = None
        kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
        fields[field.name] = {"default": default, "type": str(kind or field.type)}
    return fields, dict(getattr(cls, "attribute_map", {}))


def measured(data: dict, text: bool) -> dict:
    """What transformers builds from ``data``: parameters and, on meta, cache and MACs."""
    try:
        whole = CONFIG_MAPPING[data["model_type"]].from_dict(data)
        try:
            config, model, _ = build_from(whole, text, "meta", inside=True)
        except ImportError:  # the whole model needs a package not installed here (Gemma 3n: timm)
            config, model, _ = build_from(whole, text, "meta")
    except Exception as exc:  # transformers refuses the config: recorded, not raised
        return {"refused": error_text(exc)}
    model.requires_grad_(False)
    tied = model.get_output_embeddings() is not None and is_tied(model)
    out = {
        "parameters_total": sum(p.numel() for p in model.parameters()),
        "parameters_untied_extra": model.get_output_embeddings().weight.numel() if tied else 0,
    }
    try:
        counter = FlopCounterMode(display=False)
        with counter:
            kv = kv_record(model, config, BATCH, SEQ, "meta")
        kv.pop("cache_elements_per_layer", None)
        out["kv_cache"] = kv
        out["macs_forward"] = {
            "batch": BATCH,
            "seq_len": SEQ,
            "macs_total": counter.get_total_flops() // 2,
        }
    except Exception as exc:
        out["forward_error"] = error_text(exc)
    return out


def as_to_dict(data: dict) -> dict | None:
    """``data`` as ``to_dict()`` writes it, or None where the class refuses it."""
    try:
        return CONFIG_MAPPING[data["model_type"]].from_dict(copy.deepcopy(data)).to_dict()
    except Exception:
        return None


class SlowBuildError(Exception):
    pass


def alarm(_signum, _frame):
    raise SlowBuildError(f"over {SECONDS} s")


def run_family(family: str, fixture: str, text: bool, salt: str) -> dict:
    """The family's fixture, what its variants touch, and each variant's record."""
    base = json.loads(fixture_path(fixture).read_text())
    _, path = fixture_family(base)
    fields, aliases = class_fields(base, text)
    records = []
    for variant in family_variants(family, base, path, fields, aliases, salt):
        config = variant["config"]
        if variant["to_dict"]:
            written = as_to_dict(copy.deepcopy(config))
            variant["to_dict"] = written is not None
            config = json.loads(json.dumps(written)) if written is not None else config
        signal.alarm(SECONDS)
        try:  # from_dict takes model_type out of a nested text_config: it gets a copy
            result = measured(copy.deepcopy(config), text)
        except SlowBuildError as exc:
            result = {"refused": str(exc)}
        finally:
            signal.alarm(0)
        records.append({**variant, "config": config, **result})
    touched = [f"{kind} {key}" for kind, key in varied(base, path, fields, aliases)]
    return {"fixture": fixture, "touched": touched, "variants": records}


def run_nulls(family: str, fixture: str, text: bool) -> dict:
    """The family's fixture with each key it or its class holds nulled alone, where
    transformers' configuration reads the null otherwise than the key left out (the null
    refused, kept, or derived into another value), and each such variant's record."""
    base = json.loads(fixture_path(fixture).read_text())
    _, path = fixture_family(base)
    fields, _ = class_fields(base, text)
    records = []
    for key in sorted(k for k in {*fields, *_at(base, path)} if not SKIPPED.search(k)):
        nulled, dropped = (with_key(base, path, key, value) for value in (None, DROP))
        if read_as(nulled, text, key) == read_as(dropped, text, key):
            continue
        signal.alarm(SECONDS)
        try:
            result = measured(copy.deepcopy(nulled), text)
        except SlowBuildError as exc:
            result = {"refused": str(exc)}
        finally:
            signal.alarm(0)
        edit = {"edits": [f"{key} = null"], "touched": [f"key {key}"], "to_dict": False}
        records.append({"id": f"{family}/null-{key}", **edit, "config": nulled, **result})
    return {"fixture": fixture, "touched": [], "variants": records}


def with_key(base: dict, path: tuple[str, ...], key: str, value: object) -> dict:
    """``base`` with ``key`` of its text decoder's keys set to ``value`` (``DROP``: removed)."""
    config = copy.deepcopy(base)
    keys = config
    for part in path:
        keys = keys[part]
    if value is DROP:
        keys.pop(key, None)
    else:
        keys[key] = value
    return config


def read_as(data: dict, text: bool, key: str) -> str:
    """What the built configuration holds under ``key`` (its exception's class if it refuses
    ``data``), shown."""
    try:
        whole = CONFIG_MAPPING[data["model_type"]].from_dict(copy.deepcopy(data))
    except Exception as exc:
        return f"refused: {type(exc).__name__}"
    config = whole.get_text_config() if text else whole
    return repr(getattr(config, key, "absent"))


def load(output: Path) -> dict:
    if output.exists():
        return json.loads(gzip.decompress(output.read_bytes()))
    return {"families": {}}


def made_with() -> dict:
    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "date": datetime.date.today().isoformat(),
    }


def save(data: dict, output: Path, salt: str, whole: bool) -> None:
    """Write ``data`` (families sorted, gzip without a timestamp); a run that made every family
    (``whole``) stamps the file with the versions and date it was made with."""
    if whole:
        data.update(
            generator=GENERATOR,
            **({"salt": salt} if salt else {}),
            **made_with(),
            batch=BATCH,
            seq_len=SEQ,
        )
    data["families"] = dict(sorted(data["families"].items()))
    text = json.dumps(data, separators=(",", ":"), sort_keys=False)
    output.write_bytes(gzip.compress(text.encode(), mtime=0))


def main(argv: list[str]) -> int:
    bases = family_bases()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(bases), default=sorted(bases))
    parser.add_argument("--salt", default="", help="a further set of variants, seeded by this")
    parser.add_argument("--output", type=Path, help="merge into this file")
    parser.add_argument(
        "--nulls",
        action="store_true",
        help="each key nulled alone where transformers reads the null otherwise than the key "
        "left out (differential_nulls.json.gz)",
    )
    args = parser.parse_args(argv)
    if args.nulls:
        args.salt = "nulls"
    if args.output is None:
        args.output = OUTPUT.with_name(f"differential_{args.salt}.json.gz") if args.salt else OUTPUT
    transformers.logging.set_verbosity_error()
    signal.signal(signal.SIGALRM, alarm)
    whole = set(args.only) == set(bases) or not args.output.exists()
    data = load(args.output)
    for family in args.only:
        fixture, text = bases[family]
        print(f"{family}: {fixture}", flush=True)
        try:
            if args.nulls:
                made = run_nulls(family, fixture, text)
            else:
                made = run_family(family, fixture, text, args.salt)
        except Exception:
            traceback.print_exc()
            continue
        # A family made again alone keeps the file's stamp for the others and holds its own.
        data["families"][family] = made if whole else {**made, **made_with()}
        save(data, args.output, args.salt, whole)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
