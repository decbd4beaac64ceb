"""The blocks of a model in layer order: which stack each layer is, for rules that go layer by
layer (llama.cpp's GGUF mixes, a checkpoint's per-layer quantization exceptions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from costcalc.blocks import BLOCK_FIELDS
from costcalc.errors import UsageError
from costcalc.spec import ModelSpec

if TYPE_CHECKING:  # built on first use: importing it here would build it for every model
    from costcalc.spec import LayerGroup

MAX_LAYERS = 100_000
"""Rules applied layer by layer refuse deeper models."""


def layer_stacks(spec: ModelSpec, what: str) -> list[ModelSpec]:
    """The stack of every block, in layer order (patterns cycled as
    :func:`~costcalc.spec.pattern_counts`); ``what`` names the rule for errors."""
    if spec.n_layers > MAX_LAYERS:
        raise UsageError(f"{what} are assigned layer by layer: at most {MAX_LAYERS:,} layers")
    if any(stack.shared_weight_sets is not None for stack in spec.stacks):
        raise UsageError(f"{what} of blocks that reuse weight sets are not modelled")
    if spec.layers is None:
        return [spec] * spec.n_layers
    stacks: dict[tuple[object, ...], ModelSpec] = {}
    for stack in spec.stacks:
        stacks.setdefault(tuple(getattr(stack, name) for name in BLOCK_FIELDS), stack)
    order: list[ModelSpec] = []
    for group in spec.layers:
        for overrides, count in _runs(group):
            block = {**group.overrides(), **overrides}
            key = tuple(block.get(name, getattr(spec, name)) for name in BLOCK_FIELDS)
            order += [stacks[key]] * count
    return order


def _runs(group: LayerGroup) -> list[tuple[dict[str, Any], int]]:
    """A layer group's runs in layer order: one run, or its pattern cycled up to its count."""
    if group.pattern is None:
        return [({}, group.count)]
    runs: list[tuple[dict[str, Any], int]] = []
    left = group.count
    while left > 0:
        for run in group.pattern:
            take = min(run.count, left)
            if take:
                runs.append((run.overrides(), take))
            left -= take
    return runs
