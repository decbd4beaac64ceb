"""What a translator makes of a foreign config: ModelSpec fields and where each came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from costcalc.errors import Problem


@dataclass(frozen=True)
class Translation:
    """A foreign config turned into ModelSpec fields.

    ``key_names`` maps each spec field to the file's own key, so errors name what the user wrote.
    """

    fields: dict[str, Any]
    key_names: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    problems: list[Problem] = field(default_factory=list)
    """What is wrong with the file beyond its fields' values (unknown keys); reported together
    with whatever validating the fields finds."""
    notes: tuple[str, ...] = ()
    """What the count leaves out, in words (a vision tower beside the text decoder)."""
    family: str | None = None
    """The Hugging Face family (``model_type``) whose modules the fields describe: the text
    decoder's for a multimodal config."""
    warnings: tuple[Problem, ...] = ()
    """Keys that are most likely misspelled (ignored, near a key the family reads)."""
