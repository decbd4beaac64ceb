"""What vLLM allocates for a model's KV cache: pages of ``block_size`` tokens per layer, layers
grouped by attention kind, the number of blocks a memory budget holds and the maximum
concurrency vLLM logs for a context length. Read from vLLM 0.33.0; each rule names the file and
function it comes from.

Not measured, and so not counted (vLLM's profile run measures them on the GPU,
``Worker.determine_available_memory`` in vllm/v1/worker/gpu_worker.py): the peak activation
memory of a forward of ``max_num_batched_tokens`` tokens, the memory outside PyTorch's allocator
(the CUDA context, cuBLAS and NCCL workspaces), the CUDA graphs' pool, and buffers the model
holds beside its weights (rotary tables). A budget of ``gpu_memory_utilization`` x the device's
memory less the weights is therefore an upper bound on the KV cache; vLLM's
``kv_cache_memory_bytes`` sets the KV budget itself (no profiling), and then every figure is
exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from costcalc.anatomy.attention import cached_heads, value_width
from costcalc.errors import UsageError, check_choice
from costcalc.memory import cached_layers
from costcalc.spec import ModelSpec

if TYPE_CHECKING:
    from costcalc.memory import MemoryReport, MemorySetup

VERSION = "vLLM 0.33.0"
BLOCK_SIZE = 16
"""``CacheConfig.DEFAULT_BLOCK_SIZE`` (vllm/config/cache.py)."""
KV_CACHE_DTYPES: dict[str, int | None] = {
    "auto": None,
    "bfloat16": 2,
    "float16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}
"""``--kv-cache-dtype`` values and their bytes per element (``auto``: the model's dtype)."""
DTYPE_KV = {"bf16": "bfloat16", "fp16": "float16", "fp8": "fp8"}
NOT_MEASURED: tuple[str, ...] = (
    "the profile run's peak activation memory (a forward of max_num_batched_tokens tokens)",
    "memory outside PyTorch's allocator (CUDA context, cuBLAS and NCCL workspaces)",
    "the CUDA graphs' memory pool",
    "buffers beside the weights (rotary cos/sin tables)",
)
"""What ``Worker.determine_available_memory`` measures on the GPU and costcalc cannot."""


def concurrent_batches(pipeline_stages: int) -> int:
    """Batches vLLM keeps in flight, each with up to ``max_num_batched_tokens`` of a sliding
    window's blocks: ``VllmConfig.max_concurrent_batches`` (vllm/config/vllm.py:560-566 of
    vLLM 0.34.0, as in VERSION), P + 1 over P pipeline stages with async scheduling, its
    default."""
    return pipeline_stages + 1


def default_batched_tokens(memory_bytes: int | None) -> int:
    """``vllm serve``'s ``max_num_batched_tokens`` (``EngineArgs.get_batch_defaults``,
    vllm/engine/arg_utils.py): 16,384 on devices of 160 GiB or more, 8,192 from 70 GiB (but
    A100s), else 2,048; 2,048 without a device."""
    gib = 2**30
    if memory_bytes is None:
        return 2048
    if memory_bytes >= 160 * gib:
        return 16384
    return 8192 if memory_bytes >= 70 * gib else 2048


def check_kv_dtype(name: str | None, weights: str) -> tuple[str, int]:
    """``--kv-cache-dtype`` (costcalc's bf16, fp16, fp8 read as vLLM's names) and its bytes;
    ``auto`` takes the weights' 16-bit dtype (bf16 for quantized weights)."""
    name = DTYPE_KV.get(name or "auto", name or "auto")
    check_choice(name, tuple(KV_CACHE_DTYPES), "vLLM kv_cache_dtype")
    size = KV_CACHE_DTYPES[name]
    return name, 4 if size is None and weights == "fp32" else size or 2


@dataclass(frozen=True)
class LayerKind:
    """The KV cache spec a kind of layer gets (``Attention.get_kv_cache_spec``,
    vllm/model_executor/layers/attention/attention.py; MLA ``MLAAttention.get_kv_cache_spec``):
    ``kind`` full, sliding (with ``window``) or mla. Chunked local attention (Llama 4) is full:
    vLLM turns the hybrid manager off for it by default (``VllmConfig.__post_init__``), and the
    manager then gives its layers full-attention blocks (``unify_hybrid_kv_cache_specs``)."""

    kind: str
    window: int | None
    page_bytes: int
    layers: int

    def blocks_per_request(self, block_size: int, max_model_len: int, in_flight: int) -> int:
        """Blocks one request of ``max_model_len`` tokens holds (``max_memory_usage_bytes`` /
        page, vllm/v1/kv_cache_interface.py): full and MLA cdiv(len, block);
        ``SlidingWindowSpec`` cdiv(min(W - 1 + in-flight tokens, len), block) + 1."""
        if self.kind == "sliding" and self.window is not None:
            tokens = min(self.window - 1 + in_flight, max_model_len)
            return -(-tokens // block_size) + 1
        return -(-max_model_len // block_size)


def layer_kinds(
    stacks: tuple[ModelSpec, ...], block_size: int, element_bytes: int
) -> list[LayerKind]:
    """The layers that keep a cache, by kind of block: page = block_size x K heads x (key +
    value width) x bytes (``AttentionSpec.page_size_bytes``; K one GPU's heads under tensor
    parallelism); MLA one head of its latent and rotary key, no V. Layers reading another's
    cache (``shares_kv``) hold none."""
    kinds: dict[tuple[str, int | None, int], int] = {}
    for stack in stacks:
        if stack.recurrent or stack.kv_compress_rate is not None or stack.indexer_heads:
            raise UsageError(
                "vLLM's caches for recurrent state, compressed keys and sparse-attention "
                "indexers (MambaSpec, DeepSeek V3.2 / V4 specs) are not modelled; "
                "--engine transformers counts them"
            )
        if not stack.runs_on_text or stack.shares_kv or not stack.has_attention:
            continue
        if stack.mixer == "mla":
            width, kind, window = (
                (stack.kv_lora_rank or 0) + (stack.qk_rope_head_dim or 0),
                "mla",
                None,
            )
        else:
            width = cached_heads(stack) * (stack.head_width + value_width(stack))
            kind, window = "full", None
            if stack.sliding_window is not None:
                kind, window = "sliding", stack.sliding_window
        if stack.mixer == "mla" and stack.sliding_window is not None:
            raise UsageError("vLLM's sliding-window MLA cache is not modelled")
        page = block_size * width * element_bytes
        key = (kind, window, page)
        kinds[key] = kinds.get(key, 0) + cached_layers(stack)
    return [LayerKind(kind, window, page, n) for (kind, window, page), n in kinds.items()]


@dataclass(frozen=True)
class Group:
    """One KV cache group: ``layers`` layers of one kind sharing a block table, ``block_bytes``
    of pages per block over them."""

    kind: LayerKind
    layers: int
    block_bytes: int


def kv_groups(kinds: list[LayerKind]) -> list[Group]:
    """``get_kv_cache_groups`` (vllm/v1/core/kv_cache_planning.py): every layer in one group
    when all are of one kind (``is_kv_cache_spec_uniform``, ``UniformTypeKVCacheSpecs``);
    else (``_get_kv_cache_groups_uniform_page_size``) each kind split into groups of
    at most ``group_size`` layers (the fewest layers of a kind, or the most when they are under
    1.5 x the fewest), every ``count``-th layer in a group (``layers[i::count]``)."""
    if len({(k.kind, k.window) for k in kinds}) <= 1:
        if not kinds:
            return []
        layers = sum(k.layers for k in kinds)
        return [Group(kinds[0], layers, sum(k.layers * k.page_bytes for k in kinds))]
    if len({k.page_bytes for k in kinds}) > 1:
        raise UsageError(
            "vLLM unifies the page sizes of hybrid layers of different widths "
            "(unify_kv_cache_spec_page_size) by changing their block sizes: not modelled"
        )
    fewest, most = min(k.layers for k in kinds), max(k.layers for k in kinds)
    size = most if most < fewest * 1.5 else fewest
    groups = []
    for k in kinds:
        count = -(-k.layers // size)
        for i in range(count):  # layers[i::count], as vLLM assigns them
            layers = len(range(i, k.layers, count))
            groups.append(Group(k, layers, layers * k.page_bytes))
    return groups


def bytes_per_block(groups: list[Group]) -> int:
    """``_get_kv_cache_bytes_per_block``: the largest group's pages, summed over its layers
    (every group's block is that large: the layers of a smaller one leave their share empty,
    the padding vLLM warns of)."""
    return max((g.block_bytes for g in groups), default=0)


@dataclass(frozen=True)
class VllmMemory:
    """vLLM's KV cache for requests of ``max_model_len`` tokens: groups, the bytes of a block,
    the blocks a request holds; with a budget, the blocks it holds and the concurrency."""

    block_size: int
    kv_cache_dtype: str
    element_bytes: int
    max_model_len: int
    max_num_batched_tokens: int
    sequences: int
    groups: tuple[Group, ...]
    block_bytes: int
    blocks_per_request: int
    budget: int | None
    budget_exact: bool
    concurrent_batches: int
    name: ClassVar[str] = "vllm"

    @property
    def cache_words(self) -> str:
        """The cache's size in vLLM's unit: ``4 x 2,048 blocks``."""
        per = f"{self.blocks_per_request:,} blocks"
        return per if self.sequences == 1 else f"{self.sequences:,} x {per}"

    @property
    def kv_elements(self) -> int:
        """Elements the blocks hold (a smaller group's empty share of a block included)."""
        return self.kv_bytes // self.element_bytes

    @property
    def kv_bytes(self) -> int:
        """What ``sequences`` requests of ``max_model_len`` tokens hold: blocks x block bytes."""
        return self.sequences * self.blocks_per_request * self.block_bytes

    @property
    def num_blocks(self) -> int | None:
        """``get_kv_cache_config_from_groups``: budget // bytes per block."""
        if self.budget is None or not self.block_bytes:
            return None
        return max(self.budget, 0) // self.block_bytes

    @property
    def max_concurrency(self) -> Fraction | None:
        """``get_max_concurrency_for_kv_cache_config`` (vllm/v1/core/kv_cache_utils.py):
        blocks / the blocks one request of max_model_len tokens takes over all groups."""
        blocks = self.num_blocks
        if blocks is None:
            return None
        return Fraction(blocks, self.blocks_per_request)

    @property
    def kv_cache_tokens(self) -> int | None:
        """``get_kv_cache_capacity``: int(max concurrency x max_model_len), the tokens vLLM logs
        as its KV cache size."""
        concurrency = self.max_concurrency
        return None if concurrency is None else math.floor(concurrency * self.max_model_len)

    def to_dict(self) -> dict[str, Any]:
        from costcalc.render import ratio_dict

        concurrency = self.max_concurrency
        return {
            "name": self.name,
            "version": VERSION,
            "block_size": self.block_size,
            "kv_cache_dtype": self.kv_cache_dtype,
            "max_model_len": self.max_model_len,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "sequences": self.sequences,
            "groups": [
                {
                    "kind": g.kind.kind,
                    "sliding_window": g.kind.window,
                    "layers": g.layers,
                    "page_bytes": g.kind.page_bytes,
                    "block_bytes": g.block_bytes,
                }
                for g in self.groups
            ],
            "bytes_per_block": self.block_bytes,
            "blocks_per_request": self.blocks_per_request,
            "kv_budget_bytes": self.budget,
            "kv_budget_exact": self.budget_exact,
            "num_blocks": self.num_blocks,
            "max_concurrency": None if concurrency is None else ratio_dict(concurrency),
            "kv_cache_tokens": self.kv_cache_tokens,
            "log": self.log_line,
            "not_measured": list(NOT_MEASURED),
        }

    def notes(self) -> list[str]:
        """How vLLM's figures were counted, and what they leave out, in words."""
        by_kind: dict[tuple[str, int | None], list[int]] = {}
        for g in self.groups:
            by_kind.setdefault((g.kind.kind, g.kind.window), []).append(g.layers)
        kinds = "; ".join(
            f"{len(sizes)} {kind}"
            + (f" (window {window:,})" if window else "")
            + f" of {', '.join(map(str, sizes))} layers"
            for (kind, window), sizes in by_kind.items()
        )
        lines = [
            f"{VERSION}: pages of {self.block_size} tokens per layer, {self.element_bytes} "
            f"byte{'s' if self.element_bytes > 1 else ''} an element ({self.kv_cache_dtype}); "
            f"KV cache groups: {kinds}; a block {self.block_bytes:,} bytes (the largest "
            f"group's pages); a request of {self.max_model_len:,} tokens holds "
            f"{self.blocks_per_request:,} blocks (a sliding window's: W - 1 + "
            f"{self.concurrent_batches} x max_num_batched_tokens "
            f"{self.max_num_batched_tokens:,} in flight, + 1)."
        ]
        if self.budget is not None:
            bound = "" if self.budget_exact else "at most "
            lines.append(
                f"KV budget {bound}{self.budget:,} bytes"
                + (
                    " (kv_cache_memory_bytes)"
                    if self.budget_exact
                    else " (gpu_memory_utilization x the device's memory, less the weights)"
                )
                + f": {bound}{self.num_blocks:,} blocks; vLLM would log: {self.log_line}"
            )
        lines.append(
            "Not measured (vLLM's profile run takes them from the budget): "
            + "; ".join(NOT_MEASURED)
            + "."
        )
        return lines

    @property
    def log_line(self) -> str | None:
        """vLLM's line at start-up (``update_kv_cache_capacity``): the KV cache in tokens and
        the concurrency, rounded to 2 decimals."""
        concurrency = self.max_concurrency
        if concurrency is None:
            return None
        return (
            f"GPU KV cache size: {self.kv_cache_tokens:,} tokens, Maximum concurrency for "
            f"{self.max_model_len:,} tokens per request: {float(concurrency):.2f}x"
        )


def vllm_memory(
    spec: ModelSpec,
    weights: str,
    max_model_len: int | None = None,
    sequences: int = 1,
    kv_cache_dtype: str | None = None,
    block_size: int = BLOCK_SIZE,
    max_num_batched_tokens: int = 2048,
    budget: int | None = None,
    budget_exact: bool = False,
    stacks: tuple[ModelSpec, ...] | None = None,
    pipeline_stages: int = 1,
) -> VllmMemory:
    """vLLM's KV cache for ``sequences`` requests of ``max_model_len`` tokens (None: the
    model's context), and with ``budget`` bytes for it, the blocks and the concurrency; of
    the layers ``stacks`` hold (one GPU's, :func:`costcalc.engines.vllm_shards.rank_stacks`),
    by default the model's, over ``pipeline_stages`` (:func:`concurrent_batches`)."""
    name, element = check_kv_dtype(kv_cache_dtype, weights)
    length = max_model_len or spec.context_length
    kinds = layer_kinds(spec.stacks if stacks is None else stacks, block_size, element)
    groups = kv_groups(kinds)
    batches = concurrent_batches(pipeline_stages)
    in_flight = batches * max_num_batched_tokens
    per_request = sum(g.kind.blocks_per_request(block_size, length, in_flight) for g in groups)
    return VllmMemory(
        block_size=block_size,
        kv_cache_dtype=name,
        element_bytes=element,
        max_model_len=length,
        max_num_batched_tokens=max_num_batched_tokens,
        sequences=sequences,
        groups=tuple(groups),
        block_bytes=bytes_per_block(groups),
        blocks_per_request=per_request,
        budget=budget,
        budget_exact=budget_exact,
        concurrent_batches=batches,
    )


def vllm_report(
    spec: ModelSpec,
    setup: MemorySetup,
    length: int,
    stacks: tuple[ModelSpec, ...] | None = None,
    held: int | None = None,
    pipeline: int = 1,
) -> MemoryReport:
    """The inference memory of ``setup`` as vLLM allocates it for B requests of T tokens
    (``--max-model-len T``): the weights as costcalc counts them, and the blocks B requests
    hold; with ``--kv-cache-memory`` (exact) or a device's memory (``gpu_memory_utilization``
    of it less the weights: an upper bound), the blocks, the concurrency and the tokens vLLM
    reports for that budget. On one GPU of a parallel plan: ``stacks`` its layers as it caches
    them, ``held`` its weight bytes, ``pipeline`` its stages."""
    from dataclasses import replace

    from costcalc.memory import memory_report, weight_bytes

    engine = setup.engine
    plain = memory_report(spec, setup)
    if plain.elements_state:
        raise UsageError("vLLM's recurrent-state cache (MambaSpec) is not modelled")
    weights = weight_bytes(spec, setup.dtype) if held is None else held
    budget: int | None = engine.kv_cache_memory
    exact = budget is not None
    if budget is None and engine.device_memory is not None:
        share = engine.utilisation if engine.utilisation is not None else DEFAULT_UTILISATION
        budget = math.ceil(engine.device_memory * share) - weights
    batched = engine.max_num_batched_tokens or default_batched_tokens(engine.device_memory)
    memory = vllm_memory(
        spec,
        setup.dtype,
        length,
        setup.batch,
        setup.kv_dtype,
        engine.block_size or BLOCK_SIZE,
        batched,
        budget,
        exact,
        stacks,
        pipeline,
    )
    stored = {1: "fp8", 2: "bf16" if setup.dtype != "fp16" else "fp16", 4: "fp32"}
    label = memory.kv_cache_dtype
    if label == "auto":
        label = f"auto ({stored[memory.element_bytes]})"
    return replace(
        plain,
        kv_dtype=label,
        kv_cache_tokens=memory.blocks_per_request * memory.block_size,
        elements_kv_cache=memory.kv_elements,
        bytes_kv_cache=memory.kv_bytes,
        engine=memory,
    )


DEFAULT_UTILISATION = Fraction(23, 25)
"""``CacheConfig.gpu_memory_utilization``'s default, 0.92 (vllm/config/cache.py line 215);
``request_memory`` in vllm/v1/worker/utils.py takes ceil(total memory x it)."""
