"""Mamba (v1), the selective-scan mixer of Jamba (``JambaMambaMixer``) and Zamba
(``ZambaMambaMixer``, several heads)."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from costcalc.anatomy.recurrent import Conv, MixerSizes, RecurrentMixer
from costcalc.anatomy.tensor import Block, Tensor, conv, linear
from costcalc.scalars import Flag, Size


class MambaSizes(MixerSizes):
    """Mamba (v1) selective-scan mixer sizes (Jamba's ``JambaMambaMixer``)."""

    inner: Size = Field(description="Inner width I (expand x d_model).")
    state: Size = Field(default=16, description="State size N per channel.")
    dt_rank: Size = Field(description="Rank R of the time-step projection.")
    conv_kernel: Size = Field(default=4, description="Width k of the causal depthwise conv.")
    conv_bias: Flag = Field(default=True, description="Bias on the conv.")
    proj_bias: Flag = Field(default=False, description="Bias on in_proj and out_proj.")
    dt_norms: Flag = Field(
        default=False, description="RMSNorms on the time step (R) and on B and C (N each): Jamba."
    )
    heads: Size = Field(
        default=1,
        description=(
            "Heads splitting the inner width, each with its own x_proj and dt_proj, stored "
            "stacked (Zamba's multi-head Mamba); the same parameters and MACs."
        ),
    )


class Mamba(RecurrentMixer[MambaSizes]):
    kind = "mamba"
    words = "Mamba"
    sizes_model = MambaSizes

    def tensors(self, spec: Block) -> list[Tensor]:
        """``in_proj`` D -> 2I, ``conv1d`` over I channels, ``x_proj`` I -> R + 2N, ``dt_proj``
        R -> I (with bias), ``A_log`` I x N, ``D`` (I), ``out_proj`` I -> D; Jamba's RMSNorms
        on dt (R), B and C (N each) when ``dt_norms``. With h ``heads`` > 1
        (``ZambaMambaMixer``) each head of p = I / h channels has its own x_proj and dt_proj,
        stacked as parameters: ``x_proj_weight`` (h, R + 2N, p), ``dt_proj_weight`` (h, p, R),
        ``dt_proj_bias``, ``A_log`` and ``D`` shaped (h, p, ...)."""
        m = self.sizes(spec)
        D, inner, N, R, h = spec.d_model, m.inner, m.state, m.dt_rank, m.heads
        p = inner // h
        if h == 1:
            per_channel = [
                *linear("mixer.x_proj", R + 2 * N, inner, False, "mixer"),
                *linear("mixer.dt_proj", inner, R, True, "mixer"),
                Tensor("mixer.A_log", (inner, N), "mixer"),
                Tensor("mixer.D", (inner,), "mixer"),
            ]
        else:
            per_channel = [
                Tensor("mixer.x_proj_weight", (h, R + 2 * N, p), "mixer", "matmul"),
                Tensor("mixer.dt_proj_weight", (h, p, R), "mixer", "matmul"),
                Tensor("mixer.dt_proj_bias", (h, p), "mixer"),
                Tensor("mixer.A_log", (h, p, N), "mixer"),
                Tensor("mixer.D", (h, p), "mixer"),
            ]
        tensors = [
            *linear("mixer.in_proj", 2 * inner, D, m.proj_bias, "mixer"),
            *conv("mixer.conv1d", inner, m.conv_kernel, m.conv_bias),
            *per_channel,
            *linear("mixer.out_proj", D, inner, m.proj_bias, "mixer"),
        ]
        if m.dt_norms:
            tensors += [
                Tensor("mixer.dt_layernorm.weight", (R,), "mixer"),
                Tensor("mixer.b_layernorm.weight", (N,), "mixer"),
                Tensor("mixer.c_layernorm.weight", (N,), "mixer"),
            ]
        return tensors

    def conv(self, spec: Block) -> Conv:
        """Over the inner width: I channels."""
        m = self.sizes(spec)
        return Conv(m.inner, m.conv_kernel)

    def scan_macs(self, spec: Block, batch: int, length: int) -> int:
        """The sequential ``mamba_selective_scan``: B T I N, each step's state read by C."""
        m = self.sizes(spec)
        return batch * length * m.inner * m.state

    def state_width(self, spec: Block) -> int:
        """The SSM state: I N."""
        m = self.sizes(spec)
        return m.inner * m.state

    def problems(self, sizes: MambaSizes) -> Iterator[str]:
        if sizes.inner % sizes.heads:
            yield f"inner width {sizes.inner:,} does not split into {sizes.heads:,} equal heads"


PART = Mamba()
