"""peft's module names: how a family names the modules that costcalc's generic tensor names
stand for, and the pieces several families share.

Each family module (:mod:`costcalc.formats.families`) declares ``PEFT_NAMES``: ``model_type`` ->
its :class:`FamilyNames`, beside the translators of ``FAMILIES``; :mod:`costcalc.lora` matches
LoRA targets against them. The names are transformers 5's module paths, as
``model.named_modules()`` gives them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

LLAMA_PREFIXES = {"attn": "self_attn"}
MAMBA_REFUSED = ("out_proj", "conv1d")
"""The modules peft refuses LoRA on in the Mamba-based model types
(``_check_lora_target_modules_mamba``): their families' ``refused``."""


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
    refused: tuple[str, ...] = ()
    """Module names peft refuses to adapt in this model type (``out_proj`` and ``conv1d`` in the
    Mamba-based ones, ``_check_lora_target_modules_mamba``), ``all-linear`` included."""

    def path(self, generic: str) -> str:
        """The family's module path for a generic one."""
        if generic in self.renames:
            return self.renames[generic]
        first, _, rest = generic.partition(".")
        first = self.prefixes.get(first, first)
        return f"{first}.{rest}" if rest and first else (rest or first)


def llama_names(
    prefixes: dict[str, str] | None = None,
    renames: dict[str, str] | None = None,
    router_linear: bool = False,
    converted: dict[str, tuple[str, tuple[str, ...]]] | None = None,
    stacked_experts: bool = True,
    loose_biases: Iterable[str] = (),
    module_per_set: bool = False,
    refused: tuple[str, ...] = (),
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
        refused,
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

ROUTER_GATE = {"mlp.router": "mlp.gate"}
GPT2_MLP = {"mlp.up_proj": "mlp.c_fc", "mlp.down_proj": "mlp.c_proj"}
GPT2_CROSS = {
    "cross_attn.q_proj": "crossattention.q_attn",
    "cross_attn.kv_proj": "crossattention.c_attn",
    "cross_attn.o_proj": "crossattention.c_proj",
}
"""GPT-2's and GPT-BigCode's cross-attention (``add_cross_attention``): ``crossattention``."""
ENCODER_ATTN = {
    **{f"cross_attn.{p}": f"encoder_attn.{p}" for p in ("q_proj", "k_proj", "v_proj")},
    "cross_attn.o_proj": "encoder_attn.out_proj",
}
"""XGLM's and Kosmos-2's cross-attention (``add_cross_attention``): ``encoder_attn``."""
GPT2 = llama_names(
    {"attn": "attn"},
    {
        "attn.qkv_proj": "attn.c_attn",
        "attn.o_proj": "attn.c_proj",
        **GPT2_CROSS,
        **GPT2_MLP,
        "embed_tokens": "wte",
        "embed_positions": "wpe",
    },
)
NEOX_MLP = {"mlp.up_proj": "mlp.dense_h_to_4h", "mlp.down_proj": "mlp.dense_4h_to_h"}
GRANITE_SHARED_MLP = {
    "mlp.shared_expert.gate_up_proj": "shared_mlp.input_linear",
    "mlp.shared_expert.down_proj": "shared_mlp.output_linear",
}
OPT_RENAMES = {"attn.o_proj": "self_attn.out_proj", "mlp.up_proj": "fc1", "mlp.down_proj": "fc2"}
LLAMA = llama_names(renames=ROUTER_GATE)
QWEN2_MOE = llama_names(renames=ROUTER_GATE, converted=QWEN2_MOE_CONVERTED)
"""Families transformers converts as Qwen2-MoE (``_MODEL_TO_CONVERSION_PATTERN``); peft converts
their targets, but not Qwen2-MoE's own, which it does not list."""
SHARED_EXPERTS = {
    f"mlp.shared_expert.{p}": f"mlp.shared_experts.{p}"
    for p in ("gate_proj", "up_proj", "down_proj", "gate_up_proj")
}
DEEPSEEK = llama_names(renames={**ROUTER_GATE, **SHARED_EXPERTS}, converted=QWEN2_MOE_CONVERTED)
DEEPSEEK_NAMES = llama_names(renames=DEEPSEEK.renames)
"""DeepSeek's module names in a family transformers has no checkpoint conversion for
(``conversion_mapping._MODEL_TO_CONVERSION_PATTERN``): peft rewrites no old expert names."""
FEED_FORWARD = {"mlp": "feed_forward"}
LFM2_RENAMES = {
    "attn.o_proj": "self_attn.out_proj",
    "mlp.gate_proj": "feed_forward.w1",
    "mlp.up_proj": "feed_forward.w3",
    "mlp.down_proj": "feed_forward.w2",
}
