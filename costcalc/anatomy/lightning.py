"""Lightning attention (MiniMax-Text-01's ``MiniMaxLightningAttention``): linear attention with a
fixed decay per head, its prompt computed block by block."""

from __future__ import annotations

from pydantic import Field

from costcalc.anatomy.recurrent import MixerSizes, RecurrentMixer
from costcalc.anatomy.tensor import Block, Tensor, linear, norm
from costcalc.scalars import Size


class LightningSizes(MixerSizes):
    """Lightning attention (MiniMax-Text-01's ``MiniMaxLightningAttention``): linear attention
    with a fixed decay per head, its prompt computed block by block."""

    heads: Size = Field(description="Heads H (queries, keys and values alike).")
    head_dim: Size = Field(description="Width d of one head; the state is H d x d.")
    block_size: Size = Field(
        default=256, description="Tokens per block of the block-wise prompt (changes MACs only)."
    )


class Lightning(RecurrentMixer[LightningSizes]):
    kind = "lightning"
    words = "lightning attention"
    sizes_model = LightningSizes

    def tensors(self, spec: Block) -> list[Tensor]:
        """``qkv_proj`` D -> 3 H d, the output gate ``output_gate`` D -> H d, a norm ``norm`` of
        H d (the model's), ``out_proj`` H d -> D; no biases, no conv."""
        g = self.sizes(spec)
        D, width = spec.d_model, g.heads * g.head_dim
        return [
            *linear("attn.qkv_proj", 3 * width, D, False, "mixer"),
            *linear("attn.output_gate", width, D, False, "mixer"),
            *norm(spec, "attn.norm", width, "mixer"),
            *linear("attn.out_proj", D, width, False, "mixer"),
        ]

    def scan_macs(self, spec: Block, batch: int, length: int) -> int:
        """The prompt path, blocks of b tokens (T = q b + r: q blocks of b and one of r):
        B H sum over blocks of c (2 c^2 d + 2 c d^2) = B H (2 d (q b^2 + r^2) + 2 T d^2): per
        block Q K^T and the decayed scores x V (c^2 d each), the queries read the state carried
        in (c d^2, the first block's too, a zero state) and the block's K^T V is added to it
        (c d^2); the decays are elementwise."""
        g = self.sizes(spec)
        b, d = g.block_size, g.head_dim
        q, r = divmod(length, b)
        return batch * g.heads * (2 * d * (q * b * b + r * r) + 2 * length * d * d)

    def state_width(self, spec: Block) -> int:
        """Its K^T V per head: H d^2."""
        g = self.sizes(spec)
        return g.heads * g.head_dim**2


PART = Lightning()
