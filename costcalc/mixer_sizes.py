"""The sizes of each recurrent mixer, a nested mapping under the block key of the mixer's name
(``mamba2:``, ``mamba:``, ``gated_deltanet:``, ``kimi_delta:``, ``rg_lru:``,
``short_conv:``, ``lightning:``, ``rwkv:``, ``mlstm:``).

Imported on first use: by a model with a recurrent mixer, or when the block validator or the
JSON schema is built (:class:`costcalc.blocks.Deferred`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from costcalc.blocks import Flag, Size


class _MixerSizes(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Mamba2Sizes(_MixerSizes):
    """Mamba-2 (SSD) mixer sizes, as transformers' ``Mamba2Mixer`` builds them."""

    heads: Size = Field(description="SSM heads H.")
    head_dim: Size = Field(description="Width P of one head; the inner width is I = H P.")
    state: Size = Field(description="State size N per head.")
    groups: Size = Field(default=1, description="Groups G sharing B and C (H a multiple of G).")
    conv_kernel: Size = Field(default=4, description="Width k of the causal depthwise conv.")
    conv_bias: Flag = Field(default=True, description="Bias on the conv.")
    proj_bias: Flag = Field(default=False, description="Bias on in_proj and out_proj.")
    chunk_size: Size = Field(
        default=256, description="Chunk length of the chunked scan (changes MACs only)."
    )
    gated_norm: Flag = Field(
        default=True,
        description="The gated RMSNorm over I before out_proj (Falcon-H1 may leave it out).",
    )


class MambaSizes(_MixerSizes):
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


class GatedDeltaNetSizes(_MixerSizes):
    """Gated DeltaNet linear attention sizes (Qwen3-Next, Qwen3.5)."""

    key_heads: Size = Field(description="Query/key heads Hk.")
    value_heads: Size = Field(description="Value heads Hv (a multiple of Hk).")
    key_head_dim: Size = Field(description="Width dk of one query/key head.")
    value_head_dim: Size = Field(description="Width dv of one value head.")
    conv_kernel: Size = Field(default=4, description="Width k of the causal depthwise conv.")
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


class KimiDeltaSizes(_MixerSizes):
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


class RgLruSizes(_MixerSizes):
    """RecurrentGemma's recurrent block (``RecurrentGemmaRecurrentBlock`` with its RG-LRU)."""

    width: Size = Field(description="Width W of the recurrence (lru_width).")
    heads: Size = Field(description="Blocks H of the block-diagonal gates (W a multiple of H).")
    conv_kernel: Size = Field(default=4, description="Width k of the causal depthwise conv.")


class ShortConvSizes(_MixerSizes):
    """Gated short convolution (LFM2's ``Lfm2ShortConv``): in_proj D -> 3D, conv, out_proj."""

    conv_kernel: Size = Field(description="Width k of the causal depthwise conv over D channels.")
    bias: Flag = Field(default=False, description="Bias on the projections and the conv.")


class LightningSizes(_MixerSizes):
    """Lightning attention (MiniMax-Text-01's ``MiniMaxLightningAttention``): linear attention
    with a fixed decay per head, its prompt computed block by block."""

    heads: Size = Field(description="Heads H (queries, keys and values alike).")
    head_dim: Size = Field(description="Width d of one head; the state is H d x d.")
    block_size: Size = Field(
        default=256, description="Tokens per block of the block-wise prompt (changes MACs only)."
    )


class RwkvSizes(_MixerSizes):
    """RWKV-4's time mix (``RwkvSelfAttention``): receptance, key and value projections of the
    token-shifted input, a WKV recurrence with a learned decay per channel, an output
    projection."""

    attention_width: Size = Field(
        description="Width A of the receptance, key and value (attention_hidden_size)."
    )


class MlstmSizes(_MixerSizes):
    """xLSTM's mLSTM layer (``xLSTMLayer``): queries, keys, values and an output gate, input and
    forget gates per head, a matrix memory per head, computed chunk by chunk."""

    heads: Size = Field(description="Heads H; each has a dk x dv matrix memory.")
    qk_width: Size = Field(description="Width H dk of the queries and of the keys.")
    v_width: Size = Field(description="Width H dv of the values and of the output gate.")
    chunk_size: Size = Field(
        default=64,
        description="Tokens per chunk of the chunkwise prompt; the rest run step by step "
        "(changes MACs only).",
    )
    piece_size: Size = Field(
        default=16384,
        description=(
            "Longest prompt run at once at inference (max_inference_chunksize); a longer one "
            "runs in pieces of this many tokens, each chunked then stepped (changes MACs only)."
        ),
    )
    fused: Flag = Field(
        default=False,
        description=(
            "qkv_opreact and ifgate_preact as two tensors (weight_mode fused) instead of q, k, "
            "v, ogate_preact, igate_preact and fgate_preact; the same parameters."
        ),
    )


MixerSizes = (
    Mamba2Sizes
    | MambaSizes
    | GatedDeltaNetSizes
    | KimiDeltaSizes
    | RgLruSizes
    | ShortConvSizes
    | LightningSizes
    | RwkvSizes
    | MlstmSizes
)
"""The nested sizes of any recurrent mixer."""

MIXER_SIZES: dict[str, type[_MixerSizes]] = {
    "mamba2": Mamba2Sizes,
    "mamba": MambaSizes,
    "gated_deltanet": GatedDeltaNetSizes,
    "kimi_delta": KimiDeltaSizes,
    "rg_lru": RgLruSizes,
    "short_conv": ShortConvSizes,
    "lightning": LightningSizes,
    "rwkv": RwkvSizes,
    "mlstm": MlstmSizes,
}
"""The nested sizes of each recurrent mixer, under the block key of the mixer's name."""
