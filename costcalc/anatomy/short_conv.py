"""LFM2's gated short convolution (``Lfm2ShortConv``)."""

from __future__ import annotations

from pydantic import Field

from costcalc.anatomy.recurrent import Conv, MixerSizes, RecurrentMixer
from costcalc.anatomy.tensor import Block, Tensor, conv, linear
from costcalc.scalars import Flag, Size


class ShortConvSizes(MixerSizes):
    """Gated short convolution (LFM2's ``Lfm2ShortConv``): in_proj D -> 3D, conv, out_proj."""

    conv_kernel: Size = Field(description="Width k of the causal depthwise conv over D channels.")
    bias: Flag = Field(default=False, description="Bias on the projections and the conv.")


class ShortConv(RecurrentMixer[ShortConvSizes]):
    kind = "short_conv"
    words = "short convolution"
    sizes_model = ShortConvSizes

    def tensors(self, spec: Block) -> list[Tensor]:
        """``in_proj`` D -> 3D (B, C, x), ``conv`` over D channels, ``out_proj`` D -> D;
        biases on all three when ``bias``."""
        c = self.sizes(spec)
        D = spec.d_model
        return [
            *linear("conv.in_proj", 3 * D, D, c.bias, "mixer"),
            *conv("conv.conv", D, c.conv_kernel, c.bias),
            *linear("conv.out_proj", D, D, c.bias, "mixer"),
        ]

    def conv(self, spec: Block) -> Conv:
        """Over the width: D channels; the conv state is all the mixer keeps (no scan)."""
        return Conv(spec.d_model, self.sizes(spec).conv_kernel)


PART = ShortConv()
