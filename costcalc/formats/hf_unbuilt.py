"""Configs transformers 5.24 takes but cannot build, counted with a note saying so.

Each is a value the family's configuration class accepts (its type admits it; often the class's
own default) on which transformers' code then fails: a null the modeling code computes with
(``head_dim ** -0.5``), a default sub-config that lacks an attribute the model reads. The count
is still well defined, so costcalc counts the model the other keys describe (a null read as if
the key were left out), and says that transformers fails to build it, where and with what error
(:func:`fails_to_build`). Values the class itself refuses are refused instead (the families'
translators).

``NULLS`` lists, per ``model_type``, the keys whose null its code cannot take, each with what the
code does with it (models/<family>/modeling_<family>.py or configuration_<family>.py); ``CHECKS``
the families whose code fails on values of another kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from costcalc.formats.hf_classes import ConfigClass


class Reader(Protocol):
    """What these checks ask of :class:`costcalc.formats.hf_reader.Reader`."""

    family: str | None
    config_class: ConfigClass | None
    data: dict[str, Any]

    def setting(self, key: str) -> Any: ...

    def name(self, key: str) -> str: ...


@dataclass(frozen=True)
class NullFails:
    """A key whose null (the file's, or the class default where the file leaves it out) the
    code computes with, unless the file gives one of ``unless`` (which the code reads
    instead)."""

    key: str
    code: str
    """What transformers' code does with the value, in words."""
    error: str
    """The exception it raises."""
    unless: tuple[str, ...] = ()


ROPE_KEYS = ("rope_scaling", "rope_parameters")
"""Where a file gives its rotary settings; ``rope_scaling`` wins when both are given
(``convert_rope_params_to_dict``)."""

ROPE = ("rope_parameters", "rope_scaling")
"""Rotary settings: a legacy rotary key is put into them only when they do not give it."""

HEAD_DIM = NullFails("head_dim", "its attention computes head_dim ** -0.5", "TypeError")
KV_HEADS = NullFails(
    "num_key_value_heads",
    "its attention divides the heads by it (num_attention_heads // num_key_value_heads)",
    "TypeError",
)
LAYER_BOUNDS = tuple(
    NullFails(key, f"each decoder layer compares its index with {key}", "TypeError")
    for key in ("moe_layer_start_index", "moe_layer_end_index")
)
SHARED = NullFails(
    "moe_num_shared_experts", "its MoE block compares moe_num_shared_experts with 0", "TypeError"
)

LOCAL_BASE = NullFails(
    "rope_local_base_freq",
    "it becomes the sliding layers' rope_theta, which their rotary embedding raises to a power",
    "TypeError",
    unless=ROPE,
)
ROTARY_READ = NullFails(
    "partial_rotary_factor",
    "its attention reads rope_parameters['partial_rotary_factor'], which a null leaves out",
    "KeyError",
    unless=ROPE,
)
V_HEAD_DIM = NullFails(
    "v_head_dim",
    "its attention sizes kv_b_proj num_heads x (qk_nope_head_dim + v_head_dim)",
    "TypeError",
)
FIRST_DENSE = NullFails(
    "first_k_dense_replace",
    "each decoder layer compares its index with first_k_dense_replace",
    "TypeError",
)


def experts(key: str, made: str = "torch.empty") -> NullFails:
    """A null expert count, which the experts' weights are made with."""
    return NullFails(key, f"its experts' weights are made with {made}({key}, ...)", "TypeError")


def shared(key: str) -> NullFails:
    """A null count of shared experts, which sizes the shared expert."""
    return NullFails(key, f"its MoE block sizes the shared expert by {key}", "TypeError")


def layers(key: str) -> NullFails:
    """A null layer count, which the model makes ``range`` of its blocks with."""
    return NullFails(key, f"the model makes its blocks over range({key})", "TypeError")


def activation(key: str) -> NullFails:
    """A null activation, which the MLP looks up by name."""
    return NullFails(key, f"its MLP looks {key} up in ACT2FN", "KeyError")


MAMBA2 = (
    NullFails("mamba_d_conv", "its Mamba-2 mixer pads conv1d by mamba_d_conv - 1", "TypeError"),
    NullFails(
        "mamba_d_state",
        "its Mamba-2 mixer sizes conv1d and in_proj by 2 x mamba_n_groups x mamba_d_state",
        "TypeError",
    ),
    NullFails(
        "mamba_n_groups",
        "its Mamba-2 mixer sizes conv1d and in_proj by 2 x mamba_n_groups x mamba_d_state",
        "TypeError",
    ),
)
MAMBA_INNER = NullFails(
    "intermediate_size",
    "it is set after __post_init__ derives it from expand, and the mixer builds its conv1d "
    "with groups=intermediate_size",
    "TypeError",
)

NULLS: dict[str, tuple[NullFails, ...]] = {
    "afmoe": (
        HEAD_DIM,
        NullFails(
            "num_dense_layers",
            "each decoder layer compares its index with num_dense_layers",
            "TypeError",
        ),
        experts("num_experts"),
        shared("num_shared_experts"),
    ),
    "bailing_hybrid": (
        NullFails(
            "n_shared_experts",
            "its MoE block sizes the shared expert moe_intermediate_size x n_shared_experts",
            "TypeError",
        ),
        experts("num_experts"),
        NullFails(
            "num_nextn_predict_layers",
            "the model adds num_nextn_predict_layers to the layers it builds",
            "TypeError",
        ),
    ),
    "bamba": MAMBA2,
    "cohere2": (HEAD_DIM,),
    "dbrx": (
        NullFails("n_heads", "its rotary embedding divides hidden_size by n_heads", "TypeError"),
        layers("n_layers"),
    ),
    "deepseek_v3": (FIRST_DENSE, V_HEAD_DIM),
    "diffllama": (
        NullFails(
            "lambda_std_dev",
            "its attention draws lambda_q1 with torch.normal(0, lambda_std_dev)",
            "TypeError",
        ),
    ),
    "dots1": (FIRST_DENSE,),
    "emu3_text_model": (KV_HEADS,),
    "ernie4_5_moe": (
        SHARED,
        *LAYER_BOUNDS,
        KV_HEADS,
        NullFails(
            "moe_layer_interval",
            "each decoder layer takes its index modulo moe_layer_interval",
            "TypeError",
        ),
        experts("moe_num_experts", "torch.zeros"),
    ),
    "ernie4_5_vl_moe_text": (SHARED, KV_HEADS, experts("moe_num_experts", "torch.zeros")),
    "exaone": (layers("num_layers"), activation("activation_function")),
    "exaone4": (
        NullFails(
            "sliding_window",
            "Exaone4Config's __post_init__ then sets sliding_window_pattern to 0 and derives "
            "the layers as (i + 1) % sliding_window_pattern",
            "ZeroDivisionError",
            unless=("layer_types",),
        ),
        HEAD_DIM,
    ),
    "falcon": (activation("activation"),),
    "falcon_h1": (HEAD_DIM, *MAMBA2),
    "falcon_mamba": (MAMBA_INNER,),
    "gemma3_text": (LOCAL_BASE,),
    "gemma3n_text": (LOCAL_BASE,),
    "glm": (KV_HEADS, HEAD_DIM),
    "glm4_moe": (HEAD_DIM,),
    "glm4v_moe_text": (HEAD_DIM,),
    "glm_ocr_text": (HEAD_DIM,),
    "gpt_neox_japanese": (
        NullFails(
            "rotary_emb_base",
            "it becomes rope_theta, which the rotary embedding raises to a power",
            "TypeError",
            unless=ROPE,
        ),
        NullFails(
            "rotary_pct",
            "it becomes partial_rotary_factor, which the attention multiplies the head by",
            "TypeError",
            unless=ROPE,
        ),
    ),
    "granitemoe": (experts("num_local_experts"),),
    "granitemoe_swa": (experts("num_local_experts"),),
    "granitemoehybrid": (
        *MAMBA2,
        NullFails(
            "num_local_experts",
            "each decoder layer compares num_local_experts with 0",
            "TypeError",
        ),
    ),
    "granitemoeshared": (experts("num_local_experts"),),
    "hunyuan_v1_dense": (HEAD_DIM,),
    "hunyuan_v1_moe": (HEAD_DIM,),
    "hunyuan_vl_text": (HEAD_DIM,),
    "hy_v3": (
        NullFails(
            "num_shared_experts",
            "its MoE block sizes the shared expert moe_intermediate_size x num_shared_experts",
            "TypeError",
        ),
        experts("num_experts"),
    ),
    "kimi_linear": (experts("num_experts"), shared("num_shared_experts"), V_HEAD_DIM),
    "mamba": (MAMBA_INNER,),
    "ministral": (HEAD_DIM,),
    "mistral4": (FIRST_DENSE, HEAD_DIM, V_HEAD_DIM),
    "nemotron": (KV_HEADS, ROTARY_READ),
    "qwen2_moe": (KV_HEADS,),
    "qwen3_moe": (HEAD_DIM,),
    "sarvam_mla": (V_HEAD_DIM, FIRST_DENSE),
    "phi": (ROTARY_READ,),
    "stablelm": (ROTARY_READ,),
    "step3p5": (
        experts("moe_num_experts"),
        NullFails(
            "num_attention_groups",
            "its attention divides the heads by it (num_attention_heads // num_attention_groups)",
            "TypeError",
        ),
    ),
    "qwen3_omni_moe_text": (HEAD_DIM,),
    "youtu": (V_HEAD_DIM,),
}


def rotary_settings(data: dict[str, Any]) -> dict[str, Any] | None:
    """The rotary settings transformers reads from ``data`` (``ROPE_KEYS``), if a mapping."""
    found: dict[str, Any] | None = next(
        (data[key] for key in ROPE_KEYS if isinstance(data.get(key), dict)), None
    )
    return found


def fails_to_build(what: str, error: str) -> str:
    """The note for a config transformers 5.24 takes but fails to build: ``what`` it does,
    and the ``error`` it raises."""
    article = "an" if error[0] in "AEIOU" else "a"
    return (
        f"transformers 5.24 fails to build this config: {what} ({article} {error}); costcalc "
        "counts the model the keys describe, reading a null key as if it were left out."
    )


def unbuilt_notes(r: Reader, blocks: list[dict[str, Any]]) -> list[str]:
    """Every note of ``NULLS`` and ``CHECKS`` for what ``r`` reads, whose model has the kinds
    of block ``blocks``, and of the checks every family's code makes (``_null_theta``)."""
    check = CHECKS.get(r.family or "")
    found = [check(r, blocks) if check is not None else None, _null_theta(r, blocks)]
    return [*_nulls(r), *(note for note in found if note)]


def _null_theta(r: Reader, blocks: list[dict[str, Any]]) -> str | None:
    """Rotary settings that give ``rope_theta`` as null (flat, or in a layer type's settings,
    as ``to_dict()`` writes a null legacy base put into them): the rotary embedding computes
    ``base ** (torch.arange(0, dim, 2) / dim)`` and fails. The settings read are
    ``rope_scaling``'s where given, else ``rope_parameters``'."""
    if not any(block.get("position") == "rotary" for block in blocks):
        return None
    settings = next((found for key in ROPE_KEYS if (found := r.setting(key)) is not None), None)
    if not isinstance(settings, dict):
        return None
    parts = [settings, *(v for v in settings.values() if isinstance(v, dict))]
    if not any("rope_theta" in part and part["rope_theta"] is None for part in parts):
        return None
    return fails_to_build(
        "the rotary settings give rope_theta as null, and the rotary embedding raises it to "
        "a power",
        "TypeError",
    )


def _nulls(r: Reader) -> list[str]:
    """The notes for the keys of ``NULLS`` that are null in what ``r`` reads: the file's null
    (under the spelling transformers sets last), or the class default where the file leaves
    the key out."""
    known = r.config_class
    notes = []
    for rule in NULLS.get(r.family or "", ()):
        if known is None or any(r.setting(key) is not None for key in rule.unless):
            continue
        given = [name for name in known.spellings(rule.key) if dict.__contains__(r.data, name)]
        if given:
            name = known.set_last(given, r.data) if len(given) > 1 else given[0]
            if dict.get(r.data, name) is not None:
                continue
            what = f"{r.name(name)} is null"
        elif rule.key in known.defaults and known.defaults[rule.key] is None:
            what = f"{r.name(rule.key)} is null ({known.name}'s default: the file gives none)"
        else:
            continue
        notes.append(fails_to_build(f"{what}, and {rule.code}", rule.error))
    return notes


def _compass_rope(r: Reader, blocks: list[dict[str, Any]]) -> str | None:
    """CohereCompassTextRotaryEmbedding reads ``rope_parameters[layer_type]`` for each layer type
    (``layer_types``, default every layer ``full_attention``): settings that do not give one,
    flat ones or none (the class default is empty), fail it."""
    rope, types = r.setting("rope_parameters"), r.setting("layer_types")
    if r.setting("rope_scaling") is not None or not isinstance(rope, dict | None):
        return None
    kinds = types if isinstance(types, list) else ["full_attention"]
    given = rope or {}
    missing = [k for k in dict.fromkeys(kinds) if isinstance(k, str) and k not in given]
    if not missing:
        return None
    return fails_to_build(
        f"{r.name('rope_parameters')} holds no settings for {missing[0]} layers, and the rotary "
        "embedding reads rope_parameters[layer_type]",
        "KeyError",
    )


def _ernie_sections(r: Reader, blocks: list[dict[str, Any]]) -> str | None:
    """Ernie4_5_VLMoeTextRotaryEmbedding takes ceil(d / 2) frequencies (d ``head_dim``, else
    D // H) and copies them into its rotary sections (``rope_parameters.mrope_section``, default
    [22, 22, 20]) as ``inv_freq_3d[:hw] = cat(inv_freq[:-t][0::2], inv_freq[:-t][1::2])``, hw
    the first two sections and t the third: the two sides differ in length unless the sections
    cover the frequencies."""
    rope = r.setting("rope_parameters")
    sections = rope.get("mrope_section", MROPE) if isinstance(rope, dict) else MROPE
    if not (isinstance(sections, list) and len(sections) == 3 and all(map(_whole, sections))):
        return None
    head = next((b["head_dim"] for b in blocks if _whole(b.get("head_dim"))), None)
    d, h = (next((b[k] for b in blocks if _whole(b.get(k))), None) for k in ("d_model", "n_heads"))
    if head is None and d is not None and h:
        head = d // h
    if head is None:
        return None
    frequencies = range(0, head, 2)
    hw, t = sections[0] + sections[1], sections[2]
    if len(frequencies[:hw]) == len(frequencies[:-t]):
        return None
    return fails_to_build(
        f"mrope_section {sections} does not cover the {len(frequencies):,} rotary frequencies "
        f"of a {head:,}-wide head, and the rotary embedding copies them section by section",
        "RuntimeError",
    )


MROPE = [22, 22, 20]
"""The rotary sections Ernie4_5_VLMoeTextRotaryEmbedding takes when the settings give none."""


def _dt_range(r: Reader, blocks: list[dict[str, Any]]) -> str | None:
    """OlmoHybridGatedDeltaNet initialises ``dt_bias`` from ``math.log(linear_dt_max) -
    math.log(linear_dt_min)``: a bound that is not above 0 fails it, in a model with such
    layers."""
    if not any(b.get("mixer") == "gated_deltanet" for b in blocks):
        return None
    for key in ("linear_dt_min", "linear_dt_max"):
        value = r.setting(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value <= 0:
            return fails_to_build(
                f"{r.name(key)} is {value!r}, and the Gated DeltaNet's initialisation takes "
                "its logarithm (math domain error)",
                "ValueError",
            )
    return None


def _one_hybrid(r: Reader, blocks: list[dict[str, Any]]) -> str | None:
    """ZambaModel ties every hybrid layer's ``shared_transf`` to the first one's with a pattern
    matching the others; with a single hybrid layer it matches none, and
    ``get_expanded_tied_weights_keys`` fails. The hybrid layers: ``layers_block_type``, else
    ZambaConfig's rule (layer 2, then each i < L - 3 with i % attn_layer_period ==
    attn_layer_offset, counted from layer 3)."""
    listed, n = r.setting("layers_block_type"), r.setting("num_hidden_layers")
    period, offset = r.setting("attn_layer_period"), r.setting("attn_layer_offset")
    if isinstance(listed, list):
        hybrids = listed.count("hybrid")
    elif _whole(n) and _whole(period) and period > 0 and _whole(offset):
        matching = max(0, (n - 3 - offset + period - 1) // period) if 0 <= offset < period else 0
        hybrids = 1 + matching  # the i < L - 3 with i % period == offset, counted in closed form
    else:
        return None
    if hybrids != 1:
        return None
    return fails_to_build(
        "the model has one hybrid layer, and ZambaModel's tied-weights pattern ties the other "
        "hybrid layers' shared_transf to its own, which then matches none",
        "ValueError",
    )


def _null_window(r: Reader, blocks: list[dict[str, Any]]) -> str | None:
    """Cohere2Config keeps a null ``sliding_window``, and the sliding layers
    ``layer_types`` marks build their masks from it: the forward fails (a TypeError on CPU,
    eager attention). costcalc reads the window as the class default, 4,096."""
    if dict.get(r.data, "sliding_window", 0) is not None:
        return None
    if not any(b.get("sliding_window") for b in blocks):
        return None
    return fails_to_build(
        "sliding_window is null, and its sliding layers build their attention masks from it",
        "TypeError",
    )


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _dbrx_rope(r: Reader, blocks: list[dict[str, Any]]) -> str | None:
    """DbrxAttention reads ``attn_config.rope_theta``, which DbrxAttentionConfig's defaults do
    not define: an ``attn_config`` absent, null, or without ``rope_theta`` (as ``to_dict()``
    writes the defaults) fails it."""
    attn = dict.get(r.data, "attn_config")
    if isinstance(attn, dict) and "rope_theta" in attn:
        return None
    if attn is None:
        given = "is null" if "attn_config" in r.data else "is left out"
    elif isinstance(attn, dict):
        given = "gives no rope_theta"
    else:
        return None  # no mapping: refused where it is read
    return fails_to_build(
        f"attn_config {given}, and its attention reads attn_config.rope_theta, which "
        "DbrxAttentionConfig's defaults do not define",
        "AttributeError",
    )


def yarn(data: dict[str, Any]) -> bool:
    """The file's rotary settings (``rope_scaling``'s where given, else ``rope_parameters``', flat
    or per layer type) are YaRN's."""
    rope = rotary_settings(data)
    if rope is None:
        return False
    parts = [rope, *(entry for entry in rope.values() if isinstance(entry, dict))]
    return any(part.get("rope_type", part.get("type")) == "yarn" for part in parts)


def odd_yarn(dim: int) -> str:
    """The note for an odd rotary width beside YaRN settings, which transformers cannot build:
    ``_compute_yarn_parameters`` blends ``dim // 2`` extrapolated frequencies with the
    ``torch.arange(0, dim, 2)`` ones, one more."""
    return fails_to_build(
        f"{dim:,} rotary dimensions per head, an odd count, beside YaRN rotary settings, whose "
        f"initialisation blends {dim // 2:,} frequencies with the {dim // 2 + 1:,} of "
        f"torch.arange(0, {dim:,}, 2)",
        "RuntimeError",
    )


def _odd_yarn(r: Reader, blocks: list[dict[str, Any]]) -> str | None:
    """DeepSeek-V4's rotary embeddings rotate ``qk_rope_head_dim`` dimensions, which YaRN's
    initialisation cannot take odd (:func:`odd_yarn`; transformers 5.24 builds it with default
    rotary settings)."""
    dim = r.setting("qk_rope_head_dim")
    if not _whole(dim) or dim % 2 == 0 or not yarn(r.data):
        return None
    return odd_yarn(dim)


CHECKS: dict[str, Callable[[Reader, list[dict[str, Any]]], str | None]] = {
    "cohere2": _null_window,
    "dbrx": _dbrx_rope,
    "deepseek_v4": _odd_yarn,
    "cohere_compass_text": _compass_rope,
    "ernie4_5_vl_moe_text": _ernie_sections,
    "olmo_hybrid": _dt_range,
    "zamba": _one_hybrid,
}
