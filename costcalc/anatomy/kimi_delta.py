"""Kimi Delta Attention (Kimi Linear's ``KimiLinearDeltaAttention``; Ling's bailing_hybrid): a
gated DeltaNet with a decay per channel, from low-rank gates."""

from __future__ import annotations

from pydantic import Field

from costcalc.anatomy.recurrent import Conv, MixerSizes, RecurrentMixer, chunks
from costcalc.anatomy.tensor import Block, Tensor, conv, linear
from costcalc.scalars import Flag, Size

CHUNK = 64
"""Tokens per chunk of ``chunk_kimi_delta_attention``."""


class KimiDeltaSizes(MixerSizes):
    """Kimi Delta Attention sizes (Kimi Linear's ``KimiLinearDeltaAttention``): a Gated
    DeltaNet with a decay per channel, from low-rank gates."""

    heads: Size = Field(description="Heads H (queries, keys and values alike).")
    head_dim: Size = Field(description="Width d of one head; the low-rank gates' rank.")
    conv_kernel: Size = Field(default=4, description="Width k of the causal depthwise conv.")
    low_rank_gates: Flag = Field(
        default=True,
        description=(
            "The forget and output gates as low-rank pairs D -> d -> H d (Kimi Linear); else "
            "one D -> H d projection each (Ling's bailing_hybrid)."
        ),
    )


class KimiDelta(RecurrentMixer[KimiDeltaSizes]):
    kind = "kimi_delta"
    words = "Kimi Delta Attention"
    sizes_model = KimiDeltaSizes

    def tensors(self, spec: Block) -> list[Tensor]:
        """``q_proj``, ``k_proj``, ``v_proj`` D -> H d, ``conv1d`` over 3 H d channels (no
        bias), the forget gate's ``f_a_proj`` D -> d, ``f_b_proj`` d -> H d, ``dt_bias`` (H d)
        and ``A_log`` (H), ``b_proj`` D -> H, the output gate's ``g_a_proj`` D -> d and
        ``g_b_proj`` d -> H d, the gated RMSNorm ``o_norm`` (d), ``o_proj`` H d -> D; no
        biases. Without ``low_rank_gates`` each gate is one D -> H d projection
        (``forget_gate.f_proj``, ``g_proj``) and ``A_log`` is (H)."""
        k = self.sizes(spec)
        D, H, d = spec.d_model, k.heads, k.head_dim
        if k.low_rank_gates:
            forget = [
                *linear("linear_attn.forget_gate.f_a_proj", d, D, False, "mixer"),
                *linear("linear_attn.forget_gate.f_b_proj", H * d, d, False, "mixer"),
            ]
            output = [
                *linear("linear_attn.g_a_proj", d, D, False, "mixer"),
                *linear("linear_attn.g_b_proj", H * d, d, False, "mixer"),
            ]
        else:
            forget = linear("linear_attn.forget_gate.f_proj", H * d, D, False, "mixer")
            output = linear("linear_attn.g_proj", H * d, D, False, "mixer")
        a_log = (1, 1, H, 1) if k.low_rank_gates else (H,)
        return [
            *linear("linear_attn.q_proj", H * d, D, False, "mixer"),
            *linear("linear_attn.k_proj", H * d, D, False, "mixer"),
            *linear("linear_attn.v_proj", H * d, D, False, "mixer"),
            *conv("linear_attn.conv1d", self.conv(spec).channels, k.conv_kernel, False),
            *forget,
            Tensor("linear_attn.forget_gate.dt_bias", (H * d,), "mixer"),
            Tensor("linear_attn.forget_gate.A_log", a_log, "mixer"),
            *linear("linear_attn.b_proj", H, D, False, "mixer"),
            *output,
            Tensor("linear_attn.o_norm.weight", (d,), "mixer"),
            *linear("linear_attn.o_proj", D, H * d, False, "mixer"),
        ]

    def conv(self, spec: Block) -> Conv:
        """Over the queries, keys and values: 3 H d channels."""
        k = self.sizes(spec)
        return Conv(3 * k.heads * k.head_dim, k.conv_kernel)

    def scan_macs(self, spec: Block, batch: int, length: int) -> int:
        """``chunk_kimi_delta_attention``, n chunks of c = 64: B H n (3 c^2 d + 3 c d^2): per
        chunk the solved attention x values and x decayed keys and the intra-chunk attention x
        new values, the state read by the queries and by the decayed keys and the state update
        (its query-key products are elementwise, not matrix products)."""
        k = self.sizes(spec)
        c, d = CHUNK, k.head_dim
        return batch * k.heads * chunks(length, c) * (3 * c * c * d + 3 * c * d * d)

    def state_width(self, spec: Block) -> int:
        """The delta-rule state: H d^2."""
        k = self.sizes(spec)
        return k.heads * k.head_dim**2


PART = KimiDelta()
