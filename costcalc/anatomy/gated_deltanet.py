"""Gated DeltaNet linear attention, as transformers builds it for Qwen3-Next
(``Qwen3NextGatedDeltaNet``), Qwen3.5 and OLMo Hybrid."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from costcalc.anatomy.recurrent import Conv, MixerSizes, RecurrentMixer, chunks
from costcalc.anatomy.tensor import Block, Tensor, conv, linear
from costcalc.scalars import Flag, Size

CHUNK = 64
"""Tokens per chunk of ``torch_chunk_gated_delta_rule`` (its ``chunk_size`` default)."""


class GatedDeltaNetSizes(MixerSizes):
    """Gated DeltaNet linear attention sizes (Qwen3-Next, Qwen3.5)."""

    key_heads: Size = Field(description="Query/key heads Hk.")
    value_heads: Size = Field(description="Value heads Hv (a multiple of Hk, unless ungrouped).")
    key_head_dim: Size = Field(description="Width dk of one query/key head.")
    value_head_dim: Size = Field(description="Width dv of one value head.")
    conv_kernel: Size = Field(default=4, description="Width k of the causal depthwise conv.")
    ungrouped: Flag = Field(
        default=False,
        description=(
            "Hv is not a multiple of Hk, as a Hugging Face config may set them: transformers "
            "builds the projections, but its forward, which gives each key head Hv // Hk value "
            "heads, fails. The weights are counted as built; the forward figures as sized."
        ),
    )
    split_projections: Flag = Field(
        default=False,
        description=(
            "in_proj_qkv, in_proj_z, in_proj_b, in_proj_a as four tensors (Qwen3.5) instead of "
            "in_proj_qkvz and in_proj_ba (Qwen3-Next); the same parameters."
        ),
    )
    separate_qkv: Flag = Field(
        default=False,
        description=(
            "With split_projections: q_proj, k_proj and v_proj as three tensors (OLMo Hybrid) "
            "instead of in_proj_qkv; the same parameters."
        ),
    )


class GatedDeltaNet(RecurrentMixer[GatedDeltaNetSizes]):
    kind = "gated_deltanet"
    words = "gated DeltaNet"
    sizes_model = GatedDeltaNetSizes

    def tensors(self, spec: Block) -> list[Tensor]:
        """``in_proj_qkvz`` D -> 2 Hk dk + 2 Hv dv and ``in_proj_ba`` D -> 2 Hv (Qwen3.5 splits
        them into ``in_proj_qkv``, ``in_proj_z``, ``in_proj_b``, ``in_proj_a``; OLMo Hybrid's
        ``in_proj_qkv`` is three tensors ``q_proj``, ``k_proj``, ``v_proj``), ``conv1d`` over
        2 Hk dk + Hv dv channels (no bias), ``dt_bias`` and ``A_log`` (Hv each), the gated
        RMSNorm ``norm`` (dv), ``out_proj`` Hv dv -> D; no biases."""
        g = self.sizes(spec)
        D, Hv = spec.d_model, g.value_heads
        keys, values = g.key_heads * g.key_head_dim, Hv * g.value_head_dim
        if g.split_projections and g.separate_qkv:
            qkv = [
                *linear("linear_attn.q_proj", keys, D, False, "mixer"),
                *linear("linear_attn.k_proj", keys, D, False, "mixer"),
                *linear("linear_attn.v_proj", values, D, False, "mixer"),
            ]
        else:
            qkv = linear("linear_attn.in_proj_qkv", 2 * keys + values, D, False, "mixer")
        if g.split_projections:
            projections = [
                *qkv,
                *linear("linear_attn.in_proj_z", values, D, False, "mixer"),
                *linear("linear_attn.in_proj_b", Hv, D, False, "mixer"),
                *linear("linear_attn.in_proj_a", Hv, D, False, "mixer"),
            ]
        else:
            projections = [
                *linear("linear_attn.in_proj_qkvz", 2 * keys + 2 * values, D, False, "mixer"),
                *linear("linear_attn.in_proj_ba", 2 * Hv, D, False, "mixer"),
            ]
        return [
            *projections,
            *conv("linear_attn.conv1d", self.conv(spec).channels, g.conv_kernel, False),
            Tensor("linear_attn.dt_bias", (Hv,), "mixer"),
            Tensor("linear_attn.A_log", (Hv,), "mixer"),
            Tensor("linear_attn.norm.weight", (g.value_head_dim,), "mixer"),
            *linear("linear_attn.out_proj", D, values, False, "mixer"),
        ]

    def conv(self, spec: Block) -> Conv:
        """Over the queries, keys and values: 2 Hk dk + Hv dv channels."""
        g = self.sizes(spec)
        channels = 2 * g.key_heads * g.key_head_dim + g.value_heads * g.value_head_dim
        return Conv(channels, g.conv_kernel)

    def scan_macs(self, spec: Block, batch: int, length: int) -> int:
        """``torch_chunk_gated_delta_rule``, n chunks of c = 64: B Hv n (2 c^2 dk + 3 c dk dv
        + c^2 dv): k_beta K^T and Q K^T per chunk, then per chunk the state read by the decayed
        keys and by the queries, the intra-chunk attention x new values and the state update
        (the triangular solves are not matrix products)."""
        g = self.sizes(spec)
        c, dk, dv = CHUNK, g.key_head_dim, g.value_head_dim
        n = chunks(length, c)
        return batch * g.value_heads * n * (2 * c * c * dk + 3 * c * dk * dv + c * c * dv)

    def state_width(self, spec: Block) -> int:
        """The delta-rule state: Hv dk dv."""
        g = self.sizes(spec)
        return g.value_heads * g.key_head_dim * g.value_head_dim

    def problems(self, sizes: GatedDeltaNetSizes) -> Iterator[str]:
        ungrouped = sizes.value_heads % sizes.key_heads != 0
        if ungrouped and not sizes.ungrouped:
            yield (
                f"{sizes.value_heads:,} value heads cannot be grouped over {sizes.key_heads:,} "
                "key heads (value_heads must be a multiple of key_heads)"
            )
        elif sizes.ungrouped and not ungrouped:
            yield (
                f"{sizes.value_heads:,} value heads group over {sizes.key_heads:,} key heads; "
                "ungrouped is for heads that do not"
            )


PART = GatedDeltaNet()
