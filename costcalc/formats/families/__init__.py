"""Hugging Face families, one module each (or one for a few built alike), and the index of them.

A family module defines ``FAMILIES``: ``model_type`` -> a translator that reads the keys its
``transformers`` configuration class defines, with that class's defaults, and returns ModelSpec
fields for what the family's modeling code builds; and ``PEFT_NAMES``: ``model_type`` -> peft's
module names of that family (:class:`~costcalc.formats.peft_names.FamilyNames`). A module may also
define ``TEXT_LOCATIONS``: multimodal ``model_type`` -> the key path of its text decoder's keys and
that decoder's ``model_type``, for files that keep them elsewhere than a ``text_config`` at the
top level: at the top level itself (``()``, beside ``vision_config``; transformers moves them
into ``text_config``) or deeper (``("thinker_config", "text_config")``).

:data:`FAMILY_MODULES` says which module holds each ``model_type`` (and :data:`LOCATED_IN` which
declares each text location), so that reading one config imports its family's module only.
Adding a family is adding its module and its line here; a test checks the index against the
modules' declarations, and ``docs/huggingface.md`` against the index.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from costcalc.formats.hf_classes import text_config_type
from costcalc.formats.hf_reader import Reader

if TYPE_CHECKING:
    from costcalc.formats.peft_names import FamilyNames

Translator = Callable[[Reader], dict[str, Any]]

FAMILY_MODULES: dict[str, tuple[str, ...]] = {
    "bitnet": ("bitnet",),
    "ctrl": ("ctrl",),
    "dbrx": ("dbrx",),
    "deepseek": (
        "axk1",
        "axk2",
        "deepseek_v2",
        "deepseek_v3",
        "deepseek_v32",
        "glm4_moe_lite",
        "glm_moe_dsa",
        "minicpm3",
        "mistral4",
        "sarvam_mla",
        "youtu",
    ),
    "deepseek_v4": ("deepseek_v4",),
    "diffllama": ("diffllama",),
    "doge": ("doge",),
    "dory": ("dory",),
    "dots3_note": ("dots3_note_text",),
    "ernie4_5_vl": ("ernie4_5_vl_moe_text",),
    "fairseq_lm": (
        "biogpt",
        "xglm",
    ),
    "falcon": ("falcon",),
    "flint": ("flint",),
    "gemma2": (
        "gemma2",
        "gemma3_text",
        "vaultgemma",
    ),
    "gemma3n": ("gemma3n_text",),
    "gemma4": (
        "gemma4_text",
        "gemma4_unified_text",
    ),
    "glm4": (
        "glm",
        "glm4",
    ),
    "glm4v": (
        "glm4v_moe_text",
        "glm4v_text",
        "glm_image_text",
        "glm_ocr_text",
    ),
    "glm5_next": ("glm5_next_text",),
    "gpt_classic": (
        "bloom",
        "codegen",
        "gpt_bigcode",
        "gpt_neo",
        "gptj",
        "mpt",
    ),
    "gpt_oss": ("gpt_oss",),
    "granitemoe_swa": ("granitemoe_swa",),
    "hrm_text": ("hrm_text",),
    "hy_v3": ("hy_v3",),
    "hy_v4": (
        "hy_v4",
        "hy_v4_vl_text",
    ),
    "jetmoe": ("jetmoe",),
    "kolibri1": ("kolibri1",),
    "laguna": ("laguna",),
    "layernorm": (
        "gpt-sw3",
        "gpt2",
        "gpt_neox",
        "gpt_neox_japanese",
        "openai-gpt",
        "opt",
    ),
    "layernorm_rotary": (
        "jais2",
        "nemotron",
        "persimmon",
        "phi",
        "stablelm",
        "starcoder2",
    ),
    "lfm2_moe": ("lfm2_moe",),
    "linear_attention": (
        "bailing_hybrid",
        "kimi_linear",
        "lara_mini",
        "lfm2",
        "lfm3",
        "olmo_hybrid",
        "qwen3_5_moe_text",
        "qwen3_5_text",
        "qwen3_next",
        "qwen4_exp_text",
        "recurrent_gemma",
    ),
    "llama": (
        "gemma",
        "llama",
        "mistral",
        "mixtral",
        "phi3",
        "qwen2",
        "qwen3",
    ),
    "llama4": ("llama4_text",),
    "llama_built": (
        "cwm",
        "exaone",
        "granite_swa",
        "hunyuan_v1_dense",
        "hunyuan_vl_text",
        "internlm3",
        "iquestcoder",
        "ministral3",
    ),
    "llama_variants": (
        "apertus",
        "apertus1p5_text",
        "arcee",
        "cohere",
        "cohere2",
        "cohere_compass_text",
        "granite",
        "helium",
        "hyperclovax",
        "seed_oss",
    ),
    "mamba2_hybrid": (
        "bamba",
        "falcon_h1",
        "granitemoehybrid",
    ),
    "mellum": ("mellum",),
    "minimax": ("minimax",),
    "minimax_m3": ("minimax_m3_vl_text",),
    "ministral_smollm3_ernie": (
        "ernie4_5",
        "ministral",
        "paddleocr_vl_text",
        "smollm3",
    ),
    "mistral_large4": ("mistral_large4_text",),
    "mllama": ("mllama_text_model",),
    "moe": (
        "dots1",
        "ernie4_5_moe",
        "flex_olmo",
        "glm4_moe",
        "granitemoe",
        "granitemoeshared",
        "hunyuan_v1_moe",
        "minimax_m2",
        "olmoe",
        "phimoe",
        "qwen2_moe",
        "qwen3_moe",
        "sarvam_moe",
    ),
    "moe_windows": (
        "afmoe",
        "beam",
        "cohere2_moe",
        "exaone_moe",
        "mimo_v2_flash",
    ),
    "multimodal_text": (
        "aria_text",
        "emu3_text_model",
    ),
    "olmo2": (
        "exaone4",
        "olmo2",
        "olmo3",
    ),
    "phi4_multimodal": ("phi4_multimodal",),
    "qwen_vl": (
        "qwen2_5_omni_text",
        "qwen2_5_vl_text",
        "qwen2_vl_text",
        "qwen3_omni_moe_text",
        "qwen3_vl_moe_text",
        "qwen3_vl_text",
    ),
    "rwkv": ("rwkv",),
    "solar_open": ("solar_open",),
    "ssm": (
        "falcon_mamba",
        "jamba",
        "mamba",
        "mamba2",
        "nemotron_h",
    ),
    "step3p5": ("step3p5",),
    "vision_language_text": (
        "cosmos3_edge_text",
        "deepseek_ocr2_text",
        "granite4_vision_text",
        "granite_docling_text",
        "kosmos_2_text_model",
        "molmo2_text",
        "muse_glimmer_text",
    ),
    "weightless_norms": (
        "nanochat",
        "olmo",
    ),
    "xlstm": ("xlstm",),
    "zamba": (
        "zamba",
        "zamba2",
    ),
}
"""Each family module and the ``model_type``s it translates."""

LOCATED_IN: dict[str, str] = {
    "qwen2_5_omni": "qwen_vl",
    "qwen2_5_vl": "qwen_vl",
    "qwen2_vl": "qwen_vl",
    "qwen3_omni_moe": "qwen_vl",
}
"""Multimodal ``model_type`` -> the module whose ``TEXT_LOCATIONS`` says where its text keys sit."""

TEXT_RENAMES: dict[str, tuple[str, str]] = {
    "exaone4_5": ("exaone4_5_text", "exaone4"),
    "kimi_k25": ("kimi_k2", "deepseek_v3"),
}
"""Multimodal ``model_type`` -> (a ``text_config`` ``model_type`` its published files give, the
one its configuration class replaces it with before building the text config): EXAONE 4.5's
first files name ``exaone4_5_text`` (``Exaone4_5_Config.__post_init__``,
transformers/models/exaone4_5/configuration_exaone4_5.py), Kimi-K2.5's the remote ``kimi_k2``
(``Kimi_K25Config.__post_init__``, transformers/models/kimi_k25/configuration_kimi_k25.py)."""


def text_model_type(model_type: object, text_type: object) -> object:
    """The ``model_type`` transformers builds a ``text_config`` whose ``model_type`` is
    ``text_type`` (None: the key is absent) as, inside the multimodal ``model_type``: renamed as
    :data:`TEXT_RENAMES` says, and as the class's sub-config spec decides
    (:func:`~costcalc.formats.hf_classes.text_config_type`: its default when the file gives
    none, its own class whatever the file gives); ``text_type`` itself for a class costcalc does
    not have."""
    if not isinstance(model_type, str):
        return text_type
    renamed = TEXT_RENAMES.get(model_type)
    if renamed is not None and renamed[0] == text_type:
        text_type = renamed[1]
    spec = text_config_type(model_type)
    if spec is None:
        return text_type
    default, read_from_file = spec
    return text_type if read_from_file and text_type is not None else default


MODULE_OF: dict[str, str] = {t: m for m, types in FAMILY_MODULES.items() for t in types}
"""``model_type`` -> the module that translates it."""


def model_types() -> list[str]:
    """Every ``model_type`` costcalc translates, sorted (no family module is imported)."""
    return sorted(MODULE_OF)


@cache
def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name}")


def translator(model_type: str) -> Translator | None:
    """The translator of ``model_type``, importing its module only; None if none reads it."""
    name = MODULE_OF.get(model_type)
    return None if name is None else cast(Translator, _module(name).FAMILIES[model_type])


PORTS: dict[str, str] = {"RWForCausalLM": "falcon"}
"""Remote classes (a model's own code) whose port is the transformers class of a family costcalc
reads: class name -> that family's ``model_type``; its module's ``PORTED`` says how their files
read."""


def ported(class_name: str) -> Translator | None:
    """The translator of files written for the remote class ``class_name``, read as its
    transformers port; None if costcalc knows no port of it."""
    family = PORTS.get(class_name)
    if family is None:
        return None
    return cast(Translator, _module(MODULE_OF[family]).PORTED[class_name])


def peft_names(model_type: str) -> FamilyNames | None:
    """peft's module names of ``model_type``'s family; None if costcalc has no such family."""
    name = MODULE_OF.get(model_type)
    return None if name is None else cast("FamilyNames", _module(name).PEFT_NAMES[model_type])


def text_location(model_type: str) -> tuple[tuple[str, ...], str] | None:
    """Where a multimodal ``model_type`` without ``text_config`` keeps its text keys: (key path,
    the text decoder's ``model_type``), as its family module declares; None if it does not."""
    name = LOCATED_IN.get(model_type)
    if name is None:
        return None
    return cast(tuple[tuple[str, ...], str], _module(name).TEXT_LOCATIONS[model_type])


def registry() -> dict[str, Translator]:
    """Every family's translator by ``model_type``, importing every family module (for what
    walks them all: the documentation checks, the differential tests)."""
    return {model_type: cast(Translator, translator(model_type)) for model_type in model_types()}
