"""xLSTM (transformers 5.24, ``models/xlstm/modeling_xlstm.py``, without the ``xlstm``
package): blocks of an mLSTM layer and a gated FFN, no positions.

``backbone.embeddings`` (V x D); per block (``xLSTMBlock``) RMSNorms ``norm_mlstm`` and
``norm_ffn`` (D each), the mLSTM layer ``mlstm_layer`` (``q``, ``k`` D -> H dk, ``v`` and
``ogate_preact`` D -> H dv, ``igate_preact`` and ``fgate_preact`` D -> H with biases; with
``weight_mode`` fused ``qkv_opreact`` D -> 2 H dk + 2 H dv and ``ifgate_preact`` D -> 2 H; the
per-head LayerNorm ``multihead_norm`` (H dv), ``out_proj`` H dv -> D) and the FFN ``ffn``
(``proj_up_gate`` and ``proj_up`` D -> h, SiLU-gated, ``proj_down`` h -> D; fused
``proj_up_gate_z`` D -> 2 h); final RMSNorm ``out_norm`` (whatever ``add_out_norm`` says);
with ``use_bias`` a bias on every projection (the gates have theirs regardless), on the block
norms and on ``multihead_norm``, not on ``out_norm`` (built without ``use_bias``);
``lm_head`` (V x D), never tied (xLSTMForCausalLM declares no ``_tied_weights_keys``, whatever
``tie_word_embeddings`` says). The cache keeps per layer and head a dk x dv memory, a
normalizer of dk and a stabilizer. D = ``hidden_size`` (or ``embedding_dim``), H =
``num_heads``, H dk = int(D ``qk_dim_factor``), H dv = int(D ``v_dim_factor``), h = D
``ffn_proj_factor`` rounded up to a multiple of ``ffn_round_up_to_multiple_of``; the layer
count is ``num_blocks`` (else ``num_hidden_layers``), the cache's ``num_hidden_layers`` (else
``num_blocks``). The prompt runs in chunks of ``chunk_size`` tokens, the rest token by token,
in pieces of ``max_inference_chunksize`` tokens, whatever kernel names the file gives (the
native kernels are the only ones without the ``xlstm`` package).
"""

from __future__ import annotations

import math
from typing import Any

from costcalc.formats.families.ssm import NO_POSITION_LIMIT
from costcalc.formats.hf_reader import Reader, is_whole
from costcalc.formats.peft_names import llama_names

XLSTM_DEFAULTS: dict[str, tuple[tuple[str, ...], int]] = {
    "vocab_size": (("vocab_size",), 50304),
    "d_model": (("hidden_size", "embedding_dim"), 4096),
    "n_layers": (("num_blocks", "num_hidden_layers"), 32),
}
"""``xLSTMConfig``'s keys and defaults for the standard sizes."""


def _factor(r: Reader, field: str, key: str, default: float, zero: bool = False) -> float | None:
    """A width factor: a number above 0 (or 0 itself where ``zero``), or None with a problem."""
    value = r.value(field, key, default=default)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or value < 0
        or (value == 0 and not zero)
    ):
        r.fail(key, f"expected a number {'from 0' if zero else 'above 0'} (got {value!r})")
        return None
    return value


def _width(D: Any, factor: Any) -> int | None:
    """int(D x factor), as ``xLSTMLayer`` sizes its projections."""
    return int(D * factor) if is_whole(D, 1) and factor is not None else None


def _cached_width(r: Reader, D: Any, H: Any, key: str, factor: float | None) -> None:
    """``xLSTMCache`` sizes each head's state by ``xLSTMConfig.qk_dim`` or ``v_dim``, D x the
    factor rounded up to a multiple of 64 (``round_up_to_next_multiple_of``), over H heads;
    ``xLSTMLayer`` builds int(D x factor): where the heads' widths differ, transformers'
    forward with a cache fails (its kernel finds the state of the wrong shape)."""
    width = _width(D, factor)
    if width is None or factor is None or not is_whole(H, 1) or width % H:
        return
    cached = int(((D * factor + 63) // 64) * 64)
    if cached // H != width // H:
        r.fail(
            key,
            f"xLSTMLayer's heads are int({D:,} x {factor!r}) / {H:,} = {width // H:,} wide, "
            f"xLSTMCache's {cached:,} / {H:,} = {cached // H:,} (rounded up to a multiple of "
            "64): transformers' forward with a cache fails (the state's shape is wrong)",
        )


def _state_layers(r: Reader, fields: dict[str, Any]) -> None:
    """``xLSTMModel`` builds ``num_blocks`` blocks, ``xLSTMCache`` keeps ``num_hidden_layers``
    layers of state (each the other's default): more layers of state is ``state_layers``, with
    a note; fewer is refused, as transformers' forward fails on the first block without one."""
    blocks = r.data.get("num_blocks")
    layers = r.data.get("num_hidden_layers", 32)
    if blocks is None or layers is None or not is_whole(blocks, 1) or not is_whole(layers, 1):
        return
    if blocks > layers:
        r.fail(
            "num_blocks",
            f"xLSTMModel builds {blocks:,} blocks but xLSTMCache keeps state for "
            f"num_hidden_layers {layers:,}: transformers' forward fails at block {layers:,} "
            "(KeyError)",
        )
    elif blocks < layers:
        fields["state_layers"] = layers
        r.note(
            f"xLSTMModel builds num_blocks {blocks:,} blocks, xLSTMCache keeps num_hidden_layers "
            f"{layers:,} layers of state: the parameters and MACs count the blocks, the state "
            "every layer the cache keeps"
        )


def xlstm(r: Reader) -> dict[str, Any]:
    """xLSTMForCausalLM, as above. An ``embedding_dim`` other than ``hidden_size`` is refused:
    the embeddings feed the blocks directly."""
    fields: dict[str, Any] = {
        field: r.value(field, *keys, default=default)
        for field, (keys, default) in XLSTM_DEFAULTS.items()
    }
    D = fields["d_model"]
    embedding = r.data.get("embedding_dim")
    if embedding is not None and r.data.get("hidden_size") not in (None, embedding):
        r.fail(
            "embedding_dim",
            "xLSTMModel feeds the embeddings to the blocks: it must equal hidden_size",
        )
    _state_layers(r, fields)
    bias = r.flag("use_bias", False)
    if bias:
        fields.update(norm_bias=True, final_norm_bias=False)
        r.note(
            "use_bias puts a bias on every projection and norm of the blocks, but not on "
            "out_norm: xLSTMModel builds it without"
        )
    fused = r.value("mlstm", "weight_mode", default="single")
    if fused not in ("single", "fused"):
        r.fail("weight_mode", f"expected single or fused (got {fused!r})")
    qk = _factor(r, "mlstm", "qk_dim_factor", 0.5, zero=True)
    v = _factor(r, "mlstm", "v_dim_factor", 1.0, zero=True)
    ffn = _factor(r, "ffn_hidden", "ffn_proj_factor", 2.667)
    multiple = r.value("ffn_hidden", "ffn_round_up_to_multiple_of", default=64)
    hidden = None
    if is_whole(D, 1) and ffn is not None and is_whole(multiple, 1):
        hidden = math.floor((D * ffn + multiple - 1) / multiple) * multiple
    fields.update(
        context_length=NO_POSITION_LIMIT,
        position="none",
        norm="rmsnorm",
        mixer="mlstm",
        mlstm={
            "heads": r.value("mlstm", "num_heads", default=8),
            "qk_width": _width(D, qk),
            "v_width": _width(D, v),
            "chunk_size": r.value("mlstm", "chunk_size", default=64),
            "piece_size": r.value("mlstm", "max_inference_chunksize", default=16384),
            "fused": fused == "fused",
            "bias": bias,
        },
        ffn="swiglu",
        ffn_hidden=hidden,
        ffn_bias=bias,
        fused_gate_up=fused == "fused",
        # xLSTMForCausalLM declares no tied weights: its head is its own whatever
        # tie_word_embeddings says.
        tie_embeddings=False,
    )
    if fields["mlstm"]["qk_width"] == 0:
        r.fail(
            "qk_dim_factor",
            f"int({D:,} x {qk!r}) = 0 makes the queries and keys 0 wide: xLSTMLayer builds them, "
            "but its kernel scales the queries by dk^-1/2, and transformers' forward fails "
            "(ZeroDivisionError)",
        )
    for key, factor in (("qk_dim_factor", qk), ("v_dim_factor", v)):
        _cached_width(r, D, fields["mlstm"]["heads"], key, factor)
    if fields["mlstm"]["v_width"] == 0:
        r.note(
            f"v_dim_factor {v!r} makes the values, the output gate and out_proj's input 0 wide "
            f"(int({D:,} x {v!r}) = 0), as xLSTMLayer builds them: the mLSTM layers add "
            "nothing to the residual stream"
        )
    r.forget("mlstm")
    return fields


FAMILIES = {"xlstm": xlstm}


PEFT_NAMES = {
    "xlstm": llama_names(
        {"attn": "mlstm_layer", "mlp": "ffn"},
        {
            "embed_tokens": "embeddings",
            "mlp.gate_proj": "ffn.proj_up_gate",
            "mlp.up_proj": "ffn.proj_up",
            "mlp.gate_up_proj": "ffn.proj_up_gate_z",
            "mlp.down_proj": "ffn.proj_down",
        },
    ),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
