"""Hugging Face Zamba (zamba) and Zamba 2 (zamba2): a Mamba backbone with a shared transformer
block reused at several depths.

Each function reads the keys of its transformers configuration class with that class's defaults
and its docstring names the tensors the modeling code builds (transformers 5.24,
``modeling_zamba.py``, ``modeling_zamba2.py``). The shared block's weights are tied across its
uses (``_tied_weights_keys``), so ``parameters()`` yields each weight set once; each use runs it
and caches its keys and values (costcalc: ``shared_weight_sets``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.hf_reader import Reader, is_whole
from costcalc.formats.peft_names import llama_names

MAMBA_KINDS = ("mamba", "linear_attention")
"""Names of a Mamba layer in ``layers_block_type`` (``mamba`` is the legacy name)."""

ZAMBA2_LAYERS = (
    [("mamba", 1)] + [("mamba", 5), ("hybrid", 1)] * 7
    + [("mamba", 4), ("hybrid", 1), ("mamba", 3), ("hybrid", 1), ("mamba", 2)]
)  # fmt: skip
"""``Zamba2Config``'s layers when ``layers_block_type`` is absent (54, whatever
``num_hidden_layers`` says)."""

ACTIVATIONS = (
    "gelu", "gelu_10", "gelu_accurate", "gelu_fast", "gelu_new", "gelu_python",
    "gelu_python_tanh", "gelu_pytorch_tanh", "hardswish", "laplace", "leaky_relu", "linear",
    "mish", "prelu", "quick_gelu", "relu", "relu2", "relu6", "sigmoid", "silu", "sqrtsoftplus",
    "swish", "tanh", "xielu",
)  # fmt: skip
"""The names ``ACT2FN`` holds (transformers 5.24, ``activations.py``: ``ACT2CLS``): the MLP's
``act_fn``, ``ACT2FN[config.hidden_act]``; another name fails the build (KeyError)."""


def gated_ffn(r: Reader, act: Any) -> str | None:
    """The shared MLP's kind: ``down_proj(act_fn(gate_proj(x)) * up_proj(x))`` whatever the
    activation, GeGLU for a GELU, SwiGLU for SiLU; another activation gates the same three
    projections with the same products, counted as costcalc's swiglu, with a note."""
    if not isinstance(act, str) or act not in ACTIVATIONS:
        r.fail(
            "hidden_act",
            f"{act!r} is not an activation transformers has (ACT2FN): transformers refuses "
            f"the file; it has {', '.join(ACTIVATIONS)}",
        )
        return None
    if act.startswith("gelu") or act == "quick_gelu":
        return "geglu"
    if act not in ("silu", "swish"):
        r.note(
            f"{r.name('hidden_act')} {act!r} gates the shared MLP (act_fn(gate_proj(x)) x "
            "up_proj(x)): counted as a gated FFN (costcalc's swiglu), the same projections and "
            "products."
        )
    return "swiglu"


def _hybrid(r: Reader, d: Any, heads: Any, kv_default: Any, head_dim: Any) -> dict[str, Any]:
    """The shared block's keys both families share: attention over the 2 D concatenation
    (``q_proj`` 2 D -> H d, ``k_proj``/``v_proj`` 2 D -> K d, ``o_proj`` H d -> D, no biases;
    K ``num_key_value_heads``), a gated MLP of ``intermediate_size`` gated by ``hidden_act``
    (gelu), its two norms (2 D, D) in the weight set, the Mamba layer's norm and the ``linear``
    D x D each layer's own."""
    ffn = gated_ffn(r, r.value("ffn", "hidden_act", default="gelu"))
    kv = r.value("n_kv_heads", "num_key_value_heads", default=kv_default)
    if head_dim is None and is_whole(d, 1) and is_whole(heads, 1):
        head_dim = 2 * d // heads
    return {
        "mixer": "attention",
        "n_heads": heads,
        "n_kv_heads": heads if kv is None else kv,
        "head_dim": head_dim,
        "qkv_bias": False,
        "attn_out_bias": False,
        "fused_qkv": False,
        "concat_embeddings": True,
        "ffn": ffn,
        "norms_per_block": 3,
        "use_projection": True,
    }


def _layer_runs(
    r: Reader, n: Any, default: Sequence[tuple[str, int]] | None
) -> list[tuple[str, int]] | None:
    """The layers' runs from ``layers_block_type`` (alias ``layer_types``), or the family's
    ``default`` runs (None: none read)."""
    key = _layers_key(r)
    if r.data.get(key) is not None:
        kinds = hf_layers.layer_types(r, n, key)
        if kinds is None:
            return None
        return hf_layers.runs(["mamba" if k in MAMBA_KINDS else k for k in kinds])
    return None if default is None else list(default)


def _layers_key(r: Reader) -> str:
    return "layer_types" if "layers_block_type" not in r.data else "layers_block_type"


def _set_layers(
    r: Reader,
    fields: dict[str, Any],
    kind_runs: Sequence[tuple[str, int]],
    blocks: dict[str, dict[str, Any]],
) -> None:
    """``layers`` from the runs of :func:`_layer_runs`; n_layers is their count."""
    fields["n_layers"] = sum(count for _, count in kind_runs)
    hf_layers.apply(r, fields, list(kind_runs), blocks, _layers_key(r))


def _adapter_slots(r: Reader, hybrid: dict[str, Any], runs: Sequence[tuple[str, int]]) -> None:
    """A file's ``hybrid_layer_ids``: ``Zamba2Config.__post_init__`` derives the list from the
    layer types, then sets the file's own over it (an extra key), and each shared block builds
    one adapter slot per entry (``Zamba2MLP``, ``Zamba2Attention``: ``len(hybrid_layer_ids)``):
    ``adapter_slots`` when that is not the count of hybrid layers."""
    if "hybrid_layer_ids" not in r.data:
        return
    given = r.data["hybrid_layer_ids"]
    if not isinstance(given, list):
        r.fail("hybrid_layer_ids", f"expected a list of layer indices (got {given!r})")
    elif len(given) != sum(count for kind, count in runs if kind == "hybrid"):
        hybrid["adapter_slots"] = len(given)
        r.key_names["adapter_slots"] = "hybrid_layer_ids"


def _model(r: Reader, d: Any, position: str) -> dict[str, Any]:
    return {
        "vocab_size": r.value("vocab_size", "vocab_size", default=32000),
        "d_model": d,
        "position": position,
        "norm": "rmsnorm",
        "tie_embeddings": r.value("tie_embeddings", "tie_word_embeddings", default=True),
    }


def _mamba2(r: Reader, d_model: Any) -> dict[str, Any]:
    """The Mamba-2 mixer (``Zamba2MambaMixer``): I = int(``mamba_expand`` (2) x D), H
    ``n_mamba_heads`` (8) of P = I // H, N ``mamba_d_state`` (64), G ``mamba_ngroups`` (1),
    k ``mamba_d_conv`` (4), a conv bias always (``use_conv_bias`` is not read by the module),
    in/out biases when ``add_bias_linear``, chunks ``chunk_size`` (256)."""
    expand = r.number("mamba2", "mamba_expand", default=2)
    heads = r.value("mamba2", "n_mamba_heads", default=8)
    inner = int(expand * d_model) if expand is not None and is_whole(d_model, 1) else None
    if inner is not None and is_whole(heads, 1) and inner % heads:
        r.fail("n_mamba_heads", f"does not divide mamba_expand x hidden_size ({inner:,})")
    sizes = {
        "heads": heads,
        "head_dim": inner // heads if inner is not None and is_whole(heads, 1) else None,
        "state": r.value("mamba2", "mamba_d_state", default=64),
        "groups": r.value("mamba2", "mamba_ngroups", default=1),
        "conv_kernel": r.value("mamba2", "mamba_d_conv", default=4),
        "conv_bias": True,
        "proj_bias": r.value("mamba2", "add_bias_linear", default=False),
        "chunk_size": r.value("mamba2", "chunk_size", default=256),
    }
    r.forget("mamba2")
    return {"mixer": "mamba2", "mamba2": sizes}


def zamba2(r: Reader) -> dict[str, Any]:
    """Zamba2ForCausalLM: ``embed_tokens`` (V x D); every layer a Mamba-2 layer
    (``input_layernorm`` D, ``mamba``: ``in_proj`` D -> 2I + 2GN + H, ``conv1d`` (I + 2GN, 1,
    k), ``dt_bias``/``A_log``/``D`` (H), gated RMSNorm ``norm`` (I), ``out_proj`` I -> D). The
    layers ``layers_block_type`` marks ``hybrid`` first run ``shared_transformer``, one of
    ``num_mem_blocks`` (1) weight sets used in turn: ``input_layernorm`` (2 D) over the hidden
    state concatenated with the embeddings, ``self_attn`` (``q_proj`` 2 D -> H d, ``k_proj``/
    ``v_proj`` 2 D -> K d, ``o_proj`` H d -> D; d = 2 D / H, K ``num_key_value_heads`` (H), no
    biases, rotary when ``use_mem_rope``), ``pre_ff_layernorm`` (D) and ``feed_forward``
    (``gate_up_proj`` D -> 2h, ``down_proj``; h ``intermediate_size`` (4 D), gated by
    ``hidden_act``, biases when ``add_bias_linear``) with each use's adapter
    ``gate_up_proj_adapter_list`` (D -> r -> 2h, r ``adapter_rank`` 128) and, when
    ``use_shared_attention_adapter``, q/k/v adapters (2 D -> r -> 2 D); then their own
    ``linear`` (D x D). Each block builds one adapter slot per hybrid layer (per entry of a
    file's ``hybrid_layer_ids``), the slots of the other weight sets ``nn.Identity``
    (:func:`_adapter_slots`). Final ``final_layernorm``; ``lm_head`` tied by default. Tying is
    ``Zamba2Model._tied_weights_keys`` too (each hybrid layer's block to its weight set's
    first), and transformers honours a model's tied keys only under ``tie_word_embeddings``:
    untied, every hybrid layer keeps a copy of its own, with all its set's adapters
    (``weight_sets_untied``)."""
    d = r.value("d_model", "hidden_size", default=2560)
    heads = r.value("n_heads", "num_attention_heads", default=32)
    long = r.flag("use_long_context", False)
    mamba = {**_mamba2(r, d), "ffn": "none", "norms_per_block": 1}
    hybrid = {
        **mamba,
        **_hybrid(r, d, heads, None, None),
        "parallel_mamba2": True,
        "fused_gate_up": True,
        "ffn_hidden": r.value(
            "ffn_hidden", "intermediate_size", default=4 * d if is_whole(d) else None
        ),
        "ffn_bias": r.value("ffn_bias", "add_bias_linear", default=False),
        "shared_weight_sets": r.value("shared_weight_sets", "num_mem_blocks", default=1),
        "adapter_rank": r.value("adapter_rank", "adapter_rank", default=128),
        "qkv_adapters": r.flag("use_shared_attention_adapter", False),
    }
    fields = _model(r, d, "rotary" if r.flag("use_mem_rope", False) else "none")
    if fields["tie_embeddings"] is False:
        hybrid["weight_sets_untied"] = True
        r.key_names["weight_sets_untied"] = "tie_word_embeddings"
    fields["context_length"] = (
        16384 if long else r.value("context_length", "max_position_embeddings", default=4096)
    )
    n = r.value("n_layers", "num_hidden_layers", default=54)
    if "layers_block_type" not in r.data and "layer_types" not in r.data and n != 54:
        r.fail("num_hidden_layers", "without layers_block_type the model has 54 layers")
    blocks = {"mamba": mamba, "hybrid": hybrid}
    if (runs := _layer_runs(r, n, ZAMBA2_LAYERS)) is not None:
        _adapter_slots(r, hybrid, runs)
        _set_layers(r, fields, runs, blocks)
    return fields


def _mamba(r: Reader, d_model: Any) -> dict[str, Any]:
    """Zamba's multi-head Mamba (``ZambaMambaMixer``): I = ``mamba_expand`` (2) x D split into
    ``n_mamba_heads`` (2) heads, N ``mamba_d_state`` (16), R ``mamba_dt_rank`` ("auto":
    ceil(D / 16)), k ``mamba_d_conv`` (4), biases ``mamba_conv_bias`` (true) and
    ``mamba_proj_bias`` (false)."""
    expand = r.whole("mamba", "mamba_expand", default=2)
    rank = r.value("mamba", "mamba_dt_rank", default="auto")
    if rank == "auto":
        rank = math.ceil(d_model / 16) if is_whole(d_model, 1) else None
    sizes = {
        "inner": expand * d_model if expand is not None and is_whole(d_model, 1) else None,
        "heads": r.value("mamba", "n_mamba_heads", default=2),
        "state": r.value("mamba", "mamba_d_state", default=16),
        "dt_rank": rank,
        "conv_kernel": r.value("mamba", "mamba_d_conv", default=4),
        "conv_bias": r.value("mamba", "mamba_conv_bias", default=True),
        "proj_bias": r.value("mamba", "mamba_proj_bias", default=False),
    }
    r.forget("mamba")
    return {"mixer": "mamba", "mamba": sizes}


def _zamba_rule(r: Reader, n: Any, blocks: Mapping[str, hf_layers.Block]) -> list[Any] | None:
    """``ZambaConfig``'s layers without a list, in closed form: Mamba, Mamba, hybrid, then for
    i < n - 3 a hybrid layer where i mod ``attn_layer_period`` (6) is ``attn_layer_offset``
    (4): a cycling pattern of one period when the rest holds more than one."""
    period = r.count("attn_layer_period", 6)
    offset = r.count("attn_layer_offset", 4, minimum=0)
    if is_whole(n) and n < 3:
        r.fail("num_hidden_layers", "without layers_block_type the model has 3 layers or more")
        return None
    if hf_layers.count_of(n) is None:
        return None  # reported where it is read
    head = hf_layers.groups([("mamba", 2), ("hybrid", 1)], blocks)
    rest = n - 3
    one = [("mamba", offset), ("hybrid", 1), ("mamba", period - offset - 1)]
    one = [run for run in one if run[1] > 0] if offset < period else [("mamba", period)]
    if rest <= period:
        return head + hf_layers.groups(hf_layers.cut(one, 0, rest), blocks)
    if len(one) > 1:
        return head + hf_layers.cycle(rest, one, blocks)
    return head + hf_layers.groups([(one[0][0], rest)], blocks)


def _concat_width(r: Reader, hybrid: dict[str, Any], d: Any) -> None:
    """``attention_hidden_size`` A (``ZambaConfig``: ``A or 2 D``, so 0 is 2 D too): the width
    ``ZambaAttention`` builds q, k and v for and ``ZambaAttentionDecoderLayer`` its
    ``input_layernorm``. The layer concatenates the hidden state and the embeddings, 2 D wide,
    so another A is built but cannot run: ``concat_width``, with a note."""
    width = r.value("concat_width", "attention_hidden_size", default=None)
    if width in (None, 0) or not is_whole(d, 1) or width == 2 * d:
        return
    if not is_whole(width, 1):
        r.fail("attention_hidden_size", f"expected a positive whole number (got {width!r})")
        return
    hybrid["concat_width"] = width
    r.note(
        f"{r.name('attention_hidden_size')} {width:,} is not 2 x hidden_size ({2 * d:,}): "
        "transformers builds the shared block's input norm and q, k and v that wide, but "
        "its forward concatenates the hidden state and the embeddings, 2 x hidden_size "
        f"wide, and fails; counted as built, the forward figures as if they read {width:,}."
    )


def zamba(r: Reader) -> dict[str, Any]:
    """ZambaForCausalLM (Zamba-7B-v1): ``embed_tokens`` (V x D); every layer a Mamba layer
    (``input_layernorm`` D, ``mamba``: ``in_proj`` D -> 2I, ``conv1d`` (I, 1, k), per head of
    p = I / h ``x_proj_weight`` (h, R + 2N, p), ``dt_proj_weight`` (h, p, R), ``dt_proj_bias``,
    ``A_log`` (h, p, N), ``D`` (h, p), ``out_proj`` I -> D). The ``hybrid`` layers first run
    the one ``shared_transf`` (tied): ``input_layernorm`` (2 D, or ``attention_hidden_size``:
    :func:`_concat_width`), ``self_attn`` (``q_proj`` 2 D -> H d, ``k_proj``/``v_proj``
    2 D -> K d, ``o_proj`` H d -> D; d ``attention_head_dim`` (2 D / H), H
    ``num_attention_heads`` (16), K ``num_key_value_heads`` (16), no biases, no positions),
    ``pre_ff_layernorm`` (D),
    ``feed_forward`` (``gate_proj``/``up_proj`` D -> h, ``down_proj``; h ``intermediate_size``
    14,848, gated by ``hidden_act``, no biases); then their own ``linear`` (D x D). Layers:
    ``layers_block_type``, else the class's rule (:func:`_zamba_rule`). Final
    ``final_layernorm``; ``lm_head`` tied by default. ``ZambaModel._tied_weights_keys`` ties
    every hybrid layer's block to the first one's, and transformers ties a model's keys only
    under ``tie_word_embeddings``: untied, each hybrid layer keeps its own block
    (``weight_sets_untied``)."""
    d = r.value("d_model", "hidden_size", default=3712)
    heads = r.value("n_heads", "num_attention_heads", default=16)
    head_dim = r.value("head_dim", "attention_head_dim", default=None)
    mamba = {**_mamba(r, d), "ffn": "none", "norms_per_block": 1}
    hybrid = {
        **mamba,
        **_hybrid(r, d, heads, 16, head_dim),
        "parallel_mamba": True,
        "ffn_hidden": r.value("ffn_hidden", "intermediate_size", default=14848),
        "ffn_bias": False,
        "shared_weight_sets": 1,
    }
    _concat_width(r, hybrid, d)
    fields = _model(r, d, "none")
    if fields["tie_embeddings"] is False:
        hybrid["weight_sets_untied"] = True
        r.key_names["weight_sets_untied"] = "tie_word_embeddings"
    fields["context_length"] = r.value("context_length", "max_position_embeddings", default=4096)
    n = r.value("n_layers", "num_hidden_layers", default=76)
    blocks = {"mamba": mamba, "hybrid": hybrid}
    if "layers_block_type" in r.data or "layer_types" in r.data:
        if (runs := _layer_runs(r, n, None)) is not None:
            _set_layers(r, fields, runs, blocks)
    elif (layers := _zamba_rule(r, n, blocks)) is not None:
        fields.update(n_layers=n, layers=layers)
    return fields


FAMILIES = {"zamba": zamba, "zamba2": zamba2}


PEFT_NAMES = {
    "zamba": llama_names(
        {"attn": "shared_transf.self_attn", "mlp": "shared_transf.feed_forward", "mixer": "mamba"}
    ),
    "zamba2": llama_names(
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
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
