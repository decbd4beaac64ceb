"""Generate tests/golden/lora_reference.json: LoRA parameter counts as peft reports them.

Run by hand (pytest does not collect this file); it needs torch, transformers and peft, and reuses
make_golden.py's model building (fixture configs on the meta device, no downloads):

    pip install torch==2.13.0 transformers==5.24.0 peft==0.21.2
    python tests/reference/make_lora_reference.py                 # every case and fixture
    python tests/reference/make_lora_reference.py CASE [CASE ...]  # those cases, their fixtures
    python tests/reference/make_lora_reference.py FIXTURE [...]    # those fixtures' listings

Results are merged into the existing output file. A variant (``VARIANTS``) is a fixture with
keys set, stored in the output beside its cases so that the tests load the same config.

Each case wraps a fresh model with ``get_peft_model(model, LoraConfig(...))`` and records
``get_nb_trainable_parameters()`` (trainable, total) (or the ``ValueError`` peft raises) and,
per target name, the modules peft adapted and the parameters it added (LoRA A/B, DoRA
magnitudes, LoRA-B biases), plus the parameters of each ``modules_to_save`` copy. MoE experts,
stacked as parameters in transformers 5, are targeted with ``target_parameters`` (the name, as
peft matches it, is the parameter path's suffix).
"""

from __future__ import annotations

import datetime
import json
import re
import sys

import peft
import torch
import transformers
from make_golden import (
    FIXTURES,
    ROOT,
    build_model,
    causal_lm_class,
    fixture_path,
    load_config,
    model_kwargs,
)
from make_golden_families import MODELS, build_text_decoder, drop_uncalled, text_holder
from peft import LoraConfig, get_peft_model
from peft.tuners.lora import LoraLayer
from torch import nn
from transformers import CONFIG_MAPPING, MODEL_FOR_CAUSAL_LM_MAPPING
from transformers.pytorch_utils import Conv1D

sys.path.insert(0, str(ROOT))
from tests.differential_configs import merged

OUTPUT = ROOT / "tests" / "golden" / "lora_reference.json"
GENERATOR = "tests/reference/make_lora_reference.py"
MULTIMODAL = {"gemma-3-4b"}
"""Fixtures whose model holds more than the text decoder costcalc counts."""

VARIANTS: dict[str, tuple[str, dict]] = {
    "gpt2+cross": ("gpt2", {"add_cross_attention": True}),
    "gpt-sw3-356m+cross": ("gpt-sw3-356m", {"add_cross_attention": True}),
    "starcoderbase-1b+cross": (
        "starcoderbase-1b",
        {"multi_query": False, "add_cross_attention": True},
    ),
    "xglm-564m+cross": ("xglm-564m", {"add_cross_attention": True}),
    "kosmos-2-defaults+cross": (
        "kosmos-2-defaults",
        {"text_config": {"add_cross_attention": True}},
    ),
}
"""Fixtures with keys set (a nested config's keys as a dict): variant -> (fixture, keys). Here
the cross-attention blocks of ``add_cross_attention`` (GPT-2's ``crossattention``, XGLM's and
Kosmos-2's ``encoder_attn``)."""


def _fixture(name: str) -> str:
    """The fixture a name (a fixture or a variant) is built from."""
    return VARIANTS[name][0] if name in VARIANTS else name


def _config(name: str):
    """A fixture's (or a variant's) transformers config."""
    if name not in VARIANTS:
        return load_config(name)
    fixture, changes = VARIANTS[name]
    data = merged(json.loads(fixture_path(fixture).read_text()), changes)
    return CONFIG_MAPPING[data["model_type"]].from_dict(data)


# (case id, fixture or variant, LoraConfig keywords)
CASES: list[tuple[str, str, dict]] = [
    ("gpt2-c_attn-r8", "gpt2", {"r": 8, "target_modules": ["c_attn"]}),
    ("gpt2-c_proj-r4-bias-all", "gpt2", {"r": 4, "target_modules": ["c_proj"], "bias": "all"}),
    ("gpt2-all-linear-r16", "gpt2", {"r": 16, "target_modules": "all-linear"}),
    (
        "gpt2-c_attn-r8-lm_head",
        "gpt2",
        {"r": 8, "target_modules": ["c_attn"], "modules_to_save": ["lm_head"]},
    ),
    ("qwen2.5-0.5b-qv-r8", "qwen2.5-0.5b", {"r": 8, "target_modules": ["q_proj", "v_proj"]}),
    (
        "qwen2.5-0.5b-qkvo-r16-lora_only",
        "qwen2.5-0.5b",
        {"r": 16, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"], "bias": "lora_only"},
    ),
    (
        "qwen2.5-0.5b-all-linear-r8-dora",
        "qwen2.5-0.5b",
        {"r": 8, "target_modules": "all-linear", "use_dora": True},
    ),
    (
        "qwen2.5-0.5b-qv-r8-lm_head-embed",
        "qwen2.5-0.5b",
        {
            "r": 8,
            "target_modules": ["q_proj", "v_proj"],
            "modules_to_save": ["lm_head", "embed_tokens"],
        },
    ),
    (
        "qwen2.5-0.5b-embed-q-r8-dora",
        "qwen2.5-0.5b",
        {"r": 8, "target_modules": ["embed_tokens", "q_proj"], "use_dora": True},
    ),
    ("gpt2-wte-r4", "gpt2", {"r": 4, "target_modules": ["wte"]}),
    ("llama-3.2-1b-all-linear-r16", "llama-3.2-1b", {"r": 16, "target_modules": "all-linear"}),
    (
        "llama-3.2-1b-qv-r64-dora-lm_head",
        "llama-3.2-1b",
        {
            "r": 64,
            "target_modules": ["q_proj", "v_proj"],
            "use_dora": True,
            "modules_to_save": ["lm_head"],
        },
    ),
    ("tiny-mixtral-qkvo-r4", "tiny-mixtral", {"r": 4, "target_modules": ["q_proj", "o_proj"]}),
    ("tiny-mixtral-all-linear-r8", "tiny-mixtral", {"r": 8, "target_modules": "all-linear"}),
    (
        "tiny-mixtral-experts-r4",
        "tiny-mixtral",
        {
            "r": 4,
            "target_modules": ["q_proj", "v_proj"],
            "target_parameters": ["experts.gate_up_proj", "experts.down_proj"],
        },
    ),
    ("qwen3-0.6b-all-linear-r8", "qwen3-0.6b", {"r": 8, "target_modules": "all-linear"}),
    (
        "qwen3-0.6b-gate-up-down-r32-dora",
        "qwen3-0.6b",
        {"r": 32, "target_modules": ["gate_proj", "up_proj", "down_proj"], "use_dora": True},
    ),
    (
        "gemma-2-2b-qv-r8-bias-all",
        "gemma-2-2b",
        {"r": 8, "target_modules": ["q_proj", "v_proj"], "bias": "all"},
    ),
    (
        "qwen3-30b-a3b-gate-up-down-r8",
        "qwen3-30b-a3b",
        {"r": 8, "target_modules": ["gate_proj", "up_proj", "down_proj"]},
    ),
    (
        "qwen1.5-moe-a2.7b-all-linear-r4",
        "qwen1.5-moe-a2.7b",
        {"r": 4, "target_modules": "all-linear"},
    ),
    (
        "gpt-oss-20b-router-experts-r4-lora_only",
        "gpt-oss-20b",
        {
            "r": 4,
            "target_modules": ["q_proj"],
            "target_parameters": ["router.weight", "experts.gate_up_proj"],
            "bias": "lora_only",
        },
    ),
    ("phi-2-dense-fc1-fc2-r8", "phi-2", {"r": 8, "target_modules": ["dense", "fc1", "fc2"]}),
    (
        "pythia-160m-query_key_value-r8-bias-lora_only",
        "pythia-160m",
        {"r": 8, "target_modules": ["query_key_value"], "bias": "lora_only"},
    ),
]

ALL_LINEAR = {"r": 16, "target_modules": "all-linear"}
QKVO = ["q_proj", "k_proj", "v_proj", "o_proj"]
MLA = ["q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"]
EXPERTS = ["experts.gate_up_proj", "experts.down_proj"]
GATED_DELTANET_HYBRID = [
    *("in_proj_a", "in_proj_b", "in_proj_qkv", "in_proj_z"),
    *("k_proj", "o_proj", "out_proj", "q_proj", "v_proj"),
]
"""The linear layers of a hybrid of gated DeltaNet and attention blocks (Qwen3.5, Lara Mini)."""
CASES += [
    ("gemma-4-e2b-all-linear-r16", "gemma-4-e2b", ALL_LINEAR),
    (
        "gemma-4-e2b-qkvo-r8-lm_head",
        "gemma-4-e2b",
        {"r": 8, "target_modules": QKVO, "modules_to_save": ["lm_head"]},
    ),
    (
        "gemma-4-e2b-per-layer-r8",
        "gemma-4-e2b",
        {
            "r": 8,
            "target_modules": [
                "per_layer_input_gate",
                "per_layer_projection",
                "per_layer_model_projection",
            ],
        },
    ),
    (
        "gemma-4-e2b-per-layer-table-r8",
        "gemma-4-e2b",
        {"r": 8, "target_modules": ["embed_tokens_per_layer", "q_proj"]},
    ),
    ("gemma-3n-e2b-it-all-linear-r16", "gemma-3n-e2b-it", ALL_LINEAR),
    (
        "gemma-3n-e2b-it-laurel-altup-r8",
        "gemma-3n-e2b-it",
        {
            "r": 8,
            "target_modules": [
                "linear_left",
                "linear_right",
                "modality_router",
                "prediction_coefs",
                "k_proj",
            ],
        },
    ),
    ("gemma-4-26b-a4b-all-linear-r16", "gemma-4-26b-a4b", ALL_LINEAR),
    (
        "gemma-4-26b-a4b-qv-router-experts-r4",
        "gemma-4-26b-a4b",
        {
            "r": 4,
            "target_modules": ["q_proj", "v_proj", "router.proj"],
            "target_parameters": EXPERTS,
        },
    ),
    ("deepseek-v3.2-exp-all-linear-r16", "deepseek-v3.2-exp", ALL_LINEAR),
    (
        "deepseek-v3.2-exp-mla-r8-lm_head",
        "deepseek-v3.2-exp",
        {"r": 8, "target_modules": MLA, "modules_to_save": ["lm_head"]},
    ),
    (
        "deepseek-v3.2-exp-experts-r4",
        "deepseek-v3.2-exp",
        {"r": 4, "target_modules": ["q_a_proj"], "target_parameters": [*EXPERTS, "gate.weight"]},
    ),
    ("minimax-m2-all-linear-r16", "minimax-m2", ALL_LINEAR),
    ("minimax-m2-qkvo-r8", "minimax-m2", {"r": 8, "target_modules": QKVO}),
    (
        "minimax-m2-experts-r4",
        "minimax-m2",
        {"r": 4, "target_modules": ["q_proj"], "target_parameters": [*EXPERTS, "gate.weight"]},
    ),
    (
        "minimax-m2-w1-w3-w2-gate-r4",
        "minimax-m2",
        {"r": 4, "target_modules": ["w1", "w3", "w2", "gate"]},
    ),
    ("tiny-qwen4-exp-all-linear-r16", "tiny-qwen4-exp", ALL_LINEAR),
    (
        "tiny-qwen4-exp-indexer-streams-r4",
        "tiny-qwen4-exp",
        {
            "r": 4,
            "target_modules": ["index_qk_proj", "input_mix_weight_down", "in_proj_qkv", "q_proj"],
        },
    ),
    ("hy-v4-defaults-all-linear-r16", "hy-v4-defaults", ALL_LINEAR),
    (
        "hy-v4-defaults-gates-indexer-r8",
        "hy-v4-defaults",
        {"r": 8, "target_modules": ["gate_proj", "q_a_proj", "wq_b", "weights_proj"]},
    ),
    ("hy-v4-vl-defaults-text-all-linear-r16", "hy-v4-vl-defaults", ALL_LINEAR),
    ("glm-4.7-flash-all-linear-r16", "glm-4.7-flash", ALL_LINEAR),
    ("glm-4.7-flash-mla-r8", "glm-4.7-flash", {"r": 8, "target_modules": MLA}),
    (
        "glm-4.7-flash-experts-r4",
        "glm-4.7-flash",
        {"r": 4, "target_modules": ["o_proj"], "target_parameters": EXPERTS},
    ),
    ("granite-4.0-h-tiny-all-linear-r16", "granite-4.0-h-tiny", ALL_LINEAR),
    (
        "granite-4.0-h-tiny-qkvo-mamba-r8",
        "granite-4.0-h-tiny",
        {"r": 8, "target_modules": [*QKVO, "in_proj", "out_proj"]},
    ),
    (
        "granite-4.0-h-tiny-experts-r4",
        "granite-4.0-h-tiny",
        {
            "r": 4,
            "target_modules": ["input_linear", "output_linear"],
            "target_parameters": [*EXPERTS, "router.weight"],
        },
    ),
    ("falcon-h1-7b-all-linear-r16", "falcon-h1-7b", ALL_LINEAR),
    (
        "falcon-h1-7b-qkvo-r8-lm_head",
        "falcon-h1-7b",
        {"r": 8, "target_modules": QKVO, "modules_to_save": ["lm_head"]},
    ),
    (
        "falcon-h1-7b-qkv-in_proj-mlp-r8",
        "falcon-h1-7b",
        {
            "r": 8,
            "target_modules": [
                "q_proj",
                "k_proj",
                "v_proj",
                "in_proj",
                "gate_proj",
                "up_proj",
                "down_proj",
            ],
        },
    ),
    ("olmo-1b-all-linear-r16", "olmo-1b", ALL_LINEAR),
    ("olmo-1b-qkvo-r8-dora", "olmo-1b", {"r": 8, "target_modules": QKVO, "use_dora": True}),
    ("glm-4-9b-chat-hf-all-linear-r16", "glm-4-9b-chat-hf", ALL_LINEAR),
    (
        "glm-4-9b-chat-hf-qkv-r8-lora_only",
        "glm-4-9b-chat-hf",
        {"r": 8, "target_modules": ["q_proj", "k_proj", "v_proj"], "bias": "lora_only"},
    ),
    ("hunyuan-a13b-all-linear-r16", "hunyuan-a13b", ALL_LINEAR),
    ("hunyuan-a13b-qkvo-r8", "hunyuan-a13b", {"r": 8, "target_modules": QKVO}),
    (
        "hunyuan-a13b-experts-r4",
        "hunyuan-a13b",
        {"r": 4, "target_modules": ["wg"], "target_parameters": EXPERTS},
    ),
    ("hunyuan-a13b-gate-q-r4", "hunyuan-a13b", {"r": 4, "target_modules": ["gate", "q_proj"]}),
    ("hunyuan-a13b-gate-r4", "hunyuan-a13b", {"r": 4, "target_modules": ["gate"]}),
    ("dots.llm1.base-all-linear-r16", "dots.llm1.base", ALL_LINEAR),
    (
        "dots.llm1.base-experts-r4",
        "dots.llm1.base",
        {"r": 4, "target_modules": QKVO, "target_parameters": EXPERTS},
    ),
    ("lfm2-8b-a1b-all-linear-r16", "lfm2-8b-a1b", ALL_LINEAR),
    (
        "lfm2-8b-a1b-attn-experts-r8",
        "lfm2-8b-a1b",
        {
            "r": 8,
            "target_modules": ["q_proj", "k_proj", "v_proj", "out_proj"],
            "target_parameters": [*EXPERTS, "gate.weight"],
        },
    ),
    ("kimi-linear-48b-a3b-all-linear-r16", "kimi-linear-48b-a3b", ALL_LINEAR),
    ("kimi-linear-48b-a3b-qkvo-r8", "kimi-linear-48b-a3b", {"r": 8, "target_modules": QKVO}),
    (
        "kimi-linear-48b-a3b-experts-r4",
        "kimi-linear-48b-a3b",
        {"r": 4, "target_modules": ["o_proj"], "target_parameters": EXPERTS},
    ),
    ("mellum2-12b-a2.5b-all-linear-r16", "mellum2-12b-a2.5b", ALL_LINEAR),
    ("mamba-130m-all-linear-r16", "mamba-130m", ALL_LINEAR),
    (
        "mamba-130m-x-dt-r8-lora_only",
        "mamba-130m",
        {"r": 8, "target_modules": ["x_proj", "dt_proj"], "bias": "lora_only"},
    ),
    (
        "mamba-130m-in-out-r8-lm_head",
        "mamba-130m",
        {"r": 8, "target_modules": ["in_proj", "out_proj"], "modules_to_save": ["lm_head"]},
    ),
]
CASES += [
    (f"{fixture}-all-linear-r16", fixture, ALL_LINEAR)
    for fixture in (
        "deepseek-v4-flash",
        "mistral-large-4-defaults",
        "glm-5.3-flash-defaults",
        "flexolmo-7x7b-1t",
        "mimo-v2-flash",
        "bamba-9b",
        "olmo-hybrid-7b",
        "lfm3-1.7b",
        "recurrentgemma-2b",
        "internlm3-8b-instruct",
        "exaone-3.0-7.8b",
        "nanochat-d32",
        "codegen-350m-mono",
        "xglm-564m",
        "biogpt",
        "gpt-neox-japanese-2.7b",
        "apertus1p5-defaults",
        "hyperclovax-defaults",
        "granitemoeshared-1b",
        "sarvam-30b",
        "cosmos3-edge-defaults",
        "deepseek-ocr-2",
        "kosmos-2-defaults",
        "zamba2-1.2b",
        "tiny-zamba2",
        "zamba-7b-v1",
        "tiny-zamba",
    )
]
# Text decoders of Qwen's vision-language and omni models, their targets named.
CASES += [
    (
        "qwen2.5-vl-7b-instruct-attn-mlp-r16",
        "qwen2.5-vl-7b-instruct",
        {
            "r": 16,
            "target_modules": [
                "q_proj",
                "k_proj",
                "v_proj",
                "o_proj",
                "gate_proj",
                "up_proj",
                "down_proj",
            ],
        },
    ),
    (
        "qwen3-vl-30b-a3b-instruct-qkvo-r16",
        "qwen3-vl-30b-a3b-instruct",
        {"r": 16, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]},
    ),
    (
        "qwen3-omni-30b-a3b-instruct-qv-experts-r8",
        "qwen3-omni-30b-a3b-instruct",
        {"r": 8, "target_modules": ["q_proj", "v_proj", "gate_proj", "up_proj", "down_proj"]},
    ),
]
CASES += [
    ("jetmoe-8b-all-linear-r16", "jetmoe-8b", ALL_LINEAR),
    ("minimax-text-01-all-linear-r16", "minimax-text-01", ALL_LINEAR),
    ("rwkv-4-169m-pile-all-linear-r16", "rwkv-4-169m-pile", ALL_LINEAR),
    ("xlstm-7b-all-linear-r16", "xlstm-7b", ALL_LINEAR),
    (
        "tiny-xlstm-gates-proj-up-r4",
        "tiny-xlstm",
        {"r": 4, "target_modules": ["q", "v", "igate_preact", "proj_up", "proj_down"]},
    ),
    (
        "rwkv-4-169m-pile-key-receptance-r8-all",
        "rwkv-4-169m-pile",
        {"r": 8, "target_modules": ["key", "receptance"], "bias": "all"},
    ),
    (
        "minimax-text-01-lightning-w1-w3-w2-gate-r4",
        "minimax-text-01",
        {"r": 4, "target_modules": ["qkv_proj", "output_gate", "w1", "w3", "w2", "gate"]},
    ),
    (
        "jetmoe-8b-kv-experts-r4-all",
        "jetmoe-8b",
        {
            "r": 4,
            "target_modules": ["kv_proj", "layer"],
            "target_parameters": ["input_linear.weight", "output_linear.weight"],
            "bias": "all",
        },
    ),
]
CASES += [
    # a shared block reused at several depths: peft adapts each use's module
    ("zamba2-2.7b-q-r8", "zamba2-2.7b", {"r": 8, "target_modules": ["q_proj"]}),
    ("zamba-7b-v1-qv-r8", "zamba-7b-v1", {"r": 8, "target_modules": ["q_proj", "v_proj"]}),
    (
        "tiny-zamba2-gate_up-linear-in-r4",
        "tiny-zamba2",
        {"r": 4, "target_modules": ["gate_up_proj", "linear", "in_proj"]},
    ),
    # layer modules run at several depths: peft adapts each module once
    ("hrm-text-defaults-all-linear-r16", "hrm-text-defaults", ALL_LINEAR),
    (
        "hrm-text-defaults-q-gate-r8",
        "hrm-text-defaults",
        {"r": 8, "target_modules": ["q_proj", "gate_proj"]},
    ),
    (
        "hrm-text-one-high-cycle-q-lora_only",
        "hrm-text-one-high-cycle",
        {"r": 4, "target_modules": ["q_proj"], "bias": "lora_only"},
    ),
    (
        "hrm-text-one-high-cycle-gate-o-lora_only",
        "hrm-text-one-high-cycle",
        {"r": 4, "target_modules": ["self_attn.gate_proj", "o_proj"], "bias": "lora_only"},
    ),
    ("dory-defaults-all-linear-r16", "dory-defaults", ALL_LINEAR),
    ("doge-defaults-all-linear-r16", "doge-defaults", ALL_LINEAR),
    ("doge-cdmoe-small-all-linear-r16", "doge-cdmoe-small", ALL_LINEAR),
    (
        "doge-cdmoe-small-dt-router-embed-r4-lora_only",
        "doge-cdmoe-small",
        {
            "r": 4,
            "target_modules": ["dt_proj", "router_gate", "up_embed", "gate_proj"],
            "bias": "lora_only",
        },
    ),
    (
        "dory-three-loops-qv-down-r4-lora_only",
        "dory-three-loops",
        {"r": 4, "target_modules": ["q_proj", "v_proj", "down_proj"], "bias": "lora_only"},
    ),
]
CASES += [
    (
        "mamba-130m-in-r8-embeddings",
        "mamba-130m",
        {"r": 8, "target_modules": ["in_proj"], "modules_to_save": ["embeddings"]},
    ),
    (
        "gpt-neox-japanese-2.7b-dense-r8-lora_only",
        "gpt-neox-japanese-2.7b",
        {"r": 8, "target_modules": ["dense"], "bias": "lora_only"},
    ),
    (
        "afmoe-defaults-kvo-router-r8-lora_only",
        "afmoe-defaults",
        {
            "r": 8,
            "target_modules": ["k_proj", "v_proj", "o_proj", "router.gate"],
            "bias": "lora_only",
        },
    ),
    (
        "gpt-neox-japanese-2.7b-dense-r8-bias-all",
        "gpt-neox-japanese-2.7b",
        {"r": 8, "target_modules": ["dense"], "bias": "all"},
    ),
    (
        "afmoe-defaults-o-r8-bias-all",
        "afmoe-defaults",
        {"r": 8, "target_modules": ["o_proj"], "bias": "all"},
    ),
    (
        "gpt-oss-20b-o-r8-bias-all",
        "gpt-oss-20b",
        {"r": 8, "target_modules": ["o_proj"], "bias": "all"},
    ),
    (
        "biogpt-fc1-fc2-r8-output_projection",
        "biogpt",
        {"r": 8, "target_modules": ["fc1", "fc2"], "modules_to_save": ["output_projection"]},
    ),
]
GLM4V_LINEAR = [*QKVO, "gate_up_proj", "down_proj"]
"""Every linear layer of GLM-4V's text decoder but the head, named (``all-linear`` on the
stand-alone decoder would take the head as well: peft leaves it out of PreTrainedModels only)."""
CASES += [
    (f"{fixture}-linear-r16", fixture, {"r": 16, "target_modules": GLM4V_LINEAR})
    for fixture in ("glm-4.1v-9b-thinking", "glm-ocr", "glm-image-defaults")
]
CASES += [
    (
        "tiny-step3p5-linear-r8",
        "tiny-step3p5",
        {"r": 8, "target_modules": [*QKVO, "g_proj", "gate_proj", "up_proj", "down_proj"]},
    ),
    (
        "tiny-step3p5-experts-r4",
        "tiny-step3p5",
        {"r": 4, "target_modules": ["g_proj"], "target_parameters": [*EXPERTS, "gate.weight"]},
    ),
    (
        "glm-4.5v-qkvo-mlp-r8",
        "glm-4.5v",
        {"r": 8, "target_modules": [*QKVO, "gate_proj", "up_proj", "down_proj"]},
    ),
    (
        "glm-4.5v-experts-r4",
        "glm-4.5v",
        {
            "r": 4,
            "target_modules": ["q_proj", "v_proj"],
            "target_parameters": [*EXPERTS, "gate.weight"],
        },
    ),
]

CASES += [
    (
        "axk2-q-gate-norm-gates-r8",
        "axk2-defaults",
        {"r": 8, "target_modules": ["q_a_proj", "q_gate_proj", "o_proj", "fc1", "fc2"]},
    ),
    (
        "phi4-multimodal-qkv-gate-up-r8",
        "phi4-multimodal-defaults",
        {"r": 8, "target_modules": ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]},
    ),
]
CASES += [
    (f"{fixture}-all-linear-r16", fixture, ALL_LINEAR)
    for fixture in ("axk2-defaults", "phi4-multimodal-defaults")
]
CASES += [
    (
        f"{fixture}-experts-r4",
        fixture,
        {"r": 4, "target_modules": ["o_proj"], "target_parameters": EXPERTS},
    )
    for fixture in ("axk2-defaults", "hy-v4-defaults", "tiny-qwen4-exp")
]
CASES += [
    (
        "mistral-large-4-defaults-mla-experts-r8",
        "mistral-large-4-defaults",
        {
            "r": 8,
            "target_modules": ["q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"],
            "target_parameters": EXPERTS,
        },
    ),
    (
        "glm-5.3-flash-defaults-mla-experts-r8",
        "glm-5.3-flash-defaults",
        {"r": 8, "target_modules": MLA, "target_parameters": EXPERTS},
    ),
    (
        "hy-v4-vl-defaults-text-gates-experts-r8",
        "hy-v4-vl-defaults",
        {"r": 8, "target_modules": ["gate_proj", "q_a_proj"], "target_parameters": EXPERTS},
    ),
]

CASES += [
    (
        "llama-3.2-11b-vision-all-linear-r16",
        "llama-3.2-11b-vision-instruct",
        {"r": 16, "target_modules": "all-linear"},
    ),
    (
        "llama-3.2-11b-vision-self-q-cross-v-r8",
        "llama-3.2-11b-vision-instruct",
        {"r": 8, "target_modules": ["self_attn.q_proj", "cross_attn.v_proj"]},
    ),
]

CASES += [
    (
        "ernie-4.5-vl-28b-a3b-q-gate-r8",
        "ernie-4.5-vl-28b-a3b",
        {"r": 8, "target_modules": ["q_proj", "gate_proj"]},
    ),
    (
        "ernie-4.5-vl-28b-a3b-experts-r4",
        "ernie-4.5-vl-28b-a3b",
        {
            "r": 4,
            "target_modules": ["o_proj"],
            "target_parameters": ["vision_moe.experts.down_proj", "text_moe.gate.weight"],
        },
    ),
]

NAMED_FAMILIES: list[tuple[str, list[str], list[str]]] = [
    # every other registered model_type's fixture (``tiny-*`` where there is one), its attention
    # (or mixer) modules and its stacked experts and bare routers, named as the family names them
    ("apertus-8b", QKVO, []),  # apertus
    ("arcee-afm-4.5b", QKVO, []),  # arcee
    ("aria", QKVO, [*EXPERTS, "router.weight"]),  # aria_text
    (
        "axk1-defaults",
        ["kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "q_a_proj", "q_b_proj"],
        [*EXPERTS, "gate.weight"],
    ),  # axk1
    (
        "tiny-ling-hybrid",
        [
            "b_proj",
            "f_proj",
            "g_proj",
            "k_proj",
            "kv_a_proj_with_mqa",
            "kv_b_proj",
            "o_proj",
            "q_proj",
            "v_proj",
        ],
        [*EXPERTS, "gate.weight"],
    ),  # bailing_hybrid
    ("beam-defaults", QKVO, [*EXPERTS, "gate.weight"]),  # beam
    ("bitnet-b1.58-2b-4t", QKVO, []),  # bitnet
    ("bloom-560m", ["dense", "query_key_value"], []),  # bloom
    ("aya-23-8b", QKVO, []),  # cohere
    ("c4ai-command-r7b", QKVO, []),  # cohere2
    ("cohere2-moe-defaults", QKVO, [*EXPERTS, "gate.weight"]),  # cohere2_moe
    ("cohere-compass-text-defaults", QKVO, []),  # cohere_compass_text
    ("ctrl", ["Wk", "Wq", "Wv", "dense"], []),  # ctrl
    ("cwm", QKVO, []),  # cwm
    ("tiny-dbrx", ["Wqkv", "out_proj"], []),  # dbrx
    (
        "deepseek-v2-lite",
        ["kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "q_a_proj", "q_b_proj"],
        [*EXPERTS, "gate.weight"],
    ),  # deepseek_v2
    (
        "deepseek-v3",
        ["kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "q_a_proj", "q_b_proj"],
        [*EXPERTS, "gate.weight"],
    ),  # deepseek_v3
    ("diffllama-defaults", QKVO, []),  # diffllama
    (
        "dots3-note-defaults",
        [
            "g_proj",
            "kv_a_proj_with_mqa",
            "kv_b_proj",
            "o_proj",
            "q_a_proj",
            "q_b_proj",
            "weights_proj",
            "wk",
            "wq_b",
        ],
        [*EXPERTS, "gate.weight"],
    ),  # dots3_note_text
    ("emu3-chat", QKVO, []),  # emu3_text_model
    ("ernie-4.5-0.3b", QKVO, []),  # ernie4_5
    ("ernie-4.5-21b-a3b", QKVO, [*EXPERTS, "gate.weight"]),  # ernie4_5_moe
    ("exaone-4.0-1.2b", QKVO, []),  # exaone4
    ("exaone-moe-defaults", QKVO, [*EXPERTS, "gate.weight"]),  # exaone_moe
    ("falcon-40b", ["dense", "query_key_value"], []),  # falcon
    ("falcon-mamba-7b", ["dt_proj", "in_proj", "x_proj"], []),  # falcon_mamba
    ("flint-defaults", QKVO, [*EXPERTS, "gate.weight"]),  # flint
    ("gemma-2b", QKVO, []),  # gemma
    ("gemma-3-1b", QKVO, []),  # gemma3_text
    ("gemma4-unified-defaults", QKVO, []),  # gemma4_unified_text
    ("glm-4-9b-0414", QKVO, []),  # glm4
    ("glm-4.5-air", QKVO, [*EXPERTS, "gate.weight"]),  # glm4_moe
    (
        "glm-5",
        [
            "kv_a_proj_with_mqa",
            "kv_b_proj",
            "o_proj",
            "q_a_proj",
            "q_b_proj",
            "weights_proj",
            "wk",
            "wq_b",
        ],
        [*EXPERTS, "gate.weight"],
    ),  # glm_moe_dsa
    ("gpt-sw3-356m", ["c_attn", "c_proj"], []),  # gpt-sw3
    ("starcoderbase-1b", ["c_attn", "c_proj"], []),  # gpt_bigcode
    ("gpt-neo-125m", ["k_proj", "out_proj", "q_proj", "v_proj"], []),  # gpt_neo
    ("gpt-j-6b", ["k_proj", "out_proj", "q_proj", "v_proj"], []),  # gptj
    ("granite-3.1-2b", QKVO, []),  # granite
    ("granite4-vision-defaults", QKVO, []),  # granite4_vision_text
    ("granite-docling-defaults", QKVO, []),  # granite_docling_text
    ("granite-swash-2b", QKVO, []),  # granite_swa
    ("granite-3.1-1b-a400m", QKVO, [*EXPERTS, "router.weight"]),  # granitemoe
    ("granitemoe-swa-defaults", QKVO, [*EXPERTS, "router.weight"]),  # granitemoe_swa
    ("helium-1-2b", QKVO, []),  # helium
    ("hunyuan-mt-7b", QKVO, []),  # hunyuan_v1_dense
    ("hunyuanocr", QKVO, []),  # hunyuan_vl_text
    ("hy-v3-defaults", QKVO, [*EXPERTS, "gate.weight"]),  # hy_v3
    ("iquest-coder-v1-40b", QKVO, []),  # iquestcoder
    ("jais-2-8b", QKVO, []),  # jais2
    (
        "tiny-jamba",
        ["dt_proj", "in_proj", "k_proj", "o_proj", "out_proj", "q_proj", "v_proj", "x_proj"],
        [*EXPERTS, "router.weight"],
    ),  # jamba
    ("kolibri1-defaults", QKVO, [*EXPERTS, "gate.weight"]),  # kolibri1
    (
        "laguna-xs-2.1",
        ["g_proj", "k_proj", "o_proj", "q_proj", "v_proj"],
        [*EXPERTS, "gate.weight"],
    ),  # laguna
    (
        "tiny-lara-mini",
        GATED_DELTANET_HYBRID,
        [*EXPERTS, "gate.weight"],
    ),  # lara_mini
    ("tiny-lfm2", ["k_proj", "out_proj", "q_proj", "v_proj"], []),  # lfm2
    ("llama-4-scout", QKVO, EXPERTS),  # llama4_text
    ("tiny-mamba2", ["in_proj"], []),  # mamba2
    (
        "minicpm3-4b",
        ["kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "q_a_proj", "q_b_proj"],
        [],
    ),  # minicpm3
    ("minimax-m3", QKVO, [*EXPERTS, "gate.weight"]),  # minimax_m3_vl_text
    ("ministral-8b", QKVO, []),  # ministral
    ("ministral-3-8b", QKVO, []),  # ministral3
    ("mistral-7b-v0.1", QKVO, []),  # mistral
    (
        "mistral-small-4-defaults",
        ["kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "q_a_proj", "q_b_proj"],
        [*EXPERTS, "gate.weight"],
    ),  # mistral4
    ("molmo2-8b-defaults", QKVO, []),  # molmo2_text
    ("mpt-7b", ["Wqkv", "out_proj"], []),  # mpt
    ("muse-glimmer-50-layers", QKVO, []),  # muse_glimmer_text
    ("minitron-4b", QKVO, []),  # nemotron
    ("tiny-nemotron-h", ["in_proj", "k_proj", "o_proj", "q_proj", "v_proj"], []),  # nemotron_h
    ("olmo-2-1b", QKVO, []),  # olmo2
    ("olmo-3-7b", QKVO, []),  # olmo3
    ("olmoe-1b-7b", QKVO, [*EXPERTS, "gate.weight"]),  # olmoe
    ("openai-gpt", ["c_attn", "c_proj"], []),  # openai-gpt
    ("opt-125m", ["k_proj", "out_proj", "q_proj", "v_proj"], []),  # opt
    ("paddleocr-vl", QKVO, []),  # paddleocr_vl_text
    ("persimmon-8b", ["dense", "query_key_value"], []),  # persimmon
    ("phi-3-mini-4k", ["o_proj", "qkv_proj"], []),  # phi3
    ("phi-3.5-moe", QKVO, EXPERTS),  # phimoe
    ("qwen2.5-omni-7b", QKVO, []),  # qwen2_5_omni_text
    ("qwen2-vl-2b-instruct", QKVO, []),  # qwen2_vl_text
    (
        "tiny-qwen3.5-moe",
        GATED_DELTANET_HYBRID,
        [*EXPERTS, "gate.weight"],
    ),  # qwen3_5_moe_text
    (
        "tiny-qwen3.5",
        [
            "in_proj_a",
            "in_proj_b",
            "in_proj_qkv",
            "in_proj_z",
            "k_proj",
            "o_proj",
            "q_proj",
            "v_proj",
        ],
        [],
    ),  # qwen3_5_text
    (
        "tiny-qwen3-next",
        ["in_proj_ba", "in_proj_qkvz", "k_proj", "o_proj", "out_proj", "q_proj", "v_proj"],
        [*EXPERTS, "gate.weight"],
    ),  # qwen3_next
    ("qwen3-vl-8b-instruct", QKVO, []),  # qwen3_vl_text
    (
        "sarvam-105b",
        ["kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "q_proj"],
        [*EXPERTS, "gate.weight"],
    ),  # sarvam_mla
    ("seed-oss-36b", QKVO, []),  # seed_oss
    ("smollm3-3b", QKVO, []),  # smollm3
    ("solar-open-100b", QKVO, [*EXPERTS, "gate.weight"]),  # solar_open
    ("stablelm-2-1.6b", QKVO, []),  # stablelm
    ("starcoder2-3b", QKVO, []),  # starcoder2
    ("tiny-step3p5", ["g_proj", *QKVO], []),  # step3p5 (its experts: a case above)
    ("vaultgemma-1b", QKVO, []),  # vaultgemma
    (
        "youtu-llm-2b",
        ["kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "q_a_proj", "q_b_proj"],
        [],
    ),  # youtu
]
MORE_NAMED: list[tuple[str, list[str], list[str]]] = [
    # fixtures with an all-linear case above: their attention by name, their experts
    ("apertus1p5-defaults", QKVO, []),
    ("bamba-9b", ["in_proj", "k_proj", "o_proj", "out_proj", "q_proj", "v_proj"], []),
    ("codegen-350m-mono", ["out_proj", "qkv_proj"], []),
    ("cosmos3-edge-defaults", QKVO, []),
    ("deepseek-ocr-2", QKVO, [*EXPERTS, "gate.weight"]),
    (
        "deepseek-v4-flash",
        ["gate_proj", "kv_proj", "o_a_proj", "o_b_proj", "q_a_proj", "q_b_proj", "weights_proj"],
        [*EXPERTS, "gate.weight"],
    ),
    ("exaone-3.0-7.8b", QKVO, []),
    ("flexolmo-7x7b-1t", QKVO, [*EXPERTS, "gate.weight"]),
    ("granitemoeshared-1b", QKVO, [*EXPERTS, "router.weight"]),
    ("hyperclovax-defaults", QKVO, []),
    ("internlm3-8b-instruct", QKVO, []),
    ("kosmos-2-defaults", ["k_proj", "out_proj", "q_proj", "v_proj"], []),
    ("lfm3-1.7b", ["g_proj", *QKVO], []),
    ("mellum2-12b-a2.5b", QKVO, [*EXPERTS, "gate.weight"]),
    ("mimo-v2-flash", QKVO, [*EXPERTS, "gate.weight"]),
    ("nanochat-d32", QKVO, []),
    ("olmo-hybrid-7b", ["a_proj", "b_proj", "g_proj", *QKVO], []),
    ("qwen1.5-moe-a2.7b", QKVO, [*EXPERTS, "gate.weight"]),
    ("recurrentgemma-2b", QKVO, []),
    ("sarvam-30b", QKVO, [*EXPERTS, "gate.weight"]),
    ("xglm-564m", ["k_proj", "out_proj", "q_proj", "v_proj"], []),
]


def named_cases(fixture: str, attention: list[str], weights: list[str]) -> list[tuple]:
    """A fixture's attention by name (DoRA, the LM head saved), and its stacked experts and bare
    routers through ``target_parameters`` where it has them."""
    cases: list[tuple] = [
        (
            f"{fixture}-attn-r8-dora-lm_head",
            fixture,
            {"r": 8, "target_modules": attention, "use_dora": True, "modules_to_save": ["lm_head"]},
        )
    ]
    if weights:
        cases.append(
            (
                f"{fixture}-experts-r4",
                fixture,
                {"r": 4, "target_modules": attention[:1], "target_parameters": weights},
            )
        )
    return cases


# every other registered model_type: all-linear too
CASES += [
    case
    for fixture, attention, weights in NAMED_FAMILIES
    for case in [
        (f"{fixture}-all-linear-r16", fixture, ALL_LINEAR),
        *named_cases(fixture, attention, weights),
    ]
]
CASES += [case for entry in MORE_NAMED for case in named_cases(*entry)]
CASES += [
    (
        "qwen3-vl-30b-a3b-instruct-experts-r4",
        "qwen3-vl-30b-a3b-instruct",
        {"r": 4, "target_modules": ["q_proj"], "target_parameters": [*EXPERTS, "gate.weight"]},
    )
]
CASES += [
    (f"{fixture}-all-linear-r16", fixture, ALL_LINEAR)
    for fixture in (
        "afmoe-defaults",
        "ernie-4.5-vl-28b-a3b",
        "gemma-2-2b",
        "glm-4.5v",
        "glm-4.1v-9b-thinking",
        "glm-image-defaults",
        "glm-ocr",
        "pythia-160m",
        "gpt-oss-20b",
        "phi-2",
        "qwen2.5-vl-7b-instruct",
        "qwen3-30b-a3b",
        "qwen3-omni-30b-a3b-instruct",
        "qwen3-vl-30b-a3b-instruct",
    )
]

# Cross-attention blocks: peft matches their modules by suffix too (crossattention.c_attn,
# encoder_attn.q_proj), and all-linear takes them.
CASES += [
    ("gpt2+cross-c_attn-r8", "gpt2+cross", {"r": 8, "target_modules": ["c_attn"]}),
    ("gpt2+cross-all-linear-r16", "gpt2+cross", ALL_LINEAR),
    (
        "gpt2+cross-q_attn-c_proj-r4-dora-lora_only",
        "gpt2+cross",
        {"r": 4, "target_modules": ["q_attn", "c_proj"], "use_dora": True, "bias": "lora_only"},
    ),
    ("gpt-sw3-356m+cross-all-linear-r16", "gpt-sw3-356m+cross", ALL_LINEAR),
    (
        "starcoderbase-1b+cross-c_attn-r8",
        "starcoderbase-1b+cross",
        {"r": 8, "target_modules": ["c_attn"]},
    ),
    ("starcoderbase-1b+cross-all-linear-r16", "starcoderbase-1b+cross", ALL_LINEAR),
    ("xglm-564m+cross-q-v-r8", "xglm-564m+cross", {"r": 8, "target_modules": ["q_proj", "v_proj"]}),
    ("xglm-564m+cross-all-linear-r16", "xglm-564m+cross", ALL_LINEAR),
    (
        "xglm-564m+cross-out_proj-r8-dora-bias-all",
        "xglm-564m+cross",
        {"r": 8, "target_modules": ["encoder_attn.out_proj"], "use_dora": True, "bias": "all"},
    ),
    (
        "kosmos-2-defaults+cross-q-v-r8",
        "kosmos-2-defaults+cross",
        {"r": 8, "target_modules": ["q_proj", "v_proj"]},
    ),
    ("kosmos-2-defaults+cross-all-linear-r16", "kosmos-2-defaults+cross", ALL_LINEAR),
]

# An output gate of its own beside the query projection (in AFMoE and Beam peft reads any
# gate_proj target as the transformers 4 name of the experts, and refuses it without up_proj).
CASES += (
    [
        (
            f"{fixture}-q-gate-r8",
            fixture,
            {"r": 8, "target_modules": ["q_proj", "self_attn.gate_proj"]},
        )
        for fixture in ("afmoe-defaults", "beam-defaults", "muse-glimmer-50-layers")
    ]
    + [
        (f"{fixture}-q-r8", fixture, {"r": 8, "target_modules": ["q_proj"]})
        for fixture in ("afmoe-defaults", "beam-defaults")
    ]
    + [
        (
            "laguna-xs-2.1-per-element-q-g-r8",
            "laguna-xs-2.1-per-element",
            {"r": 8, "target_modules": ["q_proj", "g_proj"]},
        ),
        ("laguna-xs-2.1-per-element-all-linear-r16", "laguna-xs-2.1-per-element", ALL_LINEAR),
    ]
)

TEXT_DECODER = {
    "gemma-3n-e2b-it",
    "gemma-4-e2b",
    "gemma-4-e4b",
    "gemma-4-26b-a4b",
    "gemma-4-31b",
    "cosmos3-edge-defaults",
    "deepseek-ocr-2",
    "kosmos-2-defaults",
    "glm-4.1v-9b-thinking",
    "glm-ocr",
    "glm-image-defaults",
    "glm-4.5v",
    "tiny-step3p5",
    "qwen2-vl-2b-instruct",
    "qwen2.5-vl-7b-instruct",
    "qwen3-vl-8b-instruct",
    "qwen3-vl-30b-a3b-instruct",
    "qwen2.5-omni-7b",
    "qwen3-omni-30b-a3b-instruct",
    "llama-3.2-11b-vision-instruct",
    "ernie-4.5-vl-28b-a3b",
    "phi4-multimodal-defaults",
    "hy-v4-vl-defaults",
    "tiny-qwen4-exp",
    "mistral-large-4-defaults",
    "glm-5.3-flash-defaults",
} | {fixture for fixture, text, _ in MODELS.values() if text}
"""Multimodal fixtures whose text decoder (``config.get_text_config()``) is wrapped: as its own
causal LM, or (no ``AutoModelForCausalLM`` class) as the language model and LM head of the
conditional-generation model (make_golden_families.py's ``build_text_decoder``), or (a flat
config, its encoders built inside the causal LM) as that causal LM without the modules a forward
on token ids never calls (make_golden_families.py's ``drop_uncalled``)."""


def _build(fixture: str) -> nn.Module:
    """A fixture's model on the meta device (a multimodal one's text decoder if listed)."""
    config = _config(fixture)
    if _fixture(fixture) in TEXT_DECODER:
        text = config.get_text_config()
        if type(text) not in MODEL_FOR_CAUSAL_LM_MAPPING and causal_lm_class(text) is None:
            decoder = build_text_decoder(
                text_holder(config, config.get_text_config()),
                "meta",
                **model_kwargs(_fixture(fixture), "meta"),
            )
            # peft reads the model_type of the model a user wraps (the conditional-generation
            # model's) to convert transformers 4 expert names (GLM-4.5V's glm4v_moe)
            decoder.config.model_type = config.model_type
            return decoder
        if text is config:  # a flat multimodal config: its causal LM without the encoders
            model = build_model(config, **model_kwargs(_fixture(fixture), "meta"))
            drop_uncalled(model)
            return model
        config = text
    return build_model(config, **model_kwargs(_fixture(fixture), "meta"))


def _layer_added(module: LoraLayer) -> int:
    """Parameters one LoRA layer adds: its lora_A, lora_B (with lora_bias; an embedding's
    lora_embedding_A and _B) and DoRA magnitude (a nested wrapper's own adapters are its own)."""
    own = (
        module.lora_A,
        module.lora_B,
        module.lora_embedding_A,
        module.lora_embedding_B,
        module.lora_magnitude_vector,
    )
    return sum(p.numel() for part in own for p in part.parameters())


TRAINING_CASES = [
    "gpt2-c_attn-r8-lm_head",
    "qwen2.5-0.5b-qkvo-r16-lora_only",
    "tiny-mixtral-experts-r4",
]
"""Cases whose training state is measured: base in bf16, adapters as peft casts them."""


def training_record(fixture: str, keywords: dict) -> dict:
    """A bf16 base wrapped by peft (which upcasts the adapters to fp32): bytes of the frozen and
    trainable parameters, of their gradients, and of AdamW's state after one step on meta."""
    model = _build(fixture).to(torch.bfloat16)
    wrapped = get_peft_model(model, LoraConfig(**keywords))
    params = list(wrapped.parameters())
    trainable = [p for p in params if p.requires_grad]
    for param in trainable:
        param.grad = torch.zeros_like(param)
    optimizer = torch.optim.AdamW(trainable)
    optimizer.step()
    state = [v for p in trainable for v in optimizer.state[p].values() if torch.is_tensor(v)]
    steps = [v for p in trainable for k, v in optimizer.state[p].items() if k == "step"]
    by_dtype: dict[str, int] = {}
    for param in trainable:
        key = str(param.dtype).removeprefix("torch.")
        by_dtype[key] = by_dtype.get(key, 0) + param.numel()
    return {
        "frozen_bytes": sum(p.numel() * p.element_size() for p in params if not p.requires_grad),
        "trainable_bytes": sum(p.numel() * p.element_size() for p in trainable),
        "trainable_elements_by_dtype": by_dtype,
        "trainable_tensors": len(trainable),
        "gradient_bytes": sum(p.grad.numel() * p.grad.element_size() for p in trainable),
        "adamw_state_bytes": sum(v.numel() * v.element_size() for v in state),
        "adamw_steps": len(steps),
    }


def _strip_base_layer(name: str) -> str:
    """A module's name without the ``.base_layer`` of the wrappers around it."""
    return name.replace(".base_layer", "")


def case_record(fixture: str, keywords: dict) -> dict:
    model = _build(fixture)
    base_total = sum(p.numel() for p in model.parameters())
    try:
        wrapped = get_peft_model(model, LoraConfig(**keywords))
    except ValueError as error:
        return {"fixture": fixture, "config": dict(keywords), "error": str(error)}
    trainable, total = wrapped.get_nb_trainable_parameters()
    targets = (
        list(keywords.get("target_modules") or [])
        if keywords.get("target_modules") != "all-linear"
        else None
    )
    modules: dict[str, dict[str, int]] = {}
    for name, module in wrapped.base_model.model.named_modules():
        if not isinstance(module, LoraLayer):
            continue
        key = _strip_base_layer(name).rsplit(".", 1)[-1]
        parameter = getattr(module, "parameter_name", None)
        if parameter is not None:
            key = f"{key}.{parameter}"
        entry = modules.setdefault(key, {"modules": 0, "added": 0})
        entry["modules"] += 1
        entry["added"] += _layer_added(module)
    saved: dict[str, int] = {}
    for name in keywords.get("modules_to_save") or []:
        copies = [
            m
            for n, m in wrapped.base_model.model.named_modules()
            if n.endswith("modules_to_save.default") and n.split(".")[-3] == name
        ]
        saved[name] = sum(p.numel() for m in copies for p in m.parameters())
    config_out = {k: v for k, v in keywords.items()}
    return {
        "fixture": fixture,
        "config": config_out,
        "resolved_targets": targets if targets is not None else sorted(modules),
        "base_total": base_total,
        "trainable": trainable,
        "total": total,
        "modules": dict(sorted(modules.items())),
        "modules_to_save": saved,
    }


def linear_modules(fixture: str) -> dict:
    """What LoRA can adapt in a fixture's model: every ``nn.Linear`` (and GPT-2's ``Conv1D``)
    and every parameter of two or more dimensions held by another module (stacked experts,
    routers), by the tail of its name after the last index (a Sequential's step in a list, Zamba
    2's adapters: the list's path after the layer index and the step), with its shape (out, in for a
    linear), whether it has a bias, and how many there are; the output head and the embeddings
    marked as such."""
    model = _build(fixture)
    head = model.get_output_embeddings()
    found: dict[tuple, int] = {}
    for name, module in model.named_modules():
        pieces = re.split(r"\.\d+\.", name)
        tail = pieces[-1]
        if tail.isdigit():  # a step of a Sequential in a ModuleList: the list's path and the step
            tail = f"{pieces[-2]}.{tail}"
        if isinstance(module, (nn.Linear, Conv1D)):
            shape = (
                module.weight.shape if isinstance(module, nn.Linear) else module.weight.shape[::-1]
            )
            kind = "head" if module is head else "linear"
            key = (kind, tail, tuple(shape), module.bias is not None)
        elif isinstance(module, nn.Embedding):
            key = ("embedding", tail, tuple(module.weight.shape), False)
        else:
            for param_name, param in module.named_parameters(recurse=False):
                if param.dim() >= 2 and not isinstance(module, nn.Conv1d):
                    key = ("parameter", f"{tail}.{param_name}", tuple(param.shape), False)
                    found[key] = found.get(key, 0) + 1
            continue
        found[key] = found.get(key, 0) + 1
    return {
        "model_type": model.config.model_type,
        "modules": [
            {"kind": k, "name": n, "shape": list(s), "bias": b, "count": c}
            for (k, n, s, b), c in sorted(found.items())
        ],
    }


def main() -> None:
    """Record the cases named on the command line and the listings of their fixtures and of the
    fixtures named (every case and fixture if none), merged into the existing output file."""
    only = set(sys.argv[1:])
    every_fixture = {p.stem for p in FIXTURES.glob("*.json") if p.stem not in MULTIMODAL}
    every_fixture |= set(VARIANTS)
    unknown = only - {case for case, _, _ in CASES} - every_fixture
    if unknown:
        sys.exit(f"unknown cases or fixtures: {', '.join(sorted(unknown))}")
    output = json.loads(OUTPUT.read_text()) if OUTPUT.exists() else {"cases": {}}
    cases = output.setdefault("cases", {})
    for case, fixture, keywords in CASES:
        if only and case not in only:
            continue
        cases[case] = case_record(fixture, keywords)
        if case in TRAINING_CASES:
            cases[case]["training_bf16"] = training_record(fixture, keywords)
        record = cases[case]
        print(
            case, record.get("trainable"), record.get("total"), record.get("error"), file=sys.stderr
        )
    fixtures = (
        {f for case, f, _ in CASES if case in only} | (only & every_fixture)
        if only
        else every_fixture
    )
    listings = output.setdefault("linear_modules", {})
    for fixture in sorted(fixtures):
        try:
            listings[fixture] = linear_modules(fixture)
        except (ValueError, KeyError) as error:  # a family this transformers cannot build
            print(fixture, "not listed:", error, file=sys.stderr)
    output.update(
        {
            "generator": GENERATOR,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "peft": peft.__version__,
            "date": datetime.date.today().isoformat(),
            "variants": {
                name: {"fixture": fixture, "set": changes}
                for name, (fixture, changes) in sorted(VARIANTS.items())
            },
            "cases": dict(sorted(cases.items())),
            "linear_modules": dict(sorted(listings.items())),
        }
    )
    OUTPUT.write_text(json.dumps(output, indent=2) + "\n")


if __name__ == "__main__":
    main()
