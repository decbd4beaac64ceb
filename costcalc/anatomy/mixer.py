"""What a token mixer is: the part of a block that mixes the tokens of a sequence.

Each kind lives in the module of its name (``costcalc.anatomy.attention``, ``mla``, ``mamba2``,
...), loaded on first use, and owns there its tensors, the products a query-key pair costs, what
it caches per token and its name in words. Attention mixers cache keys and values that grow with
the sequence; recurrent ones (:class:`costcalc.anatomy.recurrent.RecurrentMixer`) keep a
fixed-size state instead.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, ClassVar, cast

from costcalc.anatomy.saved import SavesForBackward

if TYPE_CHECKING:
    from costcalc.anatomy.tensor import Block, Tensor


class TokenMixer(SavesForBackward):
    """What one kind of token mixer holds and costs; the methods read its sizes from the block.
    Every quantity a kind does not have is 0."""

    kind: ClassVar[str]
    """The mixer's name in ``mixer:``."""
    words: ClassVar[str]
    """The mixer in words, as tables name a kind of block."""

    def tensors(self, spec: Block) -> list[Tensor]:
        """The mixer's parameter tensors in one block."""
        return []

    def pair_width(self, spec: Block) -> int:
        """MACs of one query-key pair over all heads of one block (0: no attention pairs)."""
        return 0

    def compressed_pair_width(self, spec: Block) -> int:
        """MACs of one query and one pooled key (a compressor's or an indexer's; 0: none)."""
        return 0

    def key_rate(self, spec: Block) -> int | None:
        """Tokens pooled into one key besides the block's own keys (None: no pooled keys)."""
        return None

    def block_indexer_width(self, spec: Block) -> int:
        """MACs of one query and one pooled block of keys an indexer scores (0: none)."""
        return 0

    def cache_width(self, spec: Block) -> int:
        """Elements one block caches per token of the sequence (0: nothing grows with T)."""
        return 0

    def pooled_cache(self, spec: Block, length: int) -> int:
        """What one block caches for its pooled keys after T tokens of one sequence, beside its
        per-token cache (0: no pooled keys cached apart)."""
        return 0

    def formula(self, spec: Block, count: int) -> str | None:
        """The block's mixer parameters ``count`` as a formula with the numbers put in, when
        the mixer has one and it gives ``count`` (nothing else is in the block's mixer row);
        None: the sum of its tensors says it."""
        return None


class NoMixer(TokenMixer):
    """A block with an FFN only (``mixer: none``)."""

    kind = "none"
    words = "no token mixer"


@cache
def token_mixer(kind: str) -> TokenMixer:
    """The token mixer named ``kind`` (one of :data:`costcalc.blocks.MixerKind`), from its
    module."""
    if kind == NoMixer.kind:
        return NoMixer()
    return cast(TokenMixer, import_module(f"costcalc.anatomy.{kind}").PART)
