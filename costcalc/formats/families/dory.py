"""Hugging Face Dory (dory): a looped normalized transformer (nGPT) whose middle layers run
several times over.

The translator reads the keys of ``DoryConfig`` with that class's defaults and its docstring
names the tensors the modeling code builds (transformers 5.24, ``modeling_dory.py``). The
forward runs the input layers once, the recurrent layers ``n_recurrent_loops`` times, then the
output layers once; with ``recurrent_kv_cache_mode`` "per_loop" every loop caches keys and
values of its own (costcalc: ``shared_weight_sets``, the recurrent layers' weights counted once),
with "last_loop" only the last loop does, the others reading it (``cache_per_weight_set``).
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout, sliding_window
from costcalc.formats.hf_reader import Reader, gate_without_bias, is_whole, mlp_bias
from costcalc.formats.peft_names import llama_names

SIZES = {
    "vocab_size": 131072,
    "d_model": 2560,
    "n_layers": 36,
    "n_heads": 16,
    "context_length": 8192,
    "ffn_hidden": 7168,
}
"""``DoryConfig``'s defaults of the standard sizes."""

KINDS = ("sliding_attention", "full_attention")

MODES = ("per_loop", "last_loop")
"""``recurrent_kv_cache_mode``: a cache per loop, or one per recurrent layer that the last loop
writes and the earlier ones read."""

SECTIONS = (("n_input_layers", 8), ("n_recurrent_layers", None), ("n_output_layers", 8))
"""The three sections of the layers, in order, with the class's defaults (the recurrent one
defaults to the layers the others leave)."""


def _layer_kinds(r: Reader, listed: bool) -> tuple[Any, list[str] | None]:
    """The layer count and each layer's kind: ``layer_types``, where a released file lists
    each layer's attention and its ``mlp`` as two entries (and so doubles every layer count,
    which ``DoryConfig`` halves: it keeps ``layer_types[::2]``, so the list may be one short),
    else every 4th layer full attention and the others sliding."""
    n = r.value("n_layers", "num_hidden_layers", default=SIZES["n_layers"])
    if not listed:
        layers = hf_layers.by_rule(r, n, "num_hidden_layers")
        if layers is None:
            return n, None
        return n, ["full_attention" if (i + 1) % 4 == 0 else KINDS[0] for i in layers]
    raw = r.data.get("layer_types")
    paired = isinstance(raw, list) and "mlp" in raw
    kinds = hf_layers.layer_types(r, None if paired else n)
    if kinds is None:
        return n, None
    if paired:  # DoryConfig keeps every other entry and halves the count, checking no more
        kinds = kinds[::2]
        if is_whole(n) and len(kinds) != n // 2:
            r.fail(
                "layer_types",
                f"lists {len(kinds):,} layers (every other entry), but the model has "
                f"{n // 2:,} (num_hidden_layers {n:,}, halved)",
            )
            return n, None
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        r.fail("layer_types", f"unknown layer types {unknown}; Dory builds {', '.join(KINDS)}")
        return n, None
    return len(kinds), kinds


def _sections(r: Reader, n: int, halve: bool) -> list[int] | None:
    """The input, recurrent and output layer counts (halved, as ``DoryConfig`` halves them,
    when the file lists attention and mlp apart), which must add up to the layers; the
    recurrent ones default to those the other two leave."""
    counts: list[int] = []
    for key, default in SECTIONS:
        value = r.data.get(key)
        if value is None and default is None:  # the recurrent layers: those the others leave
            counts.append(-1)
            continue
        value = default if value is None else value
        if not is_whole(value, 0):
            r.fail(key, f"expected a whole number of layers (got {value!r})")
            return None
        counts.append(value // 2 if halve else value)
    n_in, n_rec, n_out = counts
    n_rec = n - n_in - n_out if n_rec == -1 else n_rec
    if n_rec < 0 or n_in + n_rec + n_out != n:
        r.fail("n_recurrent_layers", f"the three sections do not add up to the {n:,} layers")
        return None
    return [n_in, n_rec, n_out]


def dory(r: Reader) -> dict[str, Any]:
    """DoryForCausalLM: ``embed_tokens`` (V x D); per layer ``self_attn`` (``q_proj`` D -> H d,
    ``k_proj``/``v_proj`` D -> K d, ``o_proj`` H d -> D, biases when ``attention_bias``; the
    sigmoid output gate ``gate_proj`` D -> H d without bias; ``sqk`` and ``s_gate``, H d each),
    a SwiGLU ``mlp`` (``gate_proj``, ``up_proj`` D -> h, ``down_proj``, biases when
    ``mlp_bias``; ``suv_gate``, ``suv_up``, h each) and the residual rates ``lambda_1``,
    ``lambda_2`` (D each); every norm an L2 norm without weights (four per layer, on queries,
    keys, the attention's and the MLP's inner outputs, and the final ``norm``); ``lm_head``
    (untied by default) with ``logit_scale`` (V). D ``hidden_size`` (2,560), H
    ``num_attention_heads`` (16), K ``num_key_value_heads`` (4), d ``head_dim`` (256), h
    ``intermediate_size`` (7,168). ``layer_types`` marks sliding layers, which attend within
    ``sliding_window`` (1,024). The ``n_input_layers`` (8) run once, the ``n_recurrent_layers``
    (the rest) ``n_recurrent_loops`` (2) times, the ``n_output_layers`` (8) once."""
    fields = llama_layout(r, kv_heads=4, head_dim=256, sizes=SIZES)
    gate_without_bias(r, fields)
    mlp_bias(r, fields)
    fields.update(
        attention_gate=True,
        attention_gate_proj=True,
        ngpt_scales=True,
        residual_scales=True,
        norms_per_block=0,
        final_norm=False,
        logit_scale=True,
    )
    mode = r.value("cache_per_weight_set", "recurrent_kv_cache_mode", default="per_loop")
    if mode not in MODES:
        r.fail("recurrent_kv_cache_mode", f"expected one of {', '.join(MODES)} (got {mode!r})")
    loops = r.data.get("n_recurrent_loops", 2)
    if not is_whole(loops, 1):
        r.fail("n_recurrent_loops", f"expected a whole number, 1 or more (got {loops!r})")
    listed = r.data.get("layer_types") is not None
    n, kinds = _layer_kinds(r, listed)
    window = sliding_window(r, default=1024)
    blocks = {KINDS[0]: {"sliding_window": window}, KINDS[1]: {}}
    sections = _sections(r, n, listed and "mlp" in r.data["layer_types"]) if kinds else None
    if kinds is None or sections is None or not is_whole(loops, 1):
        fields["n_layers"] = n
        return fields
    n_in, n_rec, _ = sections
    recurrent = kinds[n_in : n_in + n_rec]
    if loops > 1 and n_rec:
        reuse = {"cache_per_weight_set": True} if mode == "last_loop" else {}
        blocks_rec = {
            kind: {**blocks[kind], "shared_weight_sets": recurrent.count(kind), **reuse}
            for kind in KINDS
        }
        middle = hf_layers.cycle(n_rec * loops, hf_layers.runs(recurrent), blocks_rec)
    else:
        middle = hf_layers.groups(hf_layers.runs(recurrent), blocks)
    fields["layers"] = [
        *hf_layers.groups(hf_layers.runs(kinds[:n_in]), blocks),
        *middle,
        *hf_layers.groups(hf_layers.runs(kinds[n_in + n_rec :]), blocks),
    ]
    fields["n_layers"] = n + n_rec * (loops - 1)
    return fields


FAMILIES = {"dory": dory}


PEFT_NAMES = {
    "dory": llama_names(module_per_set=True),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
