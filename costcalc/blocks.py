"""What one transformer block holds, as a config states it: :class:`BlockFields`.

The token mixer (attention, multi-head latent attention, or a recurrent mixer sized by a nested
mapping of its own), the FFN (dense or a mixture of experts) and the block's norms. A flat config
gives these once for all L blocks; a layered one overrides them per group of layers
(:mod:`costcalc.spec`). Every size is a strict positive integer: a YAML ``true`` is not 1 and
``768.0`` is not 768.
"""

# Without `from __future__ import annotations`: pydantic reads the field types below as objects
# instead of evaluating each from a string at every start-up.
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from pydantic import BaseModel, Field, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

from costcalc.scalars import Count, Flag, Size

PositionScheme = Literal["learned", "sinusoidal", "rotary", "none"]
FfnKind = Literal["mlp", "swiglu", "geglu", "channel_mix", "none"]
NormKind = Literal["layernorm", "rmsnorm"]
MixerKind = Literal[
    "attention",
    "mla",
    "mamba2",
    "mamba",
    "gated_deltanet",
    "kimi_delta",
    "rg_lru",
    "short_conv",
    "lightning",
    "rwkv",
    "mlstm",
    "none",
]
QkNorm = Literal["none", "head", "full", "key", "per_head"]

GATED_FFNS: frozenset[str] = frozenset({"swiglu", "geglu"})
ATTENTION_MIXERS: frozenset[str] = frozenset({"attention", "mla"})
RECURRENT_MIXERS: tuple[str, ...] = tuple(
    kind for kind in get_args(MixerKind) if kind not in ATTENTION_MIXERS | {"none"}
)
"""Mixers that keep a fixed-size state instead of a KV cache; each is described by the block key
of its own name (a nested mapping of its sizes) and lives in the module of that name
(:mod:`costcalc.anatomy.recurrent`)."""


DEFERRED = "costcalc_deferred"
"""The key, in a field's core-schema metadata, of the function that loads its nested model."""


class Deferred:
    """A field holding a nested model that is built on first use (``load()``): the field
    validates a value with the model's own validator, so the model is built when the first
    value comes, never with the validator of the model holding the field: validating a config
    that gives no such value builds none (a flat model's layer groups, the sizes of the
    recurrent mixers it does not use). The nested model's errors stand under the field's name,
    as a nested model's do; the JSON schema writes the nested model's own
    (:class:`costcalc.config.DeferredJsonSchema`)."""

    def __init__(self, load: Callable[[], type[BaseModel]]) -> None:
        self.load = load

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        load = self.load

        def validate(value: Any) -> BaseModel:
            return load().model_validate(value)

        return core_schema.no_info_plain_validator_function(validate, metadata={DEFERRED: load})


def _mixer_sizes(mixer: str) -> Any:
    """The field type of ``mixer``'s sizes, from its part (:mod:`costcalc.anatomy.recurrent`)."""

    def load() -> type[BaseModel]:
        from costcalc.anatomy.recurrent import recurrent_mixer

        return recurrent_mixer(mixer).sizes_model

    return Annotated[Any, Deferred(load)]


if TYPE_CHECKING:
    from costcalc.anatomy.gated_deltanet import GatedDeltaNetSizes
    from costcalc.anatomy.kimi_delta import KimiDeltaSizes
    from costcalc.anatomy.lightning import LightningSizes
    from costcalc.anatomy.mamba import MambaSizes
    from costcalc.anatomy.mamba2 import Mamba2Sizes
    from costcalc.anatomy.mlstm import MlstmSizes
    from costcalc.anatomy.rg_lru import RgLruSizes
    from costcalc.anatomy.rwkv import RwkvSizes
    from costcalc.anatomy.short_conv import ShortConvSizes
else:  # the same names at run time, each the field type that loads its model on first use
    Mamba2Sizes = _mixer_sizes("mamba2")
    MambaSizes = _mixer_sizes("mamba")
    GatedDeltaNetSizes = _mixer_sizes("gated_deltanet")
    KimiDeltaSizes = _mixer_sizes("kimi_delta")
    RgLruSizes = _mixer_sizes("rg_lru")
    ShortConvSizes = _mixer_sizes("short_conv")
    LightningSizes = _mixer_sizes("lightning")
    RwkvSizes = _mixer_sizes("rwkv")
    MlstmSizes = _mixer_sizes("mlstm")


class BlockFields:
    """What one transformer block holds: its token mixer, its FFN and its norms.

    A flat config gives these once for all L blocks; a layered one overrides them per group.
    The fields of :class:`costcalc.spec.ModelSpec` and of its layer groups: a plain class, so
    that pydantic collects them once, for the model that uses them.
    """

    # Token mixer.
    mixer: MixerKind = Field(
        default="attention",
        description=(
            "Token mixer: attention (MHA/GQA/MQA), mla (multi-head latent attention, "
            "DeepSeek-V2/V3), mamba2, mamba, gated_deltanet, kimi_delta, rg_lru, short_conv, "
            "lightning, rwkv, mlstm (each sized by the block key of its name) or none (a block "
            "with an FFN only)."
        ),
    )
    n_heads: Size | None = Field(default=None, description="Attention (query) heads H.")
    n_kv_heads: Size | None = Field(
        default=None, description="Key/value heads (GQA/MQA); default: n_heads."
    )
    ungrouped_kv_heads: Flag = Field(
        default=False,
        description=(
            "n_heads is not a multiple of n_kv_heads, as a Hugging Face config may set them: "
            "transformers builds the projections (H d queries, K d keys and values), but its "
            "attention (repeat_kv) cannot pair the heads and fails. The weights are counted as "
            "built; the forward figures as if each query head read one key/value head."
        ),
    )
    head_dim: Size | None = Field(
        default=None,
        description="Width of one head; default d_model / n_heads, which must then divide exactly.",
    )
    query_width: Size | None = Field(
        default=None,
        description=(
            "The queries and the output projection's input are Q wide, not H d (DBRX's Wqkv and "
            "out_proj take d_model where its heads floor d_model / n_heads): counted as built; "
            "transformers' forward, which splits the queries into heads, fails."
        ),
    )
    kv_cache_heads: Size | None = Field(
        default=None,
        description=(
            "Key/value heads the KV cache holds; default n_kv_heads (Falcon's new decoder "
            "architecture caches keys and values expanded to all H heads)."
        ),
    )
    qkv_bias: Flag = Field(default=True, description="Bias on the query/key/value projections.")
    attn_out_bias: Flag = Field(default=True, description="Bias on the attention output.")
    fused_qkv: Flag = Field(
        default=True,
        description=(
            "Q, K and V are one tensor (GPT-2's c_attn); false for separate q/k/v projections "
            "(Llama, Qwen). Changes the tensor count, not the parameter count."
        ),
    )
    qk_norm: QkNorm = Field(
        default="none",
        description=(
            "Norms on queries and keys: head (one weight of head_dim for all heads: Qwen3, "
            "Gemma 3), full (over the whole projection, H d and K d: OLMo 2), key (one weight "
            "of head_dim on the keys only: DeepSeek-V4's kv_norm) or per_head (a weight of "
            "head_dim of its own for each query and key/value head, no bias: StableLM 2's "
            "LayerNormPerHead)."
        ),
    )
    attention_sinks: Flag = Field(
        default=False,
        description=(
            "A learned sink logit per query head (gpt-oss; attention or mla blocks): H parameters."
        ),
    )
    attention_gate: Flag = Field(
        default=False,
        description=(
            "The query projection also yields a sigmoid output gate (Qwen3-Next): 2 H d; on an "
            "mla block the last query projection yields H v more (A.X K2)."
        ),
    )
    attention_gate_bias: Flag = Field(
        default=False,
        description="The output gate carries a bias per head (Beam): H parameters.",
    )
    attention_gate_proj: Flag = Field(
        default=False,
        description=(
            "The output gate is its own projection gate_proj, D -> H d (D -> H v on an mla "
            "block), instead of the query projection's extra outputs (AFMoE, Beam, Muse Glimmer, "
            "HY V4): on an attention block the same H d D parameters; needs attention_gate."
        ),
    )
    attention_gate_proj_bias: Flag | None = Field(
        default=None,
        description=(
            "The output gate's own projection (attention_gate_proj) carries a bias of H d; "
            "default: on an attention block as the queries do (qkv_bias: HRM), on an mla block "
            "none."
        ),
    )
    keys_as_values: Flag = Field(
        default=False,
        description=(
            "The values reuse the key projection: no v_proj, K d x D fewer parameters; the cache "
            "still keeps keys and values (Gemma 4's full-attention layers)."
        ),
    )
    shares_kv: Flag = Field(
        default=False,
        description=(
            "The block attends with the keys and values an earlier block computed and cached: "
            "no k_proj, v_proj or k_norm and nothing cached (Gemma 4's last num_kv_shared_layers)."
        ),
    )
    dynamic_mask: Flag = Field(
        default=False,
        description=(
            "Dynamic mask attention (Doge): the values give one mask score per key/value head "
            "through dt_proj (K d -> K, with a bias when qkv_bias) and a learned A (K): "
            "K (K d + 1) parameters (+ K), K^2 d MACs per token."
        ),
    )
    attention_head_gate: Flag = Field(
        default=False,
        description=(
            "A sigmoid output gate per query head from its own D -> H projection (LFM3's and "
            "Ling's g_proj; attention or mla blocks): H D."
        ),
    )
    attention_experts: Size | None = Field(
        default=None,
        description=(
            "A mixture of attention heads (JetMoE's MoA): the query and output projections are "
            "X stacked experts of n_kv_heads heads each (X x K d x D, X x D x K d) and a router "
            "X x D sends each token to n_heads / n_kv_heads of them; keys and values are shared "
            "(one K d projection each, repeated to the H heads); with attn_out_bias one bias of "
            "D on the combined output. Default: none."
        ),
    )
    differential_attention: Flag = Field(
        default=False,
        description=(
            "Differential attention (DiffLlama): two softmax maps over the same queries and "
            "keys, each applied to the values, their difference weighted by a learned lambda "
            "(4 vectors of head_dim); twice the query-key pair MACs."
        ),
    )
    gated_cross_attention: Flag = Field(
        default=False,
        description=(
            "The block's attention takes its keys and values from another modality's states "
            "(image features), and a learned scalar gate (tanh) scales each of its two residual "
            "branches (Flamingo's gated cross-attention, Llama 3.2 Vision): 2 parameters more. "
            "Text-only input skips the block: its MACs and KV cache count 0."
        ),
    )
    encoder_attention: Flag = Field(
        default=False,
        description=(
            "After its self-attention the block also attends to an encoder's states, D wide "
            "(add_cross_attention: GPT-2's crossattention, XGLM's and Kosmos-2's encoder_attn): "
            "q H d x D, k and v K d x D, an output D x H d, biased as the self-attention, and a "
            "norm of D before it. Text-only input, which has no encoder states, skips it: its "
            "parameters count, its MACs and cache are 0."
        ),
    )
    sliding_window: Size | None = Field(
        default=None, description="Each token attends to at most this many positions."
    )
    bidirectional_attention: Flag = Field(
        default=False,
        description=(
            "No causal mask: each query attends to keys on both sides, every key, or within a "
            "sliding window W those fewer than W positions away (up to 2W - 1 keys; Gemma 3's "
            'use_bidirectional_attention in Gemma3ForCausalLM, Gemma 4\'s "all"). The pairs '
            "are the same with or without --causal; a KV cache and decoding see earlier tokens "
            "only, as causally."
        ),
    )
    bidirectional_window: Size | None = Field(
        default=None,
        description=(
            "Bidirectional blocks: the forward's pairs are the keys fewer than this many "
            "positions away on either side, where that window differs from the sliding_window "
            'the KV cache and decoding keep (Gemma 4\'s use_bidirectional_attention "all": keys '
            "at most sliding_window away, sliding_window + 1); default: sliding_window."
        ),
    )
    kv_cache_all_tokens: Flag = Field(
        default=False,
        description=(
            "The KV cache keeps every token even when the block attends within a sliding window "
            "(GPT-Neo's local layers in transformers); default: a windowed block keeps its window."
        ),
    )
    attention_chunk: Size | None = Field(
        default=None,
        description="Chunked attention (Llama 4): tokens attend only within chunks of this size.",
    )
    q_lora_rank: Size | None = Field(
        default=None, description="MLA: rank of the query's low-rank path (none: direct q_proj)."
    )
    kv_lora_rank: Size | None = Field(
        default=None, description="MLA: rank of the key/value latent."
    )
    qk_rope_head_dim: Count | None = Field(
        default=None,
        description=(
            "MLA: rotary dimensions per head (shared key part); 0 for a block without "
            "positions (no rotary part)."
        ),
    )
    qk_nope_head_dim: Size | None = Field(
        default=None, description="MLA: dimensions per head without positions."
    )
    v_head_dim: Size | None = Field(
        default=None,
        description=(
            "Value width per head: MLA's (required), or attention's when values are narrower or "
            "wider than keys (MiMo-V2-Flash); default for attention: head_dim."
        ),
    )
    indexer_heads: Size | None = Field(
        default=None,
        description=(
            "Attention or MLA: heads of the sparse-attention indexer that scores every cached "
            "token (DeepSeek-V3.2's lightning indexer on MLA, MiniMax M3's on attention); "
            "default: none."
        ),
    )
    indexer_head_dim: Size | None = Field(
        default=None,
        description="Attention or MLA: width of one indexer head and of its cached key.",
    )
    indexer_block: Size | None = Field(
        default=None,
        description=(
            "Attention: the indexer scores mean-pooled blocks of this many keys, not every key "
            "(Qwen4-Exp's QSA): its query and key projections are one (Hi + 1) di x D, and its "
            "Hi di MACs count per query and complete block of the keys it sees; default: none."
        ),
    )
    indexer_key_pool: Size | None = Field(
        default=None,
        description=(
            "MLA: the sparse-attention indexer scores keys pooled over m tokens "
            "(GLM-5.3-Flash's index_kpool): a position bias m x di and a gate di x D; each "
            "query scores floor(T / m) pooled keys, and the cache keeps 2 di + 1 per token "
            "(keys, gate scores, a validity flag). Default: every token's key."
        ),
    )
    indexer_query_norm: Flag = Field(
        default=False,
        description=(
            "MLA: the sparse-attention indexer's queries come from the block input through a "
            "LayerNorm of D (weight and bias) and a D -> Hi di projection (Mistral Large 4), "
            "not from the query latent."
        ),
    )
    query_position_scale: Flag = Field(
        default=False,
        description=(
            "MLA: a learned scale s and bias b per query head multiply the queries by "
            "s log(position + 1) + b (Mistral Large 4's softmax scaling): 2 H parameters, "
            "2 Hi more in the sparse-attention indexer."
        ),
    )
    rope_key_norm: Flag = Field(
        default=False,
        description=(
            "MLA: a norm over the shared rotary key part before positions are applied "
            "(Dots 3 Note's k_rope_only_layernorm): qk_rope_head_dim parameters."
        ),
    )
    query_latent_both: Flag = Field(
        default=False,
        description=(
            "MLA: the query's up-projection reads the latent both after and before its norm, "
            "concatenated (A.X K2): 2 q_lora_rank inputs."
        ),
    )
    query_rank: Size | None = Field(
        default=None,
        description=(
            "Attention: the queries pass through a low-rank path, D -> rank, an RMSNorm of rank, "
            "rank -> H d (DeepSeek-V4); default: one q_proj."
        ),
    )
    out_groups: Size | None = Field(
        default=None,
        description=(
            "Attention: grouped low-rank output projection; the H heads split into g groups, "
            "each H dv / g -> out_rank on its own, then g out_rank -> D (DeepSeek-V4)."
        ),
    )
    out_rank: Size | None = Field(
        default=None, description="Attention: width of each group's output (with out_groups)."
    )
    kv_compress_rate: Size | None = Field(
        default=None,
        description=(
            "Attention: a compressor pools every m tokens into one extra cached key (softmax "
            "over the window with a learned position bias of m x its width); the block "
            "attends to its window of keys plus every compressed key (DeepSeek-V4)."
        ),
    )
    kv_compress_overlap: Flag = Field(
        default=False,
        description=(
            "The compressor projects two series per token (2 d), each compressed key pooling "
            "2 m tokens with stride m (DeepSeek-V4's compressed sparse attention)."
        ),
    )
    mamba2: Mamba2Sizes | None = Field(
        default=None,
        description=(
            "Mamba-2 sizes (mixer mamba2): heads, head_dim, state, groups, conv_kernel, "
            "conv_bias, proj_bias, out_proj_bias, chunk_size, gated_norm."
        ),
    )
    mamba: MambaSizes | None = Field(
        default=None,
        description=(
            "Mamba (v1) sizes (mixer mamba): inner, state, dt_rank, conv_kernel, conv_bias, "
            "proj_bias, dt_norms, heads."
        ),
    )
    gated_deltanet: GatedDeltaNetSizes | None = Field(
        default=None,
        description=(
            "Gated DeltaNet sizes (mixer gated_deltanet): key_heads, value_heads, key_head_dim, "
            "value_head_dim, conv_kernel, ungrouped, split_projections, separate_qkv."
        ),
    )
    kimi_delta: KimiDeltaSizes | None = Field(
        default=None,
        description=(
            "Kimi Delta Attention sizes (mixer kimi_delta): heads, head_dim, conv_kernel, "
            "low_rank_gates."
        ),
    )
    rg_lru: RgLruSizes | None = Field(
        default=None,
        description="RG-LRU recurrent block sizes (mixer rg_lru): width, heads, conv_kernel.",
    )
    short_conv: ShortConvSizes | None = Field(
        default=None, description="Short-convolution sizes (mixer short_conv): conv_kernel, bias."
    )
    lightning: LightningSizes | None = Field(
        default=None,
        description=(
            "Lightning attention sizes (mixer lightning; MiniMax-Text-01): heads, head_dim, "
            "block_size."
        ),
    )
    rwkv: RwkvSizes | None = Field(
        default=None,
        description="RWKV-4 time-mix sizes (mixer rwkv): attention_width.",
    )
    mlstm: MlstmSizes | None = Field(
        default=None,
        description=(
            "xLSTM mLSTM sizes (mixer mlstm): heads, qk_width, v_width, chunk_size, piece_size, "
            "fused."
        ),
    )
    parallel_mamba2: Flag = Field(
        default=False,
        description=(
            "An attention block also runs a Mamba-2 mixer (sized by the mamba2 key): on the same "
            "normed input, adding the two outputs (Falcon-H1), or after a shared block, on a "
            "norm of its own (Zamba 2's hybrid layers, with shared_weight_sets)."
        ),
    )
    parallel_mamba: Flag = Field(
        default=False,
        description=(
            "An attention block also runs a Mamba (v1) mixer (sized by the mamba key) after a "
            "shared block, on a norm of its own (Zamba's hybrid layers, with shared_weight_sets)."
        ),
    )
    concat_embeddings: Flag = Field(
        default=False,
        description=(
            "The attention reads the hidden state concatenated with the token embeddings "
            "(Zamba's shared block): its input norm and its q, k and v read 2 D (give head_dim)."
        ),
    )
    concat_width: Size | None = Field(
        default=None,
        description=(
            "With concat_embeddings: the width the input norm and q, k and v are built for, "
            "when not 2 D (Zamba's attention_hidden_size): counted as built, the forward as if "
            "they read it (transformers' forward, which concatenates 2 D, fails)."
        ),
    )
    # Blocks reused at several depths.
    shared_weight_sets: Size | None = Field(
        default=None,
        description=(
            "The blocks of this kind reuse s sets of weights in turn (Zamba's shared "
            "transformer): the token mixer, the FFN and the first two norms are stored "
            "min(s, L) times for the kind's L layers, so the parameters count those sets while "
            "MACs and caches count every layer. Each layer keeps its own adapters, "
            "use_projection, Mamba mixer beside (parallel_mamba2, parallel_mamba) and further "
            "norms. "
            "Default: every block has weights of its own."
        ),
    )
    cache_per_weight_set: Flag = Field(
        default=False,
        description=(
            "The uses of a reused block keep one cache per weight set, not one each: the last "
            "use writes it and the others read it (Dory's recurrent_kv_cache_mode last_loop); "
            "needs shared_weight_sets."
        ),
    )
    adapter_rank: Size | None = Field(
        default=None,
        description=(
            "A shared block's low-rank adapter of each use: D -> r -> the FFN's first "
            "projection's width, added to it (Zamba 2's gate_up_proj_adapter_list); with "
            "qkv_adapters also on q, k and v. Default: none."
        ),
    )
    qkv_adapters: Flag = Field(
        default=False,
        description=(
            "Adapters of adapter_rank r on the shared attention's q, k and v too, each "
            "input -> r -> input, whatever the key/value heads (Zamba 2's "
            "use_shared_attention_adapter)."
        ),
    )
    adapter_slots: Size | None = Field(
        default=None,
        description=(
            "A reused block's adapters are built for this many uses, and each weight set "
            "holds those of the uses i with i mod shared_weight_sets its own (Zamba 2 builds "
            "one per entry of hybrid_layer_ids). Default: one per layer of the kind."
        ),
    )
    weight_sets_untied: Flag = Field(
        default=False,
        description=(
            "Each use builds the reused block anew and nothing ties the copies (Zamba 2 with "
            "tie_word_embeddings false): every layer stores its weight set and all the "
            "adapters that set holds. MACs and caches are unchanged."
        ),
    )
    use_projection: Flag = Field(
        default=False,
        description=(
            "Each layer projects the shared block's output by a D x D matrix of its own before "
            "adding it to the residual stream (Zamba's per-layer linear)."
        ),
    )
    laurel_rank: Size | None = Field(
        default=None,
        description=(
            "LAuReL (learned augmented residual, Gemma 3n): beside the token mixer, a low-rank "
            "path D -> r -> D on the block's normed input, then a norm of D; default: none."
        ),
    )
    # Feed-forward network.
    ffn: FfnKind = Field(
        default="mlp",
        description=(
            "Feed-forward kind: plain MLP, gated (swiglu, geglu), channel_mix (RWKV's: a "
            "squared-ReLU MLP of the token-shifted input, gated by a D x D receptance) or none."
        ),
    )
    ffn_mult: Size | None = Field(
        default=None,
        description=(
            "FFN hidden width as a multiple r of d_model (default 4). For a gated FFN the first "
            "projection's output width doubles (2 r D)."
        ),
    )
    ffn_hidden: Size | None = Field(
        default=None, description="FFN hidden width, when it is not a whole multiple of d_model."
    )
    ffn_bias: Flag = Field(default=True, description="Bias on the FFN projections.")
    fused_gate_up: Flag = Field(
        default=False,
        description=(
            "A gated FFN's gate and up projections are one tensor (Phi-3's gate_up_proj). "
            "Changes the tensor count, not the parameter count."
        ),
    )
    ffn_inner_norm: Flag = Field(
        default=False,
        description=(
            "A dense FFN normalises its hidden activations (width h) before the down "
            "projection (BitNet's ffn_sub_norm): one more norm of h."
        ),
    )
    ffn_act_params: Count = Field(
        default=0,
        description=(
            "Learned scalars of the FFN's activation, each its own one-element tensor "
            "(Apertus' xIELU: alpha_p and alpha_n, 2)."
        ),
    )
    moe_experts: Size | None = Field(
        default=None, description="Experts per block (mixture of experts); default: dense."
    )
    moe_top_k: Size | None = Field(default=None, description="Experts each token is routed to.")
    moe_ffn_hidden: Size | None = Field(
        default=None, description="Hidden width of one routed expert; default: the FFN width."
    )
    moe_shared_ffn_hidden: Size | None = Field(
        default=None,
        description="Hidden width of the shared expert every token also runs; default: none.",
    )
    moe_shared_gate: Flag = Field(
        default=False,
        description=(
            "A sigmoid gate D x 1 on the shared expert (Qwen2-MoE); built even when there is "
            "no shared expert (Qwen2-MoE's shared_expert_intermediate_size 0)."
        ),
    )
    moe_router_bias: Flag = Field(
        default=False, description="The router carries a bias of X (gpt-oss)."
    )
    moe_expert_bias: Flag | None = Field(
        default=None,
        description=(
            "The routed experts (and another modality's) carry biases (X x 2h and X x D for a "
            "gated FFN); default: as the FFN does (ffn_bias). False beside ffn_bias true: "
            "biases on the dense and shared FFNs only (DeepSeek-V2, HY V3, Step 3.5)."
        ),
    )
    moe_output_bias: Flag = Field(
        default=False,
        description="A bias of D added to the experts' combined output (JetMoE): D parameters.",
    )
    moe_latent: Size | None = Field(
        default=None,
        description=(
            "The routed experts run in a latent of width L: the block projects D -> L before "
            "them and L -> D after (fc1_latent_proj, fc2_latent_proj, biases with ffn_bias), "
            "and each expert is L -> h -> L (Nemotron 3 Super's latent mixture of experts); the "
            "router and the shared expert read D. Default: none, the experts read D."
        ),
    )
    moe_width: Size | None = Field(
        default=None,
        description=(
            "The router and the routed experts are built for this width, not D (DBRX's "
            "ffn_config.hidden_size, set from d_model before hidden_size sets it): counted as "
            "built; transformers' forward, which feeds them D, fails."
        ),
    )
    moe_router_scales: Flag = Field(
        default=False,
        description=(
            "The router scales its input by a learned vector of D and the routing weights by "
            "one learned scalar per expert (Gemma 4): D + X parameters."
        ),
    )
    moe_product_keys: Flag = Field(
        default=False,
        description=(
            "Experts of one neuron each, retrieved by product keys (Doge's cross-domain "
            "mixture of experts): a router D -> 2 floor(sqrt(X)) (no bias) scores two halves of "
            "the keys, and expert i is row i of down_embed and of up_embed (X x D each); each "
            "token runs its top k: 2 X D + 2 floor(sqrt(X)) D parameters, 2 k D MACs for the "
            "experts. The shared expert (moe_shared_ffn_hidden) is the block's gated FFN."
        ),
    )
    moe_modality_ffn_hidden: Size | None = Field(
        default=None,
        description=(
            "A second set of X routed experts of this hidden width, with a router of its own "
            "(and its bias with moe_router_bias), that another modality's tokens run instead "
            "(ERNIE 4.5 VL's vision experts; same X and top-k). Text-only input runs none of "
            "them: parameters only, 0 MACs. Default: none."
        ),
    )
    # Norms.
    norms_per_block: Count = Field(
        default=2,
        description="Norms in each block: 2 pre- or post-norm, 4 sandwich, 1 parallel.",
    )
    norm_gate_rank: Size | None = Field(
        default=None,
        description=(
            "A low-rank sigmoid gate on the token mixer's input norm (A.X K2's gated RMSNorm): "
            "the normed x times sigmoid(D -> r -> D of it, SiLU between, no biases): 2 D r; "
            "default: none."
        ),
    )
    ffn_norm_gate_rank: Size | None = Field(
        default=None,
        description="The same gate on the FFN's input norm; default: none.",
    )
    ngpt_scales: Flag = Field(
        default=False,
        description=(
            "nGPT's learned scales (Dory): the queries' sqk and the output gate's s_gate (H d "
            "each; needs attention_gate) and the gated FFN's suv_gate and suv_up (h each); no "
            "MACs."
        ),
    )
    residual_scales: Flag = Field(
        default=False,
        description=(
            "A learned scale of D on each of the block's two residual branches (Dory's "
            "lambda_1 and lambda_2, Doge's input_residual and post_attention_residual): 2 D; "
            "needs an FFN; no MACs."
        ),
    )

    # Resolved values: the defaults above, filled in by ModelSpec.stacks().

    @property
    def kv_heads(self) -> int:
        heads = self.n_heads or 0
        return heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def gated(self) -> bool:
        return self.ffn in GATED_FFNS

    @property
    def experts(self) -> int:
        return 1 if self.moe_experts is None else self.moe_experts

    @property
    def expert_bias(self) -> bool:
        """The routed experts carry biases: moe_expert_bias, or ffn_bias."""
        return self.ffn_bias if self.moe_expert_bias is None else self.moe_expert_bias

    @property
    def gate_proj_bias(self) -> bool:
        """The output gate's own projection carries a bias: attention_gate_proj_bias, or on an
        attention block qkv_bias (an mla block's has none)."""
        if self.attention_gate_proj_bias is not None:
            return self.attention_gate_proj_bias
        return self.qkv_bias and self.mixer == "attention"

    @property
    def experts_active(self) -> int:
        return 1 if self.moe_top_k is None else self.moe_top_k

    @property
    def has_attention(self) -> bool:
        return self.mixer in ATTENTION_MIXERS

    @property
    def runs_on_text(self) -> bool:
        """A text-only forward runs the block: all but a gated cross-attention block, whose
        other modality's states text-only input does not have."""
        return not self.gated_cross_attention

    @property
    def recurrent_mixer(self) -> str | None:
        """The block's mixer that keeps a fixed-size state (conv and/or SSM state) instead of a
        KV cache: the mixer itself, or mamba2 or mamba beside attention; None for none."""
        if self.parallel_mamba2:
            return "mamba2"
        if self.parallel_mamba:
            return "mamba"
        return self.mixer if self.mixer in RECURRENT_MIXERS else None

    @property
    def recurrent(self) -> bool:
        """The block keeps a fixed-size state (conv and/or SSM state)."""
        return self.recurrent_mixer is not None


BLOCK_FIELDS: tuple[str, ...] = tuple(BlockFields.__annotations__)
"""The keys a layer group may override."""
