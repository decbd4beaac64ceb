"""Reading the keys of one Hugging Face ``config.json``.

A :class:`Reader` hands out values by the file's own key names, remembers which key each
ModelSpec field came from (so later errors name the user's key) and collects every missing or
mistyped key before failing once with all of them. Given the family's ``model_type``, it reads
keys as transformers' configuration class does (:mod:`costcalc.formats.hf_classes`): a key under
its alias too, the spelling transformers sets last when both are given, and a size the file
leaves out as the class default (with a note saying so).
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

from costcalc.errors import ConfigError, Problem
from costcalc.files import Document
from costcalc.formats.architectures import transformers_model_types
from costcalc.formats.hf_classes import config_class
from costcalc.formats.hf_rotary import OneWideYarnError, odd_heads_rotated, refused_odd_head
from costcalc.formats.hf_unbuilt import odd_yarn, unbuilt_notes, yarn
from costcalc.formats.translation import Translation
from costcalc.scalars import MAX_SIZE

PADDED_TOKENS = (
    "token table",
    "the model builds the table as nn.Embedding({sized}, hidden_size, "
    "padding_idx=pad_token_id), and torch asserts that the padding index is within it",
)
PADDED_POSITIONS = (
    "sinusoidal position table",
    "the model builds the table with padding_idx=pad_token_id and zeroes that row, which "
    "torch's indexing refuses outside the table",
)
"""A table built with ``padding_idx=pad_token_id``: its name, and why transformers refuses a
padding index outside it (:meth:`Reader._pad_outside_table`)."""


class Reader:
    """Reads keys of one config, collecting every problem before failing."""

    def __init__(
        self, doc: Document, prefix: tuple[str, ...] = (), family: str | None = None
    ) -> None:
        """Read ``doc``, or the mapping at key path ``prefix`` in it (``text_config``), as the
        configuration class of ``family`` (a ``model_type``) reads it, when costcalc has it."""
        self.doc = doc
        self.prefix = prefix
        data: dict[str, Any] = doc.data
        for key in prefix:
            data = data[key]
        self.data: dict[str, Any] = AskedKeys(data)
        self.family = family
        """The ``model_type`` whose configuration class reads the keys, if given."""
        self.config_class = config_class(family)
        self.key_names: dict[str, str] = {}
        self.problems: list[Problem] = []
        self.defaulted: dict[str, Any] = {}
        """Sizes the file leaves out, read as the class default: key -> value."""
        self.notes: list[str] = []
        """What the reading decided that the file does not say, in words."""

    def name(self, key: str) -> str:
        """``key`` as the file spells its path (``text_config.hidden_size``)."""
        return ".".join((*self.prefix, key))

    def _find(self, keys: tuple[str, ...]) -> str | None:
        """The first of ``keys`` present with a value (``null`` counts as absent), each under any
        of its spellings; of two spellings given, the one transformers sets last."""
        known = self.config_class
        for key in keys:
            spellings = known.spellings(key) if known is not None else (key,)
            present = [name for name in spellings if self.data.get(name) is not None]
            if len(present) > 1 and known is not None:
                return known.set_last(present, self.data)
            if present:
                return present[0]
        return None

    def spelling(self, key: str) -> str:
        """The spelling of ``key`` the file gives, as transformers reads it (``key`` itself when
        the file gives none)."""
        return self._find((key,)) or key

    def size(self, field: str, *keys: str) -> Any:
        """A value the model cannot be built without; recorded as the source of ``field``.
        When the file leaves it out, the class default if the class has one."""
        key = self._find(keys)
        default = None if key is not None else self._class_default(keys)
        if default is not None:
            self.key_names[field] = self.name(keys[0])
            self.defaulted[self.name(keys[0])] = default
            return default
        if key is None:
            names = " or ".join(self.name(key) for key in keys)
            line = self.doc.line_of(self.prefix) if self.prefix else None
            self.problems.append(Problem(names, "required key is missing (or null)", line))
            return None
        self.key_names[field] = self.name(key)
        return self._read(key, None)

    def _class_default(self, keys: tuple[str, ...]) -> Any:
        """The class default of the first of ``keys`` that has one, when the file leaves every
        spelling of each out (a ``null`` is kept: transformers builds nothing from it)."""
        known = self.config_class
        if known is None or any(name in self.data for k in keys for name in known.spellings(k)):
            return None
        return next((d for k in keys if (d := known.default(k)) is not None), None)

    def value(self, field: str | tuple[str, ...], *keys: str, default: Any) -> Any:
        """A value with the family's default (as its transformers config class sets it).

        ``field`` may name several spec fields one key sets (a bias switch). Errors about them
        name the key found, or the first of ``keys`` when none is there.
        """
        key = self._find(keys)
        for name in (field,) if isinstance(field, str) else field:
            self.key_names[name] = self.name(key or keys[0])
        return default if key is None else self._read(key, default)

    def _read(self, key: str, instead: Any) -> Any:
        """The value of ``key``; when it holds a number that is not finite (``Infinity``,
        ``NaN``), a problem, and ``instead`` so reading goes on: a key the count reads sizes
        the model, and no size is infinite (keys nothing reads may hold them)."""
        value = self.data[key]
        if not_finite(value):
            self.fail(
                key,
                f"{_shown(value)} is not a finite number, and the count reads this key (only "
                "keys that size nothing, such as time_step_limit, may hold one)",
            )
            return instead
        return value

    def bias(self, field: str, *keys: str, default: bool) -> Any:
        """A bias switch with the family's default; a ``null`` builds none (torch's ``nn.Linear``
        and ``nn.Conv1d`` test ``if bias:``, and the modules take ``bias=config.<key>`` as it
        stands; a key the class does not hold is ignored)."""
        value = self.value(field, *keys, default=default)
        return False if self._find(keys) is None and self._nulled(keys) else value

    def nullable(self, field: str, key: str, default: Any) -> Any:
        """A value whose ``null`` means "none" (not the default): the default only when ``key``
        is absent (under each of its spellings)."""
        spellings = self.config_class.spellings(key) if self.config_class else (key,)
        if not any(name in self.data for name in spellings):
            return default
        return self.value(field, key, default=None)

    def count(self, key: str, default: int, minimum: int = 1) -> int:
        """A whole number of layers (``minimum`` or more) that sets ``layers``, such as a layer
        rule's period; when it is not one, a problem (and the default, so reading goes on)."""
        value = self.value("layers", key, default=default)
        if not is_whole(value, minimum):
            self.fail(key, f"expected a whole number of layers, {minimum} or more (got {value!r})")
            return default
        return value

    def number(self, field: str | tuple[str, ...], key: str, default: float) -> int | float | None:
        """A number above 0 and at most MAX_SIZE (an expansion factor or a width multiplier, an
        int or a float); when it is not one, a problem and None."""
        value = self.value(field, key, default=default)
        if not is_positive(value) or value > MAX_SIZE:
            self.fail(key, f"expected a number above 0 and at most {MAX_SIZE:,} (got {value!r})")
            return None
        return value

    def whole(self, field: str, key: str, default: int) -> int | None:
        """A whole number, 1 to MAX_SIZE (an expansion the module multiplies a width by); when it
        is not one, a problem and None."""
        value = self.value(field, key, default=default)
        if not is_whole(value, 1) or value > MAX_SIZE:
            self.fail(key, f"expected a whole number, 1 to {MAX_SIZE:,} (got {value!r})")
            return None
        return value

    def forget(self, *fields: str) -> None:
        """Forget the file key recorded for ``fields``: they come from no single key (a nested
        sizes field such as ``mamba2``, whose problems are named by their path in the spec,
        ``mamba2.heads``), or the family sets them itself."""
        for field in fields:
            self.key_names.pop(field, None)

    def flag(self, key: str, default: bool) -> bool:
        """A true/false switch the translation itself depends on."""
        found = self._find((key,))
        value = None if found is None else self.data[found]
        if found is None:
            return default
        if not isinstance(value, bool):
            self.fail(key, f"expected true or false (got {value!r})")
            return default
        return value

    def truth(self, key: str, default: bool) -> bool:
        """:meth:`flag` for a switch the model tests for truth (``if config.<key>:``) and the
        class lets be null: a null reads as false."""
        if self._find((key,)) is None and self._nulled((key,)):
            return False
        return self.flag(key, default)

    def _nulled(self, keys: tuple[str, ...]) -> bool:
        """The file gives one of ``keys`` that the class holds (under any spelling) as null."""
        known = self.config_class
        held = [key for key in keys if known is None or key in known.fields]
        spellings = [name for key in held for name in (known.spellings(key) if known else (key,))]
        return any(dict.__contains__(self.data, name) for name in spellings)

    def factor(self, keys: tuple[str, ...], default: float) -> tuple[float, str | None]:
        """A number in [0, 1] (a partial-rotary factor; transformers takes 0, which rotates
        nothing) and the key it came from.

        ``rope_parameters.<key>`` (transformers 5) is looked at before the top-level keys.
        """
        rope = self.data.get("rope_parameters")
        for key in keys:
            nested = rope.get(key) if isinstance(rope, dict) else None
            name, value = (
                (f"rope_parameters.{key}", nested)
                if nested is not None
                else (key, self.data.get(key))
            )
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                self.fail(name, f"expected a number from 0 to 1 (got {value!r})")
                return default, None
            return value, name
        return default, None

    def setting(self, key: str) -> Any:
        """What transformers' class holds for ``key``: the file's value under any of its
        spellings (a ``null`` kept), else the class default. Records nothing: for the checks
        a class makes (:meth:`refused_by_class`)."""
        known = self.config_class
        for name in known.spellings(key) if known is not None else (key,):
            if dict.__contains__(self.data, name):
                return dict.get(self.data, name)
        return known.default(key) if known is not None else None

    def refused_by_class(self, key: str, detail: str) -> None:
        """The family's configuration class refuses the file (its ``validate_architecture``):
        ``detail`` says what the file holds and the rule it breaks."""
        name = self.config_class.name if self.config_class is not None else "its class"
        self.fail(key, f"{detail}: transformers refuses the file ({name}'s validate_architecture)")

    def note(self, text: str) -> None:
        """Say, beside the result, how a value was read (one transformers overrides)."""
        self.notes.append(text)

    def fail(self, key: str, message: str) -> None:
        """Record a problem with ``key`` (its line is looked up)."""
        path = (*self.prefix, *key.split("."))
        self.problems.append(Problem(".".join(path), message, self.doc.line_of(path)))

    def unsupported(self, key: str, reason: str) -> None:
        """A setting the file uses that costcalc does not count."""
        self.fail(key, f"not supported: {reason}")

    def finish(self, fields: dict[str, Any]) -> Translation:
        """The translation, or one error listing every problem found."""
        self._nulls_refused()
        self._ungrouped_heads(fields)
        self._routing_beyond_experts(fields)
        model_type = self.doc.data.get("model_type")
        if isinstance(model_type, str) and model_type in transformers_model_types():  # no remote
            self._width_refused()
            self._pad_outside_table()
            refused = refused_odd_head(dict(self.data), self.config_class)  # asks no keys
            if refused is not None:
                self.fail(*refused)
        if self.problems:  # a misspelled key may be why one is missing: said beside them
            raise ConfigError(self.doc.path, [*self.problems, *self.near_misses()])
        fields = {k: v for k, v in fields.items() if v is not None}
        merged = [merged for _, merged in blocks(fields)]
        try:
            rotated = odd_heads_rotated(fields, merged, self.config_class, yarn(self.data))
        except OneWideYarnError:
            self.unsupported(
                self.spelling("head_dim"),
                "heads 1 wide beside YaRN rotary settings: YaRN blends no frequency for them, "
                "so transformers' cos and sin, queries and keys are 0 wide; costcalc counts "
                "keys 1 or more wide",
            )
            raise ConfigError(self.doc.path, self.problems) from None
        if isinstance(model_type, str) and model_type in transformers_model_types():
            self.notes.extend(unbuilt_notes(self, merged))
        name = self.doc.data.get("_name_or_path")
        return Translation(
            fields,
            self.key_names,
            name=name if isinstance(name, str) and name else None,
            warnings=self.near_misses(),
            notes=(*self._default_notes(), *self.notes, *([rotated] if rotated else [])),
        )

    def _ungrouped_heads(self, fields: dict[str, Any]) -> None:
        """Mark the blocks whose heads transformers builds but cannot pair
        (``ungrouped_kv_heads``, Gated DeltaNet's and Mamba-2's ``ungrouped``), with a note for
        each such pairing, or refuse them where the configuration class does (:mod:`hf_classes`).
        The modules are sized as the file says (q_proj H d, k_proj and v_proj K d; the
        DeltaNet's projections 2 Hk dk + 2 Hv dv; Mamba-2's in_proj and conv1d 2 G N for B and
        C), but the forward fails: ``repeat_kv`` copies each key/value head H // K times,
        K (H // K) heads that do not pair with the H query heads in the attention product; the
        Gated DeltaNet gives each key head Hv // Hk value heads
        (``Qwen3NextGatedDeltaNet.fix_query_key_value_ordering`` views its projection so,
        Qwen3.5's ``repeat_interleave`` copies the queries and keys so), which leaves value
        heads unpaired; Mamba-2 repeats B and C H // G times per group."""
        known = self.config_class
        notes: dict[str, None] = {}
        refused: dict[tuple[str, str], None] = {}
        for own, block in blocks(fields):
            mixer, h = block.get("mixer", "attention"), block.get("n_heads")
            k = block.get("n_kv_heads") or h
            if mixer == "attention" and is_whole(h, 1) and is_whole(k, 1) and (k > h or h % k):
                if known is not None and known.heads_group:
                    refused["num_key_value_heads", f"{h:,} query heads over {k:,} key/value"] = None
                own["ungrouped_kv_heads"] = True
                notes[
                    f"{h:,} query heads do not group over {k:,} key/value heads: transformers "
                    f"builds their projections (H d and K d), but its attention copies each "
                    f"key/value head H // K = {h // k:,} times, which does not pair with the "
                    "query heads, and fails; counted as built, the forward figures as if each "
                    "query head read one key/value head."
                ] = None
            ssm = block.get("mamba2")
            if isinstance(ssm, dict) and (mixer == "mamba2" or block.get("parallel_mamba2")):
                heads, groups = ssm.get("heads"), ssm.get("groups", 1)
                if is_whole(heads, 1) and is_whole(groups, 1) and heads % groups:
                    own["mamba2"] = {**ssm, "ungrouped": True}
                    notes[
                        f"{heads:,} Mamba-2 heads do not group over {groups:,} groups: "
                        "transformers builds the mixer's projections and conv as sized (2 G N "
                        f"channels for B and C), but its forward gives each group H // G = "
                        f"{heads // groups:,} heads, which leaves heads without B and C, and "
                        "fails; counted as built, the forward figures as sized."
                    ] = None
            sizes = block.get("gated_deltanet")
            if mixer != "gated_deltanet" or not isinstance(sizes, dict):
                continue
            hk, hv = sizes.get("key_heads"), sizes.get("value_heads")
            if is_whole(hk, 1) and is_whole(hv, 1) and hv % hk:
                if known is not None and known.linear_heads_group:
                    refused["linear_num_value_heads", f"{hv:,} value heads over {hk:,} key"] = None
                own["gated_deltanet"] = {**sizes, "ungrouped": True}
                notes[
                    f"{hv:,} value heads do not group over {hk:,} key heads: transformers "
                    "builds the Gated DeltaNet's projections as sized, but its forward gives "
                    f"each key head Hv // Hk = {hv // hk:,} value heads, which leaves value "
                    "heads unpaired, and fails; counted as built, the forward figures as sized."
                ] = None
        self.notes.extend(notes)
        for key, what in refused:
            self.refused_by_class(key, f"{what} heads, which do not group")

    def _routing_beyond_experts(self, fields: dict[str, Any]) -> None:
        """A router asked for more experts than there are (k > X): transformers builds the X
        experts, but its router's ``torch.topk`` of k over X scores fails (``selected index k
        out of range``). Counted as built, each token running all X experts, with a note."""
        notes: dict[str, None] = {}
        for own, block in blocks(fields):
            experts, top_k = block.get("moe_experts"), block.get("moe_top_k")
            if is_whole(experts, 1) and is_whole(top_k, 1) and top_k > experts:
                own["moe_top_k"] = experts
                key = self.key_names.get("moe_top_k", "the experts per token")
                notes[
                    f"{key} is {top_k:,}, but there are {experts:,} experts: transformers "
                    f"builds them, but its router picks the top {top_k:,} of {experts:,} "
                    f"scores and fails; counted as built, the MACs as if each token ran all "
                    f"{experts:,} experts."
                ] = None
        self.notes.extend(notes)

    def _nulls_refused(self) -> None:
        """A null where the class types the field as never null (its strict dataclass
        validation), or where its ``__post_init__`` or a ``validate_*`` fails on one unless a
        layer list it would derive is given: transformers refuses the file, whether or not the
        count reads the key."""
        known = self.config_class
        if known is None:
            return
        for key, value in self.data.items():
            if value is not None:
                continue
            attribute = known.aliases.get(key, key)
            if key in known.not_null:
                self.fail(
                    key,
                    f"null, but {known.name} takes no null here: transformers refuses the file "
                    "(give a value, or leave the key out for the class default)",
                )
            elif refused := known.null_refused.get(key, known.null_refused.get(attribute)):
                error, unless = refused
                spelt = (name for listed in unless for name in known.spellings(listed))
                if any(self.data.get(name) is not None for name in spelt):
                    continue
                instead = "".join(f", or give {name}" for name in unless)
                self.fail(
                    key,
                    f"null, but {known.name} fails on a null here ({error}): transformers "
                    f"refuses the file (give a value, or leave the key out for the class "
                    f"default{instead})",
                )

    def _width_refused(self) -> None:
        """A width its heads do not divide, in a class whose ``validate_architecture`` refuses
        one whatever ``head_dim`` says (LlamaConfig's, Gemma2Config's, ...: "The hidden size
        (66) is not a multiple of the number of attention heads (4)")."""
        known = self.config_class
        if known is None or not known.heads_divide_width:
            return
        d_key, h_key = self.spelling("hidden_size"), self.spelling("num_attention_heads")
        d, h = (
            self.data[key] if self.data.get(key) is not None else known.default(key)
            for key in (d_key, h_key)
        )
        if is_whole(d, 1) and is_whole(h, 1) and d % h:
            self.fail(
                h_key,
                f"hidden_size {d:,} does not split into {h:,} equal heads: transformers "
                f"refuses the file ({known.name}'s validate_architecture: the hidden size must "
                "be a multiple of the heads, whatever head_dim says)",
            )

    def _pad_outside_table(self) -> None:
        """A ``pad_token_id`` (the file's, else the class default) outside a table the model
        builds with ``padding_idx=pad_token_id``, so that transformers builds nothing: a token
        table ``nn.Embedding(rows, hidden_size, padding_idx=pad_token_id)``
        (:attr:`ConfigClass.padded_tables`), for torch asserts ``-rows <= padding_idx < rows``
        ("Padding_idx must be within num_embeddings"); then a sinusoidal position table
        (:attr:`ConfigClass.padded_positions`: XGLM's and Kosmos-2's ``get_embedding`` makes
        ``max_position_embeddings + 2`` rows and zeroes row ``emb[padding_idx, :]``, an
        IndexError outside them)."""
        known = self.config_class
        pad = self.setting("pad_token_id")
        if known is None or not is_whole(pad):
            return
        tables = [(key, extra, PADDED_TOKENS) for key, extra in known.padded_tables]
        tables += [(key, extra, PADDED_POSITIONS) for key, extra in known.padded_positions]
        for key, extra, (table, built) in tables:
            rows = self.setting(key)
            if not is_whole(rows, 1) or -(rows + extra) <= pad < rows + extra:
                continue
            given = any(dict.__contains__(self.data, k) for k in known.spellings("pad_token_id"))
            shown = f"{pad:,}" if given else f"{pad:,} ({known.name}'s default)"
            sized = f"{key} + {extra:,}" if extra else key
            self.fail(
                "pad_token_id",
                f"{shown} is outside the {table} of {rows + extra:,} rows ({sized}): "
                f"transformers refuses the file ({built.format(sized=sized)}, "
                f"-{rows + extra:,} to {rows + extra - 1:,})",
            )
            return

    def _default_notes(self) -> tuple[str, ...]:
        """What the file leaves out and transformers' class default fills in, in words."""
        if not self.defaulted or self.config_class is None:
            return ()
        shown = ", ".join(
            f"{key} {value:,}" if is_whole(value) else f"{key} {value!r}"
            for key, value in self.defaulted.items()
        )
        return (
            f"not in the file, read as {self.config_class.name}'s defaults (as transformers "
            f"builds it): {shown}.",
        )

    def near_misses(self) -> tuple[Problem, ...]:
        """A warning for each key the family does not read that is near one it reads and the
        file does not give (:mod:`costcalc.near_keys`): most likely a misspelling, which
        transformers ignores too, leaving that key at its default. The keys read are those the
        translator asks for and every field and alias of the configuration class (keys that
        size nothing costcalc counts, such as ``rope_theta``): a class's own key is never
        taken for a typo, and a typo of one is found."""
        if not isinstance(self.data, AskedKeys):
            return ()
        from costcalc.near_keys import near_keys

        given = [key for key in dict.keys(self.data) if isinstance(key, str)]
        read = set(self.data.asked)
        if self.config_class is not None:
            read.update(self.config_class.fields, self.config_class.aliases)
        warnings = []
        for key, near in near_keys(given, read):
            meant = " or ".join(near)
            message = (
                "not a key this family reads, and transformers ignores it too: did you mean "
                f"{meant}, which the file does not give?"
            )
            path = (*self.prefix, key)
            warnings.append(Problem(".".join(path), message, self.doc.line_of(path)))
        return tuple(warnings)


def blocks(fields: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each kind of block ``fields`` describe (a run of a layer group's pattern, a group, or
    the whole model): the mapping that holds its own keys, and its keys with those it inherits."""
    groups = fields.get("layers")
    if not isinstance(groups, list | tuple) or not groups:
        return [(fields, fields)]
    found = []
    for group in (g for g in groups if isinstance(g, dict)):
        pattern = group.get("pattern")
        if not isinstance(pattern, list | tuple):
            found.append((group, {**fields, **group}))
            continue
        found += [(run, {**fields, **group, **run}) for run in pattern if isinstance(run, dict)]
    return found


class AskedKeys(dict[str, Any]):
    """A config's mapping that remembers every key a family asked for, given or not (the keys
    it reads), for :meth:`Reader.near_misses`."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.asked: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.asked.add(key)
        return super().__contains__(key)


STANDARD_KEYS: dict[str, tuple[str, ...]] = {
    "vocab_size": ("vocab_size",),
    "d_model": ("hidden_size",),
    "n_layers": ("num_hidden_layers",),
    "n_heads": ("num_attention_heads",),
    "context_length": ("max_position_embeddings",),
}
"""The key names most transformers configuration classes share (``PretrainedConfig``)."""


def standard_sizes(r: Reader, keys: dict[str, tuple[str, ...]] = STANDARD_KEYS) -> dict[str, Any]:
    """Vocabulary, width, layers, heads and context, read from ``keys``."""
    return {field: r.size(field, *names) for field, names in keys.items()}


def attention_bias(r: Reader, fields: dict[str, Any], *aliases: str, default: bool = False) -> None:
    """q/k/v/o all carry a bias when ``attention_bias`` (or one of the family's ``aliases``)."""
    fields["qkv_bias"] = fields["attn_out_bias"] = r.value(
        ("qkv_bias", "attn_out_bias"), "attention_bias", *aliases, default=default
    )


def mlp_bias(r: Reader, fields: dict[str, Any], *aliases: str, default: bool = False) -> None:
    """The FFN's gate/up/down carry a bias when ``mlp_bias`` (or one of the family's
    ``aliases``)."""
    fields["ffn_bias"] = r.value("ffn_bias", "mlp_bias", *aliases, default=default)


def cross_attention(r: Reader, fields: dict[str, Any]) -> None:
    """With ``add_cross_attention`` every block also attends to an encoder's states
    (``encoder_attention``)."""
    if r.flag("add_cross_attention", False):
        fields["encoder_attention"] = r.value(
            "encoder_attention", "add_cross_attention", default=False
        )


def gate_without_bias(r: Reader, fields: dict[str, Any]) -> None:
    """q/k/v/o carry a bias when ``attention_bias`` (:func:`attention_bias`); the output gate's
    own projection ``gate_proj`` never does (``nn.Linear(..., bias=False)``)."""
    attention_bias(r, fields)
    if fields["qkv_bias"] is True:
        fields["attention_gate_proj_bias"] = False


def linear_bias(r: Reader, fields: dict[str, Any], key: str, default: bool) -> None:
    """Every linear layer of the blocks (q/k/v/o and the FFN's) carries a bias when ``key``."""
    bias = r.value(("qkv_bias", "attn_out_bias", "ffn_bias"), key, default=default)
    fields.update(qkv_bias=bias, attn_out_bias=bias, ffn_bias=bias)


def rotary_dim(r: Reader, fields: dict[str, Any], keys: tuple[str, ...], default: float) -> Any:
    """Rotary dimensions per head as transformers' rotary embedding builds them: ``int(head_dim
    * factor)`` = r, then ``torch.arange(0, r, 2)`` frequencies, so cos and sin are 2 ceil(r / 2)
    wide (an odd r rotates r + 1, with a note; :mod:`costcalc.formats.hf_rotary`; r = 0 rotates
    nothing: no positions, with a note); ``None`` when the whole head rotates (or the sizes are
    invalid, reported elsewhere)."""
    factor, key = r.factor(keys, default)
    return rotary_width(r, fields, factor, r.name(key or keys[0]), key is not None)


def rotary_width(
    r: Reader, fields: dict[str, Any], factor: float, key: str, given: bool = True
) -> Any:
    """:func:`rotary_dim` for a factor already read, from the file's ``key`` (named in the notes,
    and in errors about the rotary width when ``given``)."""
    head_dim = fields.get("head_dim")
    if head_dim is None:
        d, h = fields.get("d_model"), fields.get("n_heads")
        if not (is_whole(d, 1) and is_whole(h, 1)) or d % h:
            return None
        head_dim = d // h
    if factor == 1 or not is_whole(head_dim, 1):
        return None
    rotary = int(head_dim * factor)
    if rotary == 0:  # no frequencies: cos and sin 0 wide, nothing rotates, nothing is stored
        r.note(
            f"{key} gives 0 rotary dimensions per head (int({head_dim:,} x "
            f"{factor!r})): transformers' rotary embedding rotates nothing; read as no positions."
        )
        fields["position"] = "none"
        return None
    if rotary % 2 and yarn(r.data):
        r.note(odd_yarn(rotary))
        rotary += 1
    elif rotary % 2:
        r.note(
            f"{key} gives {rotary:,} rotary dimensions per head, an odd "
            f"count: transformers' rotary embedding takes {rotary // 2 + 1:,} frequencies "
            f"(torch.arange(0, {rotary:,}, 2)), so its cos and sin are {rotary + 1:,} wide; "
            f"counted as {rotary + 1:,} (an attention that rotates the cos width, as GLM's and "
            f"MiniMax-M2's do, runs; one that first slices {rotary:,} dimensions, as "
            "StableLM's, Phi's and Persimmon's do, fails in its forward)."
        )
        rotary += 1
    if given:
        r.key_names["rotary_dim"] = key
    return rotary


def head_width(fields: dict[str, Any]) -> Any:
    """One attention head's width as a configuration class derives it: ``head_dim``, else
    D // H (floored) where both are whole numbers; None when neither is."""
    head, d, h = fields.get("head_dim"), fields.get("d_model"), fields.get("n_heads")
    if head is None and is_whole(d) and is_whole(h, 1):
        head = d // h
    return head


def is_whole(value: Any, minimum: int | None = None) -> TypeGuard[int]:
    """``value`` is a whole number (an int, not a bool), at least ``minimum`` when one is given."""
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (minimum is None or value >= minimum)
    )


def is_positive(value: Any) -> TypeGuard[int | float]:
    """``value`` is a finite number above 0 (an int or a float, not a bool)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def not_finite(value: Any) -> bool:
    """``value`` is, or holds (in a list or mapping, at any depth), a float that is not finite."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _shown(value: Any) -> str:
    """A value that is or holds a float that is not finite, as JSON writes it (``Infinity``)."""
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    return f"{type(value).__name__} holding NaN or an infinity"
