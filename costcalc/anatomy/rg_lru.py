"""RecurrentGemma's recurrent block (``RecurrentGemmaRecurrentBlock`` with its RG-LRU)."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from costcalc.anatomy.recurrent import Conv, MixerSizes, RecurrentMixer
from costcalc.anatomy.tensor import Block, Tensor, conv, linear
from costcalc.scalars import Size


class RgLruSizes(MixerSizes):
    """RecurrentGemma's recurrent block (``RecurrentGemmaRecurrentBlock`` with its RG-LRU)."""

    width: Size = Field(description="Width W of the recurrence (lru_width).")
    heads: Size = Field(description="Blocks H of the block-diagonal gates (W a multiple of H).")
    conv_kernel: Size = Field(default=4, description="Width k of the causal depthwise conv.")


class RgLru(RecurrentMixer[RgLruSizes]):
    kind = "rg_lru"
    words = "RG-LRU recurrence"
    sizes_model = RgLruSizes

    def tensors(self, spec: Block) -> list[Tensor]:
        """``linear_y`` and ``linear_x`` D -> W, ``linear_out`` W -> D (with biases),
        ``conv_1d`` over W channels (with bias), and the RG-LRU's ``recurrent_param`` (W) and
        block-diagonal gates ``input_gate_weight``, ``recurrent_gate_weight`` (H, W / H, W / H;
        every token multiplies by them, ``baddbmm``) with biases (H, W / H)."""
        g = self.sizes(spec)
        D, W, H = spec.d_model, g.width, g.heads
        block = W // H
        gates = [
            tensor
            for gate in ("input_gate", "recurrent_gate")
            for tensor in (
                Tensor(
                    f"temporal_block.rg_lru.{gate}_weight", (H, block, block), "mixer", "matmul"
                ),
                Tensor(f"temporal_block.rg_lru.{gate}_bias", (H, block), "mixer"),
            )
        ]
        return [
            *linear("temporal_block.linear_y", W, D, True, "mixer"),
            *linear("temporal_block.linear_x", W, D, True, "mixer"),
            *linear("temporal_block.linear_out", D, W, True, "mixer"),
            *conv("temporal_block.conv_1d", W, g.conv_kernel, True),
            Tensor("temporal_block.rg_lru.recurrent_param", (W,), "mixer"),
            *gates,
        ]

    def conv(self, spec: Block) -> Conv:
        """Over the recurrence's width: W channels."""
        g = self.sizes(spec)
        return Conv(g.width, g.conv_kernel)

    def conv_state_width(self, spec: Block) -> int:
        """RecurrentGemma's block keeps the last k - 1 conv inputs: W (k - 1)."""
        g = self.sizes(spec)
        return g.width * (g.conv_kernel - 1)

    def state_width(self, spec: Block) -> int:
        """The RG-LRU's hidden state: W (an elementwise recurrence, no scan products)."""
        return self.sizes(spec).width

    def problems(self, sizes: RgLruSizes) -> Iterator[str]:
        if sizes.width % sizes.heads:
            yield f"width {sizes.width:,} does not split into {sizes.heads:,} equal gate blocks"


PART = RgLru()
