"""Generate tests/golden/vllm_shards.json: the parameters one GPU holds when vLLM 0.34.0 serves
Llama-3.1-8B, Qwen3-30B-A3B and DeepSeek-V3 under tensor, expert, data-parallel attention and
pipeline parallelism, and the KV cache each GPU keeps.

Run by hand (pytest does not collect this file), with only the standard library:

    python tests/reference/vllm_shards.py

vLLM's parallel layers cannot be built here: they read their group sizes from an initialized
torch.distributed process group (``get_tensor_model_parallel_world_size``) and their module
imports the compiled custom ops of the CUDA wheel, which needs a torch other than this machine's.
So the shape rules are reimplemented line by line from vLLM 0.34.0's source (``pip download
vllm==0.34.0 --no-deps``, the wheel unpacked), each rule citing the file and line it copies.
The Hugging Face config.json files are the published ones (tests/fixtures/hf/), read as vLLM
reads them. This script shares no code with costcalc.

Per GPU (the first one of its group, which holds the most under expert parallelism):
``params``, each parameter vLLM registers with its shape and the layers holding it;
``elements``, their sum; ``kv_width``, the cache elements a token takes in one layer on that
GPU (``AttentionSpec``: K local heads x (head + value width); MLA one head of kv_lora_rank +
qk_rope_head_dim); ``kv_layers``, the layers of the stage that cache.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VLLM = "vLLM 0.34.0 (vllm-0.34.0-cp38-abi3-manylinux_2_28_x86_64.whl, source read)"
MODELS = {
    "llama-3.1-8b": "LlamaForCausalLM (vllm/model_executor/models/llama.py)",
    "qwen3-30b-a3b": "Qwen3MoeForCausalLM (vllm/model_executor/models/qwen3_moe.py)",
    "deepseek-v3": "DeepseekV3ForCausalLM (vllm/model_executor/models/deepseek_v2.py)",
}


def divide(numerator: int, denominator: int) -> int:
    """vllm/distributed/utils.py:143-147: ensure_divisibility, then the quotient."""
    assert numerator % denominator == 0, f"{numerator} is not divisible by {denominator}"
    return numerator // denominator


def pad_vocab_size(vocab_size: int, pad_to: int = 64) -> int:
    """vocab_parallel_embedding.py:39 (DEFAULT_VOCAB_PADDING_SIZE = 64), :100-102."""
    return ((vocab_size + pad_to - 1) // pad_to) * pad_to


def vocab_rows(vocab_size: int, tp: int) -> int:
    """VocabParallelEmbedding.__init__ (vocab_parallel_embedding.py:289-311): no added
    embeddings (org_num_embeddings = num_embeddings), num_embeddings_padded =
    pad_vocab_size(pad_vocab_size(V)), num_embeddings_per_partition = divide(padded, tp);
    ParallelLMHead (:583) the same; the weight is (per_partition, embedding_dim),
    UnquantizedEmbeddingMethod.create_weights."""
    org_padded = pad_vocab_size(vocab_size)
    padded = pad_vocab_size(org_padded + 0)
    return divide(padded, tp)


def column(out: int, inp: int, tp: int) -> list[int]:
    """ColumnParallelLinear (linear.py:500): output_size_per_partition = divide(out, tp); the
    weight sum(output_partition_sizes) x input_size_per_partition (linear.py:195-199)."""
    return [divide(out, tp), inp]


def merged(outs: list[int], inp: int, tp: int) -> list[int]:
    """MergedColumnParallelLinear (linear.py:786-806 -> :504-506): each output divided."""
    return [sum(divide(o, tp) for o in outs), inp]


def row(out: int, inp: int, tp: int) -> list[int]:
    """RowParallelLinear (linear.py:1741-1743): input_size_per_partition = divide(in, tp)."""
    return [out, divide(inp, tp)]


def qkv(hidden: int, head: int, heads: int, kv_heads: int, tp: int) -> tuple[list[int], int]:
    """QKVParallelLinear (linear.py:1112-1126): num_heads = divide(H, tp); num_kv_heads 1 when
    tp >= K (replicated divide(tp, K) times) else divide(K, tp); the fused weight
    (num_heads + 2 num_kv_heads) head_size x hidden. Returns it and the local KV heads."""
    num_heads = divide(heads, tp)
    if tp >= kv_heads:
        num_kv = 1
        divide(tp, kv_heads)
    else:
        num_kv = divide(kv_heads, tp)
    return [(num_heads + 2 * num_kv) * head, hidden], num_kv


def get_pp_indices(layers: int, rank: int, size: int) -> tuple[int, int]:
    """vllm/distributed/utils.py:240-256 (no VLLM_PP_LAYER_PARTITION)."""
    partitions = [layers // size for _ in range(size)]
    if remaining := layers % size:
        for i in range(2, remaining + 2):
            partitions[-i] += 1
    start = sum(partitions[:rank])
    return start, start + partitions[rank]


def local_experts(experts: int, ep_size: int, ep_rank: int = 0) -> int:
    """determine_expert_map (fused_moe/expert_map_manager.py:62-69)."""
    if ep_size == 1:
        return experts
    base, remainder = divmod(experts, ep_size)
    return base + 1 if ep_rank < remainder else base


def fused_moe(
    experts: int, hidden: int, inter: int, tp: int, dp: int, ep: bool
) -> dict[str, list[int]]:
    """FusedMoEParallelConfig.make (fused_moe/config.py:1235-1283): use_ep = dp tp > 1 and
    enable_expert_parallel; the MoE tp is flattened over dp x tp; with EP, tp_size 1 and
    ep_size = dp x tp. FusedMoEConfig.__post_init__ (config.py:1396-1398):
    intermediate_size_per_partition = I // tp (asserted divisible). The unquantized weights
    (unquantized_fused_moe_method.py create_weights, :71-115): w13 (E_local, 2 I_p, hidden),
    w2 (E_local, hidden, I_p); the Triton backend rounds nothing up (oracle/unquantized.py:
    353-365)."""
    flat = dp * tp
    use_ep = flat > 1 and ep
    moe_tp, ep_size = (1, flat) if use_ep else (flat, 1)
    assert inter % moe_tp == 0
    part = inter // moe_tp
    local = local_experts(experts, ep_size)
    return {"w13_weight": [local, 2 * part, hidden], "w2_weight": [local, hidden, part]}


def add(params: dict[str, dict[str, Any]], name: str, shape: list[int], layers: int) -> None:
    entry = params.setdefault(name, {"shape": shape, "layers": 0})
    assert entry["shape"] == shape, name
    entry["layers"] += layers


def shards(name: str, cfg: dict[str, Any], tp: int, pp: int, dp: int, ep: bool) -> dict[str, Any]:
    """The first GPU of every pipeline stage of one plan."""
    stages = []
    for stage in range(pp):
        start, end = get_pp_indices(cfg["num_hidden_layers"], stage, pp)
        params: dict[str, dict[str, Any]] = {}
        first, last = stage == 0, stage == pp - 1
        kv_width = builder(name)(cfg, tp, dp, ep, range(start, end), first, last, params)
        total = sum(e["layers"] * _product(e["shape"]) for e in params.values())
        stages.append(
            {
                "stage": stage,
                "layers": [start, end],
                "params": params,
                "elements": total,
                "kv_width": kv_width,
                "kv_layers": end - start,
            }
        )
    return {"tp": tp, "pp": pp, "dp_attention": dp, "expert_parallel": ep, "stages": stages}


def _product(shape: list[int]) -> int:
    n = 1
    for size in shape:
        n *= size
    return n


def ends(cfg: dict[str, Any], tp: int, first: bool, last: bool, params: dict[str, Any]) -> None:
    """embed_tokens on the first stage (llama.py:377-388; deepseek_v2.py:1459-1467; tied also
    on the last), the final norm and lm_head on the last (llama.py:394-397, :502-509;
    deepseek_v2.py:1485-1488, :1917-1925); RMSNorm's weight (hidden,) is whole."""
    hidden, vocab = cfg["hidden_size"], cfg["vocab_size"]
    if first or (cfg.get("tie_word_embeddings") and last):
        add(params, "model.embed_tokens.weight", [vocab_rows(vocab, tp), hidden], 1)
    if last:
        add(params, "model.norm.weight", [hidden], 1)
        if not cfg.get("tie_word_embeddings"):
            add(params, "lm_head.weight", [vocab_rows(vocab, tp), hidden], 1)


def llama(
    cfg: dict[str, Any],
    tp: int,
    dp: int,
    ep: bool,
    layers: range,
    first: bool,
    last: bool,
    params: dict[str, Any],
) -> int:
    """LlamaAttention (llama.py:150-180): QKVParallelLinear (bias = attention_bias), o_proj
    RowParallelLinear; LlamaMLP (llama.py:95-108): gate_up MergedColumnParallelLinear
    [I, I], down RowParallelLinear; two RMSNorms (llama.py:308-311)."""
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads", heads)
    head = cfg.get("head_dim") or hidden // heads
    inter, n = cfg["intermediate_size"], len(layers)
    ends(cfg, tp, first, last, params)
    weight, local = qkv(hidden, head, heads, kv_heads, tp)
    add(params, "layers.self_attn.qkv_proj.weight", weight, n)
    add(params, "layers.self_attn.o_proj.weight", row(hidden, heads * head, tp), n)
    add(params, "layers.mlp.gate_up_proj.weight", merged([inter, inter], hidden, tp), n)
    add(params, "layers.mlp.down_proj.weight", row(hidden, inter, tp), n)
    add(params, "layers.input_layernorm.weight", [hidden], n)
    add(params, "layers.post_attention_layernorm.weight", [hidden], n)
    return local * 2 * head  # llama.py:156 num_kv_heads = max(1, K // tp)


def qwen3_moe(
    cfg: dict[str, Any],
    tp: int,
    dp: int,
    ep: bool,
    layers: range,
    first: bool,
    last: bool,
    params: dict[str, Any],
) -> int:
    """Qwen3MoeAttention (qwen3_moe.py:270-330): QKVParallelLinear, o_proj RowParallelLinear,
    q_norm and k_norm RMSNorm(head_dim); Qwen3MoeSparseMoeBlock (qwen3_moe.py:160-215): gate
    GateLinear (a ReplicatedLinear, fused_moe/router/gate_linear.py:26) hidden -> experts,
    FusedMoE; every layer sparse here (decoder_sparse_step 1, no mlp_only_layers). The stage
    ends as Llama's (qwen3_moe.py:468-479 builds embed_tokens and norm on every stage: only the
    pp = 1 plans are recorded for this model)."""
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    kv_heads, head = cfg["num_key_value_heads"], cfg["head_dim"]
    experts, inter, n = cfg["num_experts"], cfg["moe_intermediate_size"], len(layers)
    ends(cfg, tp, first, last, params)
    weight, local = qkv(hidden, head, heads, kv_heads, tp)
    add(params, "layers.self_attn.qkv_proj.weight", weight, n)
    add(params, "layers.self_attn.o_proj.weight", row(hidden, heads * head, tp), n)
    add(params, "layers.self_attn.q_norm.weight", [head], n)
    add(params, "layers.self_attn.k_norm.weight", [head], n)
    add(params, "layers.mlp.gate.weight", [experts, hidden], n)
    for key, shape in fused_moe(experts, hidden, inter, tp, dp, ep).items():
        add(params, f"layers.mlp.experts.{key}", shape, n)
    add(params, "layers.input_layernorm.weight", [hidden], n)
    add(params, "layers.post_attention_layernorm.weight", [hidden], n)
    return local * 2 * head  # qwen3_moe.py:276


def deepseek(
    cfg: dict[str, Any],
    tp: int,
    dp: int,
    ep: bool,
    layers: range,
    first: bool,
    last: bool,
    params: dict[str, Any],
) -> int:
    """DeepseekV2MLAAttention (deepseek_v2.py:1040-1113): fused_qkv_a_proj (disable_tp,
    :953-967, :1052-1057) [q_lora_rank, kv_lora_rank + rope] x hidden, q_a_layernorm,
    q_b_proj ColumnParallelLinear q_lora_rank -> H (nope + rope), kv_a_layernorm, kv_b_proj
    ColumnParallelLinear kv_lora_rank -> H (nope + v), o_proj RowParallelLinear H v -> hidden.
    Layers below first_k_dense_replace hold DeepseekV2MLP (deepseek_v2.py:1290-1345: gate_up
    merged column, down row), the rest DeepseekV2MoE (:291-400): GateLinear hidden ->
    experts (replicated), e_score_correction_bias fp32 (experts,) for noaux_tc (:327-330),
    shared_experts DeepseekV2MLP of I x n_shared, disable_tp when is_sequence_parallel
    (:252-275; config/parallel.py:859-877: EP, tp > 1 and dp > 1 with the default
    allgather_reducescatter backend), FusedMoE. The MTP layer (num_nextn_predict_layers) is not
    built by the main model."""
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    q_rank, kv_rank = cfg["q_lora_rank"], cfg["kv_lora_rank"]
    nope, rope, v = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    experts, inter = cfg["n_routed_experts"], cfg["moe_intermediate_size"]
    dense_inter, k_dense = cfg["intermediate_size"], cfg["first_k_dense_replace"]
    freq = cfg.get("moe_layer_freq", 1)
    n = len(layers)
    sp_moe = ep and tp > 1 and dp > 1
    ends(cfg, tp, first, last, params)
    divide(heads, tp)  # deepseek_v2.py:1041 assert num_heads % tp_size == 0
    add(params, "layers.self_attn.fused_qkv_a_proj.weight", [q_rank + kv_rank + rope, hidden], n)
    add(params, "layers.self_attn.q_a_layernorm.weight", [q_rank], n)
    add(params, "layers.self_attn.q_b_proj.weight", column(heads * (nope + rope), q_rank, tp), n)
    add(params, "layers.self_attn.kv_a_layernorm.weight", [kv_rank], n)
    add(params, "layers.self_attn.kv_b_proj.weight", column(heads * (nope + v), kv_rank, tp), n)
    add(params, "layers.self_attn.o_proj.weight", row(hidden, heads * v, tp), n)
    add(params, "layers.input_layernorm.weight", [hidden], n)
    add(params, "layers.post_attention_layernorm.weight", [hidden], n)
    moe = [i for i in layers if i >= k_dense and i % freq == 0]
    dense = n - len(moe)
    if dense:
        add(params, "dense.mlp.gate_up_proj.weight", merged([dense_inter] * 2, hidden, tp), dense)
        add(params, "dense.mlp.down_proj.weight", row(hidden, dense_inter, tp), dense)
    if moe:
        m = len(moe)
        add(params, "moe.mlp.gate.weight", [experts, hidden], m)
        shared = inter * cfg["n_shared_experts"]
        shared_tp = 1 if sp_moe else tp
        add(
            params,
            "moe.mlp.shared_experts.gate_up_proj.weight",
            merged([shared] * 2, hidden, shared_tp),
            m,
        )
        add(params, "moe.mlp.shared_experts.down_proj.weight", row(hidden, shared, shared_tp), m)
        for key, shape in fused_moe(experts, hidden, inter, tp, dp, ep).items():
            add(params, f"moe.mlp.experts.{key}", shape, m)
    # MLAAttention's cache: one head of kv_lora_rank + qk_rope_head_dim on every TP rank
    return kv_rank + rope


def builder(name: str) -> Any:
    return {"llama-3.1-8b": llama, "qwen3-30b-a3b": qwen3_moe, "deepseek-v3": deepseek}[name]


def fp32_extra(name: str, cfg: dict[str, Any], plan: dict[str, Any]) -> int:
    """Elements vLLM holds in fp32 beside the weights: DeepSeek-V3's e_score_correction_bias,
    one per routed expert and MoE layer of the stage (deepseek_v2.py:327-330)."""
    if name != "deepseek-v3":
        return 0
    start, end = plan["stages"][0]["layers"]
    moe = [i for i in range(start, end) if i >= cfg["first_k_dense_replace"]]
    return len(moe) * cfg["n_routed_experts"]


def plans(name: str) -> list[tuple[int, int, int, bool]]:
    """(tp, pp, dp, ep) recorded per model: TP 1/2/4/8, EP at TP 2/4/8 for the MoEs, DP
    attention and PP where the model file allows them."""
    base = [(t, 1, 1, False) for t in (1, 2, 4, 8)]
    if name == "llama-3.1-8b":
        return [*base, (2, 2, 1, False), (8, 3, 1, False), (4, 4, 1, False)]
    moe = [(t, 1, 1, True) for t in (2, 4, 8)] + [(1, 1, 8, True), (2, 1, 4, True)]
    moe += [(1, 1, 8, False), (2, 1, 4, False)]
    if name == "deepseek-v3":
        moe += [(8, 2, 1, False), (8, 2, 1, True)]
    return base + moe


def main() -> None:
    out: dict[str, Any] = {
        "source": VLLM,
        "generated": datetime.date.today().isoformat(),
        "method": (
            "shape rules reimplemented from vLLM's source with file:line citations (its "
            "parallel layers need an initialized process group and the CUDA wheel's ops); "
            "configs: tests/fixtures/hf/<model>.json"
        ),
        "models": {},
    }
    for name, cls in MODELS.items():
        cfg = json.loads((ROOT / f"tests/fixtures/hf/{name}.json").read_text())
        cases = []
        for tp, pp, dp, ep in plans(name):
            plan = shards(name, cfg, tp, pp, dp, ep)
            plan["fp32_extra_elements"] = fp32_extra(name, cfg, plan)
            cases.append(plan)
        out["models"][name] = {"architecture": cls, "plans": cases}
    path = ROOT / "tests/golden/vllm_shards.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
