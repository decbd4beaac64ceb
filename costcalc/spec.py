"""The canonical description of a decoder-only transformer: :class:`ModelSpec`.

Every loader (presets, costcalc YAML/JSON, nanoGPT-style and Hugging Face files) produces one of
these. Validation happens here, once: a ``ModelSpec`` that exists describes a model that can be
built, so the formulas trust it. Nothing is corrected behind the user's back: a head count that
does not divide the width is an error, not a silently changed head count.

The defaults describe a GPT-2 block: learned positions, LayerNorm with bias, a plain 4x MLP,
biases on every linear layer but the LM head, tied embeddings (12 d^2 + 13 d per block).

Layers: the flat block keys (:class:`costcalc.blocks.BlockFields`) describe L identical blocks.
``layers`` may instead list consecutive groups of blocks, each group overriding any block key
(:data:`~costcalc.blocks.BLOCK_FIELDS`) and optionally cycling through a ``pattern`` of runs
(alternating sliding/full attention, MoE every n-th layer). Every count is computed per distinct
kind of block (:meth:`ModelSpec.stacks`), in closed form: nothing grows with the number of layers.
"""

# Without `from __future__ import annotations`, as in costcalc.blocks: pydantic reads the field
# types as objects instead of evaluating each from a string at every start-up.
import functools
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping
from functools import cache
from math import isqrt
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from costcalc.blocks import (
    BLOCK_FIELDS,
    RECURRENT_MIXERS,
    BlockFields,
    Deferred,
    NormKind,
    PositionScheme,
)
from costcalc.scalars import Count, Flag, Size


class StructureError(ValueError):
    """Field values that are each fine but do not make a buildable model together."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{field}: {message}" for field, message in problems))


def _optional_block_fields() -> dict[str, Any]:
    """Every block field as an optional override (None: keep the model's value), as strict as
    the model's own field: its constraints (strict, bounds) kept with its type."""
    fields: dict[str, Any] = {}
    for name in BLOCK_FIELDS:
        info = ModelSpec.model_fields[name]
        annotation: Any = info.annotation
        if info.metadata:
            annotation = Annotated[annotation, *info.metadata]
        fields[name] = (annotation | None, Field(default=None, description=info.description))
    return fields


class _LayerRun(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    count: Size = Field(description="Consecutive layers built this way.")

    def overrides(self) -> dict[str, Any]:
        """The block keys this run sets."""
        return {
            name: value for name in BLOCK_FIELDS if (value := getattr(self, name, None)) is not None
        }


PATTERN = Field(
    default=None,
    min_length=1,
    description=(
        "Runs the group's layers cycle through, in order (e.g. 5 sliding-window layers, "
        "then 1 full); the last cycle may stop early."
    ),
)


@cache
def layer_models() -> "tuple[type[LayerRun], type[LayerGroup]]":
    """The models of a layer group and of a run of its pattern: a count and every block key as
    an optional override. Built on first use (a spec with ``layers``, or validation), not at
    import: copying the block fields would cost every command's start-up."""
    run = create_model("LayerRun", __base__=_LayerRun, **_optional_block_fields())
    group = create_model("LayerGroup", __base__=run, pattern=(tuple[run, ...] | None, PATTERN))
    return run, cast("type[LayerGroup]", group)


if TYPE_CHECKING:
    LayerRun = _LayerRun

    class LayerGroup(_LayerRun):
        pattern: tuple[LayerRun, ...] | None

    LayerGroupField = LayerGroup
else:  # the layer-group model as ModelSpec.layers' item type, built on first use
    LayerGroupField = Annotated[Any, Deferred(lambda: layer_models()[1])]

    def __getattr__(name: str) -> Any:
        """``LayerRun`` and ``LayerGroup``, built on first use (:func:`layer_models`)."""
        if name in ("LayerRun", "LayerGroup"):
            return layer_models()[name == "LayerGroup"]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def pattern_counts(count: int, runs: tuple[int, ...]) -> list[int]:
    """Layers of each run when ``count`` layers cycle through runs of these lengths:
    full cycles x run + what the last, partial cycle reaches (closed form)."""
    period = sum(runs)
    cycles, rest = divmod(count, period)
    counts, start = [], 0
    for run in runs:
        counts.append(cycles * run + min(max(rest - start, 0), run))
        start += run
    return counts


MAX_KINDS = 4096
"""Most kinds of block (runs that differ in any block key) a model may have: every count is
computed once per kind, so the work a model costs is bounded by this, whatever its size."""

MAX_STREAMS = 1024
"""Most AltUp streams: the model holds 2 (n - 1) projections, each a tensor of its own."""


class ModelSpec(BlockFields, BaseModel):
    """A decoder-only transformer, as far as its size and cost are concerned."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    vocab_size: Size = Field(description="Tokens in the vocabulary (rows of the token table).")
    vocab_pad_multiple: Size | None = Field(
        default=None,
        description="Pad the table's rows to a multiple of this (nanoGPT: 50,257 -> 50,304).",
    )
    d_model: Size = Field(description="Width D of the residual stream.")
    n_layers: Size = Field(description="Number of transformer blocks L.")
    context_length: Size = Field(description="Longest sequence (rows of a learned position table).")
    position: PositionScheme = Field(default="learned", description="Position scheme.")
    position_offset: Count = Field(
        default=0,
        description=(
            "Extra rows of a learned position table (OPT keeps 2) or of a sinusoidal one (XGLM "
            "keeps 2)."
        ),
    )
    rotary_dim: Size | None = Field(
        default=None,
        description="Rotary dimensions per head (partial rotary); default: head_dim.",
    )
    rotary_scale: Flag = Field(
        default=False,
        description=(
            "A learned scale per rotary frequency (Mistral Large 4's rotary_emb.alpha): r / 2 "
            "parameters, r the rotary width (qk_rope_head_dim on MLA)."
        ),
    )
    embedding_dim: Size | None = Field(
        default=None,
        description="Width of the token table when it differs from d_model (projected in and out).",
    )
    embedding_norm: Flag = Field(
        default=False, description="A norm right after the token table (BLOOM)."
    )
    per_layer_input_width: Size | None = Field(
        default=None,
        description=(
            "Per-layer inputs P (Gemma 3n/4's per-layer embeddings): a table of per_layer_vocab "
            "x L P, a D -> L P projection and a norm of P; in every block a gate D -> P, a "
            "projection P -> D and one more norm of D. Default: none."
        ),
    )
    per_layer_vocab: Size | None = Field(
        default=None,
        description="Rows of the per-layer input table; default: vocab_size.",
    )
    norm: NormKind = Field(default="layernorm", description="Normalisation kind.")
    norm_bias: Flag | None = Field(
        default=None,
        description=(
            "The norms carry a bias (default: a LayerNorm does, an RMSNorm does not; xLSTM's "
            "RMSNorms do with use_bias)."
        ),
    )
    final_norm: Flag = Field(default=True, description="A norm after the last block.")
    final_norm_bias: Flag | None = Field(
        default=None,
        description=(
            "The final norm carries a bias; default: as the other norms (norm_bias). xLSTM's "
            "out_norm has none whatever use_bias says."
        ),
    )
    state_layers: Size | None = Field(
        default=None,
        description=(
            "Layers of recurrent state the cache keeps when more than the blocks (xLSTMCache "
            "keeps num_hidden_layers whatever num_blocks builds), each a block's; default: "
            "the blocks'."
        ),
    )
    initial_state: Flag = Field(
        default=False,
        description=(
            "A learned vector of D a second hidden stream starts from, which the blocks reused "
            "at several depths update beside the first (HRM's z_L_init): D parameters, no MACs."
        ),
    )
    residual_streams: Size = Field(
        default=1,
        description=(
            "Copies n of the residual stream (hyper-connections, DeepSeek-V4): each block "
            "collapses them into its mixer's and FFN's input and mixes them back (n x n), with "
            "learned weights from the flattened streams; a last collapse before the final norm."
        ),
    )
    stream_mixing: Flag = Field(
        default=True,
        description=(
            "The hyper-connections mix the residual streams n x n (DeepSeek-V4); false: each "
            "only collapses and expands them, with no mixing matrix (HY V4's independent "
            "hyper-connections: fn 2 n x n D, base 2 n, scale 2)."
        ),
    )
    stream_rank: Size | None = Field(
        default=None,
        description=(
            "Gated low-rank hyper-connections of rank r over the residual_streams (Qwen4-Exp): "
            "each collapses the streams through a norm of n D, n D -> r -> n D weights and "
            "injects the branch's output back (n D -> n); the last collapse has no injection "
            "and replaces the final norm. Default: none (DeepSeek-V4's kind)."
        ),
    )
    stream_collapse: Literal["learned", "mean"] = Field(
        default="learned",
        description=(
            "How several residual_streams become one before the final norm: DeepSeek-V4's "
            "learned collapse (n x n D + n + 1 parameters), or their plain mean (GLM-5.3-Flash: "
            "no parameters)."
        ),
    )
    altup_streams: Annotated[int, Field(strict=True, ge=1, le=MAX_STREAMS)] | None = Field(
        default=None,
        description=(
            "AltUp (alternating updates, Gemma 3n) over n copies of the residual stream: the "
            "model projects the embedding into n - 1 more streams and each back before the "
            "final norm (2 (n - 1) D x D); each block predicts the streams from the active one "
            "(a router n x D after a norm of D, coefficients n^2 x n, the streams mixed n x n) "
            "and corrects them after (coefficients n x n, the router again, a scale of D); "
            "at most 1,024 streams. Default: none."
        ),
    )
    lm_head_bias: Flag = Field(default=False, description="Bias on the LM head.")
    logit_scale: Flag = Field(
        default=False,
        description="A learned scale per logit (Dory's lm_head.logit_scale): V' parameters.",
    )
    head_rows: Size | None = Field(
        default=None,
        description=(
            "Rows of an untied LM head (the logits' width) when they differ from the token "
            "table's (Apertus 1.5's pruned head); default: the table's rows."
        ),
    )
    tie_embeddings: Flag = Field(
        default=True, description="The LM head reuses the token table (no matrix of its own)."
    )
    layers: tuple[LayerGroupField, ...] | None = Field(
        default=None,
        min_length=1,
        description=(
            "Consecutive groups of identical blocks, each overriding block keys (n_layers, "
            "their sum, may then be left out); default: n_layers blocks as the keys describe."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _count_layers(cls, data: Any) -> Any:
        """n_layers may be left out when layers gives every layer."""
        groups = data.get("layers") if isinstance(data, dict) else None
        if data.get("n_layers") is None and isinstance(groups, list | tuple) and groups:
            counts = [g.get("count") if isinstance(g, dict) else None for g in groups]
            if all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
                return {**data, "n_layers": sum(counts)}
        return data

    @model_validator(mode="after")
    def _check_structure(self) -> "ModelSpec":
        problems = structural_problems(self)
        if problems:
            raise StructureError(problems)
        return self

    # Resolved values: the defaults above, filled in.

    @property
    def vocab_rows(self) -> int:
        """Rows of the token table: vocab_size, padded up to vocab_pad_multiple."""
        m = self.vocab_pad_multiple
        return self.vocab_size if m is None else -(-self.vocab_size // m) * m

    @property
    def output_rows(self) -> int:
        """Rows of the LM head, the logits' width: head_rows, or the token table's rows."""
        return self.vocab_rows if self.head_rows is None else self.head_rows

    @property
    def head_width(self) -> int:
        """head_dim, or d_model / n_heads (divisibility was checked); 0 without attention."""
        if self.head_dim is not None:
            return self.head_dim
        return self.d_model // self.n_heads if self.n_heads else 0

    @property
    def ffn_width(self) -> int:
        """FFN hidden width h: ffn_hidden, or r * d_model."""
        if self.ffn_hidden is not None:
            return self.ffn_hidden
        return (4 if self.ffn_mult is None else self.ffn_mult) * self.d_model

    @property
    def expert_width(self) -> int:
        """Hidden width of one routed expert: moe_ffn_hidden, or the FFN width."""
        return self.ffn_width if self.moe_ffn_hidden is None else self.moe_ffn_hidden

    @property
    def embed_width(self) -> int:
        """Width of the token table (d_model unless embedding_dim says otherwise)."""
        return self.d_model if self.embedding_dim is None else self.embedding_dim

    @property
    def per_layer_rows(self) -> int:
        """Rows of the per-layer input table: per_layer_vocab, or vocab_size."""
        return self.vocab_size if self.per_layer_vocab is None else self.per_layer_vocab

    @property
    def has_norm_bias(self) -> bool:
        """norm_bias, or whether the norm kind has one by default (LayerNorm)."""
        return self.norm == "layernorm" if self.norm_bias is None else self.norm_bias

    @property
    def has_final_norm_bias(self) -> bool:
        """final_norm_bias, or the other norms' bias."""
        return self.has_norm_bias if self.final_norm_bias is None else self.final_norm_bias

    @property
    def rotary_width(self) -> int | None:
        if self.position != "rotary":
            return None
        return self.head_width if self.rotary_dim is None else self.rotary_dim

    @property
    def key_width(self) -> int:
        """Width of one query or key head as attention scores and caches it: the head width,
        or the rotary width a head 1 wide broadcasts to (``q * cos`` with cos 2 wide in
        transformers' apply_rotary_pos_emb; :func:`_rotary_dims`)."""
        rotary = self.rotary_width if self.mixer == "attention" else None
        return max(self.head_width, rotary or 0)

    @property
    def position_rows(self) -> int:
        """Rows of the learned position table (context plus offset); 0 for other schemes."""
        return self.context_length + self.position_offset if self.position == "learned" else 0

    @property
    def sinusoidal_rows(self) -> int:
        """Rows of a sinusoidal position table, a buffer (context plus offset); 0 for other
        schemes."""
        return self.context_length + self.position_offset if self.position == "sinusoidal" else 0

    @property
    def stacks(self) -> "tuple[ModelSpec, ...]":
        """The model as stacks of identical blocks, one flat spec per kind of block, each with
        ``n_layers`` = the layers of that kind (in order of first appearance). A flat spec is
        one stack: itself."""
        return (self,) if self.layers is None else _stacks(self)

    @property
    def uniform(self) -> bool:
        """Every block is built the same way."""
        return len(self.stacks) == 1

    def resolved(self) -> dict[str, object]:
        """Every field with its default filled in, as the model is actually built. Read field
        by field, as ``model_dump`` gives them, without building this class's serializer (a
        loaded model was validated as a config file; start-up would pay for a second schema)."""
        data = {name: _dumped(getattr(self, name)) for name in type(self).model_fields}
        data.update(
            n_kv_heads=self.kv_heads or None,
            head_dim=self.head_width or None,
            ffn_hidden=self.ffn_width if self.ffn != "none" else None,
            embedding_dim=self.embed_width,
            norm_bias=self.has_norm_bias,
            rotary_dim=self.rotary_width,
        )
        data.pop("ffn_mult")
        if self.layers is None:
            data.pop("layers")
        return data

    def differing(self) -> dict[str, object]:
        """The fields of :meth:`resolved` whose value differs from the field's default in the
        config format: the sizes, the widths as built (a derived width's default is "derive
        it", so its value is shown), every option set otherwise than its default; each layer
        group and pattern run with the keys it sets."""
        fields = type(self).model_fields
        data = {
            name: value
            for name, value in self.resolved().items()
            if not _is_default(value, fields[name].default)
        }
        if "layers" in data:
            data["layers"] = [_set_keys(group) for group in cast("tuple[Any, ...]", data["layers"])]
        return data


def trusted_spec(data: Mapping[str, Any]) -> ModelSpec:
    """The spec ``ModelSpec.model_validate(data)`` builds, built without validating, for data
    known to be valid (the shipped presets, each checked against validation by the test suite):
    nested mappings become their models, lists tuples; n_layers defaults to the groups' sum."""
    fields = _trusted_block(data, ModelSpec.model_fields)
    if data.get("layers") is not None:
        fields["layers"] = tuple(_trusted_group(group) for group in data["layers"])
        fields.setdefault("n_layers", sum(group["count"] for group in data["layers"]))
    return ModelSpec.model_construct(**fields)


def _trusted_group(data: Mapping[str, Any]) -> "LayerGroup":
    run, group = layer_models()
    fields = _trusted_block(data, group.model_fields)
    if data.get("pattern") is not None:
        fields["pattern"] = tuple(
            run.model_construct(**_trusted_block(item, run.model_fields))
            for item in data["pattern"]
        )
    return group.model_construct(**fields)


def _trusted_block(data: Mapping[str, Any], known: Collection[str]) -> dict[str, Any]:
    """The fields of ``data`` that ``known`` holds, a recurrent mixer's sizes as their model."""
    fields = {name: value for name, value in data.items() if name in known}
    recurrent = [name for name in RECURRENT_MIXERS if fields.get(name) is not None]
    if recurrent:
        from costcalc.anatomy.recurrent import recurrent_mixer

        for name in recurrent:
            fields[name] = recurrent_mixer(name).sizes_model.model_construct(**fields[name])
    return fields


def _is_default(value: object, default: object) -> bool:
    """``value`` is ``default`` itself: equal and of its type (``1`` is no ``True``)."""
    return type(value) is type(default) and value == default


def _set_keys(group: Mapping[str, Any]) -> dict[str, Any]:
    """A dumped layer group or run without the keys it leaves to the model (None)."""
    kept = {key: value for key, value in group.items() if value is not None}
    if "pattern" in kept:
        kept["pattern"] = [_set_keys(run) for run in kept["pattern"]]
    return kept


def _dumped(value: object) -> object:
    """A field's value as ``model_dump`` gives it: a nested model as a dict, a tuple item by
    item, a plain value as it is."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, tuple):
        return tuple(_dumped(item) for item in value)
    return value


T = TypeVar("T")


def per_spec(function: "Callable[[ModelSpec], T]") -> "Callable[[ModelSpec], T]":
    """``function(spec)`` computed once per spec object: cached by the spec's identity, not its
    value (hashing or comparing a layered spec walks every one of its groups, so a cache keyed
    by value would cost what it saves); an entry goes when its spec does."""
    results: dict[int, tuple[weakref.ref[ModelSpec], T]] = {}

    @functools.wraps(function)
    def cached(spec: "ModelSpec") -> T:
        key = id(spec)
        found = results.get(key)
        if found is not None and found[0]() is spec:
            return found[1]
        value = function(spec)
        results[key] = (weakref.ref(spec, functools.partial(_forget, results, key)), value)
        return value

    return cached


def _forget(results: dict[int, Any], key: int, _: object) -> None:
    results.pop(key, None)


@per_spec
def _stacks(spec: ModelSpec) -> tuple[ModelSpec, ...]:
    """A layered spec's stacks, computed once per spec (every count reads them several times):
    one flat spec per distinct kind of block, in order of first appearance."""
    kinds: dict[tuple[Any, ...], tuple[dict[str, Any], int]] = {}
    for _, overrides, count in layer_runs(spec):
        key = _block_key(spec, overrides)
        block = dict(zip(BLOCK_FIELDS, key, strict=True))
        _, before = kinds.get(key, (block, 0))
        kinds[key] = (block, before + count)
    return tuple(
        spec.model_copy(update={**block, "n_layers": count, "layers": None})
        for block, count in kinds.values()
    )


def _block_key(spec: ModelSpec, overrides: Mapping[str, Any]) -> tuple[Any, ...]:
    """Every block key's value in a run that sets ``overrides``: equal for runs of one kind."""
    return tuple(overrides.get(name, getattr(spec, name)) for name in BLOCK_FIELDS)


def layer_runs(spec: ModelSpec) -> Iterator[tuple[str, dict[str, Any], int]]:
    """Each run of ``spec.layers``: its key path, the block keys it sets, its layer count.

    A group's pattern is expanded in closed form (:func:`pattern_counts`); a pattern's keys
    apply on top of its group's.
    """
    for i, group in enumerate(spec.layers or ()):
        if group.pattern is None:
            yield f"layers.{i}", group.overrides(), group.count
            continue
        counts = pattern_counts(group.count, tuple(run.count for run in group.pattern))
        for j, (run, count) in enumerate(zip(group.pattern, counts, strict=True)):
            if count:
                yield f"layers.{i}.pattern.{j}", {**group.overrides(), **run.overrides()}, count


Rule = Callable[[ModelSpec], Iterator[tuple[str, str]]]

STATE_LAYERS_KIND = "applies to a model of one kind of recurrent block"

RULES: list[tuple[frozenset[str], Rule]] = []
"""Each structural rule with the fields it reads."""


def _rule(*fields: str) -> Callable[[Rule], Rule]:
    def register(check: Rule) -> Rule:
        RULES.append((frozenset(fields), check))
        return check

    return register


def structural_problems(
    spec: ModelSpec, usable: Collection[str] | None = None
) -> list[tuple[str, str]]:
    """Rules a buildable model must satisfy, as (field, message) pairs; empty when it is valid.

    With ``usable``, only the rules that read nothing but those fields run: a file whose other
    fields are invalid still hears about every rule its valid fields break. A layered spec is
    checked run by run; a problem with a key a run sets is named by the run's path
    (``layers.1.n_heads``).
    """
    if spec.layers is None or (usable is not None and "layers" not in usable):
        return _rule_problems(spec, usable)
    total = sum(group.count for group in spec.layers)
    problems = []
    if (usable is None or "n_layers" in usable) and total != spec.n_layers:
        problems.append(
            ("n_layers", f"n_layers {spec.n_layers:,} but the layer groups add up to {total:,}")
        )
    if spec.state_layers is not None and (usable is None or "state_layers" in usable):
        problems.append(("state_layers", STATE_LAYERS_KIND))
    kinds = len({_block_key(spec, overrides) for _, overrides, _ in layer_runs(spec)})
    if kinds > MAX_KINDS:
        message = f"{kinds:,} kinds of block; at most {MAX_KINDS:,} are counted"
        return [*problems, ("layers", message)]
    for path, overrides, _ in layer_runs(spec):
        run = spec.model_copy(update={**overrides, "layers": None})
        for field, message in _rule_problems(run, usable):
            problems.append((f"{path}.{field}" if field in overrides else field, message))
    return list(dict.fromkeys(problems))


def _rule_problems(spec: ModelSpec, usable: Collection[str] | None) -> list[tuple[str, str]]:
    return [
        problem
        for fields, check in RULES
        if usable is None or fields <= set(usable)
        for problem in check(spec)
    ]


def divisors(n: int) -> list[int]:
    """Every divisor of ``n``, ascending (sqrt(n) steps)."""
    small = [k for k in range(1, isqrt(n) + 1) if n % k == 0]
    return small + [n // k for k in reversed(small) if k * k != n]


def nearest_head_counts(d: int, h: int, kv_heads: int | None = None) -> list[int]:
    """The valid equal-split head counts of width ``d`` nearest ``h``, one below and one above
    (multiples of ``kv_heads`` when given)."""
    valid = [k for k in divisors(d) if kv_heads is None or k % kv_heads == 0]
    return [k for k in valid if k < h][-1:] + [k for k in valid if k > h][:1]


def split_problem(d: int, h: int) -> str | None:
    """Seed 000: an implicit head_dim is D / H, so H must divide D (never corrected)."""
    if d % h == 0:
        return None
    return f"d_model {d:,} does not split into {h:,} equal heads ({d:,} % {h:,} = {d % h:,})"


def grouping_problem(h: int, k: int) -> str | None:
    """GQA/MQA: each key/value head serves a whole group of query heads."""
    if k <= h and h % k == 0:
        return None
    return (
        f"{h:,} query heads cannot be grouped over {k:,} key/value heads "
        "(n_heads must be a multiple of n_kv_heads)"
    )


@_rule("mixer", "n_heads")
def _heads_for_attention(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.has_attention and spec.n_heads is None:
        yield ("n_heads", f"required for {spec.mixer} blocks (attention query heads H)")


@_rule("mixer", "d_model", "n_heads", "head_dim")
def _equal_head_split(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.mixer != "attention" or spec.n_heads is None or spec.head_dim is not None:
        return
    problem = split_problem(spec.d_model, spec.n_heads)
    if problem is not None:
        nearest = ", ".join(f"{k:,}" for k in nearest_head_counts(spec.d_model, spec.n_heads))
        yield (
            "n_heads",
            f"{problem}; nearest valid head counts: {nearest}; or give head_dim explicitly",
        )


@_rule("mixer", "n_heads", "n_kv_heads", "ungrouped_kv_heads", "attention_experts")
def _kv_grouping(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """Each key/value head serves a whole group of query heads, unless the block says they do
    not (``ungrouped_kv_heads``: built, but no attention runs over them)."""
    if spec.mixer != "attention" or spec.n_heads is None:
        return
    problem = grouping_problem(spec.n_heads, spec.kv_heads)
    if problem is not None and not spec.ungrouped_kv_heads:
        yield ("n_kv_heads", problem)
    elif problem is None and spec.ungrouped_kv_heads:
        yield (
            "ungrouped_kv_heads",
            f"{spec.n_heads:,} query heads group over {spec.kv_heads:,} key/value heads; "
            "ungrouped_kv_heads is for heads that do not",
        )
    elif problem is not None and spec.attention_experts is not None:
        yield ("attention_experts", f"routes whole groups of query heads: {problem}")


MLA_SIZES = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
MLA_FIELDS = ("q_lora_rank", *MLA_SIZES)


MLA_FLAGS = ("rope_key_norm", "query_latent_both", "query_position_scale", "indexer_query_norm")


@_rule("mixer", *MLA_FIELDS, *MLA_FLAGS)
def _latent_attention(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """MLA needs its four sizes; they (and its flags) mean nothing to another mixer (but for
    attention's value width, ``v_head_dim``); the query latent read twice needs a query
    latent."""
    for name in MLA_FLAGS if spec.mixer != "mla" else ():
        if getattr(spec, name):
            yield (name, f"applies to mla blocks; this block's mixer is {spec.mixer}")
    if spec.query_latent_both and spec.mixer == "mla" and spec.q_lora_rank is None:
        yield ("query_latent_both", "reads the query latent: q_lora_rank is required")
    for name in MLA_SIZES if spec.mixer == "mla" else ():
        if getattr(spec, name) is None:
            yield (name, "required for mla blocks (multi-head latent attention)")
    for name in MLA_FIELDS if spec.mixer != "mla" else ():
        if name == "v_head_dim" and spec.mixer == "attention":
            continue  # attention's values may be as wide as they like
        if getattr(spec, name) is not None:
            yield (name, f"applies to mla blocks; this block's mixer is {spec.mixer}")


INDEXER_SIZES = ("indexer_heads", "indexer_head_dim")


@_rule("mixer", "indexer_block", "kv_compress_rate", *INDEXER_SIZES)
def _block_indexer(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """Pooled blocks of keys belong to an attention block's own indexer."""
    if spec.indexer_block is None:
        return
    if spec.indexer_heads is None:
        yield ("indexer_block", "pools the indexer's keys; give indexer_heads")
    elif spec.mixer != "attention" or spec.kv_compress_rate is not None:
        yield ("indexer_block", "applies to the own indexer of an attention block")


@_rule("mixer", "indexer_key_pool", *INDEXER_SIZES)
def _pooled_indexer_keys(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """Pooled keys belong to an MLA block's indexer."""
    if spec.indexer_key_pool is None:
        return
    if spec.mixer != "mla":
        yield ("indexer_key_pool", f"applies to mla blocks; this block's mixer is {spec.mixer}")
    elif spec.indexer_heads is None:
        yield ("indexer_key_pool", "pools a sparse-attention indexer's keys; give indexer_heads")


@_rule("mixer", "q_lora_rank", "indexer_query_norm", *INDEXER_SIZES)
def _sparse_attention_indexer(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """The indexer's two sizes go together, on an attention block or on an MLA block whose
    indexer reads the query latent (``q_lora_rank``) or the block input
    (``indexer_query_norm``)."""
    given = [name for name in INDEXER_SIZES if getattr(spec, name) is not None]
    if not given:
        if spec.indexer_query_norm:
            yield ("indexer_query_norm", "feeds a sparse-attention indexer; give indexer_heads")
        return
    for name in INDEXER_SIZES:
        if name not in given:
            yield (name, f"required with {given[0]} (the sparse-attention indexer)")
    if spec.mixer == "attention" and spec.kv_compress_rate is not None:
        if spec.query_rank is None:
            yield (given[0], "the indexer reads the query latent: query_rank is required")
    elif spec.mixer not in ("mla", "attention"):
        yield (given[0], f"applies to attention and mla blocks; this block's mixer is {spec.mixer}")
    elif spec.mixer == "mla" and spec.q_lora_rank is None and not spec.indexer_query_norm:
        yield (
            given[0],
            "the indexer reads the query latent: q_lora_rank is required (or "
            "indexer_query_norm: its queries from the block input)",
        )


COMPRESSED_ATTENTION = (
    "query_rank",
    "out_groups",
    "out_rank",
    "kv_compress_rate",
    "kv_compress_overlap",
)


@_rule("mixer", "d_model", "n_heads", "head_dim", "v_head_dim", *COMPRESSED_ATTENTION)
def _compressed_attention(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """Low-rank queries, the grouped output projection and the key compressor are attention's;
    out_groups and out_rank go together and the groups split the heads' outputs evenly; the
    overlap belongs to a compressor."""
    given = {
        "query_rank": spec.query_rank is not None,
        "out_groups": spec.out_groups is not None,
        "out_rank": spec.out_rank is not None,
        "kv_compress_rate": spec.kv_compress_rate is not None,
        "kv_compress_overlap": spec.kv_compress_overlap,
    }
    if spec.mixer != "attention":
        for name in (name for name, set_ in given.items() if set_):
            yield (name, f"applies to attention blocks; this block's mixer is {spec.mixer}")
        return
    if given["out_groups"] != given["out_rank"]:
        missing = "out_rank" if given["out_groups"] else "out_groups"
        yield (missing, "out_groups and out_rank go together (the grouped output projection)")
    width = (spec.n_heads or 0) * (spec.v_head_dim or spec.head_width)
    if spec.out_groups is not None and width % spec.out_groups:
        yield (
            "out_groups",
            f"the heads' outputs ({width:,}) do not split into {spec.out_groups:,} equal groups",
        )
    if spec.kv_compress_overlap and spec.kv_compress_rate is None:
        yield ("kv_compress_overlap", "overlaps the compressor's windows; give kv_compress_rate")


@_rule(
    "mixer",
    "qk_norm",
    "attention_sinks",
    "attention_gate",
    "attention_gate_proj",
    "attention_gate_bias",
    "keys_as_values",
    "shares_kv",
    "attention_head_gate",
    "differential_attention",
    "attention_experts",
    "gated_cross_attention",
    "encoder_attention",
    "n_kv_heads",
    "head_dim",
    "kv_cache_heads",
    "kv_cache_all_tokens",
    "bidirectional_attention",
    "ungrouped_kv_heads",
)
def _attention_only(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.mixer == "attention":
        return
    given = {
        "n_kv_heads": spec.n_kv_heads is not None,
        "kv_cache_heads": spec.kv_cache_heads is not None,
        "kv_cache_all_tokens": spec.kv_cache_all_tokens,
        "bidirectional_attention": spec.bidirectional_attention,
        "ungrouped_kv_heads": spec.ungrouped_kv_heads,
        "head_dim": spec.head_dim is not None,
        "qk_norm": spec.qk_norm != "none",
        "attention_sinks": spec.attention_sinks and spec.mixer != "mla",
        "attention_gate": spec.attention_gate and spec.mixer != "mla",
        "attention_gate_bias": spec.attention_gate_bias,
        "keys_as_values": spec.keys_as_values,
        "shares_kv": spec.shares_kv,
        "attention_head_gate": spec.attention_head_gate and spec.mixer != "mla",
        "differential_attention": spec.differential_attention,
        "attention_experts": spec.attention_experts is not None,
        "gated_cross_attention": spec.gated_cross_attention,
        "encoder_attention": spec.encoder_attention,
    }
    for name in (name for name, set_ in given.items() if set_):
        yield (name, f"applies to attention blocks; this block's mixer is {spec.mixer}")


@_rule(
    "mixer",
    "attention_experts",
    "n_heads",
    "n_kv_heads",
    "query_rank",
    "out_groups",
    "attention_gate",
)
def _attention_experts(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """A mixture of attention heads routes each token to H / K experts of K query heads; its
    experts are the query and output projections, so no other shape of them goes with it."""
    X, H, K = spec.attention_experts, spec.n_heads, spec.kv_heads
    if X is None or spec.mixer != "attention" or H is None or H % K:
        return
    if H // K > X:
        yield (
            "attention_experts",
            f"{H:,} query heads of {K:,} per expert route each token to {H // K:,} experts; "
            f"there are {X:,}",
        )
    for name in ("query_rank", "out_groups", "attention_gate"):
        if getattr(spec, name):
            yield (name, "the query and output projections are attention_experts' experts")


@_rule("mixer", "parallel_mamba", "parallel_mamba2")
def _parallel_mamba(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """A Mamba (v1) mixer beside attention (Zamba), not beside a Mamba-2 one."""
    if spec.parallel_mamba and spec.mixer != "attention":
        yield ("parallel_mamba", f"applies to attention blocks; this block's mixer is {spec.mixer}")
    if spec.parallel_mamba and spec.parallel_mamba2:
        yield ("parallel_mamba", "a block runs one Mamba mixer beside its attention, not two")


SHARED_BLOCK_PARTS = (
    "adapter_rank",
    "qkv_adapters",
    "use_projection",
    "adapter_slots",
    "weight_sets_untied",
)


@_rule(
    "mixer",
    "ffn",
    "head_dim",
    "concat_embeddings",
    "concat_width",
    "shared_weight_sets",
    *SHARED_BLOCK_PARTS,
)
def _shared_blocks(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """Adapters and per-use projections belong to blocks reused at several depths; the FFN
    adapter needs a dense FFN, q/k/v adapters the adapter rank and attention; attention over
    the concatenated embeddings is sized by an explicit head width."""
    if spec.shared_weight_sets is None:
        for name in (name for name in SHARED_BLOCK_PARTS if getattr(spec, name)):
            yield (name, "belongs to a block reused at several depths; give shared_weight_sets")
    if spec.adapter_rank is not None and (spec.ffn == "none" or spec.moe_experts is not None):
        yield ("adapter_rank", "adapts a dense FFN's first projection; this block has none")
    for name in ("qkv_adapters", "adapter_slots"):
        if getattr(spec, name) and spec.adapter_rank is None:
            yield (name, "sized by adapter_rank; give adapter_rank")
    for name in ("qkv_adapters", "concat_embeddings"):
        if getattr(spec, name) and spec.mixer != "attention":
            yield (name, f"applies to attention blocks; this block's mixer is {spec.mixer}")
    if spec.concat_embeddings and spec.mixer == "attention" and spec.head_dim is None:
        yield ("head_dim", "required with concat_embeddings (the heads split the 2 D input)")
    if spec.concat_width is not None and not spec.concat_embeddings:
        yield ("concat_width", "the width of concat_embeddings; give concat_embeddings")


@_rule("differential_attention", "n_kv_heads", "n_heads")
def _differential_pairs(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.differential_attention and spec.mixer == "attention" and spec.kv_heads % 2:
        yield (
            "differential_attention",
            f"splits the values' {spec.kv_heads} key/value heads in two halves: an even "
            "number is needed",
        )


@_rule("residual_streams", "stream_mixing", "stream_rank")
def _streams_to_mix(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    for name, given in (
        ("stream_mixing", not spec.stream_mixing),
        ("stream_rank", spec.stream_rank is not None),
    ):
        if given and spec.residual_streams == 1:
            yield (name, "a model with one residual stream has no hyper-connections")
    if not spec.stream_mixing and spec.stream_rank is not None:
        yield ("stream_mixing", "low-rank hyper-connections (stream_rank) have no mixing matrix")


@_rule("per_layer_input_width", "per_layer_vocab")
def _per_layer_table(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.per_layer_vocab is not None and spec.per_layer_input_width is None:
        yield ("per_layer_vocab", "sizes the per-layer input table; give per_layer_input_width")


@_rule("ffn_hidden", "ffn_mult", "d_model")
def _one_ffn_width(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    hidden, mult, d = spec.ffn_hidden, spec.ffn_mult, spec.d_model
    if hidden is not None and mult is not None and hidden != mult * d:
        yield (
            "ffn_hidden",
            f"ffn_hidden {hidden} contradicts ffn_mult {mult} (which means {mult * d}); "
            "give one of them",
        )


@_rule("ffn", "ffn_act_params")
def _activation_needs_ffn(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.ffn_act_params and spec.ffn == "none":
        yield ("ffn_act_params", "a block without an FFN has no activation to learn")


@_rule("norms_per_block", "ffn", "norm_gate_rank", "ffn_norm_gate_rank")
def _gated_norms(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """A norm gate needs the norm it gates: the first of the block's norms for the token
    mixer's, the second (and an FFN) for the FFN's."""
    if spec.norm_gate_rank is not None and spec.norms_per_block < 1:
        yield ("norm_gate_rank", "gates the token mixer's input norm; this block has no norm")
    if spec.ffn_norm_gate_rank is not None and (spec.ffn == "none" or spec.norms_per_block < 2):
        yield ("ffn_norm_gate_rank", "gates the FFN's input norm; this block has none")


@_rule("ffn", "ffn_inner_norm", "moe_experts")
def _inner_norm_needs_dense_ffn(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.ffn_inner_norm and (spec.ffn == "none" or spec.moe_experts is not None):
        yield ("ffn_inner_norm", "only a dense FFN has an inner norm; this block's FFN is not one")


@_rule("ffn", "fused_gate_up")
def _gate_to_fuse(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.fused_gate_up and not spec.gated:
        yield ("fused_gate_up", f"a plain {spec.ffn} FFN has no gate to fuse")


@_rule("ffn", "mixer", "ffn_bias", "moe_experts", "ffn_inner_norm")
def _channel_mix_as_built(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """RWKV's channel mix is one dense block without biases or an inner norm, in an RWKV block
    (whose state keeps its previous token's input)."""
    if spec.ffn != "channel_mix":
        return
    if spec.mixer != "rwkv":
        yield ("ffn", f"RWKV's channel mix runs in rwkv blocks; this block's mixer is {spec.mixer}")
    if spec.ffn_bias:
        yield ("ffn_bias", "RWKV's channel mix has no biases; give ffn_bias: false")
    if spec.moe_experts is not None:
        yield ("moe_experts", "RWKV's channel mix is a dense FFN, not a mixture of experts")
    if spec.ffn_inner_norm:
        yield ("ffn_inner_norm", "RWKV's channel mix has no inner norm")


@_rule("mixer", "attention_gate", "ffn", "moe_experts", "ngpt_scales")
def _ngpt_scales(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """nGPT scales the gated attention's queries and gate and a dense gated FFN's branches."""
    if not spec.ngpt_scales:
        return
    if spec.mixer != "attention" or not spec.attention_gate:
        yield ("ngpt_scales", "scales the queries and output gate of attention with attention_gate")
    if not spec.gated or spec.moe_experts is not None:
        yield ("ngpt_scales", "scales the gate and up branches of a dense gated FFN")


@_rule("shared_weight_sets", "cache_per_weight_set")
def _cache_per_set(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.cache_per_weight_set and spec.shared_weight_sets is None:
        yield ("cache_per_weight_set", "a block that is not reused has one cache per layer")


@_rule("ffn", "residual_scales")
def _residual_scales(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.residual_scales and spec.ffn == "none":
        yield ("residual_scales", "scales the token mixer's and the FFN's branches; give an FFN")


@_rule("mixer", "dynamic_mask")
def _dynamic_mask(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.dynamic_mask and spec.mixer != "attention":
        yield ("dynamic_mask", f"applies to attention blocks; this block's mixer is {spec.mixer}")


@_rule(
    "moe_experts",
    "moe_product_keys",
    "moe_ffn_hidden",
    "moe_router_bias",
    "moe_expert_bias",
    "moe_router_scales",
    "moe_modality_ffn_hidden",
    "moe_latent",
)
def _product_keys(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """Product-key experts are single neurons with a router of their own."""
    if not spec.moe_product_keys:
        return
    if spec.moe_experts is None:
        yield ("moe_product_keys", "retrieves experts; give moe_experts")
    for name in ("moe_ffn_hidden", "moe_router_bias", "moe_expert_bias", "moe_router_scales"):
        if getattr(spec, name):
            yield (name, "product-key experts are single neurons under a router without bias")
    if spec.moe_modality_ffn_hidden is not None:
        yield ("moe_modality_ffn_hidden", "product-key experts have no second modality's set")
    if spec.moe_latent is not None:
        yield ("moe_latent", "product-key experts are rows of D-wide tables, with no latent")


@_rule("attention_gate", "attention_gate_bias", "attention_gate_proj", "attention_gate_proj_bias")
def _gate_for_bias(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.attention_gate_bias and not spec.attention_gate:
        yield ("attention_gate_bias", "a bias of the output gate needs attention_gate")
    if spec.attention_gate_proj and not spec.attention_gate:
        yield ("attention_gate_proj", "the output gate's own projection needs attention_gate")
    if spec.attention_gate_proj_bias is not None and not spec.attention_gate_proj:
        yield (
            "attention_gate_proj_bias",
            "a bias of the output gate's own projection needs attention_gate_proj",
        )


@_rule("state_layers", "n_layers", "mixer", "parallel_mamba2", "parallel_mamba")
def _state_layers(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """Spare layers of state: a cache of one kind of recurrent block (layer groups are refused
    by :func:`structural_problems`), for every block."""
    if spec.state_layers is None:
        return
    if not spec.recurrent:
        yield ("state_layers", STATE_LAYERS_KIND)
    elif spec.state_layers < spec.n_layers:
        yield (
            "state_layers",
            f"{spec.state_layers:,} layers of state for {spec.n_layers:,} blocks: every block "
            "needs its own",
        )


@_rule("final_norm", "final_norm_bias")
def _final_norm_bias(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.final_norm_bias and not spec.final_norm:
        yield ("final_norm_bias", "a bias of the final norm needs final_norm")


@_rule("tie_embeddings", "head_rows", "vocab_size", "vocab_pad_multiple")
def _tied_head_rows(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """A tied head is the token table: it has the table's rows."""
    if spec.tie_embeddings and spec.head_rows is not None and spec.head_rows != spec.vocab_rows:
        yield (
            "head_rows",
            f"a tied LM head is the token table ({spec.vocab_rows:,} rows); "
            "give tie_embeddings: false for a head of its own",
        )


@_rule("residual_streams", "stream_collapse")
def _collapse_needs_streams(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.stream_collapse != "learned" and spec.residual_streams == 1:
        yield ("stream_collapse", "collapses several residual_streams; there is one")


@_rule("bidirectional_attention", "bidirectional_window")
def _window_of_bidirectional_pairs(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.bidirectional_window is not None and not spec.bidirectional_attention:
        yield ("bidirectional_window", "windows the pairs of a bidirectional_attention block")


@_rule("position", "rotary_scale")
def _scale_needs_rotary(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.rotary_scale and spec.position != "rotary":
        yield ("rotary_scale", "scales rotary frequencies; position is not rotary")


@_rule("position", "position_offset")
def _offset_needs_table(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.position not in ("learned", "sinusoidal") and spec.position_offset:
        yield ("position_offset", "an offset only applies to a learned or sinusoidal table")


@_rule("mixer", "position", "rotary_dim", "head_dim", "d_model", "n_heads")
def _rotary_dims(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """Rotary positions rotate pairs of dimensions within one head; a head 1 wide broadcasts
    against wider cos and sin (its queries and keys come out rotary_dim wide: ``key_width``)."""
    if spec.position != "rotary":
        if spec.rotary_dim is not None:
            yield ("rotary_dim", "rotary_dim is given but position is not rotary")
        return
    if spec.mixer != "attention" or spec.n_heads is None:
        return  # MLA rotates qk_rope_head_dim; a block without attention rotates nothing
    if spec.head_dim is None and spec.d_model % spec.n_heads:
        return  # no head width until the equal split is fixed (reported above)
    head, rotary = spec.head_width, spec.rotary_width
    field = "rotary_dim" if spec.rotary_dim is not None else "head_dim"
    if rotary is not None and rotary > head and head != 1:
        yield (field, f"rotary_dim {rotary} exceeds head_dim {head}")
    elif rotary is not None and rotary % 2:
        yield (field, f"rotary positions rotate pairs of dimensions; {rotary} is odd")


@_rule("moe_experts", "moe_top_k")
def _expert_routing(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    experts, top_k = spec.moe_experts, spec.moe_top_k
    if (experts is None) != (top_k is None):
        yield ("moe_top_k", "a mixture of experts needs both moe_experts and moe_top_k")
    elif experts is not None and top_k is not None and top_k > experts:
        yield ("moe_top_k", f"cannot route to {top_k} of {experts} experts")


MOE_DETAILS = (
    "moe_ffn_hidden",
    "moe_shared_ffn_hidden",
    "moe_shared_gate",
    "moe_router_bias",
    "moe_expert_bias",
    "moe_router_scales",
    "moe_output_bias",
    "moe_modality_ffn_hidden",
    "moe_latent",
    "moe_width",
)


@_rule("ffn", "moe_experts", *MOE_DETAILS)
def _expert_details(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """Expert settings need experts, and experts need an FFN kind to build them from."""
    if spec.moe_experts is not None and spec.ffn == "none":
        yield ("ffn", "a mixture of experts needs an FFN kind for its experts (mlp, swiglu, geglu)")
    if spec.moe_experts is None:
        for name in MOE_DETAILS:
            if getattr(spec, name):
                yield (name, "applies to a mixture of experts; give moe_experts and moe_top_k")


@_rule(
    "moe_width",
    "moe_latent",
    "moe_product_keys",
    "moe_modality_ffn_hidden",
    "moe_router_scales",
    "moe_shared_ffn_hidden",
)
def _moe_width(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """Experts built for another width than D are DBRX's plain routed experts."""
    if spec.moe_width is None:
        return
    for name in (
        "moe_latent",
        "moe_product_keys",
        "moe_modality_ffn_hidden",
        "moe_router_scales",
        "moe_shared_ffn_hidden",
    ):
        if getattr(spec, name):
            yield (name, "not with moe_width (routed experts built for another width)")


@_rule(
    "mixer",
    "query_width",
    "attention_gate",
    "attention_experts",
    "v_head_dim",
    "out_groups",
    "differential_attention",
)
def _query_width(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """Queries of another width than H d are DBRX's plain attention."""
    if spec.query_width is None:
        return
    if spec.mixer != "attention":
        yield ("query_width", f"applies to attention blocks; this block's mixer is {spec.mixer}")
    for name in (
        "attention_gate",
        "attention_experts",
        "v_head_dim",
        "out_groups",
        "differential_attention",
    ):
        if getattr(spec, name):
            yield (name, "not with query_width (queries built wider than their heads)")


@_rule("mixer", "ffn")
def _something_in_the_block(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    if spec.mixer == "none" and spec.ffn == "none":
        yield ("ffn", "a block with neither a token mixer nor an FFN holds nothing")


@_rule("mixer", "parallel_mamba2", "parallel_mamba", *RECURRENT_MIXERS)
def _recurrent_sizes(spec: ModelSpec) -> Iterator[tuple[str, str]]:
    """A recurrent mixer (or a Mamba-2 mixer beside attention) needs the sizes under its own
    name; they mean nothing to another."""
    if spec.parallel_mamba2 and spec.mixer != "attention":
        yield (
            "parallel_mamba2",
            f"applies to attention blocks; this block's mixer is {spec.mixer}",
        )
    for name in RECURRENT_MIXERS:
        given = getattr(spec, name) is not None
        if spec.recurrent_mixer == name and not given:
            yield (name, f"required for {name} blocks (the mixer's sizes)")
        elif spec.recurrent_mixer != name and given:
            yield (name, f"applies to {name} blocks; this block's mixer is {spec.mixer}")
    # A file that failed validation is checked here with its sizes still plain mappings
    # (model_construct): each part's own rules wait until the rest of it validates.
    kind = spec.recurrent_mixer
    sizes = None if kind is None else getattr(spec, kind)
    if kind is not None and isinstance(sizes, BaseModel):
        from costcalc.anatomy.recurrent import recurrent_mixer

        yield from ((kind, problem) for problem in recurrent_mixer(kind).problems(sizes))
