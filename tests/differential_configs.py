"""Random Hugging Face configs for the differential test against transformers.

For each family costcalc reads, ``family_variants`` starts from the family's fixture config and
writes variants that drop, null or change the keys the family's configuration class defines (and
the keys the fixture holds), write a key under its alias (the class's ``attribute_map``) or under
both spellings with different values, plus the cases of ``CAUSE_CASES``. Every key is touched by
at least one variant. The generator is pure and seeded by the family name: the same inputs give
the same variants on every run. ``tests/reference/make_differential.py`` gives it each class's
fields and aliases (read from transformers), rewrites the variants marked ``to_dict`` as
``config.to_dict()`` writes them, builds every variant with transformers and stores the configs
and figures in ``tests/golden/differential.json.gz``; ``tests/test_differential.py`` compares.
"""

from __future__ import annotations

import copy
import math
import random
import re
from collections.abc import Iterator, Mapping
from typing import Any

DROP = object()
"""An edit's value that removes the key."""

SKIPPED = re.compile(
    r"dropout|initializer|(^|_)eps$|epsilon|token_id|^use_cache$|^output_|^return_|dtype"
    r"|name_or_path|transformers_version|^architectures$|id2label|label2id|problem_type"
    r"|chunk_size_feed_forward|aux_loss|z_loss|jitter|^auto_map$|quantization_config|tokenizer"
    r"|^model_type$|_implementation$|softcap|multiplier|temperature|^pretraining_tp$|rope_theta"
    r"|^is_encoder_decoder$|^torchscript$|^task_specific_params$|^bad_words_ids$|^prefix$"
    r"|_std$|_range$|coef$|capacity_factor|^init_|^mup_|^logits_scaling$|^norm_topk_prob$"
    r"|^routed_scaling_factor$|^summary_|^scale_attn|^layer_norm_epsilon$|^sinkhorn|^kv_bias$"
)
"""Keys that size nothing costcalc reports (regularisation, initialisation, token ids,
numerical constants, bookkeeping)."""

ACTIVATIONS = ("silu", "gelu", "relu", "gelu_pytorch_tanh", "relu2")

MIN_VARIANTS, MAX_VARIANTS = 8, 20
FRESH = 8
"""Variants of a family in a salted set (``family_variants``' ``salt``)."""

CAUSE_CASES: dict[str, list[tuple[str, dict[tuple[str, ...], Any]]]] = {
    "qwen3_moe": [
        ("head_dim absent", {("head_dim",): DROP}),
        ("num_local_experts", {("num_experts",): DROP, ("num_local_experts",): 64}),
    ],
    "cohere2": [("head_dim not D/H", {("head_dim",): 64})],
    "gemma3": [
        (
            "wrapper ties",
            {("tie_word_embeddings",): True, ("text_config", "tie_word_embeddings"): False},
        ),
        (
            "wrapper unties",
            {("tie_word_embeddings",): False, ("text_config", "tie_word_embeddings"): True},
        ),
    ],
    "phimoe": [("num_experts_per_tok 4", {("num_experts_per_tok",): 4})],
    "jamba": [
        ("head_dim not D/H", {("head_dim",): 64}),
        ("num_local_experts", {("num_experts",): DROP, ("num_local_experts",): 8}),
        ("both expert spellings", {("num_experts",): 16, ("num_local_experts",): 8}),
    ],
    "lfm2": [
        ("head_dim not D/H", {("head_dim",): 32}),
        ("tie_embedding false", {("tie_embedding",): False}),
    ],
    "granitemoehybrid": [
        (
            "layers_block_type",
            {
                ("num_hidden_layers",): 4,
                ("layer_types",): DROP,
                ("layers_block_type",): ["mamba", "attention"] * 2,
            },
        ),
    ],
    "smollm3": [
        (
            "sliding layer_types, use_sliding_window false",
            {
                ("use_sliding_window",): False,
                ("sliding_window",): 8,
                ("layer_types",): ["sliding_attention", "full_attention"] * 18,
            },
        ),
    ],
    "zamba2": [
        ("untied", {("tie_word_embeddings",): False}),
        ("fewer KV heads", {("num_key_value_heads",): 8}),
    ],
    "nemotron_h": [("tied", {("tie_word_embeddings",): True})],
    "helium": [("head_dim not D/H", {("head_dim",): 64})],
    "olmoe": [("head_dim not D/H", {("head_dim",): 64})],
}
"""Configs that trigger the causes issue 21 lists, by family: (name, edits by key path; the
path is from the top of the file)."""


def family_variants(
    family: str,
    base: Mapping[str, Any],
    text_path: tuple[str, ...],
    fields: Mapping[str, Any],
    aliases: Mapping[str, str],
    salt: str = "",
) -> list[dict[str, Any]]:
    """Variants of ``base`` (the family's fixture), its text decoder's keys at ``text_path``:
    each ``{"id", "config", "edits", "to_dict"}`` (and ``touched``: the ``varied`` items it
    edits, as "kind key"). ``fields`` maps the text configuration
    class's fields to ``{"default", "type"}`` (the annotation's text), ``aliases`` is its
    ``attribute_map`` (alias -> name). A ``salt`` seeds a further set of its own: ``FRESH``
    variants of 2 to 4 drawn edits each (ids ``<family>/<salt>-NN``), without the fixture, the
    defaults-only file, the cause cases or the guarantee that every key is touched."""
    rng = random.Random(f"differential/{family}/{salt}" if salt else f"differential/{family}")
    text = dict(_at(base, text_path))
    work = varied(base, text_path, fields, aliases)
    queue = _cycle(work, rng)
    draw = _Draw(family, base, text, text_path, fields, aliases, queue, rng)
    if salt:
        fresh = [draw.variant(f"{salt}-{i:02d}", rng.choice((2, 3, 3, 4))) for i in range(FRESH)]
        for index, variant in enumerate(fresh):
            variant["to_dict"] = index % 4 == 3
        return fresh
    count = max(MIN_VARIANTS, min(MAX_VARIANTS, math.ceil(len(work) / 2) + 2))
    variants: list[dict[str, Any]] = [
        _variant(family, "00", base, {}, ["fixture as published"]),
        _variant(family, "01", _defaults_only(base, text_path), {}, ["every key dropped"]),
    ]
    least = math.ceil(len(work) / (MAX_VARIANTS - 2))
    while len(variants) < count or draw.drawn < len(work):
        size = max(least, rng.choice((1, 2, 2, 3)))
        variants.append(draw.variant(f"{len(variants):02d}", size))
    for name, edits in CAUSE_CASES.get(family, []):
        variants.append(_variant(family, f"{len(variants):02d}", base, edits, [name]))
    covered = {item for variant in variants for item in variant.get("touched", [])}
    for kind, key in work:  # one draw skipped beside its own key's other spelling
        if f"{kind} {key}" not in covered:
            edits, notes = {}, []
            _edit(kind, key, text, fields, aliases, text_path, rng, edits, notes)
            variant = _variant(family, f"{len(variants):02d}", base, edits, notes)
            variant["touched"] = [f"{kind} {key}"]
            variants.append(variant)
    for index, variant in enumerate(variants):
        variant["to_dict"] = index % 4 == 3
    return variants


class _Draw:
    """Variants of drawn edits: each takes the next items of ``queue`` (a key once), edits
    them and counts the items drawn."""

    def __init__(
        self,
        family: str,
        base: Mapping[str, Any],
        text: Mapping[str, Any],
        text_path: tuple[str, ...],
        fields: Mapping[str, Any],
        aliases: Mapping[str, str],
        queue: Iterator[tuple[str, str]],
        rng: random.Random,
    ) -> None:
        self.family, self.base, self.text, self.text_path = family, base, text, text_path
        self.fields, self.aliases, self.queue, self.rng = fields, aliases, queue, rng
        self.drawn = 0

    def variant(self, index: str, size: int) -> dict[str, Any]:
        """The variant ``<family>/<index>`` of ``size`` drawn items."""
        edits: dict[tuple[str, ...], Any] = {}
        notes: list[str] = []
        touched: list[tuple[str, str]] = []
        for _ in range(size):
            item = next(self.queue)
            if all(key != item[1] for _, key in touched):
                touched.append(item)
            self.drawn += 1
        for kind, key in touched:
            _edit(
                kind, key, self.text, self.fields, self.aliases, self.text_path, self.rng,
                edits, notes,
            )  # fmt: skip
        variant = _variant(self.family, index, self.base, edits, notes)
        variant["touched"] = [f"{kind} {key}" for kind, key in touched]
        return variant


def varied(
    base: Mapping[str, Any],
    text_path: tuple[str, ...],
    fields: Mapping[str, Any],
    aliases: Mapping[str, str],
) -> list[tuple[str, str]]:
    """What the variants touch, each at least once: ("key", a key of the class or the file),
    ("alias", an alias of such a key), ("top", the wrapper's ``tie_word_embeddings``)."""
    keys = sorted(k for k in {*fields, *_at(base, text_path)} if not SKIPPED.search(k))
    work: list[tuple[str, str]] = [("key", k) for k in keys]
    work += [("alias", a) for a, name in sorted(aliases.items()) if name in keys and a != name]
    if text_path:
        work.append(("top", "tie_word_embeddings"))
    return work


def merged(data: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with ``changes`` set, a nested dict's keys merged into the nested config."""
    out = dict(data)
    for key, value in changes.items():
        out[key] = merged(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out


def _cycle(work: list[tuple[str, str]], rng: random.Random) -> Iterator[tuple[str, str]]:
    while True:
        order = list(work)
        rng.shuffle(order)
        yield from order


def _at(data: Mapping[str, Any], path: tuple[str, ...]) -> Mapping[str, Any]:
    for key in path:
        data = data[key]
    return data


def _defaults_only(base: Mapping[str, Any], text_path: tuple[str, ...]) -> dict[str, Any]:
    """``base`` with every key of its text decoder dropped but ``model_type``."""
    data = copy.deepcopy(dict(base))
    holder: dict[str, Any] = data
    for key in text_path:
        holder = holder[key]
    for key in [k for k in holder if k != "model_type"]:
        del holder[key]
    return data


def _variant(
    family: str,
    index: str,
    base: Mapping[str, Any],
    edits: Mapping[tuple[str, ...], Any],
    notes: list[str],
) -> dict[str, Any]:
    data = copy.deepcopy(dict(base))
    for path, value in edits.items():
        holder = data
        for key in path[:-1]:
            holder = holder.setdefault(key, {})
        if value is DROP:
            holder.pop(path[-1], None)
        else:
            holder[path[-1]] = copy.deepcopy(value)
    return {"id": f"{family}/{index}", "config": data, "edits": notes}


def _edit(
    kind: str,
    key: str,
    text: Mapping[str, Any],
    fields: Mapping[str, Any],
    aliases: Mapping[str, str],
    text_path: tuple[str, ...],
    rng: random.Random,
    edits: dict[tuple[str, ...], Any],
    notes: list[str],
) -> None:
    """Add one edit of ``key`` to ``edits`` and say what it is in ``notes``."""
    if kind == "top":
        value = rng.choice((True, False))
        edits[(key,)] = value
        notes.append(f"wrapper {key} = {value}")
        return
    if kind == "alias":
        name = aliases[key]
        value = text.get(name, fields.get(name, {}).get("default"))
        if rng.random() < 0.5 or value is None:
            edits[(*text_path, name)] = DROP
            edits[(*text_path, key)] = value
            notes.append(f"{name} written as {key}")
        else:
            other = _changed(name, value, fields.get(name, {}), rng)
            edits[(*text_path, key)] = other
            notes.append(f"{key} = {other!r} beside {name}")
        return
    present = key in text
    value = text.get(key, fields.get(key, {}).get("default"))
    nullable = "None" in fields.get(key, {}).get("type", "None")
    roll = rng.random()
    if present and roll < 0.3:
        edits[(*text_path, key)] = DROP
        notes.append(f"{key} dropped")
    elif roll < (0.3 if present else 0.0) + (0.15 if nullable else 0.05):
        edits[(*text_path, key)] = None
        notes.append(f"{key} = null")
    else:
        new = _changed(key, value, fields.get(key, {}), rng)
        if new is None:
            edits[(*text_path, key)] = DROP
            notes.append(f"{key} dropped")
        else:
            edits[(*text_path, key)] = new
            notes.append(f"{key} = {new!r}")


def _changed(key: str, value: Any, field: Mapping[str, Any], rng: random.Random) -> Any:
    """Another value of ``key``'s type near ``value`` (its default where it has none), or None
    where there is none to give."""
    if value is None:
        value = field.get("default")
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        options = {value * 2, max(1, value // 2), value + 1, max(1, value - 1), 1, 2}
        return rng.choice(sorted(options - {value}) or [value + 1])
    if isinstance(value, float):
        options = {value * 2, value / 2, 0.5, 1.0, 0.0}
        return rng.choice(sorted(options - {value}))
    if isinstance(value, str):
        if "act" in key:
            return rng.choice([a for a in ACTIVATIONS if a != value])
        if len(value) > 3 and len(set(value)) <= 4:  # a layer pattern: "M-M*-"
            return _reordered(list(value), rng) if rng.random() < 0.7 else value[:-1]
        return None
    if isinstance(value, list):
        if not value:
            return [0]
        if rng.random() < 0.6:
            return _reordered(value, rng)
        return value[:-1] if rng.random() < 0.5 else [*value, value[-1]]
    if value is None and "int" in field.get("type", ""):
        return 64 if "dim" in key or "size" in key else rng.choice((2, 128))
    return None


def _reordered(items: list[Any], rng: random.Random) -> Any:
    shift = rng.randrange(1, len(items)) if len(items) > 1 else 0
    out = items[shift:] + items[:shift]
    if rng.random() < 0.5:
        out.reverse()
    return "".join(out) if all(isinstance(i, str) and len(i) == 1 for i in out) else out
