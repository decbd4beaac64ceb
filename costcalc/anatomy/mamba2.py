"""Mamba-2 (SSD), as transformers' ``Mamba2Mixer`` (and NemotronH's, Falcon-H1's) builds it."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from costcalc.anatomy.recurrent import Conv, MixerSizes, RecurrentMixer, chunks
from costcalc.anatomy.tensor import Block, Tensor, conv, linear
from costcalc.scalars import Flag, Size


class Mamba2Sizes(MixerSizes):
    """Mamba-2 (SSD) mixer sizes, as transformers' ``Mamba2Mixer`` builds them."""

    heads: Size = Field(description="SSM heads H.")
    head_dim: Size = Field(description="Width P of one head; the inner width is I = H P.")
    state: Size = Field(description="State size N per head.")
    groups: Size = Field(
        default=1, description="Groups G sharing B and C (H a multiple of G, unless ungrouped)."
    )
    ungrouped: Flag = Field(
        default=False,
        description=(
            "H is not a multiple of G, as a Hugging Face config may set them: transformers "
            "builds the projections and the conv, but its forward, which gives each group "
            "H // G heads, fails. The weights are counted as built; the forward figures as sized."
        ),
    )
    conv_kernel: Size = Field(default=4, description="Width k of the causal depthwise conv.")
    conv_bias: Flag = Field(default=True, description="Bias on the conv.")
    proj_bias: Flag = Field(default=False, description="Bias on in_proj and out_proj.")
    out_proj_bias: Flag | None = Field(
        default=None,
        description=(
            "Bias on out_proj when it differs from in_proj's (Falcon-H1's projectors_bias "
            "beside mamba_proj_bias); default: proj_bias."
        ),
    )
    chunk_size: Size = Field(
        default=256, description="Chunk length of the chunked scan (changes MACs only)."
    )
    gated_norm: Flag = Field(
        default=True,
        description="The gated RMSNorm over I before out_proj (Falcon-H1 may leave it out).",
    )

    @property
    def out_bias(self) -> bool:
        """out_proj carries a bias: out_proj_bias, or proj_bias."""
        return self.proj_bias if self.out_proj_bias is None else self.out_proj_bias


class Mamba2(RecurrentMixer[Mamba2Sizes]):
    kind = "mamba2"
    words = "Mamba-2"
    sizes_model = Mamba2Sizes

    def tensors(self, spec: Block) -> list[Tensor]:
        """``in_proj`` D -> 2I + 2GN + H (gate, x, B, C, dt), ``conv1d`` over I + 2GN
        channels, ``dt_bias``, ``A_log``, ``D`` (H each), the gated RMSNorm ``norm`` (I, unless
        ``gated_norm`` is off) and ``out_proj`` I -> D; I = H P. Biases: ``proj_bias``, on
        out_proj :attr:`Mamba2Sizes.out_bias`."""
        m = self.sizes(spec)
        D, H, inner = spec.d_model, m.heads, m.heads * m.head_dim
        channels = self.conv(spec).channels
        return [
            *linear("mixer.in_proj", inner + channels + H, D, m.proj_bias, "mixer"),
            *conv("mixer.conv1d", channels, m.conv_kernel, m.conv_bias),
            *(Tensor(f"mixer.{name}", (H,), "mixer") for name in ("dt_bias", "A_log", "D")),
            *([Tensor("mixer.norm.weight", (inner,), "mixer")] if m.gated_norm else []),
            *linear("mixer.out_proj", D, inner, m.out_bias, "mixer"),
        ]

    def conv(self, spec: Block) -> Conv:
        """Over x, B and C: I + 2 G N channels."""
        m = self.sizes(spec)
        return Conv(m.heads * m.head_dim + 2 * m.groups * m.state, m.conv_kernel)

    def scan_macs(self, spec: Block, batch: int, length: int) -> int:
        """``mamba2_chunk_scan``, n = ceil(T / c) chunks of c: B H (n c^2 N + n c^2 P
        + 2 n c P N + (n + 1)^2 P N): scores C B^T, scores x values, chunk states, the
        inter-chunk recurrence over n + 1 states, states read by C."""
        m = self.sizes(spec)
        c, N, P = m.chunk_size, m.state, m.head_dim
        n = chunks(length, c)
        per_head = n * c * c * (N + P) + 2 * n * c * P * N + (n + 1) ** 2 * P * N
        return batch * m.heads * per_head

    def state_width(self, spec: Block) -> int:
        """The SSM state: H P N."""
        m = self.sizes(spec)
        return m.heads * m.head_dim * m.state

    def problems(self, sizes: Mamba2Sizes) -> Iterator[str]:
        ungrouped = sizes.heads % sizes.groups != 0
        if ungrouped and not sizes.ungrouped:
            yield (
                f"{sizes.heads:,} heads cannot share B and C over {sizes.groups:,} groups "
                "(heads must be a multiple of groups)"
            )
        elif sizes.ungrouped and not ungrouped:
            yield (
                f"{sizes.heads:,} heads group over {sizes.groups:,} groups; ungrouped is for "
                "heads that do not"
            )


PART = Mamba2()
