"""Generate tests/golden/hf_causes.json: small configs off the golden path, built by transformers.

Run by hand, like make_golden_families.py (it reuses that script's builders and records):

    python tests/reference/make_golden_causes.py               # every case
    python tests/reference/make_golden_causes.py --only qwen3_moe-no-head-dim

Each case is a small config.json (kept whole in the output) that sets off one way of reading a
file costcalc once got wrong or refused while transformers builds it: a key left to the class
default, a key under its other spelling (``attribute_map``), both spellings with different
values, a value ``__init__``/``__post_init__`` or the modeling code overrides, tying decided by a
multimodal wrapper. Each is built on the meta device from ``CONFIG_MAPPING[model_type]
.from_dict(config)`` (a wrapper's text decoder with the wrapper's LM head, as
make_golden_families.py builds it) and recorded: parameters (``sum(p.numel())``, tied tensors
once) and the tied output matrix; with ``kv``, the cache elements after a B=1 forward of
``seq_len`` tokens and each cache layer's window (``DynamicSlidingWindowLayer.sliding_window``,
null for a full layer); with ``macs``, FlopCounterMode's forward MACs (B=1, ``seq_len`` tokens,
eager attention, experts ``batched_mm``: only the routed experts run). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys

import torch
import transformers
from make_golden import ROOT, build_model, causal_lm_class, forward, token_ids
from make_golden_families import (
    TextDecoder,
    build_text_decoder,
    error_text,
    kv_record,
    macs_record,
    text_holder,
)
from transformers import CONFIG_MAPPING, MODEL_FOR_CAUSAL_LM_MAPPING

OUTPUT = ROOT / "tests" / "golden" / "hf_causes.json"
GENERATOR = "tests/reference/make_golden_causes.py"

SMALL = {"vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2}
"""Sizes every case shares unless it says otherwise."""

QWEN3_MOE = {
    "model_type": "qwen3_moe",
    **SMALL,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "moe_intermediate_size": 32,
    "num_experts_per_tok": 2,
    "max_position_embeddings": 512,
}

LLAMA = {
    "model_type": "llama",
    **SMALL,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 512,
}


def nested_rope(full: float, sliding: float) -> dict:
    """Rotary settings nested by layer type, with the partial factor of each."""
    entry = {"rope_type": "default", "rope_theta": 10000.0}
    return {
        "full_attention": {**entry, "partial_rotary_factor": full},
        "sliding_attention": {**entry, "partial_rotary_factor": sliding},
    }


CASES: dict[str, dict] = {
    "qwen3_moe-no-head-dim": {
        "cause": "Qwen3MoeConfig has no head_dim: the attention takes D / H",
        "config": {**QWEN3_MOE, "num_experts": 4},
    },
    "qwen3_moe-num-local-experts": {
        "cause": "the expert count under num_local_experts, as to_dict() writes it",
        "config": {**QWEN3_MOE, "head_dim": 16, "num_local_experts": 4},
    },
    "qwen3_moe-both-expert-spellings": {
        "cause": "num_experts and num_local_experts both given: the one set last wins",
        "config": {**QWEN3_MOE, "head_dim": 16, "num_experts": 8, "num_local_experts": 4},
    },
    "gpt2-both-width-spellings": {
        "cause": "n_embd and its alias hidden_size both given: the alias, set last, wins",
        "fixture": "gpt2",
        "changes": {"n_layer": 2, "n_embd": 64, "hidden_size": 128, "n_head": 4},
    },
    "cohere2-head-dim": {
        "cause": "Cohere2's attention takes head_dim = D / H whatever the file says",
        "fixture": "c4ai-command-r7b",
        "changes": {
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 32,
        },
    },
    "jamba-head-dim": {
        "cause": "an explicit head_dim sizes Jamba's attention",
        "fixture": "tiny-jamba",
        "changes": {"head_dim": 32},
    },
    "jamba-num-local-experts": {
        "cause": "Jamba's expert count under num_local_experts (its attribute_map)",
        "fixture": "tiny-jamba",
        "changes": {"num_experts": None, "num_local_experts": 3},
    },
    "lfm2-head-dim": {
        "cause": "an explicit head_dim sizes LFM2's attention",
        "fixture": "tiny-lfm2",
        "changes": {"head_dim": 32},
    },
    "lfm2-tie-embedding": {
        "cause": "LFM2's tie_embedding decides tying",
        "fixture": "tiny-lfm2",
        "changes": {"tie_embedding": False},
    },
    "granitemoehybrid-layers-block-type": {
        "cause": "GraniteMoeHybrid's layer kinds under layers_block_type (its attribute_map)",
        "fixture": "tiny-granite-4.0-h",
        "changes": {
            "layer_types": None,
            "layers_block_type": ["attention", "mamba", "attention", "mamba"],
        },
    },
    "smollm3-layer-types-no-sliding": {
        "cause": "SmolLM3: layer_types marks layers sliding while use_sliding_window is false",
        "fixture": "smollm3-3b",
        "changes": {
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "use_sliding_window": False,
            "sliding_window": 8,
            "layer_types": ["sliding_attention", "full_attention"],
            "no_rope_layers": [1, 1],
            "pad_token_id": 0,
        },
        "steps": ["kv"],
        "seq_len": 16,
    },
    "zamba2-untied": {
        "cause": "Zamba2 with tie_word_embeddings false ties nothing: hybrid layers past "
        "num_mem_blocks keep their own block copies",
        "fixture": "tiny-zamba2",
        "changes": {"tie_word_embeddings": False},
    },
    "zamba-untied": {
        "cause": "Zamba with tie_word_embeddings false ties nothing: every hybrid layer keeps "
        "its own shared block",
        "fixture": "tiny-zamba",
        "changes": {"tie_word_embeddings": False},
    },
    "xlstm-tie-true": {
        "cause": "xLSTMForCausalLM declares no tied weights: its LM head stays its own under "
        "tie_word_embeddings true",
        "fixture": "tiny-xlstm",
        "changes": {"tie_word_embeddings": True},
    },
    "zamba2-untied-three-sets": {
        "cause": "Zamba2 untied over 3 weight sets: each hybrid layer's copy holds every "
        "adapter of its set",
        "fixture": "tiny-zamba2",
        "changes": {"tie_word_embeddings": False, "num_mem_blocks": 3},
    },
    "zamba2-hybrid-layer-ids": {
        "cause": "Zamba2 keeps a file's hybrid_layer_ids over its own: one adapter slot per "
        "entry in each shared block",
        "fixture": "tiny-zamba2",
        "changes": {"hybrid_layer_ids": [1, 3, 4, 7, 7, 7, 7]},
    },
    "zamba2-untied-hybrid-layer-ids": {
        "cause": "Zamba2 untied with a hybrid_layer_ids of its own",
        "fixture": "tiny-zamba2",
        "changes": {"tie_word_embeddings": False, "hybrid_layer_ids": [1, 3, 4, 7, 7]},
    },
    "zamba2-gqa-adapters": {
        "cause": "Zamba2's key/value adapters with fewer key/value heads than query heads",
        "fixture": "tiny-zamba2",
        "changes": {"num_key_value_heads": 2},
    },
    "nemotron_h-tie-true": {
        "cause": "NemotronH never ties its LM head, whatever tie_word_embeddings says",
        "fixture": "tiny-nemotron-h",
        "changes": {"tie_word_embeddings": True},
    },
    "helium-head-dim": {
        "cause": "Helium's o_proj is D x D whatever head_dim",
        "fixture": "helium-1-2b",
        "changes": {
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "head_dim": 32,
        },
    },
    "olmoe-head-dim": {
        "cause": "OLMoE's q/k norms are sized from D (D and D / H x K), not head_dim",
        "fixture": "olmoe-1b-7b",
        "changes": {
            **SMALL,
            "intermediate_size": 32,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 32,
            "num_experts": 4,
            "num_experts_per_tok": 2,
        },
    },
    "phimoe-top-k": {
        "cause": "PhiMoE's router picks exactly 2 experts whatever num_experts_per_tok says",
        "fixture": "phi-3.5-moe",
        "changes": {
            **SMALL,
            "intermediate_size": 32,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "num_local_experts": 4,
            "num_experts_per_tok": 3,
        },
        "steps": ["macs"],
        "seq_len": 8,
    },
    "gemma3-wrapper-untied": {
        "cause": "Gemma 3's wrapper tie_word_embeddings (false) decides, not text_config's",
        "fixture": "gemma-3-4b",
        "changes": {"tie_word_embeddings": False},
        "text_changes": {
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "tie_word_embeddings": True,
        },
    },
    "gemma3-wrapper-default-tied": {
        "cause": "Gemma 3's wrapper ties by default even when text_config says false",
        "fixture": "gemma-3-4b",
        "changes": {"tie_word_embeddings": None},
        "text_changes": {
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "tie_word_embeddings": False,
        },
    },
    "llama-class-defaults": {
        "cause": "intermediate_size and max_position_embeddings absent: LlamaConfig's defaults",
        "config": {"model_type": "llama", **SMALL, "num_attention_heads": 4},
    },
    "qwen2-class-defaults": {
        "cause": "only the width given: Qwen2Config's defaults for every other size",
        "config": {
            "model_type": "qwen2",
            "hidden_size": 64,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "num_hidden_layers": 2,
        },
    },
    "stablelm-odd-rotary": {
        "cause": "a partial rotary factor giving an odd number of rotary dimensions",
        "config": {
            "model_type": "stablelm",
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "partial_rotary_factor": 0.3125,
        },
    },
    "llama-ungrouped-kv-heads": {
        "cause": "3 query heads over 2 key/value heads: built, but repeat_kv cannot pair them",
        "config": {
            "model_type": "llama",
            **SMALL,
            "hidden_size": 48,
            "intermediate_size": 128,
            "num_attention_heads": 3,
            "num_key_value_heads": 2,
            "head_dim": 16,
        },
        "steps": ["run"],
    },
    "llama-more-kv-heads-than-query-heads": {
        "cause": "2 query heads over 4 key/value heads: repeat_kv copies each 0 times",
        "config": {
            "model_type": "llama",
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 2,
            "num_key_value_heads": 4,
            "head_dim": 16,
        },
        "steps": ["run"],
    },
    "qwen3_next-ungrouped-value-heads": {
        "cause": "Gated DeltaNet with 3 value heads over 2 key heads: built, but cannot run",
        "config": {
            "model_type": "qwen3_next",
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "linear_num_key_heads": 2,
            "linear_num_value_heads": 3,
            "linear_key_head_dim": 16,
            "linear_value_head_dim": 16,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 32,
            "layer_types": ["linear_attention", "full_attention"],
        },
        "steps": ["run"],
    },
    "mixtral-top-k-above-experts": {
        "cause": "3 experts per token of 2: built, but the router's top-k of 3 over 2 fails",
        "config": {
            "model_type": "mixtral",
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "num_local_experts": 2,
            "num_experts_per_tok": 3,
        },
        "steps": ["run"],
    },
    "zamba-relu": {
        "cause": "ZambaMLP gates by any ACT2FN activation: relu",
        "fixture": "tiny-zamba",
        "changes": {"hidden_act": "relu"},
    },
    "zamba2-relu": {
        "cause": "Zamba2MLP gates by any ACT2FN activation: relu",
        "fixture": "tiny-zamba2",
        "changes": {"hidden_act": "relu"},
    },
    "zamba-unknown-activation": {
        "cause": "an activation ACT2FN does not hold: the build fails",
        "fixture": "tiny-zamba",
        "changes": {"hidden_act": "rleu"},
    },
    "beam-ungrouped-kv-heads": {
        "cause": "BeamConfig refuses query heads that are not a multiple of the key/value heads",
        "fixture": "beam-defaults",
        "changes": {"num_attention_heads": 6, "num_key_value_heads": 4},
    },
    "lara_mini-ungrouped-value-heads": {
        "cause": "LaraMiniConfig refuses Gated DeltaNet value heads not a multiple of key heads",
        "fixture": "tiny-lara-mini",
        "changes": {"linear_num_key_heads": 2, "linear_num_value_heads": 3},
    },
    "qwen2-width-not-divisible": {
        "cause": "a width the heads do not divide: head_dim = D // H (floored)",
        "config": {
            "model_type": "qwen2",
            "vocab_size": 1000,
            "hidden_size": 66,
            "num_hidden_layers": 2,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
        },
    },
    "recurrent_gemma-width-not-divisible": {
        "cause": "a width the heads do not divide: RecurrentGemmaConfig sets head_dim = D // H",
        "fixture": "tiny-recurrentgemma",
        "changes": {"hidden_size": 66},
        "steps": ("macs",),
    },
    "llama-head-dim-1": {
        "cause": "heads 1 wide rotated whole: queries and keys broadcast to the 2-wide cos",
        "config": {**LLAMA, "head_dim": 1},
        "steps": ("kv", "macs"),
    },
    "llama-head-dim-3": {
        "cause": "an odd head of 3 rotated whole: LlamaConfig lets heads of at most 4 through",
        "config": {**LLAMA, "head_dim": 3},
    },
    "qwen3-head-dim-7": {
        "cause": "an odd head_dim of 7 rotated whole: Qwen3Config's validate_rope refuses it",
        "config": {**LLAMA, "model_type": "qwen3", "head_dim": 7},
    },
    "mistral-odd-width": {
        "cause": "D / H = 5 rotated whole: MistralConfig derives head_dim and refuses it",
        "config": {**LLAMA, "model_type": "mistral", "hidden_size": 20},
    },
    "qwen2-odd-width": {
        "cause": "D // H = 5 rotated whole: Qwen2Config holds no head_dim and builds it",
        "config": {**LLAMA, "model_type": "qwen2", "hidden_size": 22},
    },
    "llama-nested-rope-no-layer-types": {
        "cause": "rotary settings nested by layer type in a class with no layer_types: "
        "validate_rope reads the outer mapping, whose factor is 1, so head_dim 7 rotates whole",
        "config": {**LLAMA, "head_dim": 7, "rope_parameters": nested_rope(0.5, 0.5)},
    },
    "qwen3-nested-rope-full-rotated-whole": {
        "cause": "rotary settings nested by layer type, no layer_types in the file: the "
        "full-attention entry rotates head_dim 7 whole, which validate_rope refuses",
        "config": {
            **LLAMA,
            "model_type": "qwen3",
            "head_dim": 7,
            "rope_parameters": nested_rope(1.0, 0.5),
        },
    },
    "minimax_m2-odd-partial-rotary": {
        "cause": "a partial rotary factor giving 5 of 10: the rotary embedding rotates 6",
        "fixture": "minimax-m2",
        "changes": {
            **SMALL,
            "hidden_size": 40,
            "head_dim": 10,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "intermediate_size": 32,
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
            "rotary_dim": None,
        },
        "steps": ("kv", "macs"),
    },
    "stablelm-no-rotary": {
        "cause": "a partial rotary factor of 0: no frequencies, nothing rotated",
        "config": {**LLAMA, "model_type": "stablelm", "partial_rotary_factor": 0.0},
        "steps": ("kv", "macs"),
    },
    "internlm3-biases-differ": {
        "cause": "qkv_bias and bias differ: InternLM3Config's validate_architecture refuses them",
        "config": {**LLAMA, "model_type": "internlm3", "qkv_bias": True, "bias": False},
    },
    "axk2-groups-half-set": {
        "cause": "n_group without topk_group: AXK2Config's validate_architecture refuses it",
        "fixture": "axk2-defaults",
        "changes": {"n_group": 8},
    },
    "mellum-two-mtp-layers": {
        "cause": "two MTP layers: MellumConfig's validate_architecture takes one at most",
        "fixture": "mellum2-12b-a2.5b",
        "changes": {"num_mtp_layers": 2},
    },
    "glm5_next-kv-heads": {
        "cause": "key/value heads other than the heads: Glm5NextTextConfig refuses them",
        "fixture": "tiny-glm5-next",
        "text_changes": {"num_key_value_heads": 2},
    },
    "glm5_next-index-pool": {
        "cause": "index_topk not a multiple of index_kpool: Glm5NextTextConfig refuses it",
        "fixture": "tiny-glm5-next",
        "text_changes": {"index_kpool": 5},
    },
    "qwen4_exp-output-gate": {
        "cause": "an output gate other than sigmoid or silu: Qwen4ExpTextConfig refuses it",
        "fixture": "tiny-qwen4-exp",
        "text_changes": {"output_gate_type": "tanh"},
    },
    "qwen4_exp-qsa-in-part": {
        "cause": "QSA indexer keys given in part: Qwen4ExpTextConfig refuses them",
        "fixture": "tiny-qwen4-exp",
        "text_changes": {"indexer_budget": None},
    },
    "dots3_note-topk-group": {
        "cause": "topk_group above n_group: Dots3NoteTextConfig's validate_architecture",
        "fixture": "dots3-note-defaults",
        "text_changes": {"topk_group": 2},
    },
    "hy_v4_vl-mrope-section": {
        "cause": "mrope_section not summing to qk_rope_head_dim // 2: HYV4VLTextConfig refuses",
        "fixture": "hy-v4-vl-defaults",
        "text_changes": {"qk_rope_head_dim": 48},
    },
    "llama-head-dim-width-not-divisible": {
        "cause": "heads that do not divide D beside a head_dim: LlamaConfig refuses the width",
        "config": {**LLAMA, "hidden_size": 66, "head_dim": 16},
    },
    "glm4_moe-class-defaults": {
        "cause": "GLM-4.5 MoE with only its sizes: Glm4MoeConfig's defaults for the rest",
        "config": {
            "model_type": "glm4_moe",
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "moe_intermediate_size": 32,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
        },
    },
    "deepseek_v2-class-defaults": {
        "cause": "DeepSeek-V2 with only its sizes: DeepseekV2Config's defaults for the rest",
        "config": {
            "model_type": "deepseek_v2",
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "moe_intermediate_size": 32,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "kv_lora_rank": 16,
            "q_lora_rank": 32,
            "qk_nope_head_dim": 16,
            "qk_rope_head_dim": 8,
            "v_head_dim": 16,
        },
    },
    "dots1-class-defaults": {
        "cause": "dots.llm1 with only its sizes: Dots1Config's defaults for the rest",
        "config": {
            "model_type": "dots1",
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "moe_intermediate_size": 32,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "n_shared_experts": 1,
        },
    },
    "qwen2_moe-no-shared-expert": {
        "cause": "Qwen2-MoE with a shared expert 0 wide: built empty, its gate kept",
        "config": {
            "model_type": "qwen2_moe",
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "moe_intermediate_size": 32,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "shared_expert_intermediate_size": 0,
        },
    },
    "qwen2-nulled-heads": {
        "cause": "num_key_value_heads null: Qwen2Config's __post_init__ takes the heads (not "
        "the class default, 32)",
        "config": {
            "model_type": "qwen2",
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "num_key_value_heads": None,
            "max_position_embeddings": 512,
        },
    },
    "llama-null-typed-key": {
        "cause": "hidden_act null: LlamaConfig types it as str, and its strict dataclass "
        "refuses the file (costcalc read the default)",
        "config": {
            "model_type": "llama",
            **SMALL,
            "intermediate_size": 128,
            "num_attention_heads": 4,
            "hidden_act": None,
        },
    },
    "nemotron_h-old-layer-names": {
        "cause": "NemotronH's layer kinds under their old names (mamba, attention, mlp)",
        "fixture": "tiny-nemotron-h",
        "changes": {
            "hybrid_override_pattern": None,
            "layers_block_type": ["mamba", "mlp", "mamba", "attention", "mlp", "mamba"],
        },
    },
}


def case_config(case: dict) -> dict:
    """The case's whole config: given, or a fixture with keys changed (None deletes one)."""
    if "config" in case:
        return case["config"]
    data = json.loads((ROOT / "tests" / "fixtures" / "hf" / f"{case['fixture']}.json").read_text())
    for where, changes in (
        (data, case.get("changes", {})),
        (data.get("text_config"), case.get("text_changes", {})),
    ):
        for key, value in changes.items():
            if value is None:
                where.pop(key, None)
            else:
                where[key] = value
    return data


def build(data: dict):
    """The config and its model on meta: a wrapper's text decoder with the wrapper's head."""
    config = CONFIG_MAPPING[data["model_type"]].from_dict(data)
    text = config.get_text_config()
    if text is not config:
        return config, build_text_decoder(text_holder(config, text), "meta")
    if type(config) not in MODEL_FOR_CAUSAL_LM_MAPPING and causal_lm_class(config) is None:
        raise LookupError(f"no causal LM class for {type(config).__name__}")
    try:
        return config, build_model(config, "meta", experts_implementation="batched_mm")
    except (ValueError, TypeError):
        return config, build_model(config, "meta")


def params(model) -> dict:
    """Parameters (each tensor once) and the output matrix when it is the embedding's."""
    total = sum(p.numel() for p in model.parameters())
    out, emb = model.get_output_embeddings(), model.get_input_embeddings()
    tied = out is not None and out.weight is emb.weight
    return {
        "model_class": type(model).__name__
        if not isinstance(model, TextDecoder)
        else f"{model.whole_class}: language model and lm_head",
        "parameters_total": total,
        "parameters_untied_extra": out.weight.numel() if tied else 0,
    }


def run_case(name: str, case: dict) -> dict:
    record = {"cause": case["cause"], "config": case_config(case)}
    config, model = build(record["config"])
    model.requires_grad_(False)
    record.update(params(model))
    seq = case.get("seq_len", 16)
    if "kv" in case.get("steps", ()):
        kv = kv_record(model, config.get_text_config(), 1, seq, "meta")
        record["kv_cache"] = {k: kv[k] for k in ("batch", "seq_len", "kv_cache_elements")}
        windows: dict[int, int | None] = {}
        for kind in kv["cache_layer_kinds"]:
            windows.update(dict.fromkeys(kind["layers"], kind.get("sliding_window")))
        record["kv_cache"]["layer_windows"] = [windows[i] for i in sorted(windows)]
    if "macs" in case.get("steps", ()):
        macs = macs_record(model, config.get_text_config(), 1, seq, "meta")
        record["macs_forward"] = {k: macs[k] for k in ("batch", "seq_len", "macs_total")}
    if "run" in case.get("steps", ()):
        record["forward_error"] = forward_error(record["config"], seq)
    return record


def forward_error(data: dict, seq: int) -> str | None:
    """What a forward of ``seq`` tokens raises (None when it runs), the model built on the CPU
    with real weights: a model that builds may still fail to run, with no meta tensor to blame."""
    config = CONFIG_MAPPING[data["model_type"]].from_dict(data)
    model = build_model(config, "cpu")
    try:
        forward(model, token_ids(1, seq, "cpu", config.vocab_size), use_cache=False)
    except Exception as exc:  # the error transformers raises is what is recorded
        return error_text(exc)
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=list(CASES), default=list(CASES))
    args = parser.parse_args(argv)
    data = json.loads(OUTPUT.read_text()) if OUTPUT.exists() else {"cases": {}}
    for name in args.only:
        try:
            data["cases"][name] = run_case(name, CASES[name])
        except Exception as exc:  # a case transformers cannot build is recorded as such
            data["cases"][name] = {
                "cause": CASES[name]["cause"],
                "config": case_config(CASES[name]),
                "build_error": error_text(exc),
            }
        print(name, data["cases"][name].get("parameters_total"), flush=True)
    cases = {name: data["cases"][name] for name in CASES if name in data["cases"]}
    output = {
        "generator": GENERATOR,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "date": datetime.date.today().isoformat(),
        "cases": cases,
    }
    OUTPUT.write_text(json.dumps(output, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
