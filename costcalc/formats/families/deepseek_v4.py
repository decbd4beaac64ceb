"""DeepSeek-V4 (transformers 5.24, ``models/deepseek_v4``): one shared key/value head compressed
over windows of tokens, a grouped low-rank output projection, attention sinks, hyper-connections
over several copies of the residual stream, and a mixture of experts in every layer.

Per block (``DeepseekV4DecoderLayer``): ``input_layernorm`` and ``post_attention_layernorm``
(RMSNorm, D); ``attn_hc`` and ``ffn_hc`` (``DeepseekV4HyperConnection``: ``fn`` (2 + n) n x n D,
``base`` (2 + n) n, ``scale`` 3; n = ``hc_mult``); ``self_attn``: ``q_a_proj`` (D -> q rank),
``q_a_norm`` (q rank), ``q_b_proj`` (q rank -> H d; its per-head RMSNorm has no weight),
``kv_proj`` (D -> d: one head, read as keys and values), ``kv_norm`` (d), ``o_a_proj`` (grouped:
g x (H d / g -> ``o_lora_rank``)), ``o_b_proj`` (g ``o_lora_rank`` -> D), ``sinks`` (H); a
compressed layer adds ``compressor``: ``kv_proj`` and ``gate_proj`` (D -> c d), ``position_bias``
(m x c d), ``kv_norm`` (d), with m the layer type's rate in ``compress_rates`` and c = 1 for
heavily compressed attention (m 128), 2 for compressed sparse attention (m 4: two overlapping
series), whose compressor also holds ``indexer``: the same four tensors at ``index_head_dim`` di,
``q_b_proj`` (q rank -> Hi di) and ``scorer.weights_proj`` (D -> Hi), Hi = ``index_n_heads``.
``mlp``: ``gate`` (X x D; the hash-routed layers of ``mlp_layer_types`` hold the same matrix,
their token-to-expert table is a buffer), ``experts`` (X SwiGLU experts of
``moe_intermediate_size``, stacked) and ``shared_experts`` (one SwiGLU MLP of
``moe_intermediate_size``, whatever ``n_shared_experts`` says: the modeling code reads it
nowhere). Outside the blocks: ``embed_tokens``, ``hc_head`` (``hc_fn`` n x n D, ``hc_base`` n,
``hc_scale`` 1), ``norm``, ``lm_head``. The multi-token-prediction layers are not built.
"""

from __future__ import annotations

from typing import Any

from costcalc.formats import hf_layers
from costcalc.formats.families.llama import llama_layout
from costcalc.formats.families.moe import mlp_bias_not_experts, routed_experts
from costcalc.formats.hf_reader import Reader, is_whole
from costcalc.formats.peft_names import DEEPSEEK, llama_names

SIZES: dict[str, int] = {
    "vocab_size": 129280,
    "d_model": 4096,
    "n_layers": 43,
    "n_heads": 64,
    "context_length": 1048576,
    "ffn_hidden": 2048,
}
"""``DeepseekV4Config``'s defaults for the standard sizes (DeepSeek-V4-Flash)."""

CSA, HCA, SLIDING = (
    "compressed_sparse_attention",
    "heavily_compressed_attention",
    "sliding_attention",
)
RATES = {CSA: 4, HCA: 128}
"""``default_compress_rates``: tokens pooled into one compressed key, per layer type."""
LEGACY_RATIOS = {0: SLIDING, 4: CSA, 128: HCA}
"""``compress_ratios`` (legacy, one per layer) -> layer type, as ``__post_init__`` maps them."""


def deepseek_v4(r: Reader) -> dict[str, Any]:
    """DeepseekV4ForCausalLM: the tensors above with ``DeepseekV4Config``'s defaults (D 4,096,
    43 layers, 64 heads of 512, q rank 1,024, 8 output groups of 1,024, window 128, 256 experts
    of 2,048, top 6, 4 residual streams, an indexer of 64 heads of 128); untied by default.
    ``num_key_value_heads`` and ``attention_bias`` are read by no module (one key/value head, no
    attention biases); ``mlp_bias`` biases the shared expert, not the routed ones."""
    fields = llama_layout(r, head_dim=512, sizes=SIZES)
    hidden = r.value("ffn_hidden", "moe_intermediate_size", "intermediate_size", default=2048)
    moe = routed_experts(
        r,
        ("n_routed_experts", "num_local_experts"),
        ("num_experts_per_tok",),
        (256, 6),
        (("moe_intermediate_size", "intermediate_size"), 2048),
    )
    r.forget("n_kv_heads")
    mlp_bias_not_experts(r, fields, moe)
    fields.update(
        moe,
        ffn_hidden=hidden,
        moe_shared_ffn_hidden=moe.get("moe_ffn_hidden"),
        n_kv_heads=1,
        keys_as_values=True,
        qk_norm="key",
        attention_sinks=True,
        query_rank=r.value("query_rank", "q_lora_rank", default=1024),
        out_groups=r.value("out_groups", "o_groups", default=8),
        out_rank=r.value("out_rank", "o_lora_rank", default=1024),
        sliding_window=r.value("sliding_window", "sliding_window", default=128),
        residual_streams=r.value("residual_streams", "hc_mult", default=4),
    )
    _hash_layers(r, fields["n_layers"])
    _attention_layers(r, fields)
    return fields


def _rates(r: Reader) -> dict[str, Any]:
    """The compression rate of each compressed layer type: ``compress_rates``, with the legacy
    ``compress_rate_csa`` / ``compress_rate_hca`` over it (as ``__post_init__`` folds them)."""
    given = r.data.get("compress_rates")
    if given is not None and not isinstance(given, dict):
        r.fail("compress_rates", "expected a mapping of layer type to compression rate")
        given = None
    rates = dict(RATES) if given is None else dict(given)
    for kind, legacy in ((CSA, "compress_rate_csa"), (HCA, "compress_rate_hca")):
        if r.data.get(legacy) is not None:
            rates[kind] = r.data[legacy]
        elif kind not in rates:
            r.fail("compress_rates", f"gives no rate for {kind}")
    for kind in (CSA, HCA):
        if kind in rates and not is_whole(rates[kind], 1):
            r.fail("compress_rates", f"expected a whole number of tokens for {kind}")
    return rates


def _attention_layers(r: Reader, fields: dict[str, Any]) -> None:
    """Each layer's attention: as ``layer_types`` lists it, else as the legacy
    ``compress_ratios`` (0, 4, 128 per layer) says, else ``__post_init__``'s rule: two heavily
    compressed layers, then heavily compressed and compressed sparse alternating."""
    n = hf_layers.count_of(fields["n_layers"])
    if n is None:
        return
    rates = _rates(r)
    indexer = {
        "indexer_heads": r.value("indexer_heads", "index_n_heads", default=64),
        "indexer_head_dim": r.value("indexer_head_dim", "index_head_dim", default=128),
    }
    blocks = {
        SLIDING: {},
        HCA: {"kv_compress_rate": rates.get(HCA)},
        CSA: {"kv_compress_rate": rates.get(CSA), "kv_compress_overlap": True, **indexer},
    }
    listed = hf_layers.layer_types(r, n)
    if listed is None:
        listed = _legacy_types(r, n)
    if listed is not None:
        hf_layers.apply(r, fields, hf_layers.runs(listed), blocks)
        return
    head = min(n, 2)
    if n - head < 2:  # the alternation starts with a heavily compressed layer
        hf_layers.apply(r, fields, [(HCA, n)], blocks)
        return
    pattern = hf_layers.groups([(HCA, 1), (CSA, 1)], blocks)
    fields["layers"] = [{"count": head, **blocks[HCA]}, {"count": n - head, "pattern": pattern}]


def _legacy_types(r: Reader, n: int) -> list[str] | None:
    """Layer types from the legacy ``compress_ratios`` list (None when absent or wrong)."""
    ratios = r.data.get("compress_ratios")
    if ratios is None:
        return None
    if not isinstance(ratios, list) or not all(is_whole(x) and x in LEGACY_RATIOS for x in ratios):
        r.fail("compress_ratios", "expected a list of 0, 4 or 128 per layer")
        return None
    if len(ratios) < n:
        r.fail("compress_ratios", f"lists {len(ratios):,} layers, but the model has {n:,}")
        return None
    r.key_names["layers"] = r.name("compress_ratios")
    return [LEGACY_RATIOS[x] for x in ratios[:n]]


def _hash_layers(r: Reader, n_layers: Any) -> None:
    """``mlp_layer_types`` is checked (``hash_moe`` or ``moe`` per layer); both kinds hold the
    same tensors and cost the same matrix products, so it shapes nothing."""
    listed = r.data.get("mlp_layer_types")
    if listed is None:
        return
    n = hf_layers.count_of(n_layers)
    if not isinstance(listed, list) or any(kind not in ("hash_moe", "moe") for kind in listed):
        r.fail("mlp_layer_types", "expected hash_moe or moe per layer")
    elif n is not None and len(listed) != n:
        r.fail("mlp_layer_types", f"lists {len(listed):,} layers, but the model has {n:,}")


FAMILIES = {"deepseek_v4": deepseek_v4}


PEFT_NAMES = {
    "deepseek_v4": llama_names(
        renames={
            **DEEPSEEK.renames,
            "attn.k_proj": "self_attn.kv_proj",
            "attn.compressor.indexer.weights_proj": (
                "self_attn.compressor.indexer.scorer.weights_proj"
            ),
        },
    ),
}
"""peft's module names of each family (:class:`~costcalc.formats.peft_names.FamilyNames`)."""
