"""Recurrent token mixers: those that keep a fixed-size state instead of a KV cache.

Each lives in the module of its kind's name (``costcalc.anatomy.mamba2``, ...), loaded on first
use, and owns there its sizes (the nested mapping under the block key of the same name), its
tensors, its depthwise conv, the products of its scan over the sequence, the state it keeps per
sequence, the rules its sizes obey and its name in words. A new recurrent mixer is one such
module plus its entry in :data:`costcalc.blocks.MixerKind` and its sizes field.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from pydantic import BaseModel, ConfigDict

from costcalc.anatomy.mixer import TokenMixer

if TYPE_CHECKING:
    from costcalc.anatomy.tensor import Block, Tensor


class MixerSizes(BaseModel):
    """The sizes of one recurrent mixer, as a config's nested mapping gives them."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


S = TypeVar("S", bound=MixerSizes)


@dataclass(frozen=True)
class Conv:
    """A mixer's causal depthwise ``nn.Conv1d``: ``channels`` C of ``kernel`` width k; none
    has 0 of each."""

    channels: int = 0
    kernel: int = 0


class RecurrentMixer(TokenMixer, Generic[S]):
    """What one recurrent mixer holds and costs; the methods read its sizes from the block (its
    ``kind`` is also the block key of its sizes)."""

    sizes_model: ClassVar[type[MixerSizes]]

    def sizes(self, spec: Block) -> S:
        sizes = getattr(spec, self.kind)
        assert sizes is not None  # the spec's rules require them
        return cast(S, sizes)

    def tensors(self, spec: Block) -> list[Tensor]:
        """The mixer's parameter tensors in one block."""
        raise NotImplementedError

    def conv(self, spec: Block) -> Conv:
        """The mixer's depthwise conv (none by default)."""
        return Conv()

    def conv_state_width(self, spec: Block) -> int:
        """Cached conv inputs per sequence: C channels x k positions (transformers keeps the
        last k inputs of the depthwise conv)."""
        conv = self.conv(spec)
        return conv.channels * conv.kernel

    def scan_macs(self, spec: Block, batch: int, length: int) -> int:
        """Matrix products of one block's scan over B sequences of T tokens, beyond the
        per-token projections (0: an elementwise recurrence)."""
        return 0

    def state_width(self, spec: Block) -> int:
        """The recurrent state one block keeps per sequence, besides its conv inputs."""
        return 0

    def problems(self, sizes: S) -> Iterator[str]:
        """What is wrong with validated sizes beyond each size alone (nothing by default)."""
        return iter(())


def chunks(length: int, size: int) -> int:
    """Chunks of ``size`` that cover ``length`` tokens: ceil(T / c)."""
    return -(-length // size)


@cache
def recurrent_mixer(kind: str) -> RecurrentMixer[Any]:
    """The recurrent mixer named ``kind`` (one of :data:`costcalc.blocks.RECURRENT_MIXERS`),
    from its module."""
    return cast(RecurrentMixer[Any], import_module(f"costcalc.anatomy.{kind}").PART)
