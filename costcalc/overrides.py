"""Command-line overrides of a model's fields, named once for the options and their errors.

Kept free of imports: the command line reads it at start-up.

Overrides for one model ride on its name: ``-p gpt2-small:d_model=1536,n_heads=16`` (or with the
options' names, ``gpt2-small:d=1536,heads=16``); options such as ``--d 1536`` apply to every model,
and a model's own overrides win over them.
"""

OVERRIDE_OPTIONS: dict[str, str] = {
    "vocab_size": "--vocab",
    "context_length": "--context",
    "d_model": "--d",
    "n_layers": "--layers",
    "n_heads": "--heads",
    "n_kv_heads": "--kv-heads",
    "head_dim": "--head-dim",
    "ffn": "--ffn",
    "ffn_mult": "--ffn-mult",
    "ffn_hidden": "--ffn-hidden",
    "norm": "--norm",
    "tie_embeddings": "--tie/--no-tie",
    "position": "--position",
}
"""The command-line option that overrides each :class:`ModelSpec` field; errors name it."""

TEXT_FIELDS = ("ffn", "norm", "position")
BOOL_FIELDS = ("tie_embeddings",)
SEPARATOR = ":"


def field_of(key: str) -> str:
    """The spec field a per-model key names: a field (``d_model``) or an option (``d``, ``tie``)."""
    key = key.strip().replace("-", "_")
    if key in OVERRIDE_OPTIONS:
        return key
    for spec_field, option in OVERRIDE_OPTIONS.items():
        if key == option.split("/")[0].removeprefix("--").replace("-", "_"):
            return spec_field
    import difflib

    from costcalc.errors import UsageError, shown

    keys = [
        *OVERRIDE_OPTIONS,
        *(o.split("/")[0].removeprefix("--") for o in OVERRIDE_OPTIONS.values()),
    ]
    close = [SYNONYMS[key]] if key in SYNONYMS else []
    close = close or difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    fields = ", ".join(OVERRIDE_OPTIONS)
    raise UsageError(
        f"unknown field '{shown(key)}' after '{SEPARATOR}'{hint or '.'} Fields: {fields}"
    )


SYNONYMS = {
    "width": "d_model",
    "hidden": "d_model",
    "hidden_size": "d_model",
    "n_embd": "d_model",
    "dim": "d_model",
    "depth": "n_layers",
    "n_layer": "n_layers",
    "num_layers": "n_layers",
    "num_hidden_layers": "n_layers",
    "n_head": "n_heads",
    "num_heads": "n_heads",
    "num_attention_heads": "n_heads",
    "num_key_value_heads": "n_kv_heads",
    "intermediate_size": "ffn_hidden",
    "n_inner": "ffn_hidden",
    "vocab": "vocab_size",
    "block_size": "context_length",
    "n_positions": "context_length",
    "max_position_embeddings": "context_length",
    "tie_word_embeddings": "tie_embeddings",
}
"""Other configs' words for a field, suggested when one is given after ``:``."""


def _value(spec_field: str, text: str) -> object:
    """``text`` as the type the field takes: a count (:func:`costcalc.units.parse_count`: 4k,
    128Ki), true/false, or a word."""
    from costcalc.errors import UsageError, shown
    from costcalc.units import parse_count

    text = text.strip()
    if spec_field in TEXT_FIELDS:
        return text
    if spec_field in BOOL_FIELDS:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise UsageError(f"{spec_field}={shown(text)}: expected true or false")
    try:
        return parse_count(text)
    except UsageError as exc:
        raise UsageError(f"{spec_field}: {exc}") from None


def split_overrides(name: str) -> tuple[str, dict[str, object]]:
    """``'gpt2-small:d_model=1536,n_heads=16'`` -> ``('gpt2-small', {'d_model': 1536, ...})``;
    a name without ``:field=value`` has no overrides of its own. Giving the FFN width one way
    (``ffn_hidden`` or ``ffn_mult``) replaces the other way the config may have used."""
    base, sep, tail = name.rpartition(SEPARATOR)
    if not sep or "=" not in tail:
        return name, {}
    from costcalc.errors import UsageError

    own: dict[str, object] = {}
    for item in tail.split(","):
        key, eq, text = item.partition("=")
        if not eq:
            raise UsageError(f"'{item}': expected field=value, as in d_model=1536")
        spec_field = field_of(key)
        own[spec_field] = _value(spec_field, text)
    return base, with_ffn_width(own)


def with_ffn_width(overrides: dict[str, object]) -> dict[str, object]:
    """``overrides`` where giving ``ffn_hidden`` clears ``ffn_mult`` and the other way round,
    since a config states the FFN width one way."""
    if "ffn_hidden" in overrides:
        return {"ffn_mult": None, **overrides}
    if "ffn_mult" in overrides:
        return {"ffn_hidden": None, **overrides}
    return overrides


def overridden_name(name: str, overrides: dict[str, object]) -> str:
    """``gpt2-small (d_model=1536)``: a name that shows the overrides applied to the model."""
    shown = [
        f"{key}={str(value).lower() if isinstance(value, bool) else value}"
        for key, value in overrides.items()
        if value is not None
    ]
    return f"{name} ({', '.join(shown)})" if shown else name
