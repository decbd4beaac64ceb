"""LoRA: the parameters an adapter adds and trains, counted as peft 0.21 counts them.

LoRA on a linear layer W (out x in) adds A (r x in) and B (out x r): r (in + out) parameters;
DoRA adds a magnitude vector of ``out`` elements per adapted linear. On a table (V x E,
``lora.Embedding``) it adds r (V + E), and DoRA E. A stacked parameter of X
experts (X x a x b) targeted through ``target_parameters`` gets A (X r x b) and B (a x X r):
X r (a + b); a router's 2-D weight (out x in) gets r (in + out) (peft's ``lora.ParamWrapper``).
Bias modes (peft's ``bias``): ``none`` trains no bias; ``all`` every existing parameter whose name
ends in ``.bias``; ``lora_only`` the biases of the adapted modules. A module in
``modules_to_save`` gets a trainable copy next to the frozen original (``ModulesToSaveWrapper``),
so it adds its parameters to the total once more, even when the original is tied.

``trainable`` and ``total`` are what ``PeftModel.get_nb_trainable_parameters()`` reports: total =
the base model + adapters + saved copies.

Targets are the family's own module names, matched as peft matches them: a target hits a module
whose name is the target or ends in ``.target`` (GPT-2's ``c_proj`` hits both the attention and
the MLP output projection). ``all-linear`` is every linear layer but the output head. In the MoE
families whose transformers 4 checkpoints peft converts (Mixtral, Qwen2-MoE and the families
transformers converts alike), the transformers 4 names of the experts and the router (Mixtral's
``w1``, ``w3``, ``w2``, ``gate``; Qwen2-MoE's ``gate_proj``, ``up_proj``, ``down_proj``, ``gate``)
target the stacked experts and the router weight instead of any linear layer, the fused
gate-and-up experts at rank 2r, as ``peft.utils.transformers_weight_conversion`` rewrites them;
``all-linear`` includes them there. The converted router name is the parameter ``gate.weight``:
it hits a linear router named ``gate`` too (AFMoE's), and nothing where the router is Hunyuan-MoE's
``gate.wg`` (``all-linear`` adapts that as a linear layer). In the
Mamba-based model types peft refuses any module named ``out_proj`` or ``conv1d``, so
``all-linear`` fails there too. A block reused at several depths is a module at each use in
transformers (Zamba, Zamba 2; its weights tied), so peft adapts it once per use
(:func:`module_tensors`); where it is one module per weight set run at each use (HRM-Text),
once per set.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Literal

from costcalc.errors import RangeError, UsageError, check_choice
from costcalc.option_names import option
from costcalc.params import total_params
from costcalc.render import ratio_dict
from costcalc.scalars import MAX_SIZE
from costcalc.spec import ModelSpec
from costcalc.tensors import (
    Shape,
    Tensor,
    block_tensors,
    model_tensors,
    parameter_tensors,
    weight_sets,
)

BIAS_MODES: tuple[str, ...] = ("none", "all", "lora_only")
ALL_LINEAR = "all-linear"
PEFT_VERSION = "0.21"

MAMBA_MODEL_TYPES = ("falcon_h1", "falcon_mamba", "mamba", "mamba2", "nemotron_h")
MAMBA_REFUSED = ("out_proj", "conv1d")
"""peft refuses LoRA on a module named ``out_proj`` or ``conv1d`` in these model types
(``_check_lora_target_modules_mamba``), ``all-linear`` included."""

# --------------------------------------------------------------------------- family names

LLAMA_PREFIXES = {"attn": "self_attn"}


@dataclass(frozen=True)
class FamilyNames:
    """How a family names the modules costcalc's generic tensor names stand for.

    ``prefixes`` renames a generic module's first part (``attn`` -> ``self_attn``); ``renames``
    gives whole generic module paths their family path (``attn.qkv_proj`` -> ``attn.c_attn``);
    ``router_linear`` says whether the MoE router is an ``nn.Linear`` (else a bare weight);
    ``converted`` names peft's transformers 4 expert and router targets (see the module
    docstring): old name -> (generic tensor, names that must be targeted together).
    """

    prefixes: dict[str, str] = field(default_factory=lambda: dict(LLAMA_PREFIXES))
    renames: dict[str, str] = field(default_factory=dict)
    router_linear: bool = False
    converted: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    stacked_experts: bool = True
    """False where the experts are not stacked as costcalc's tensors are (DBRX's w1, v1, w2)."""
    loose_biases: frozenset[str] = frozenset()
    """Generic modules whose bias is a parameter beside the linear layer, not its ``bias``
    (GPT-NeoX-Japanese's ``dense_bias``, AFMoE's ``expert_bias``): no bias mode trains it (its
    name does not end in ``.bias``)."""
    module_per_set: bool = False
    """A block reused at several depths is one module per weight set, run at each use
    (HRM-Text's stacks, Dory's recurrent layers), not a module per use (Zamba)."""

    def path(self, generic: str) -> str:
        """The family's module path for a generic one."""
        if generic in self.renames:
            return self.renames[generic]
        first, _, rest = generic.partition(".")
        first = self.prefixes.get(first, first)
        return f"{first}.{rest}" if rest and first else (rest or first)


def _names(
    prefixes: dict[str, str] | None = None,
    renames: dict[str, str] | None = None,
    router_linear: bool = False,
    converted: dict[str, tuple[str, tuple[str, ...]]] | None = None,
    stacked_experts: bool = True,
    loose_biases: Iterable[str] = (),
    module_per_set: bool = False,
) -> FamilyNames:
    """A family's names: Llama's, with other ``prefixes`` and ``renames``."""
    return FamilyNames(
        {**LLAMA_PREFIXES, **(prefixes or {})},
        renames or {},
        router_linear,
        converted or {},
        stacked_experts,
        frozenset(loose_biases),
        module_per_set,
    )


GATE_UP, DOWN, ROUTER = "mlp.experts.gate_up_proj", "mlp.experts.down_proj", "mlp.router.weight"
MIXTRAL_CONVERTED = {
    "gate": (ROUTER, ("gate",)),
    "w1": (GATE_UP, ("w1", "w3")),
    "w3": (GATE_UP, ("w1", "w3")),
    "w2": (DOWN, ("w2",)),
}
QWEN2_MOE_CONVERTED = {
    "gate": (ROUTER, ("gate",)),
    "gate_proj": (GATE_UP, ("gate_proj", "up_proj")),
    "up_proj": (GATE_UP, ("gate_proj", "up_proj")),
    "down_proj": (DOWN, ("down_proj",)),
}
"""peft's ``_MOE_TARGET_MODULE_MAPPING`` and ``_MOE_FUSED_TARGETS`` (peft 0.21)."""
PEFT_PARAMETERS = {GATE_UP: "gate_up_proj", DOWN: "down_proj", ROUTER: "gate.weight"}
"""The ``target_parameters`` peft converts those names to: any weight whose path ends in one
(a linear router named ``gate`` too; none where the router is ``gate.wg``)."""

ROUTER_GATE = {"mlp.router": "mlp.gate"}
GPT2_MLP = {"mlp.up_proj": "mlp.c_fc", "mlp.down_proj": "mlp.c_proj"}
GPT2 = _names(
    {"attn": "attn"},
    {
        "attn.qkv_proj": "attn.c_attn",
        "attn.o_proj": "attn.c_proj",
        **GPT2_MLP,
        "embed_tokens": "wte",
        "embed_positions": "wpe",
    },
)
NEOX_MLP = {"mlp.up_proj": "mlp.dense_h_to_4h", "mlp.down_proj": "mlp.dense_4h_to_h"}
NEOX_RENAMES = {
    "attn.qkv_proj": "attention.query_key_value",
    "attn.o_proj": "attention.dense",
    "embed_tokens": "embed_in",
    **NEOX_MLP,
}
GRANITE_SHARED_MLP = {
    "mlp.shared_expert.gate_up_proj": "shared_mlp.input_linear",
    "mlp.shared_expert.down_proj": "shared_mlp.output_linear",
}
OPT_RENAMES = {"attn.o_proj": "self_attn.out_proj", "mlp.up_proj": "fc1", "mlp.down_proj": "fc2"}
LLAMA = _names(renames=ROUTER_GATE)
QWEN2_MOE = _names(renames=ROUTER_GATE, converted=QWEN2_MOE_CONVERTED)
"""Families transformers converts as Qwen2-MoE (``_MODEL_TO_CONVERSION_PATTERN``); peft converts
their targets, but not Qwen2-MoE's own, which it does not list."""
SHARED_EXPERTS = {
    f"mlp.shared_expert.{p}": f"mlp.shared_experts.{p}"
    for p in ("gate_proj", "up_proj", "down_proj", "gate_up_proj")
}
DEEPSEEK = _names(renames={**ROUTER_GATE, **SHARED_EXPERTS}, converted=QWEN2_MOE_CONVERTED)
DEEPSEEK_NAMES = _names(renames=DEEPSEEK.renames)
"""DeepSeek's module names in a family transformers has no checkpoint conversion for
(``conversion_mapping._MODEL_TO_CONVERSION_PATTERN``): peft rewrites no old expert names."""
AXK2_NAMES = _names(
    renames={
        **DEEPSEEK.renames,
        "attn.q_b_proj": "self_attn.q_gate_proj",
        **{
            f"{generic}_norm_gate.{fc}": f"{norm}.mlp.{fc}"
            for generic, norm in (("attn", "input_layernorm"), ("mlp", "post_attention_layernorm"))
            for fc in ("fc1", "fc2")
        },
    }
)
"""A.X K2's: DeepSeek's, the query projection ``q_gate_proj`` and the gated norms' ``mlp.fc1``
and ``mlp.fc2``."""
FEED_FORWARD = {"mlp": "feed_forward"}
LFM2_RENAMES = {
    "attn.o_proj": "self_attn.out_proj",
    "mlp.gate_proj": "feed_forward.w1",
    "mlp.up_proj": "feed_forward.w3",
    "mlp.down_proj": "feed_forward.w2",
}
ERNIE_VL_RENAMES = {
    "mlp.router": "mlp.text_moe.gate",
    "mlp.experts.gate_up_proj": "mlp.text_moe.experts.gate_up_proj",
    "mlp.experts.down_proj": "mlp.text_moe.experts.down_proj",
    "mlp.vision_moe.router": "mlp.vision_moe.gate",
    **SHARED_EXPERTS,
}
"""ERNIE 4.5 VL's sparse block: the text experts under ``text_moe``, the vision ones under
``vision_moe``, each routed by its own ``gate``."""
LLAMA_FAMILIES = (
    "apertus arcee cohere cohere2 ernie4_5 exaone4 gemma gemma2 gemma3_text glm4 granite helium "
    "llama ministral mistral mllama_text_model nemotron olmo2 olmo3 paddleocr_vl_text phi3 qwen2 "
    "qwen2_moe qwen3 qwen3_5_text qwen3_5_moe_text seed_oss smollm3 stablelm"
)

DENSE_LLAMA_FAMILIES = (
    "apertus1p5_text cwm exaone gemma3n_text glm glm4v_text glm_image_text glm_ocr_text "
    "granite_swa hunyuan_v1_dense hunyuan_vl_text hyperclovax internlm3 iquestcoder jais2 "
    "ministral3 olmo qwen2_5_omni_text qwen2_5_vl_text qwen2_vl_text qwen3_vl_text vaultgemma "
    "youtu molmo2_text granite4_vision_text granite_docling_text muse_glimmer_text phi4_multimodal"
)
"""More families named as Llama (``self_attn.q_proj`` ... ``mlp.down_proj``)."""

FAMILY_NAMES: dict[str, FamilyNames] = {
    "qwen4_exp_text": _names(
        {"attn_hc": "attn_hyper_connection", "ffn_hc": "mlp_hyper_connection"},
        {
            **ROUTER_GATE,
            "attn.indexer.qk_proj": "self_attn.indexer.index_qk_proj",
            "attn.indexer.q_norm": "self_attn.indexer.q_layernorm",
            "attn.indexer.k_norm": "self_attn.indexer.k_layernorm",
        },
    ),
    "ernie4_5_vl_moe_text": _names(renames=ERNIE_VL_RENAMES),
    **dict.fromkeys(LLAMA_FAMILIES.split(), LLAMA),
    **dict.fromkeys(DENSE_LLAMA_FAMILIES.split(), LLAMA),
    **dict.fromkeys(
        ("nanochat", "cosmos3_edge_text"),
        _names(renames={"mlp.up_proj": "mlp.fc1", "mlp.down_proj": "mlp.fc2"}),
    ),
    **dict.fromkeys(
        ("gemma4_text", "gemma4_unified_text"),
        _names(
            renames={
                "mlp.router": "router.proj",
                GATE_UP: "experts.gate_up_proj",
                DOWN: "experts.down_proj",
                **{
                    f"mlp.shared_expert.{p}": f"mlp.{p}"
                    for p in ("gate_proj", "up_proj", "down_proj")
                },
            },
            router_linear=True,
        ),
    ),
    "solar_open": DEEPSEEK,
    **dict.fromkeys(
        ("mixtral", "minimax_m2", "minimax"),
        _names(renames=ROUTER_GATE, converted=MIXTRAL_CONVERTED),
    ),
    **dict.fromkeys(
        ("qwen3_moe", "olmoe", "qwen3_next", "flex_olmo", "mellum", "qwen3_omni_moe_text"),
        QWEN2_MOE,
    ),
    "mimo_v2_flash": LLAMA,
    "qwen3_vl_moe_text": LLAMA,
    "flint": _names(renames=ROUTER_GATE),
    "beam": QWEN2_MOE,
    "lara_mini": LLAMA,
    "cohere_compass_text": LLAMA,
    **dict.fromkeys(
        (
            "deepseek_v2",
            "deepseek_v3",
            "deepseek_v32",
            "dots1",
            "glm4_moe",
            "glm4_moe_lite",
            "glm4v_moe_text",
            "glm_moe_dsa",
            "ernie4_5_moe",
            "sarvam_mla",
        ),
        DEEPSEEK,
    ),
    **dict.fromkeys(
        (
            "sarvam_moe",
            "axk1",
            "hy_v3",
            "kolibri1",
            "step3p5",
            "dots3_note_text",
            "minimax_m3_vl_text",
            "deepseek_ocr2_text",
            "hy_v4",
            "hy_v4_vl_text",
            "mistral_large4_text",
        ),
        DEEPSEEK_NAMES,
    ),
    "laguna": _names(renames={**DEEPSEEK_NAMES.renames, "attn.gate_proj": "self_attn.g_proj"}),
    "exaone_moe": DEEPSEEK,
    "axk2": AXK2_NAMES,
    "deepseek_v4": _names(
        renames={
            **DEEPSEEK.renames,
            "attn.k_proj": "self_attn.kv_proj",
            "attn.compressor.indexer.weights_proj": (
                "self_attn.compressor.indexer.scorer.weights_proj"
            ),
        },
    ),
    "afmoe": _names(
        renames={
            "mlp.router": "mlp.router.gate",
            **{
                f"mlp.shared_expert.{p}": f"mlp.shared_experts.{p}"
                for p in ("gate_proj", "up_proj", "down_proj")
            },
        },
        router_linear=True,
        converted=QWEN2_MOE_CONVERTED,
        loose_biases=("mlp.router",),
    ),
    "cohere2_moe": DEEPSEEK,
    "doge": _names(
        renames={
            f"mlp.shared_expert.{p}": f"mlp.{p}" for p in ("gate_proj", "up_proj", "down_proj")
        },
        router_linear=True,
    ),
    **dict.fromkeys(("dory", "hrm_text"), _names(module_per_set=True)),
    "jetmoe": _names(
        {"attn": "self_attention"},
        {
            "mlp.router": "mlp.router.layer",
            GATE_UP: "mlp.input_linear.weight",
            DOWN: "mlp.output_linear.weight",
        },
        router_linear=True,
    ),
    "hunyuan_v1_moe": _names(
        renames={
            "mlp.router": "mlp.gate.wg",
            **{
                f"mlp.shared_expert.{p}": f"mlp.shared_mlp.{p}"
                for p in ("gate_proj", "up_proj", "down_proj")
            },
        },
        router_linear=True,
        converted=QWEN2_MOE_CONVERTED,
    ),
    "gpt2": GPT2,
    "gpt-sw3": GPT2,
    "minicpm3": LLAMA,
    "emu3_text_model": LLAMA,
    "bitnet": LLAMA,
    "diffllama": LLAMA,
    "aria_text": _names(renames=SHARED_EXPERTS),
    "granitemoe_swa": _names({"mlp": "block_sparse_moe"}, GRANITE_SHARED_MLP),
    "gpt_bigcode": GPT2,
    "openai-gpt": _names(
        {"attn": "attn"},
        {
            "attn.qkv_proj": "attn.c_attn",
            "attn.o_proj": "attn.c_proj",
            **GPT2_MLP,
            "embed_tokens": "tokens_embed",
            "embed_positions": "positions_embed",
        },
    ),
    "gpt_neox": _names({"attn": "attention"}, NEOX_RENAMES),
    "gpt_neox_japanese": _names(
        {"attn": "attention"},
        {**NEOX_RENAMES, "lm_head": "embed_out"},
        loose_biases=("attn.o_proj",),
    ),
    **dict.fromkeys(
        ("bloom", "falcon"),
        _names(
            {"attn": "self_attention"},
            {
                "attn.qkv_proj": "self_attention.query_key_value",
                "attn.o_proj": "self_attention.dense",
                "embed_tokens": "word_embeddings",
                **NEOX_MLP,
            },
        ),
    ),
    "persimmon": _names(
        renames={
            "attn.qkv_proj": "self_attn.query_key_value",
            "attn.o_proj": "self_attn.dense",
            **NEOX_MLP,
        }
    ),
    "phi": _names(
        renames={
            "attn.o_proj": "self_attn.dense",
            "mlp.up_proj": "mlp.fc1",
            "mlp.down_proj": "mlp.fc2",
        }
    ),
    **dict.fromkeys(("opt", "xglm"), _names(renames=OPT_RENAMES)),
    "kosmos_2_text_model": _names(
        renames={**OPT_RENAMES, "mlp.up_proj": "ffn.fc1", "mlp.down_proj": "ffn.fc2"}
    ),
    "biogpt": _names(renames={**OPT_RENAMES, "lm_head": "output_projection"}),
    "gpt_neo": _names(
        {"attn": "attn.attention"},
        {
            "attn.o_proj": "attn.attention.out_proj",
            **GPT2_MLP,
            "embed_tokens": "wte",
            "embed_positions": "wpe",
        },
    ),
    **dict.fromkeys(
        ("gptj", "codegen"),
        _names(
            {"attn": "attn"},
            {
                "attn.o_proj": "attn.out_proj",
                "mlp.up_proj": "mlp.fc_in",
                "mlp.down_proj": "mlp.fc_out",
                "embed_tokens": "wte",
            },
        ),
    ),
    "ctrl": _names(
        {"attn": "multi_head_attention", "mlp": "ffn"},
        {
            **{f"attn.{p}_proj": f"multi_head_attention.W{p}" for p in "qkv"},
            "attn.o_proj": "multi_head_attention.dense",
            "mlp.up_proj": "ffn.0",
            "mlp.down_proj": "ffn.2",
            "embed_tokens": "w",
        },
    ),
    "mpt": _names(
        {"attn": "attn", "mlp": "ffn"},
        {"attn.qkv_proj": "attn.Wqkv", "attn.o_proj": "attn.out_proj", "embed_tokens": "wte"},
    ),
    "dbrx": _names(
        {"attn": "norm_attn_norm.attn", "mlp": "ffn"},
        {
            "attn.qkv_proj": "norm_attn_norm.attn.Wqkv",
            "attn.o_proj": "norm_attn_norm.attn.out_proj",
            "mlp.router": "ffn.router.layer",
            "embed_tokens": "wte",
        },
        router_linear=True,
        stacked_experts=False,
    ),
    "starcoder2": _names(renames=GPT2_MLP),
    "gpt_oss": _names(),
    "phimoe": _names(router_linear=True),
    "granitemoe": _names({"mlp": "block_sparse_moe"}),
    "granitemoeshared": _names({"mlp": "block_sparse_moe"}, GRANITE_SHARED_MLP),
    "llama4_text": _names(FEED_FORWARD, router_linear=True),
    "jamba": _names({**FEED_FORWARD, "mixer": "mamba"}),
    **dict.fromkeys(
        ("mamba", "mamba2", "falcon_mamba"), _names(renames={"embed_tokens": "embeddings"})
    ),
    "rwkv": _names(
        {"attn": "attention", "mlp": "feed_forward"},
        {"embed_tokens": "embeddings", "lm_head": "head"},
    ),
    "xlstm": _names(
        {"attn": "mlstm_layer", "mlp": "ffn"},
        {
            "embed_tokens": "embeddings",
            "mlp.gate_proj": "ffn.proj_up_gate",
            "mlp.up_proj": "ffn.proj_up",
            "mlp.gate_up_proj": "ffn.proj_up_gate_z",
            "mlp.down_proj": "ffn.proj_down",
        },
    ),
    "olmo_hybrid": _names(
        renames={
            "linear_attn.in_proj_a": "linear_attn.a_proj",
            "linear_attn.in_proj_b": "linear_attn.b_proj",
            "linear_attn.in_proj_z": "linear_attn.g_proj",
            "linear_attn.out_proj": "linear_attn.o_proj",
        }
    ),
    "recurrent_gemma": _names(
        {"attn": "temporal_block", "mlp": "mlp_block", "mixer": "temporal_block"}
    ),
    **dict.fromkeys(
        ("kimi_linear", "bailing_hybrid", "glm5_next_text"),
        _names({"linear_attn": "self_attn"}, {**ROUTER_GATE, **SHARED_EXPERTS}),
    ),
    **dict.fromkeys(("bamba", "falcon_h1"), _names({**FEED_FORWARD, "mixer": "mamba"})),
    "granitemoehybrid": _names(
        {"mlp": "block_sparse_moe", "mixer": "mamba"},
        {
            **GRANITE_SHARED_MLP,
            "mlp.gate_up_proj": "shared_mlp.input_linear",
            "mlp.down_proj": "shared_mlp.output_linear",
        },
    ),
    "nemotron_h": _names({"attn": "mixer", "mlp": "mixer"}, {"embed_tokens": "embeddings"}),
    "lfm2": _names(FEED_FORWARD, LFM2_RENAMES),
    "lfm2_moe": _names(FEED_FORWARD, {**LFM2_RENAMES, "mlp.router": "feed_forward.gate"}),
    "lfm3": _names(FEED_FORWARD, {k: v for k, v in LFM2_RENAMES.items() if k != "attn.o_proj"}),
    "zamba": _names(
        {"attn": "shared_transf.self_attn", "mlp": "shared_transf.feed_forward", "mixer": "mamba"}
    ),
    "zamba2": _names(
        {
            "attn": "shared_transformer.self_attn",
            "mlp": "shared_transformer.feed_forward",
            "mixer": "mamba",
        },
        {
            **{
                f"attn.{x}_adapter.{i}": f"shared_transformer.self_attn.linear_{x}_adapter_list.{i}"
                for x in "qkv"
                for i in "01"
            },
            **{
                f"mlp.gate_up_proj_adapter.{i}": (
                    f"shared_transformer.feed_forward.gate_up_proj_adapter_list.{i}"
                )
                for i in "01"
            },
        },
    ),
}
"""Families by ``model_type``; costcalc's own YAML models (no family) use Llama's names."""

# --------------------------------------------------------------------------- sites


Kind = Literal["linear", "parameter", "head", "embedding"]


@dataclass(frozen=True)
class Site:
    """A tensor LoRA can adapt (or a module peft can save), under its family's name.

    ``path`` is the module path (a parameter's: module path + parameter name), ``shape`` the
    weight's (out, in), or (X, a, b) for stacked experts, ``copies`` how many layers hold it.
    """

    path: str
    kind: Kind
    shape: Shape
    copies: int
    generic: str

    @property
    def name(self) -> str:
        """The breakdown's name: a module's last part; a parameter's module and name."""
        parts = self.path.split(".")
        return ".".join(parts[-2:]) if self.kind == "parameter" else parts[-1]


PRODUCT_KEY_TABLES = ("mlp.down_embed.weight", "mlp.up_embed.weight")
"""Product-key experts' tables (``moe_product_keys``): ``nn.Embedding`` modules in transformers
(Doge), adapted as tables (r (X + D)), which ``all-linear`` leaves out."""


def _kind(tensor: Tensor, names: FamilyNames) -> Kind | None:
    """What a weight is to LoRA: a linear layer, the output head, a bare parameter (stacked
    experts, a router that is no ``nn.Linear``), a table; None for the rest."""
    if tensor.name == "lm_head.weight":
        return "head"
    if tensor.name in ("embed_tokens.weight", "embed_positions.weight", *PRODUCT_KEY_TABLES):
        return "embedding"
    if tensor.use == "experts":
        return "parameter" if names.stacked_experts else None
    if tensor.use == "router":
        return "linear" if names.router_linear else "parameter"
    return "linear" if tensor.use == "matmul" and tensor.name.endswith(".weight") else None


def sites(spec: ModelSpec, names: FamilyNames) -> list[Site]:
    """Every weight LoRA can adapt or peft can save, with the family's names; a tied LM head is
    a module of its own to peft (sharing the token table's weight), so it is listed too."""
    found = []
    tensors = module_tensors(spec, names.module_per_set)
    for tensor in tensors:
        kind = _kind(tensor, names)
        if kind is None:
            continue
        module = tensor.name.removesuffix(".weight")
        if tensor.use == "router":
            path = names.path(module) + (".weight" if kind == "parameter" else "")
        elif kind == "parameter":
            path = names.path(tensor.name)
        else:
            path = names.path(module)
        found.append(Site(path, kind, tensor.shape, tensor.copies, module))
    if spec.tie_embeddings:
        table = next(t for t in tensors if t.name == "embed_tokens.weight")
        found.append(Site(names.path("lm_head"), "head", table.shape, 1, "lm_head"))
    return found


def module_tensors(spec: ModelSpec, per_set: bool = False) -> list[Tensor]:
    """Every parameter tensor, repeated once per module that holds it, as peft wraps modules.
    transformers builds a reused block anew at each use with its weights tied (Zamba 2), so a
    weight set's tensor is in every layer's module, and each layer's module holds all the
    adapters of its set: a use's adapter is held u_1^2 + ... + u_s^2 times over the kind, u_i
    the layers running set i. With ``per_set`` the block is one module per weight set, run at
    each use (HRM-Text): a set's tensor is held once per set."""
    tensors = model_tensors(spec)
    for stack in spec.stacks:
        n, sets = stack.n_layers, weight_sets(stack)
        q, rem = divmod(n, sets)
        uses = rem * (q + 1) ** 2 + (sets - rem) * q * q
        held = {"layer": n, "set": sets if per_set else n, "use": uses}
        tensors += [replace(t, copies=t.copies * held[t.scope]) for t in block_tensors(stack)]
    return tensors


def _hits(path: str, target: str) -> bool:
    """peft's match: the name is the target or ends in ``.target``."""
    return path == target or path.endswith(f".{target}")


# --------------------------------------------------------------------------- the count


@dataclass(frozen=True)
class LoraConfig:
    """What to adapt, as peft's ``LoraConfig`` says it."""

    rank: int
    targets: tuple[str, ...]
    target_parameters: tuple[str, ...] = ()
    bias: str = "none"
    modules_to_save: tuple[str, ...] = ()
    dora: bool = False


@dataclass(frozen=True)
class AdaptedModule:
    """One target name's share: modules adapted (all layers), rank, parameters added."""

    name: str
    modules: int
    rank: int
    added: int
    dora: int
    shape: Shape


@dataclass(frozen=True)
class LoraReport:
    """A model with LoRA adapters: the breakdown and peft's trainable and total."""

    config: LoraConfig
    base_total: int
    modules: tuple[AdaptedModule, ...]
    saved: tuple[tuple[str, int], ...]
    bias_elements: int
    adapter_tensors: int
    bias_tensors: int
    saved_tensors: int
    converted: tuple[str, ...] = ()
    """Targets peft read as transformers 4 MoE names (experts and router, not linear layers)."""
    adapter_shapes: tuple[tuple[Shape, int], ...] = ()
    """Each adapter tensor's shape and how many modules hold it (:func:`adapter_shapes`)."""
    saved_shapes: tuple[tuple[Shape, int], ...] = ()
    """The tensors of the ``modules_to_save`` copies: shape, copies."""

    @property
    def adapter_params(self) -> int:
        """LoRA A and B (and DoRA magnitudes) of every adapted module."""
        return sum(m.added for m in self.modules)

    @property
    def saved_params(self) -> int:
        """The trainable copies of ``modules_to_save``."""
        return sum(n for _, n in self.saved)

    @property
    def trainable(self) -> int:
        """Adapters + saved copies + the biases the bias mode trains."""
        return self.adapter_params + self.saved_params + self.bias_elements

    @property
    def total(self) -> int:
        """The base model + adapters + saved copies."""
        return self.base_total + self.adapter_params + self.saved_params

    @property
    def share(self) -> Fraction:
        """trainable / total."""
        return Fraction(self.trainable, self.total)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: peft's trainable and total, the config and the breakdown."""
        c = self.config
        return {
            "lora": {
                "rank": c.rank,
                "targets": list(c.targets),
                "target_parameters": list(c.target_parameters),
                "bias": c.bias,
                "modules_to_save": list(c.modules_to_save),
                "dora": c.dora,
            },
            "trainable": self.trainable,
            "total": self.total,
            "trainable_share": ratio_dict(self.share),
            "base_total": self.base_total,
            "adapter_parameters": self.adapter_params,
            "trainable_biases": self.bias_elements,
            "modules": {
                m.name: {
                    "modules": m.modules,
                    "shape": list(m.shape),
                    "rank": m.rank,
                    "added": m.added,
                    "dora_magnitudes": m.dora,
                }
                for m in self.modules
            },
            "modules_to_save": dict(self.saved),
            "converted_targets": list(self.converted),
        }


def lora_config(
    rank: int,
    targets: Sequence[str],
    target_parameters: Sequence[str] = (),
    bias: str = "none",
    modules_to_save: Sequence[str] = (),
    dora: bool = False,
) -> LoraConfig:
    """A checked :class:`LoraConfig`."""
    if rank < 1:
        raise UsageError(f"{option('--rank')} must be a positive whole number, not {rank}")
    if rank > MAX_SIZE:
        raise RangeError("rank", rank, f"expected at most {MAX_SIZE:,} (a rank is a size)")
    check_choice(bias, BIAS_MODES, "bias mode")
    if not targets and not target_parameters:
        targets = option("--targets", ["q_proj", "v_proj"])
        raise UsageError(f"name what to adapt: {targets} (or all-linear)")
    if ALL_LINEAR in targets and len(targets) > 1:
        raise UsageError("all-linear stands alone: it already names every linear layer")
    for name in (*targets, *target_parameters, *modules_to_save):
        if any(part.isdigit() for part in name.split(".")) or not name:
            raise UsageError(
                f"target {name!r}: costcalc adapts every layer alike; name a module "
                "(q_proj, self_attn.o_proj), not one layer's"
            )
    return LoraConfig(
        rank, tuple(targets), tuple(target_parameters), bias, tuple(modules_to_save), dora
    )


def family_names(family: str | None) -> FamilyNames:
    """The names of ``family`` (Llama's for costcalc's own models), or an error."""
    if family is None:
        return LLAMA
    if family not in FAMILY_NAMES:
        raise UsageError(
            f"costcalc does not know the module names of the {family} family, so cannot match "
            "LoRA targets; known: " + ", ".join(sorted(FAMILY_NAMES))
        )
    return FAMILY_NAMES[family]


def _resolve(
    config: LoraConfig, names: FamilyNames, found: list[Site]
) -> tuple[set[str], dict[str, int], tuple[str, ...]]:
    """Module targets, parameter targets (with their rank) and the targets peft converted, after
    ``all-linear`` and peft's conversion of transformers 4 MoE names."""
    linear = [s for s in found if s.kind == "linear"]
    parameters = dict.fromkeys(config.target_parameters, config.rank)
    if config.targets == (ALL_LINEAR,):
        if not names.converted:
            return {s.path for s in linear}, parameters, ()
        targets = {s.path.split(".")[-1] for s in linear} | set(names.converted)
    else:
        targets = set(config.targets)
    remaining = set()
    converted = []
    for target in sorted(targets):
        old = next((o for o in names.converted if _hits(target, o)), None)
        if old is None:
            remaining.add(target)
            continue
        converted.append(target)
        generic, together = names.converted[old]
        missing = [name for name in together if not any(_hits(t, name) for t in targets)]
        if missing:
            raise UsageError(
                f"target {target!r} names experts fused with {', '.join(missing)} in "
                f"transformers 5 ({GATE_UP.split('.', 1)[1]}); peft {PEFT_VERSION} needs them "
                "targeted together"
            )
        parameters[PEFT_PARAMETERS[generic]] = config.rank * len(together)
    return remaining, parameters, tuple(converted)


def _param_key(path: str) -> str:
    return ".".join(path.split(".")[-2:])


def _weight_path(site: Site) -> str:
    """The path of a site's weight, as ``target_parameters`` match it (a linear layer's too)."""
    return site.path if site.kind == "parameter" else f"{site.path}.weight"


def _magnitudes(site: Site) -> int:
    """DoRA's magnitude vector: out for a linear layer, the width E of a (V, E) table."""
    return site.shape[1] if site.kind == "embedding" else site.shape[0]


def _added(site: Site, rank: int, dora: bool) -> int:
    """Parameters LoRA adds to one copy: r (in + out) (+ DoRA's magnitudes), r (V + E) for a
    table; X r (a + b) for X stacked experts."""
    if len(site.shape) == 3:
        experts, a, b = site.shape
        return experts * rank * (a + b)
    out, inp = site.shape
    return rank * (inp + out) + (_magnitudes(site) if dora else 0)


def lora_report(spec: ModelSpec, family: str | None, config: LoraConfig) -> LoraReport:
    """What ``config`` adds to and trains in ``spec``, as peft counts it."""
    names = family_names(family)
    found = sites(spec, names)
    module_targets, parameter_targets, converted = _resolve(config, names, found)
    # index of each adapted site in ``found`` -> its rank: a site hit by two targets is one
    ranks: dict[int, int] = {}
    by_weight: set[int] = set()  # sites adapted through target_parameters (ParamWrapper)
    all_linear = config.targets == (ALL_LINEAR,)
    for target in sorted(module_targets):
        hit = [
            i
            for i, s in enumerate(found)
            if s.kind in ("linear", "head", "embedding")
            and _hits(s.path, target)
            and not (all_linear and s.kind == "head")
        ]
        if not hit:
            raise UsageError(_unmatched(target, found, "linear"))
        ranks.update(dict.fromkeys(hit, config.rank))
    for target, rank in sorted(parameter_targets.items()):
        hit = [i for i, s in enumerate(found) if _hits(_weight_path(s), target)]
        if not hit and target in config.target_parameters:
            raise UsageError(_unmatched(target, found, "parameter"))
        if config.dora:
            raise UsageError(
                f"DoRA does not adapt {target}: peft {PEFT_VERSION} has no DoRA for stacked "
                "experts or bare weights (lora.ParamWrapper)"
            )
        ranks.update({i: max(rank, ranks.get(i, 0)) for i in hit})
        by_weight.update(i for i in hit if found[i].kind != "parameter")
    if not ranks:
        raise UsageError(
            f"nothing to adapt: peft {PEFT_VERSION} converts {', '.join(converted)} (transformers "
            "4 MoE names) to weights this model does not have; name its own modules"
        )
    chosen: dict[str, list[tuple[Site, int]]] = {}
    for i, rank in ranks.items():
        name = _param_key(_weight_path(found[i])) if i in by_weight else found[i].name
        chosen.setdefault(name, []).append((found[i], rank))
    _check_mamba(family, chosen)
    modules = tuple(_adapted(name, hits, config.dora) for name, hits in sorted(chosen.items()))
    adapted = {s.generic for hits in chosen.values() for s, _ in hits}
    tensors = parameter_tensors(spec)
    biases = [
        t
        for t in tensors
        if _trained_bias(t, config.bias, adapted)
        and t.name.removesuffix(".bias") not in names.loose_biases
    ]
    saved = tuple((name, _saved(name, found, tensors)) for name in config.modules_to_save)
    return LoraReport(
        config=config,
        base_total=total_params(spec),
        modules=modules,
        saved=saved,
        bias_elements=sum(t.elements for t in biases),
        adapter_tensors=sum(
            s.copies * (2 + (config.dora and s.kind != "parameter"))
            for hits in chosen.values()
            for s, _ in hits
        ),
        bias_tensors=sum(t.copies for t in biases),
        saved_tensors=sum(
            t.copies
            for name in config.modules_to_save
            for t in _saved_tensors(name, found, tensors)
        ),
        converted=converted,
        adapter_shapes=tuple(
            (shape, s.copies)
            for hits in chosen.values()
            for s, r in hits
            for shape in adapter_shapes(s, r, config.dora)
        ),
        saved_shapes=tuple(
            (t.shape, t.copies)
            for name in config.modules_to_save
            for t in _saved_tensors(name, found, tensors)
        ),
    )


def _check_mamba(family: str | None, chosen: dict[str, list[tuple[Site, int]]]) -> None:
    """peft's refusal of ``out_proj`` and ``conv1d`` in Mamba-based model types."""
    refused = sorted(
        s.path
        for hits in chosen.values()
        for s, _ in hits
        if s.path.split(".")[-1] in MAMBA_REFUSED
    )
    if family in MAMBA_MODEL_TYPES and refused:
        raise UsageError(
            f"peft {PEFT_VERSION} refuses LoRA on {', '.join(refused)} in {family} models (no "
            f"module named {' or '.join(MAMBA_REFUSED)} in Mamba-based models); name the other "
            "layers (all-linear includes them)"
        )


def adapter_shapes(site: Site, rank: int, dora: bool) -> list[Shape]:
    """The tensors peft adds to one copy of ``site``: a linear layer (out, in) or a router
    weight gets ``lora_A`` (r, in) and ``lora_B`` (out, r), and with DoRA a magnitude (out,);
    a table (V, E) ``lora_embedding_A`` (r, V) and ``lora_embedding_B`` (E, r), DoRA (E,);
    stacked experts (X, a, b) A (X r, b) and B (a, X r)."""
    if len(site.shape) == 3:
        experts, a, b = site.shape
        return [(experts * rank, b), (a, experts * rank)]
    out, inp = site.shape
    if site.kind == "embedding":
        return [(rank, out), (inp, rank)] + ([(inp,)] if dora else [])
    return [(rank, inp), (out, rank)] + ([(out,)] if dora and site.kind != "parameter" else [])


def _adapted(name: str, hits: list[tuple[Site, int]], dora: bool) -> AdaptedModule:
    site, rank = hits[0]
    return AdaptedModule(
        name=name,
        modules=sum(s.copies for s, _ in hits),
        rank=rank,
        added=sum(s.copies * _added(s, r, dora) for s, r in hits),
        dora=sum(s.copies * _magnitudes(s) for s, _ in hits if dora and len(s.shape) == 2),
        shape=site.shape,
    )


def _trained_bias(tensor: Tensor, mode: str, adapted: set[str]) -> bool:
    """Whether a base tensor is a bias the mode trains: every ``.bias`` for ``all``; those of
    adapted modules for ``lora_only``."""
    if not tensor.name.endswith(".bias") or mode == "none":
        return False
    return mode == "all" or tensor.name.removesuffix(".bias") in adapted


def _saved_tensors(name: str, found: list[Site], tensors: Iterable[Tensor]) -> list[Tensor]:
    """The tensors of the model-level module ``name`` (the token or position table, the LM
    head, tied or not): its weight and bias."""
    site = next((s for s in found if s.kind in ("head", "embedding") and s.path == name), None)
    if site is None:
        known = sorted(s.path for s in found if s.kind in ("head", "embedding"))
        raise UsageError(
            f"{option('--modules-to-save', name)}: costcalc counts saved copies of the token "
            f"and position tables and the LM head; this model's: {', '.join(known)}"
        )
    weight = Tensor(f"{site.generic}.weight", site.shape, "model")
    bias = [t for t in tensors if t.name == f"{site.generic}.bias"]
    return [weight, *bias]


def _saved(name: str, found: list[Site], tensors: Iterable[Tensor]) -> int:
    """Parameters of the trainable copy of ``name``."""
    return sum(t.elements for t in _saved_tensors(name, found, list(tensors)))


def _unmatched(target: str, found: list[Site], kind: str) -> str:
    """Which names exist, when a target matches none."""
    if kind == "linear":
        known = sorted({s.path for s in found if s.kind != "parameter"})
        return (
            f"target {target!r} matches no linear layer or table of this model; its: "
            + ", ".join(known)
            + " (or all-linear; stacked experts and bare router weights go in "
            + f"{option('--target-parameters')})"
        )
    known = sorted({_param_key(s.path) for s in found if s.kind == "parameter"})
    return f"target parameter {target!r} matches no stacked or bare weight of this model" + (
        f"; its: {', '.join(known)}" if known else " (it has none)"
    )
