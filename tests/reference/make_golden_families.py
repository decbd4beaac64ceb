"""Generate tests/golden/hf_families.json: golden data for decoder families beyond make_golden.py.

Run by hand (pytest does not collect this file), one model at a time if memory is short:

    python tests/reference/make_golden_families.py                        # every model
    python tests/reference/make_golden_families.py --only gemma-2-2b gpt-oss-20b
    python tests/reference/make_golden_families.py --steps params kv

Every model is built from its fixture config (tests/fixtures/hf/<fixture>.json) with
``AutoModelForCausalLM.from_config(config, attn_implementation="eager")`` on the meta device,
through make_golden.py's builder. A multimodal fixture (one with a ``text_config``) is recorded
through its text decoder: ``config.get_text_config()``, whose model_type is e.g. gemma3_text.
When AutoModelForCausalLM has no class for that text config (molmo2_text, qwen2_vl_text),
the ``*ForConditionalGeneration`` model holding it (the wrapper's, or Qwen2.5-Omni's thinker) is
built and its language model and LM head are kept (``TextDecoder``); it runs on token ids alone,
with a cache made up front as ``generate()`` does. A flat multimodal fixture (its text keys at the
top level, its encoders built inside the causal LM: Phi-4-multimodal) is recorded as that causal LM
without the modules a forward on token ids never calls, dropped by name (``drop_uncalled``).
Layers may differ in this file, so ``parameters_per_layer`` is always a list and ``layer_kinds``
groups the layers by layout. Families that cannot run a forward pass on meta get a tiny real-weight
twin (its own fixture, ``tiny-*``) or a ``*_error`` field with the exception text.
Results are merged into the existing output file. See tests/reference/README.md for every field.
"""

from __future__ import annotations

import re
import sys
import traceback
from collections import OrderedDict
from types import SimpleNamespace

import torch
import transformers
from make_golden import (
    ATTENTION_PAIR_OPS,
    LINEAR_OPS,
    ROOT,
    build_model,
    by_op,
    causal_lm_class,
    count_flops,
    decoder_layers,
    fixture_path,
    forward,
    is_tied,
    load_output,
    module_key,
    ops_total,
    parse_args,
    save_output,
    shapes,
    token_ids,
)
from torch import nn
from transformers import (
    CONFIG_MAPPING,
    MODEL_FOR_CAUSAL_LM_MAPPING,
    DynamicCache,
    PretrainedConfig,
    PreTrainedModel,
)
from transformers.models.auto import modeling_auto

OUTPUT = ROOT / "tests" / "golden" / "hf_families.json"
GENERATOR = "tests/reference/make_golden_families.py"

# record name -> (fixture name, build the text decoder of a multimodal config, device)
MODELS: dict[str, tuple[str, bool, str]] = OrderedDict(
    (name, spec)
    for name, spec in [
        ("qwen3-0.6b", ("qwen3-0.6b", False, "meta")),
        ("qwen2-vl-2b-instruct", ("qwen2-vl-2b-instruct", True, "meta")),
        ("qwen2.5-vl-7b-instruct", ("qwen2.5-vl-7b-instruct", True, "meta")),
        ("qwen3-vl-8b-instruct", ("qwen3-vl-8b-instruct", True, "meta")),
        ("qwen3-vl-30b-a3b-instruct", ("qwen3-vl-30b-a3b-instruct", True, "meta")),
        ("qwen2.5-omni-7b", ("qwen2.5-omni-7b", True, "meta")),
        ("qwen3-omni-30b-a3b-instruct", ("qwen3-omni-30b-a3b-instruct", True, "meta")),
        ("qwen3-8b", ("qwen3-8b", False, "meta")),
        ("qwen3-30b-a3b", ("qwen3-30b-a3b", False, "meta")),
        ("qwen1.5-moe-a2.7b", ("qwen1.5-moe-a2.7b", False, "meta")),
        ("gemma-2-2b", ("gemma-2-2b", False, "meta")),
        ("gemma-3-1b", ("gemma-3-1b", False, "meta")),
        ("gemma-3-4b", ("gemma-3-4b", True, "meta")),
        ("deepseek-v3", ("deepseek-v3", False, "meta")),
        ("deepseek-v2-lite", ("deepseek-v2-lite", False, "meta")),
        ("gpt-oss-20b", ("gpt-oss-20b", False, "meta")),
        ("gpt-oss-120b", ("gpt-oss-120b", False, "meta")),
        ("llama-4-scout", ("llama-4-scout", False, "meta")),
        ("llama-4-scout-text", ("llama-4-scout", True, "meta")),
        ("glm-4-9b-0414", ("glm-4-9b-0414", False, "meta")),
        ("glm-4.5-air", ("glm-4.5-air", False, "meta")),
        ("olmo-2-1b", ("olmo-2-1b", False, "meta")),
        ("olmo-3-7b", ("olmo-3-7b", False, "meta")),
        ("olmoe-1b-7b", ("olmoe-1b-7b", False, "meta")),
        ("falcon-7b", ("falcon-7b", False, "meta")),
        ("falcon-40b", ("falcon-40b", False, "meta")),
        ("starcoderbase-1b", ("starcoderbase-1b", False, "meta")),
        ("gpt-j-6b", ("gpt-j-6b", False, "meta")),
        ("gpt-neo-125m", ("gpt-neo-125m", False, "meta")),
        ("bloom-560m", ("bloom-560m", False, "meta")),
        ("starcoder2-3b", ("starcoder2-3b", False, "meta")),
        ("starcoder2-7b", ("starcoder2-7b", False, "meta")),
        ("stablelm-2-1.6b", ("stablelm-2-1.6b", False, "meta")),
        ("stablelm-2-1.6b-qk-layernorm", ("stablelm-2-1.6b-qk-layernorm", False, "meta")),
        ("granite-3.1-2b", ("granite-3.1-2b", False, "meta")),
        ("granite-3.1-1b-a400m", ("granite-3.1-1b-a400m", False, "meta")),
        ("phi-3.5-moe", ("phi-3.5-moe", False, "meta")),
        ("smollm3-3b", ("smollm3-3b", False, "meta")),
        ("c4ai-command-r-v01", ("c4ai-command-r-v01", False, "meta")),
        ("aya-23-8b", ("aya-23-8b", False, "meta")),
        ("c4ai-command-r7b", ("c4ai-command-r7b", False, "meta")),
        ("ministral-8b", ("ministral-8b", False, "meta")),
        ("ernie-4.5-0.3b", ("ernie-4.5-0.3b", False, "meta")),
        ("ernie-4.5-21b-a3b", ("ernie-4.5-21b-a3b", False, "meta")),
        ("exaone-4.0-1.2b", ("exaone-4.0-1.2b", False, "meta")),
        ("seed-oss-36b", ("seed-oss-36b", False, "meta")),
        ("helium-1-2b", ("helium-1-2b", False, "meta")),
        ("qwen3-next-80b-a3b", ("qwen3-next-80b-a3b", False, "meta")),
        ("qwen3.5-35b-a3b-text", ("qwen3.5-35b-a3b", True, "meta")),
        ("nemotron-h-8b", ("nemotron-h-8b", False, "meta")),
        ("nemotron-h-56b", ("nemotron-h-56b", False, "meta")),
        ("kimi-k2-instruct", ("kimi-k2-instruct", False, "meta")),
        ("falcon-7b-refinedwebmodel", ("falcon-7b-refinedwebmodel", False, "meta")),
        ("falcon-40b-refinedweb", ("falcon-40b-refinedweb", False, "meta")),
        ("nemotron-3-nano-30b-a3b", ("nemotron-3-nano-30b-a3b", False, "meta")),
        ("nemotron-3-super-120b-a12b", ("nemotron-3-super-120b-a12b", False, "meta")),
        ("jamba-v0.1", ("jamba-v0.1", False, "meta")),
        ("lfm2-1.2b", ("lfm2-1.2b", False, "meta")),
        ("mamba2-130m", ("mamba2-130m", False, "meta")),
        ("mpt-7b", ("mpt-7b", False, "meta")),
        ("dbrx", ("dbrx", False, "meta")),
        ("persimmon-8b", ("persimmon-8b", False, "meta")),
        ("minitron-4b", ("minitron-4b", False, "meta")),
        ("arcee-afm-4.5b", ("arcee-afm-4.5b", False, "meta")),
        ("apertus-8b", ("apertus-8b", False, "meta")),
        ("hunyuan-mt-7b", ("hunyuan-mt-7b", False, "meta")),
        ("gemma-4-31b-text", ("gemma-4-31b", True, "meta")),
        ("gemma-4-e2b-text", ("gemma-4-e2b", True, "meta")),
        ("gemma-4-e4b-text", ("gemma-4-e4b", True, "meta")),
        ("gemma-4-26b-a4b-text", ("gemma-4-26b-a4b", True, "meta")),
        ("gemma-3n-e2b-it-text", ("gemma-3n-e2b-it", True, "meta")),
        ("gemma-3n-e4b-it-text", ("gemma-3n-e4b-it", True, "meta")),
        ("gemma-3n-text-defaults", ("gemma-3n-text-defaults", False, "meta")),
        ("tiny-qwen3.5", ("tiny-qwen3.5", False, "cpu")),
        ("olmo-1b", ("olmo-1b", False, "meta")),
        ("glm-4-9b-chat-hf", ("glm-4-9b-chat-hf", False, "meta")),
        ("internlm3-8b-instruct", ("internlm3-8b-instruct", False, "meta")),
        ("iquest-coder-v1-40b", ("iquest-coder-v1-40b", False, "meta")),
        ("exaone-3.0-7.8b", ("exaone-3.0-7.8b", False, "meta")),
        ("cwm", ("cwm", False, "meta")),
        ("ministral-3-8b", ("ministral-3-8b", False, "meta")),
        ("vaultgemma-1b", ("vaultgemma-1b", False, "meta")),
        ("jais-2-8b", ("jais-2-8b", False, "meta")),
        ("nanochat-d32", ("nanochat-d32", False, "meta")),
        ("granite-swash-2b", ("granite-swash-2b", False, "meta")),
        ("codegen-350m-mono", ("codegen-350m-mono", False, "meta")),
        ("xglm-564m", ("xglm-564m", False, "meta")),
        ("biogpt", ("biogpt", False, "meta")),
        ("gpt-neox-japanese-2.7b", ("gpt-neox-japanese-2.7b", False, "meta")),
        ("youtu-llm-2b", ("youtu-llm-2b", False, "meta")),
        ("solar-open-100b", ("solar-open-100b", False, "meta")),
        ("mellum2-12b-a2.5b", ("mellum2-12b-a2.5b", False, "meta")),
        ("deepseek-v3.2-exp", ("deepseek-v3.2-exp", False, "meta")),
        ("deepseek-v4-flash", ("deepseek-v4-flash", False, "meta")),
        ("minimax-m2", ("minimax-m2", False, "meta")),
        ("glm-4.7-flash", ("glm-4.7-flash", False, "meta")),
        ("hunyuan-a13b", ("hunyuan-a13b", False, "meta")),
        ("dots.llm1.base", ("dots.llm1.base", False, "meta")),
        ("flexolmo-7x7b-1t", ("flexolmo-7x7b-1t", False, "meta")),
        ("lfm2-8b-a1b", ("lfm2-8b-a1b", False, "meta")),
        ("granitemoeshared-1b", ("granitemoeshared-1b", False, "meta")),
        ("sarvam-30b", ("sarvam-30b", False, "meta")),
        ("sarvam-105b", ("sarvam-105b", False, "meta")),
        ("glm-5", ("glm-5", False, "meta")),
        ("afmoe-defaults", ("afmoe-defaults", False, "meta")),
        ("exaone-moe-defaults", ("exaone-moe-defaults", False, "meta")),
        ("cohere2-moe-defaults", ("cohere2-moe-defaults", False, "meta")),
        ("mimo-v2-flash", ("mimo-v2-flash", False, "meta")),
        ("apertus1p5-defaults", ("apertus1p5-defaults", False, "meta")),
        ("hyperclovax-defaults", ("hyperclovax-defaults", False, "meta")),
        ("gemma4-unified-defaults-text", ("gemma4-unified-defaults", True, "meta")),
        ("gpt-sw3-356m", ("gpt-sw3-356m", False, "meta")),
        ("minicpm3-4b", ("minicpm3-4b", False, "meta")),
        ("granitemoe-swa-defaults", ("granitemoe-swa-defaults", False, "meta")),
        ("aria-text", ("aria", True, "meta")),
        ("emu3-chat", ("emu3-chat", False, "meta")),
        ("bitnet-b1.58-2b-4t", ("bitnet-b1.58-2b-4t", False, "meta")),
        ("diffllama-defaults", ("diffllama-defaults", False, "meta")),
        ("hy-v3-defaults", ("hy-v3-defaults", False, "meta")),
        ("kolibri1-defaults", ("kolibri1-defaults", False, "meta")),
        ("laguna-xs-2.1", ("laguna-xs-2.1", False, "meta")),
        ("laguna-xs-2.1-per-element", ("laguna-xs-2.1-per-element", False, "meta")),
        ("dots3-note-defaults-text", ("dots3-note-defaults", True, "meta")),
        ("minimax-m3-text", ("minimax-m3", True, "meta")),
        ("ctrl", ("ctrl", False, "meta")),
        ("axk1-defaults", ("axk1-defaults", False, "meta")),
        ("axk2-defaults", ("axk2-defaults", False, "meta")),
        ("phi4-multimodal-defaults-text", ("phi4-multimodal-defaults", True, "meta")),
        ("flint-defaults", ("flint-defaults", False, "meta")),
        ("tiny-lara-mini", ("tiny-lara-mini", False, "cpu")),
        ("cohere-compass-text-defaults", ("cohere-compass-text-defaults", False, "meta")),
        ("beam-defaults", ("beam-defaults", False, "meta")),
        ("molmo2-8b-defaults-text", ("molmo2-8b-defaults", True, "meta")),
        ("molmo2-olmo-defaults-text", ("molmo2-olmo-defaults", True, "meta")),
        ("granite4-vision-defaults-text", ("granite4-vision-defaults", True, "meta")),
        ("granite-docling-defaults-text", ("granite-docling-defaults", True, "meta")),
        ("deepseek-ocr2-defaults-text", ("deepseek-ocr2-defaults", True, "meta")),
        ("deepseek-ocr-2-text", ("deepseek-ocr-2", True, "meta")),
        ("cosmos3-edge-defaults-text", ("cosmos3-edge-defaults", True, "meta")),
        ("kosmos-2-defaults-text", ("kosmos-2-defaults", True, "meta")),
        ("muse-glimmer-defaults-text", ("muse-glimmer-defaults", True, "meta")),
        ("muse-glimmer-50-layers-text", ("muse-glimmer-50-layers", True, "meta")),
        ("jetmoe-8b", ("jetmoe-8b", False, "meta")),
        ("minimax-text-01", ("minimax-text-01", False, "meta")),
        ("rwkv-4-169m-pile", ("rwkv-4-169m-pile", False, "meta")),
        ("xlstm-7b", ("xlstm-7b", False, "meta")),
        ("llama-3.2-11b-vision-text", ("llama-3.2-11b-vision-instruct", True, "meta")),
        ("llama-3.2-90b-vision-text", ("llama-3.2-90b-vision-instruct", True, "meta")),
        ("paddleocr-vl-text", ("paddleocr-vl", True, "meta")),
        ("hunyuanocr-text", ("hunyuanocr", True, "meta")),
        ("ernie-4.5-vl-28b-a3b-text", ("ernie-4.5-vl-28b-a3b", True, "meta")),
        # tiny real-weight twins of families whose forward pass needs values (see README)
        ("tiny-qwen3-next", ("tiny-qwen3-next", False, "cpu")),
        ("tiny-qwen3.5-moe-text", ("tiny-qwen3.5-moe", True, "cpu")),
        ("tiny-nemotron-h", ("tiny-nemotron-h", False, "cpu")),
        ("tiny-nemotron-3-nano", ("tiny-nemotron-3-nano", False, "cpu")),
        ("tiny-nemotron-h-latent-moe", ("tiny-nemotron-h-latent-moe", False, "cpu")),
        ("tiny-jamba", ("tiny-jamba", False, "cpu")),
        ("tiny-lfm2", ("tiny-lfm2", False, "cpu")),
        ("tiny-mamba2", ("tiny-mamba2", False, "cpu")),
        ("tiny-dbrx", ("tiny-dbrx", False, "cpu")),
        ("tiny-internlm3", ("tiny-internlm3", False, "cpu")),
        ("tiny-lfm2-moe", ("tiny-lfm2-moe", False, "cpu")),
        ("tiny-jetmoe", ("tiny-jetmoe", False, "cpu")),
        ("tiny-minimax", ("tiny-minimax", False, "cpu")),
        ("tiny-xlstm", ("tiny-xlstm", False, "cpu")),
        # recurrent and hybrid families
        ("mamba-130m", ("mamba-130m", False, "meta")),
        ("falcon-mamba-7b", ("falcon-mamba-7b", False, "meta")),
        ("bamba-9b", ("bamba-9b", False, "meta")),
        ("granite-4.0-h-tiny", ("granite-4.0-h-tiny", False, "meta")),
        ("falcon-h1-7b", ("falcon-h1-7b", False, "meta")),
        ("olmo-hybrid-7b", ("olmo-hybrid-7b", False, "meta")),
        ("lfm3-1.7b", ("lfm3-1.7b", False, "meta")),
        ("kimi-linear-48b-a3b", ("kimi-linear-48b-a3b", False, "meta")),
        ("ling-3.0-flash", ("ling-3.0-flash", False, "meta")),
        ("recurrentgemma-2b", ("recurrentgemma-2b", False, "meta")),
        ("tiny-bamba", ("tiny-bamba", False, "cpu")),
        ("tiny-recurrentgemma", ("tiny-recurrentgemma", False, "cpu")),
        ("tiny-ling-hybrid", ("tiny-ling-hybrid", False, "cpu")),
        ("tiny-kimi-linear", ("tiny-kimi-linear", False, "cpu")),
        ("tiny-lfm3", ("tiny-lfm3", False, "cpu")),
        ("tiny-olmo-hybrid", ("tiny-olmo-hybrid", False, "cpu")),
        ("tiny-falcon-h1", ("tiny-falcon-h1", False, "cpu")),
        ("tiny-granite-4.0-h", ("tiny-granite-4.0-h", False, "cpu")),
        ("tiny-granite-4.0-h-dense", ("tiny-granite-4.0-h-dense", False, "cpu")),
        ("glm-4.1v-9b-thinking", ("glm-4.1v-9b-thinking", True, "meta")),
        ("glm-4.5v", ("glm-4.5v", True, "meta")),
        ("glm-ocr", ("glm-ocr", True, "meta")),
        ("glm-image-defaults", ("glm-image-defaults", True, "meta")),
        ("step-3.7-flash", ("step-3.7-flash", True, "meta")),
        ("tiny-step3p5", ("tiny-step3p5", True, "cpu")),
        # shared blocks reused at several depths
        ("zamba2-2.7b", ("zamba2-2.7b", False, "meta")),
        ("zamba2-1.2b", ("zamba2-1.2b", False, "meta")),
        ("tiny-zamba2", ("tiny-zamba2", False, "cpu")),
        ("zamba-7b-v1", ("zamba-7b-v1", False, "meta")),
        ("tiny-zamba", ("tiny-zamba", False, "cpu")),
        # hyper-connections without stream mixing, MLA with an output gate and sinks
        ("hy-v4-defaults", ("hy-v4-defaults", False, "meta")),
        ("hy-v4-vl-defaults-text", ("hy-v4-vl-defaults", True, "meta")),
        # low-rank gated hyper-connections, an indexer over mean-pooled key blocks
        ("tiny-qwen4-exp-text", ("tiny-qwen4-exp", True, "cpu")),
        ("qwen4-exp-defaults-text", ("qwen4-exp-defaults", True, "meta")),
        ("mistral-large-4-defaults", ("mistral-large-4-defaults", True, "meta")),
        ("glm-5.3-flash-defaults", ("glm-5.3-flash-defaults", True, "meta")),
        ("tiny-glm5-next", ("tiny-glm5-next", True, "cpu")),
        ("hrm-text-defaults", ("hrm-text-defaults", False, "meta")),
        ("hrm-text-one-high-cycle", ("hrm-text-one-high-cycle", False, "meta")),
        # text configs their wrapper's class renames before building them
        ("exaone-4.5-33b-text", ("exaone-4.5-33b", True, "meta")),
        ("kimi-k2.5-nvfp4-text", ("kimi-k2.5-nvfp4", True, "meta")),
        # published files checked against transformers 5.24
        ("deepseek-coder-v2-instruct", ("deepseek-coder-v2-instruct", False, "meta")),
        ("phi-3-medium-4k-instruct", ("phi-3-medium-4k-instruct", False, "meta")),
        ("mixtral-8x22b", ("mixtral-8x22b", False, "meta")),
        ("llama-2-7b", ("llama-2-7b", False, "meta")),
        ("llama-2-70b", ("llama-2-70b", False, "meta")),
        ("codellama-34b", ("codellama-34b", False, "meta")),
        ("qwen2-72b-instruct", ("qwen2-72b-instruct", False, "meta")),
        ("qwen2.5-14b", ("qwen2.5-14b", False, "meta")),
        ("qwen2.5-32b", ("qwen2.5-32b", False, "meta")),
        ("qwen3-4b", ("qwen3-4b", False, "meta")),
        ("qwen3-14b", ("qwen3-14b", False, "meta")),
        ("qwen3-32b", ("qwen3-32b", False, "meta")),
        ("llama-3.2-3b", ("llama-3.2-3b", False, "meta")),
        ("olmo-2-1124-13b", ("olmo-2-1124-13b", False, "meta")),
        ("gemma-2-9b-it", ("gemma-2-9b-it", False, "meta")),
        ("gemma-2-27b", ("gemma-2-27b", False, "meta")),
        ("mistral-nemo-base-2407", ("mistral-nemo-base-2407", False, "meta")),
        ("llama-4-maverick-text", ("llama-4-maverick", True, "meta")),
        ("llama-3.3-70b-instruct", ("llama-3.3-70b-instruct", False, "meta")),
        ("laguna-s-2.1", ("laguna-s-2.1", False, "meta")),
        ("qwen3-vl-235b-a22b-thinking-text", ("qwen3-vl-235b-a22b-thinking", True, "meta")),
        ("qwen3.5-397b-a17b-text", ("qwen3.5-397b-a17b", True, "meta")),
        ("gemma-3-27b-text", ("gemma-3-27b", True, "meta")),
        ("gemma-3-12b-text", ("gemma-3-12b", True, "meta")),
        ("ministral-3-3b-reasoning-2512-text", ("ministral-3-3b-reasoning-2512", True, "meta")),
        ("phi-3.5-mini-instruct", ("phi-3.5-mini-instruct", False, "meta")),
        ("phi-4-mini-instruct", ("phi-4-mini-instruct", False, "meta")),
        ("mistral-7b-v0.3", ("mistral-7b-v0.3", False, "meta")),
        ("santacoder", ("santacoder", False, "meta")),
        ("redpajama-incite-3b-v1", ("redpajama-incite-3b-v1", False, "meta")),
        ("stablelm-3b-4e1t", ("stablelm-3b-4e1t", False, "meta")),
        ("llava-1.5-7b-text", ("llava-1.5-7b", True, "meta")),
        ("tinyllama-1.1b-chat-v1.0", ("tinyllama-1.1b-chat-v1.0", False, "meta")),
        ("smollm2-360m", ("smollm2-360m", False, "meta")),
        ("qwen3-1.7b", ("qwen3-1.7b", False, "meta")),
        # DeepSeek-V3 modules under new names
        ("mistral-small-4-defaults-text", ("mistral-small-4-defaults", True, "meta")),
        ("dory-defaults", ("dory-defaults", False, "meta")),
        ("dory-three-loops", ("dory-three-loops", False, "meta")),
        ("dory-last-loop", ("dory-last-loop", False, "meta")),
        # dynamic mask attention and the cross-domain mixture of experts
        ("doge-defaults", ("doge-defaults", False, "meta")),
        ("doge-cdmoe-defaults", ("doge-cdmoe-defaults", False, "meta")),
        ("doge-cdmoe-small", ("doge-cdmoe-small", False, "meta")),
    ]
)
STEPS = ["params", "macs", "kv"]

MACS_BATCH, MACS_SEQ = 1, 128
KV_BATCH, KV_SEQ = 1, 16
LONG_KV = {"gemma-2-2b": 4096, "gpt-oss-20b": 4096, "gpt-neo-125m": 512}
# MoE experts: "batched_mm" gathers each token's top-k expert matrices (no data-dependent shapes,
# so it runs on meta). On real CPU weights the eager per-expert loop is used.
EXPERTS_IMPL = {"meta": "batched_mm", "cpu": "eager"}
EXPERT_NAMES = {"experts"}
ROUTER_NAMES = {"gate", "router"}
SHARED_NAMES = {"shared_experts", "shared_expert", "shared_mlp"}
LAYER_INDEX = re.compile(r"\.(\d+)\.")


# --------------------------------------------------------------------------- building


def load_config(fixture: str, text: bool):
    """Fixture config.json -> transformers config; the text decoder's config if `text`. The file
    is read as ``from_pretrained`` reads it (``_dict_from_json_file``: ``Infinity`` and
    ``{"__float__": "Infinity"}`` are floats)."""
    data = PretrainedConfig._dict_from_json_file(fixture_path(fixture))
    config = config_class(data).from_dict(ported(data))
    return config.get_text_config() if text else config


REMOTE_PORTS = {"RWForCausalLM": "FalconForCausalLM"}
"""Remote classes transformers has a port of: Falcon's first files (model_type RefinedWeb or
RefinedWebModel) name RWForCausalLM, whose tensors FalconForCausalLM builds."""


def config_class(data: dict) -> type:
    """The configuration class transformers reads ``data`` with: its model_type's; for a
    model_type transformers does not know, the config class of the first class its
    ``architectures`` names (Kimi-K2's kimi_k2 names DeepseekV3ForCausalLM), or of that
    class's port."""
    if data["model_type"] in CONFIG_MAPPING:
        return CONFIG_MAPPING[data["model_type"]]
    for name in data.get("architectures") or ():
        cls = getattr(transformers, REMOTE_PORTS.get(name, name), None)
        if cls is not None:
            return cls.config_class
    raise KeyError(f"no transformers class for model_type {data['model_type']!r}")


def ported(data: dict) -> dict:
    """RWConfig's keys as FalconConfig names them (its attribute_map: n_head, n_layer; and
    RefinedWeb's n_head_kv, its decoder the new architecture; RWConfig's switches false by
    default); any other config as it is."""
    if data["model_type"] not in ("RefinedWeb", "RefinedWebModel"):
        return data
    new = data["model_type"] == "RefinedWeb"
    flags = {flag: data.get(flag, False) for flag in ("multi_query", "parallel_attn", "bias")}
    renamed = {
        "num_attention_heads": data["n_head"],
        "num_hidden_layers": data["n_layer"],
        "num_kv_heads": data.get("n_head_kv", data["n_head"]) if new else None,
        "new_decoder_architecture": new,
    }
    return {**data, **flags, **renamed}


class TextDecoder(PreTrainedModel):
    """The language model and LM head of a conditional-generation model, run on token ids alone
    (for a text config AutoModelForCausalLM has no class for). A PreTrainedModel, so that peft
    leaves its output embeddings out of ``all-linear`` as it does the whole model's."""

    config_class = PretrainedConfig
    _can_set_experts_implementation_cached_value = True  # the whole model built the experts

    def __init__(self, whole: PreTrainedModel) -> None:
        super().__init__(whole.config.get_text_config())
        self.model = whole.get_decoder()
        self.lm_head = whole.get_output_embeddings()
        self.whole_class = type(whole).__name__

    def get_input_embeddings(self) -> nn.Module:
        return self.model.get_input_embeddings()

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head

    def forward(self, input_ids, **kwargs):
        if kwargs.get("use_cache"):  # as generate() does: some language models make none
            kwargs["cache"] = DynamicCache(config=self.config)
        output = self.model(input_ids, **kwargs)
        return SimpleNamespace(
            logits=self.lm_head(output.last_hidden_state),
            cache=getattr(output, "cache", None),
            past_key_values=getattr(output, "past_key_values", None),
        )


def generation_class(config) -> type:
    """The class the file's ``architectures`` names, else (none named, or a class of the
    model's own code transformers does not have: Kimi-K2.5's KimiK25ForConditionalGeneration)
    the ``*ForConditionalGeneration`` class the auto mappings give the wrapper's model_type."""
    named = getattr(transformers, config.architectures[0], None) if config.architectures else None
    if named is not None:
        return named
    model_type = config.model_type
    names = {
        classes[model_type]
        for mapping in dir(modeling_auto)
        if mapping.endswith("_MAPPING_NAMES")
        and isinstance(classes := getattr(modeling_auto, mapping), dict)
        and isinstance(classes.get(model_type), str)
    }
    (name,) = {n for n in names if n.endswith("ForConditionalGeneration")}
    return getattr(transformers, name)


def text_holder(config, text):
    """The (sub-)config whose ``text_config`` is ``text``: the multimodal config itself, or a
    deeper one (Qwen2.5-Omni's thinker)."""
    if getattr(config, "text_config", None) is text:
        return config
    for name in getattr(config, "sub_configs", {}):
        sub = getattr(config, name, None)
        found = text_holder(sub, text) if isinstance(sub, PretrainedConfig) else None
        if found is not None:
            return found
    return None


def build_text_decoder(
    config, device: str, dtype: torch.dtype = torch.float32, **kwargs
) -> nn.Module:
    """The text decoder of a multimodal config's conditional-generation model, with its LM
    head (the language model itself when it holds the head: Kosmos-2's causal LM), in
    `dtype`."""
    with torch.device(device):
        whole = generation_class(config)._from_config(
            config, attn_implementation="eager", dtype=dtype, **kwargs
        )
    decoder = whole.get_decoder()
    if decoder.get_output_embeddings() is not None:
        return decoder.eval()
    return TextDecoder(whole).eval()


def build(fixture: str, text: bool, device: str, dtype: torch.dtype = torch.float32):
    """The fixture's model, as ``build_from`` builds it."""
    return build_from(load_config(fixture, False), text, device, dtype=dtype)


def build_from(
    whole, text: bool, device: str, inside: bool = False, dtype: torch.dtype = torch.float32
):
    """Build a config (its text decoder if `text`) in `dtype`, with an explicit experts
    implementation where the family accepts one. A text config AutoModelForCausalLM has no
    class for (or any nested one, with `inside`) is built inside its conditional-generation
    model, whose language model and LM head are kept."""
    config = whole.get_text_config() if text else whole
    built, make = config, build_model
    nested = text and config is not whole and text_holder(whole, config) is not None
    if (inside and nested) or (
        type(config) not in MODEL_FOR_CAUSAL_LM_MAPPING and causal_lm_class(config) is None
    ):
        built, make = text_holder(whole, whole.get_text_config()), build_text_decoder
    torch.manual_seed(0)
    try:
        model = make(built, device, dtype, experts_implementation=EXPERTS_IMPL[device])
        impl = getattr(model.config, "_experts_implementation", None)
    except (ValueError, TypeError):
        model, impl = make(built, device, dtype), None
    if text and getattr(config, "text_config", None) is None and config.sub_configs:
        drop_uncalled(model)
    return config, model, impl


UNCALLED = {
    "phi4_multimodal": (
        "model.embed_tokens_extend.image_embed",
        "model.embed_tokens_extend.audio_embed",
    ),
}
"""Flat multimodal families (their text keys at the top level, their encoders built inside the
causal LM): the modules a forward on token ids alone never calls. Phi-4-multimodal
(modeling_phi4_multimodal.py): ``Phi4MultimodalFeatureEmbedding.forward`` calls ``image_embed``
(the vision tower and its projection) only given ``image_pixel_values`` and ``audio_embed`` (the
audio encoder and its speech and vision-speech projections) only given ``audio_input_features``;
everything else it holds is the decoder's."""


def drop_uncalled(model: nn.Module) -> list[str]:
    """A flat multimodal causal LM as its text decoder: each module of its family's ``UNCALLED``
    replaced by an empty module, by name, with no forward (so a config whose forward fails is
    still counted). Returns their names (kept on the model as ``dropped_modules``)."""
    dropped = list(UNCALLED[model.config.model_type])
    for name in dropped:
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent), child, nn.Module())
    model.dropped_modules = dropped
    return dropped


def n_layers_of(config) -> int:
    return config.num_hidden_layers


def hrm_text_uses(model: nn.Module, config) -> list[nn.Module]:
    """HrmTextModel.forward: per H cycle, the L stack L_cycles times, then the H stack."""
    low, high = list(model.model.L_module.layers), list(model.model.H_module.layers)
    return (low * config.L_cycles + high) * config.H_cycles


def dory_uses(model: nn.Module, config) -> list[nn.Module]:
    """DoryModel.forward: the input layers, the recurrent ones n_recurrent_loops times, the
    output layers."""
    layers = list(model.model.layers)
    start, end = config.n_input_layers, config.n_input_layers + config.n_recurrent_layers
    return layers[:start] + layers[start:end] * config.n_recurrent_loops + layers[end:]


LAYER_USES = {"hrm_text": hrm_text_uses, "dory": dory_uses}
"""Families whose forward runs its layer modules several times (a block reused at several
depths with no module per use): their layers in the order the forward runs them, a module
as often as it runs. Their parameters outside every layer are the other parameters."""


def layers_of(model: nn.Module, config) -> tuple[str, nn.ModuleList]:
    uses = LAYER_USES.get(config.model_type)
    if uses is not None:
        return "", nn.ModuleList(uses(model, config))
    try:
        return decoder_layers(model, config)
    except (LookupError, AttributeError):
        for name, module in model.named_modules():
            if isinstance(module, nn.ModuleList) and name.endswith("layers"):
                return name, module
        raise


# --------------------------------------------------------------------------- parameters


def layout(layer: nn.Module) -> tuple:
    return tuple((n, tuple(p.shape)) for n, p in layer.named_parameters())


def params_record(model: nn.Module, config) -> dict:
    total = sum(p.numel() for p in model.parameters())
    prefix, layers = layers_of(model, config)
    # A parameter several layers hold (a block reused at several depths) is shared: counted
    # once, in parameters_shared, and in no layer's own count.
    holders: dict[int, int] = {}
    for layer in layers:
        for p in layer.parameters():
            holders[id(p)] = holders.get(id(p), 0) + 1
    shared = {
        id(p): p.numel() for layer in layers for p in layer.parameters() if holders[id(p)] > 1
    }
    per_layer = [
        sum(p.numel() for p in layer.parameters() if holders[id(p)] == 1) for layer in layers
    ]
    if prefix:
        other = {n: p for n, p in model.named_parameters() if not n.startswith(prefix + ".")}
    else:  # layers in forward order (LAYER_USES): what no layer holds
        other = {n: p for n, p in model.named_parameters() if id(p) not in holders}
    other_numel = sum(p.numel() for p in other.values())
    assert sum(per_layer) + sum(shared.values()) + other_numel == total, "layers + other != total"
    out = model.get_output_embeddings()
    untied_extra = out.weight.numel() if out is not None and is_tied(model) else 0
    kinds: dict[tuple, dict] = {}
    for index, layer in enumerate(layers):
        common = [n for n, p in layer.named_parameters() if holders[id(p)] > 1]
        key = (type(layer).__name__, layout(layer), tuple(common))
        kind = kinds.setdefault(
            key,
            {
                "layer_class": type(layer).__name__,
                "parameters": per_layer[index],
                "layers": [],
                "tensors": shapes(layer.named_parameters()),
                **({"shared_tensors": common} if common else {}),
            },
        )
        kind["layers"].append(index)
    return {
        "model_class": type(model).__name__,
        "config_class": type(config).__name__,
        "model_type": config.model_type,
        "parameters_total": total,
        "parameters_untied_extra": untied_extra,
        "tied_embeddings": bool(untied_extra),
        "n_layers": len(layers),
        "layers_prefix": prefix,
        "parameters_per_layer": per_layer,
        **({"parameters_shared": sum(shared.values())} if shared else {}),
        "parameters_other": other_numel,
        "parameters_by_tensor_layer0": shapes(layers[0].named_parameters()),
        "layer_kinds": list(kinds.values()),
        "parameters_by_tensor_other": shapes(other.items()),
        **buffers_record(model),
    }


def buffers_record(model: nn.Module) -> dict:
    """Buffers (never parameters), grouped by name with the layer index replaced by '*'."""
    params = {id(p) for p in model.parameters()}
    groups: dict[str, dict] = {}
    total = persistent_total = 0
    for module_name, module in model.named_modules():
        for name, buf in module.named_buffers(recurse=False):
            if buf is None or id(buf) in params:
                continue
            full = f"{module_name}.{name}" if module_name else name
            persistent = name not in module._non_persistent_buffers_set
            key = LAYER_INDEX.sub(".*.", full)
            group = groups.setdefault(
                key,
                {
                    "shape": list(buf.shape),
                    "dtype": str(buf.dtype),
                    "persistent": persistent,
                    "count": 0,
                },
            )
            group["count"] += 1
            total += buf.numel()
            persistent_total += buf.numel() if persistent else 0
    return {
        "buffers_total": total,
        "buffers_persistent_total": persistent_total,
        "buffers": dict(sorted(groups.items())),
    }


# --------------------------------------------------------------------------- MACs


def last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def modules_flops(model: nn.Module, flops: dict, names: set[str]) -> dict[str, int]:
    """Per-op FLOPs of modules whose last name component is in `names` (outermost only)."""
    prefix = type(model).__name__ + "."
    picked: list[str] = []
    for name, _ in model.named_modules():
        if last(name) in names and not any(name.startswith(p + ".") for p in picked):
            picked.append(name)
    total: dict[str, int] = {}
    for name in picked:
        for op, n in flops.get(prefix + name, {}).items():
            total[str(op)] = total.get(str(op), 0) + int(n)
    return total


def by_layer_child(model: nn.Module, flops: dict, layers: nn.ModuleList) -> dict:
    """FLOPs per op of each direct child of the decoder layers, summed over layers, by name
    (a layer module run several times once: its counts hold every run)."""
    key = type(model).__name__
    paths = {id(module): name for name, module in model.named_modules()}
    out: dict[str, dict[str, int]] = {}
    for layer in {id(layer): layer for layer in layers}.values():
        for child, _ in layer.named_children():
            counts = flops.get(f"{key}.{paths[id(layer)]}.{child}", {})
            slot = out.setdefault(child, {})
            for op, n in counts.items():
                slot[str(op)] = slot.get(str(op), 0) + int(n)
    return {k: dict(sorted(v.items())) for k, v in sorted(out.items()) if v}


def weight_leaf_ops(model: nn.Module, flops: dict) -> dict[str, list[str]]:
    """Weight-matrix leaves (2-D weight) that ran anything but mm/addmm (normally empty)."""
    prefix = type(model).__name__
    odd = {}
    for name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        if any(True for _ in module.children()) or not isinstance(weight, torch.Tensor):
            continue
        if weight.dim() != 2:
            continue
        ops = sorted(str(op) for op in flops.get(f"{prefix}.{name}", {}))
        if ops and not set(ops) <= LINEAR_OPS:
            odd[LAYER_INDEX.sub(".*.", name)] = ops
    return odd


def is_softmax_attention(module: nn.Module) -> bool:
    """Softmax attention modules (not Mamba mixers, gated DeltaNet or short convolutions)."""
    name = type(module).__name__
    return name.endswith("Attention") and not any(
        word in name for word in ("Linear", "Delta", "Mamba", "Lightning")
    )


def attention_module_flops(model: nn.Module, flops: dict) -> dict[str, int]:
    prefix = type(model).__name__ + "."
    total: dict[str, int] = {}
    picked: list[str] = []
    for name, module in model.named_modules():
        if is_softmax_attention(module) and not any(name.startswith(p + ".") for p in picked):
            picked.append(name)
            for op, n in flops.get(prefix + name, {}).items():
                total[str(op)] = total.get(str(op), 0) + int(n)
    return total


def macs_record(model: nn.Module, config, batch: int, seq: int, device: str) -> dict:
    ids = token_ids(batch, seq, device, getattr(config, "vocab_size", 1))
    counter = count_flops(model, ids)
    flops = counter.get_flop_counts()
    total = counter.get_total_flops()
    _, layers = layers_of(model, config)
    head = model.get_output_embeddings()
    head_flops = flops.get(module_key(model, head), {}) if head is not None else {}
    experts = modules_flops(model, flops, EXPERT_NAMES)
    routers = modules_flops(model, flops, ROUTER_NAMES)
    shared = modules_flops(model, flops, SHARED_NAMES)
    attention = attention_module_flops(model, flops)
    record = {
        "batch": batch,
        "seq_len": seq,
        "flops_total": total,
        "macs_total": total // 2,
        "macs_lm_head": sum(head_flops.values()) // 2,
        "macs_attention_pair": ops_total(attention, ATTENTION_PAIR_OPS) // 2,
        "macs_bmm_other": (
            ops_total(flops["Global"], ATTENTION_PAIR_OPS)
            - ops_total(experts, ATTENTION_PAIR_OPS)
            - ops_total(attention, ATTENTION_PAIR_OPS)
        )
        // 2,
        "macs_linear": (
            ops_total(flops["Global"], LINEAR_OPS)
            - ops_total(experts, LINEAR_OPS)
            - ops_total(head_flops, LINEAR_OPS)
        )
        // 2,
        "macs_experts": sum(experts.values()) // 2,
        "macs_router": sum(routers.values()) // 2,
        "macs_shared_experts": sum(shared.values()) // 2,
        "macs_other_ops": {
            op: n // 2
            for op, n in by_op(flops["Global"]).items()
            if op not in ATTENTION_PAIR_OPS | LINEAR_OPS
        },
        "flops_by_op": by_op(flops["Global"]),
        "flops_by_layer_child": by_layer_child(model, flops, layers),
    }
    odd = weight_leaf_ops(model, flops)
    if odd:
        record["weight_leaves_not_mm"] = odd
    return record


# --------------------------------------------------------------------------- KV cache


def cache_tensors(layer) -> dict[str, list[int]]:
    """Every tensor a cache layer holds, by attribute name (lists/tuples indexed)."""
    out = {}
    for attr, value in sorted(vars(layer).items()):
        if attr.startswith("_"):
            continue  # bookkeeping scalars such as _sliding_window_tensor
        if isinstance(value, torch.Tensor):
            out[attr] = list(value.shape)
        elif isinstance(value, (list, tuple, dict)):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for i, item in items:
                if isinstance(item, torch.Tensor):
                    out[f"{attr}[{i}]"] = list(item.shape)
                elif isinstance(item, (list, tuple)):  # xLSTMCache.rnn_state: layer -> (C, n, m)
                    for j, part in enumerate(item):
                        if isinstance(part, torch.Tensor):
                            out[f"{attr}[{i}][{j}]"] = list(part.shape)
    return out


def numel(shape: list[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def state_record(state, batch: int, seq: int) -> dict:
    """A model that returns its recurrent state as a list of tensors instead of a cache object
    (RWKV's ``state``: five B x D x L tensors): their shapes and elements; no keys or values."""
    tensors = {f"state[{i}]": list(t.shape) for i, t in enumerate(state)}
    total = sum(numel(shape) for shape in tensors.values())
    return {
        "batch": batch,
        "seq_len": seq,
        "cache_class": "state",
        "state_tensors": tensors,
        "state_elements": total,
        "kv_cache_elements": 0,
        "cache_layer_kinds": [],
    }


def kv_record(model: nn.Module, config, batch: int, seq: int, device: str) -> dict:
    ids = token_ids(batch, seq, device, getattr(config, "vocab_size", 1))
    output = forward(model, ids, use_cache=True)
    cache = None
    for attr in ("cache", "past_key_values", "cache_params"):
        cache = cache if cache is not None else getattr(output, attr, None)
    state = getattr(output, "state", None)
    if cache is None and isinstance(state, (list, tuple)):
        return state_record(state, batch, seq)
    if cache is None:
        return {"note": f"{type(model).__name__} returns no cache"}
    # An EncoderDecoderCache (GPT-2 with add_cross_attention) holds the self-attention cache
    # beside the cross-attention one, which text-only input leaves empty.
    cache = getattr(cache, "self_attention_cache", cache)
    layers = list(cache.layers) if hasattr(cache, "layers") else [cache]
    per_layer = []
    kinds: dict[tuple, dict] = {}
    by_attr: dict[str, int] = {}
    for index, layer in enumerate(layers):
        tensors = cache_tensors(layer)
        extra = {
            k: v
            for k, v in sorted(vars(layer).items())
            if k in ("sliding_window", "is_sliding", "max_cache_len", "chunk_size")
            and not isinstance(v, torch.Tensor)
        }
        key = (
            type(layer).__name__,
            tuple((k, tuple(v)) for k, v in tensors.items()),
            tuple(extra.items()),
        )
        kind = kinds.setdefault(
            key, {"layer_class": type(layer).__name__, **extra, "tensors": tensors, "layers": []}
        )
        kind["layers"].append(index)
        n = {k: numel(v) for k, v in tensors.items()}
        per_layer.append(sum(n.values()))
        for k, v in n.items():
            base = k.split("[", 1)[0]
            by_attr[base] = by_attr.get(base, 0) + v
    keys = by_attr.get("keys", 0)
    values = by_attr.get("values", 0)
    # MiniMax's cache keeps its lightning layers' states in a list beside its layers.
    linear = [t for t in getattr(cache, "linear_cache", []) if isinstance(t, torch.Tensor)]
    states = {"linear_cache_elements": sum(t.numel() for t in linear)} if linear else {}
    return {
        "batch": batch,
        "seq_len": seq,
        "cache_class": type(cache).__name__,
        "n_cache_layers": len(layers),
        "cache_elements_total": sum(per_layer),
        "cache_elements_per_layer": per_layer,
        "cache_elements_by_kind": dict(sorted(by_attr.items())),
        "kv_cache_elements": keys + values,
        "cache_layer_kinds": list(kinds.values()),
        **states,
    }


# --------------------------------------------------------------------------- driver


def error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:500]


def run_model(name: str, steps: list[str], record: dict) -> dict:
    fixture, text, device = MODELS[name]
    config, model, impl = build(fixture, text, device)
    model.requires_grad_(False)
    record["config"] = str(fixture_path(fixture).relative_to(ROOT))
    record["built_from"] = "text_config" if text else "config"
    if isinstance(model, TextDecoder):
        record["built_from"] += f": language model and LM head of {model.whole_class}"
    if getattr(model, "dropped_modules", None):
        record["built_from"] += ", without the modules a forward on token ids never calls: "
        record["built_from"] += ", ".join(model.dropped_modules)
    record["device"] = device
    record["weights"] = "meta" if device == "meta" else "real float32 on CPU, torch.manual_seed(0)"
    record["experts_implementation"] = impl
    if "params" in steps:
        record.update(params_record(model, config))
        if isinstance(model, TextDecoder):
            record["model_class"] = f"{model.whole_class}: language model and lm_head"
    if "macs" in steps:
        record.pop("macs_error", None)
        try:
            record["macs_forward"] = macs_record(model, config, MACS_BATCH, MACS_SEQ, device)
        except Exception as exc:
            traceback.print_exc()
            record.pop("macs_forward", None)
            record["macs_error"] = error_text(exc)
    if "kv" in steps:
        record.pop("kv_error", None)
        try:
            record["kv_cache"] = kv_record(model, config, KV_BATCH, KV_SEQ, device)
            record["kv_cache_elements"] = record["kv_cache"].get("kv_cache_elements")
            if name in LONG_KV:
                record["kv_cache_long"] = kv_record(model, config, KV_BATCH, LONG_KV[name], device)
        except Exception as exc:
            traceback.print_exc()
            record.pop("kv_cache", None)
            record["kv_error"] = error_text(exc)
    return record


def main(argv: list[str]) -> int:
    args = parse_args(argv, __doc__, list(MODELS), STEPS)
    data = load_output(OUTPUT)
    for name in args.only:
        if not fixture_path(MODELS[name][0]).exists():
            print(f"{name}: no fixture, skipped", flush=True)
            continue
        print(f"{name}: {' '.join(args.steps)}", flush=True)
        try:
            record = run_model(name, args.steps, data["models"].get(name, {}))
        except Exception as exc:
            traceback.print_exc()
            record = {
                "config": str(fixture_path(MODELS[name][0]).relative_to(ROOT)),
                "build_error": error_text(exc),
            }
        data["models"][name] = record
        save_output(data, OUTPUT, GENERATOR, list(MODELS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
