"""Odd rotary heads, read as transformers 5.24 reads them.

transformers' rotary embedding takes ``int(head_dim * partial_rotary_factor)`` dimensions r and
builds ``torch.arange(0, r, 2)`` frequencies, ceil(r / 2) of them: its cos and sin are
``cat(freqs, freqs)``, 2 ceil(r / 2) wide (transformers/modeling_rope_utils.py,
``_compute_default_rope_parameters``). So:

- a configuration class refuses a head it reads (its ``head_dim``, given or derived as
  D // H, or a latent attention's ``qk_rope_head_dim``) that is odd, wider than 4 and rotated
  whole: ``validate_rope``, lines 902-914 ("RoPE requires an even rotary dimension"; not for a
  heterogeneous config, one with ``per_layer_config``). Which heads each class reads is data
  (:attr:`~costcalc.formats.hf_classes.ConfigClass.odd_heads`);
- a head 1 wide rotated whole meets cos and sin 2 wide: ``q * cos + rotate_half(q) * sin``
  broadcasts, and its queries and keys come out 2 wide (their cache too), its values 1 wide;
- an odd head wider than 1 that the class lets through (heads of 3, or a class that reads no
  ``head_dim``) meets cos and sin one dimension wider than itself: transformers builds the
  model, its forward fails.
"""

from __future__ import annotations

import math
from typing import Any

from costcalc.formats.hf_classes import ConfigClass
from costcalc.formats.hf_unbuilt import odd_yarn, rotary_settings


def refused_odd_head(data: dict[str, Any], known: ConfigClass | None) -> tuple[str, str] | None:
    """The key and the reason when transformers' ``validate_rope`` refuses the file's head:
    the head the class reads is odd, wider than 4, and some rotary setting rotates it whole
    (``int(head_dim * factor) == head_dim``)."""
    if known is None or not known.odd_heads or data.get("per_layer_config"):
        return None
    head = _head_read(data, known)
    if head is None:
        return None
    key, width = head
    if width <= 4 or width % 2 == 0:
        return None
    for factor in _factors(data, known):
        if (
            isinstance(factor, int | float)
            and math.isfinite(factor)
            and int(width * factor) == width
        ):
            return key, (
                f"{width:,}-wide heads rotated whole (partial_rotary_factor {factor!r}): "
                f"transformers refuses the file ({known.name}'s validate_rope: RoPE requires "
                "an even rotary dimension; heads of at most 4 are let through)"
            )
    return None


def _head_read(data: dict[str, Any], known: ConfigClass) -> tuple[str, int] | None:
    """The key and the width of the head the class's ``validate_rope`` reads, if any: the
    file's ``head_dim``; else (or where the class overwrites that field) a multi-head latent
    attention's ``qk_rope_head_dim``, which its ``__post_init__`` sets ``head_dim`` to
    (DeepseekV3Config: ``self.head_dim = self.qk_rope_head_dim``; a ``head_dim`` that is no
    field of the class is set after it, and wins); else D // H."""
    given = _value(data, known, "head_dim")
    if given is not None and "head_dim" in known.odd_heads:
        return given
    if "qk_rope_head_dim" in known.odd_heads:
        return _value(data, known, "qk_rope_head_dim")
    if given is not None:
        return None
    d, h = _value(data, known, "hidden_size"), _value(data, known, "num_attention_heads")
    if "width" not in known.odd_heads or d is None or h is None or h[1] < 1:
        return None
    return h[0], d[1] // h[1]


def _value(data: dict[str, Any], known: ConfigClass, key: str) -> tuple[str, int] | None:
    """The whole number the file gives ``key`` under one of its spellings (the one
    transformers sets last, where it gives several; or the class default), with the spelling;
    None when it is not a whole number."""
    given = [name for name in known.spellings(key) if data.get(name) is not None]
    spelled = known.set_last(given, data) if given else None
    value = data[spelled] if spelled is not None else known.default(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return spelled or key, value


def _factors(data: dict[str, Any], known: ConfigClass) -> list[Any]:
    """The partial-rotary factor of each rotary setting ``validate_rope`` checks: each entry of
    the file's rotary settings (one per layer type when they are nested by the file's layer
    types; without them, every entry, unless the class has no ``layer_types``: then
    ``nested_rope_parameter_keys`` finds none and the outer mapping is the one setting), each
    defaulting to the top-level ``partial_rotary_factor`` (the file's, else the class default),
    then 1; with none in the file, the class's own settings."""
    rope = rotary_settings(data)
    top = data.get("partial_rotary_factor")
    top = known.default("partial_rotary_factor") if top is None else top
    if not rope:
        if data.get("partial_rotary_factor") is not None:
            return [top]
        return [1.0] if "defaults" in known.odd_heads else []
    labels = data.get("layer_types")
    declared = isinstance(labels, list) or "layer_types" in known.fields
    nested = [
        entry
        for name, entry in rope.items()
        if declared and isinstance(entry, dict) and (not isinstance(labels, list) or name in labels)
    ]
    fallback = 1.0 if top is None else top
    return [entry.get("partial_rotary_factor", fallback) for entry in nested or [rope]]


HEAD_ONE_FAILS = {
    "pairs": "rotates interleaved pairs (x[..., ::2] beside x[..., 1::2]), which a head 1 wide "
    "does not have",
    "sections": "splits cos and sin into its mrope_section parts, which 2 dimensions cannot hold",
}
"""How an attention that cannot take heads 1 wide fails (:attr:`ConfigClass.head_one`)."""


class OneWideYarnError(Exception):
    """Heads 1 wide, rotated whole, beside YaRN settings: YaRN blends no frequency for them
    (``dim // 2`` = 0 extrapolated ones broadcast the one of ``torch.arange(0, 1, 2)`` away), so
    transformers' cos and sin are 0 wide, and so are its queries and keys: not counted."""


def odd_heads_rotated(
    fields: dict[str, Any],
    blocks: list[dict[str, Any]],
    known: ConfigClass | None = None,
    yarn_settings: bool = False,
) -> str | None:
    """Sets ``rotary_dim`` for odd attention heads rotated whole, as transformers' forward takes
    them, and says so (None when there are none): heads 1 wide meet 2-wide cos and sin
    (``rotary_dim`` 2, queries and keys 2 wide), which most attentions broadcast and some
    cannot take (:attr:`ConfigClass.head_one`: the note says which); a wider odd head d cannot
    run (cos and sin d + 1 wide), so it is counted as built, its rotary part taken as the d - 1
    dimensions of whole pairs (beside YaRN settings, ``yarn_settings``, transformers cannot
    even build it: :func:`odd_yarn`; heads 1 wide raise :class:`OneWideYarnError`). Only when
    every attention block (``blocks``: each kind of block with the keys it inherits) has a head
    of that one width."""
    if fields.get("position") != "rotary" or fields.get("rotary_dim") is not None:
        return None
    widths = {_width(block) for block in blocks if block.get("mixer", "attention") == "attention"}
    if len(widths) != 1:
        return None
    width = widths.pop()
    if width is None or width % 2 == 0:
        return None
    if width == 1 and yarn_settings:
        raise OneWideYarnError
    if width == 1:
        fields["rotary_dim"] = 2
        if known is not None and (failure := HEAD_ONE_FAILS.get(known.head_one or "")):
            return (
                "heads 1 wide, rotated whole: transformers' rotary cos and sin are 2 wide "
                f"(torch.arange(0, 1, 2) gives one frequency, doubled), and {known.name}'s "
                f"attention {failure}: transformers builds the model, but its forward fails; "
                "counted as built, queries and keys 2 wide as the cos and sin (the cache "
                "holding keys 2 wide, values 1 wide)."
            )
        return (
            "heads 1 wide, rotated whole: transformers' rotary cos and sin are 2 wide "
            "(torch.arange(0, 1, 2) gives one frequency, doubled), and each query and key "
            "broadcasts against them to 2 wide: the cache holds keys 2 wide, values 1 wide, "
            "and attention scores take 2 products per head."
        )
    fields["rotary_dim"] = width - 1
    if yarn_settings:
        return odd_yarn(width)
    return (
        f"heads {width:,} wide, rotated whole: transformers builds the model (rotary "
        "positions hold no parameters), but its rotary cos and sin are "
        f"{width + 1:,} wide and its forward fails; counted as built, the activation "
        f"estimates taking {width - 1:,} rotary dimensions (the whole pairs)."
    )


def _width(block: dict[str, Any]) -> int | None:
    """One attention head's width: ``head_dim``, or D / H when H divides D (else None)."""
    head, d, h = block.get("head_dim"), block.get("d_model"), block.get("n_heads")
    if isinstance(head, int):
        return head
    if isinstance(d, int) and isinstance(h, int) and h > 0 and d % h == 0:
        return d // h
    return None
