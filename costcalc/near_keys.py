"""Keys of a Hugging Face config that look like misspellings of keys its family reads.

transformers keeps any key it does not know as a plain attribute, so ``num_key_value_head``
(for ``num_key_value_heads``) is silently ignored and the class default takes its place: a
Llama-3.1-70B config so misspelled counts as multi-head attention. A key the family does not
read (its translator's keys and its configuration class's fields and aliases) is *near* a key
it reads that the file does not give when the two differ by at most
``max_distance`` edits (:func:`distance`, an insertion, deletion, substitution or swap of two
neighbouring characters), compared case-insensitively with ``-`` read as ``_``: 1 edit for keys
of up to 6 characters, 2 for longer ones. No published config costcalc's tests hold has a key
within 2 edits of one its family reads and lacks (the nearest are 3 edits away: Qwen3-VL's text
config gives ``bos_token_id`` and ``eos_token_id``, which its class does not define, and lacks
``pad_token_id``, which it does).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

SHORT = 6
"""Keys up to this long may differ by one edit; longer ones by two."""


def max_distance(key: str) -> int:
    return 1 if len(key) <= SHORT else 2


def distance(a: str, b: str, limit: int) -> int:
    """The optimal string alignment distance of ``a`` and ``b`` (Levenshtein's edits plus the
    swap of two neighbouring characters), or ``limit + 1`` once it is known to exceed
    ``limit``. Each edit changes the length by at most one, and the set of characters by at most
    one gone and one new, which bounds the distance cheaply first."""
    if abs(len(a) - len(b)) > limit or len(set(a) ^ set(b)) > 2 * limit:
        return limit + 1
    before: list[int] | None = None
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (x != y))
            if before is not None and i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, row = row, current
    return min(row[-1], limit + 1)


def _plain(key: str) -> str:
    return key.lower().replace("-", "_")


def near_keys(given: Iterable[str], read: Collection[str]) -> list[tuple[str, list[str]]]:
    """Each key of ``given`` that is not in ``read`` but near keys of ``read`` that are not in
    ``given``, with those keys (nearest first, then by name)."""
    present = set(given)
    wanted = [key for key in read if key not in present]
    found = []
    for key in sorted(present):
        if key in read:
            continue
        plain = _plain(key)
        scored = []
        for other in wanted:
            limit = max_distance(min(plain, _plain(other), key=len))
            d = distance(plain, _plain(other), limit)
            if d <= limit:
                scored.append((d, other))
        if scored:
            found.append((key, [other for _, other in sorted(scored)]))
    return found
