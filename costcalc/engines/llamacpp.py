"""What llama.cpp allocates for a model: its model buffer, its context cells and KV caches, its
output buffer. Read from llama.cpp at commit 0c1e570 (2026-10-01), the version vendored by
llama-cpp-python 0.3.36; each rule names the file and function it comes from.

A run is ``-c B x T -np B`` (B sequences of T tokens, llama.cpp's context being the cells of all
of them; ``-c`` 0 or no length: the model's training context) with the defaults of llama.cpp's
own tools (``common/common.h``): ``n_ubatch`` 512, a KV stream per sequence (``kv_unified``
false), the sliding-window cache sized to the window (``swa_full`` false; llama-cpp-python's
``Llama`` keeps ``llama_context_default_params``'s true, which ``swa_full=True`` models) and
flash attention on (``-fa auto`` on every backend that has it; without it a V cache of layers of
different widths is padded to the widest and may not be quantized).

Not counted: the compute buffer (``sched_reserve``'s worst-case graph, which depends on the
backend's kernels and its allocator, not on a formula over the model), the CPU repack buffers a
CPU backend makes for some quantized types (``CPU_REPACK``), a GPU backend's padding of the
tensors it holds (its ``get_alloc_size``), and tensors a converter adds that the checkpoint does
not hold (Llama 3's ``rope_freqs``: r / 2 floats).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from costcalc.anatomy.attention import cached_heads, value_width
from costcalc.errors import UsageError, check_choice
from costcalc.memory import cached_layers
from costcalc.spec import ModelSpec

if TYPE_CHECKING:
    from costcalc.memory import MemoryReport, MemorySetup

VERSION = "llama.cpp 0c1e570 (2026-10-01), as vendored by llama-cpp-python 0.3.36"
CONTEXT_PAD = 256
"""``GGML_PAD(n_ctx, 256)`` in ``llama_context::llama_context`` (src/llama-context.cpp)."""
UBATCH = 512
"""``n_ubatch`` of ``common_params`` (common/common.h) and ``llama_context_default_params``; the
context takes min(-c, n_batch, n_ubatch) (``llama_context::llama_context``), n_batch 2048."""
ALIGNMENT = 32
"""``GGUF_DEFAULT_ALIGNMENT`` (ggml/include/gguf.h): every tensor's data starts at a multiple."""
CACHE_TYPES: dict[str, tuple[int, int]] = {
    "f32": (1, 4),
    "f16": (1, 2),
    "bf16": (1, 2),
    "q8_0": (32, 34),
    "q4_0": (32, 18),
    "q4_1": (32, 20),
    "iq4_nl": (32, 18),
    "q5_0": (32, 22),
    "q5_1": (32, 24),
}
"""``kv_cache_types`` of common/arg.cpp (``-ctk``, ``-ctv``): elements and bytes per block
(ggml's ``ggml_type_traits``)."""
DTYPE_CACHE_TYPES = {"fp32": "f32", "fp16": "f16", "bf16": "bf16"}
DTYPE_FILES = {"fp16": "gguf:F16", "bf16": "gguf:BF16"}
"""The GGUF file ``convert_hf_to_gguf.py --outtype f16 / bf16`` writes for 16-bit weights."""
LOGIT_BYTES = 4
"""``llama_context::output_reserve``: float logits."""
NOT_COUNTED: tuple[str, ...] = (
    "the compute buffer (sched_reserve's worst-case graph: set by the backend's kernels and "
    "allocator, not by a formula over the model)",
    "CPU_REPACK buffers a CPU backend makes for some quantized types",
    "a GPU backend's padding of the tensors it holds (its get_alloc_size)",
    "tensors a converter adds beyond the checkpoint's (Llama 3's rope_freqs)",
)
"""What llama.cpp allocates beside the counted buffers, in words."""


def pad(n: int, multiple: int) -> int:
    """``GGML_PAD(n, multiple)``: n rounded up to a multiple."""
    return -(-n // multiple) * multiple


def check_cache_type(name: str) -> str:
    """A llama.cpp cache type (``f16``, ``q8_0``, ...; costcalc's fp16, bf16, fp32 are read as
    f16, bf16, f32), or a UsageError listing them."""
    return check_choice(
        DTYPE_CACHE_TYPES.get(name, name), tuple(CACHE_TYPES), "llama.cpp cache type"
    )


def context_cells(context: int, sequences: int, unified: bool = False) -> tuple[int, int]:
    """(n_ctx, n_ctx_seq) for ``-c context -np sequences``: ``llama_context::llama_context``
    (src/llama-context.cpp) pads n_ctx to a multiple of 256; a unified cache gives every
    sequence all of it, else each its own stream of n_ctx_seq = GGML_PAD(n_ctx / n_seq_max,
    256) cells and n_ctx = n_ctx_seq x n_seq_max."""
    n_ctx = pad(context, CONTEXT_PAD)
    if unified:
        return n_ctx, n_ctx
    per_sequence = pad(n_ctx // sequences, CONTEXT_PAD)
    if per_sequence == 0:
        raise UsageError(f"llama.cpp: n_ctx_seq == 0 (-c {context:,} over {sequences:,} sequences)")
    return per_sequence * sequences, per_sequence


def swa_cells(
    cells: int, window: int, sequences: int, unified: bool, ubatch: int, full: bool
) -> int:
    """Cells of the sliding-window cache beside a cache of ``cells``:
    ``llama_kv_cache_iswa::llama_kv_cache_iswa`` (src/llama-kv-cache-iswa.cpp),
    GGML_PAD(min(size_base, n_swa x (unified ? n_seq_max : 1) + n_ubatch), 256), or size_base
    with ``swa_full``."""
    if full:
        return cells
    return pad(min(cells, window * (sequences if unified else 1) + ubatch), CONTEXT_PAD)


def row_bytes(cache_type: str, width: int, what: str) -> int:
    """``ggml_row_size``: bytes of a row of ``width`` elements, width / block x block bytes; a
    width the block does not divide is refused, as ggml asserts."""
    block, size = CACHE_TYPES[cache_type]
    if width % block:
        raise UsageError(
            f"llama.cpp cannot store {what} rows of {width:,} elements as {cache_type}: its "
            f"blocks hold {block} (give an f16, bf16 or f32 cache type)"
        )
    return width // block * size


@dataclass(frozen=True)
class KVCache:
    """One ``llama_kv_cache``: ``cells`` per stream, ``streams`` streams, ``layers`` layers,
    K and V bytes in all (``size_k_bytes``, ``size_v_bytes``)."""

    kind: str
    cells: int
    streams: int
    layers: int
    elements: int
    k_bytes: int
    v_bytes: int

    @property
    def bytes(self) -> int:
        return self.k_bytes + self.v_bytes


def _widths(stack: ModelSpec) -> tuple[int, int]:
    """(n_embd_k_gqa, n_embd_v_gqa) of a block: K heads x key width and K heads x value width;
    MLA its latent and rotary key in K and no V (``is_mla``)."""
    if stack.mixer == "mla":
        return (stack.kv_lora_rank or 0) + (stack.qk_rope_head_dim or 0), 0
    heads = cached_heads(stack)
    return heads * stack.head_width, heads * value_width(stack)


def _check(spec: ModelSpec) -> None:
    """Memories other than ``llama_kv_cache`` / ``llama_kv_cache_iswa`` are refused."""
    for stack in spec.stacks:
        if stack.recurrent:
            raise UsageError(
                "llama.cpp keeps recurrent blocks' state in llama_memory_recurrent (and hybrid "
                "models in llama_memory_hybrid): not modelled; --engine transformers counts it"
            )
        if stack.kv_compress_rate is not None or stack.indexer_heads is not None:
            raise UsageError(
                "llama.cpp keeps compressed keys and sparse-attention indexers in caches of "
                "their own (llama_kv_cache_dsa, _dsv4): not modelled; --engine transformers "
                "counts them"
            )


def kv_caches(
    spec: ModelSpec,
    cells: int,
    sequences: int,
    type_k: str,
    type_v: str,
    unified: bool = False,
    ubatch: int = UBATCH,
    swa_full: bool = False,
) -> tuple[KVCache, ...]:
    """The caches ``llama_model::create_memory`` (src/llama-model.cpp) makes for a model whose
    layers hold keys and values: one ``llama_kv_cache`` of ``cells`` cells; or, when some
    attention layers have a sliding window (or chunk) and some do not, a
    ``llama_kv_cache_iswa``: the full layers' cache of ``cells`` and the windowed layers' of
    :func:`swa_cells`. A model whose every layer slides is built without a window (llama.cpp's
    llama and phi3 architectures ignore it). Each layer's K is a tensor of n_embd_k_gqa x cells
    x streams of ``type_k`` (``llama_kv_cache::llama_kv_cache``, src/llama-kv-cache.cpp), V
    likewise; layers that read another's keys (``shares_kv``) hold none."""
    _check(spec)
    streams = 1 if unified else sequences
    kinds: dict[bool, list[ModelSpec]] = {False: [], True: []}
    for stack in spec.stacks:
        if sum(_widths(stack)) and stack.runs_on_text and not stack.shares_kv:
            windowed = stack.sliding_window is not None or stack.attention_chunk is not None
            kinds[windowed].append(stack)
    if not kinds[False]:
        kinds = {False: kinds[True], True: []}
    windows = {s.sliding_window or s.attention_chunk or 0 for s in kinds[True]}
    if len(windows) > 1:
        raise UsageError(
            f"llama.cpp keeps one window (n_swa) for all sliding layers; these have "
            f"{', '.join(f'{w:,}' for w in sorted(windows))}"
        )
    caches = []
    for windowed, stacks in kinds.items():
        if not stacks:
            continue
        size = (
            swa_cells(cells, windows.pop(), sequences, unified, ubatch, swa_full)
            if windowed
            else cells
        )
        k = v = layers = elements = 0
        for stack in stacks:
            width_k, width_v = _widths(stack)
            n = cached_layers(stack)
            layers += n
            elements += n * (width_k + width_v) * size * streams
            k += n * row_bytes(type_k, width_k, "key") * size * streams
            v += n * (row_bytes(type_v, width_v, "value") if width_v else 0) * size * streams
        kind = ("SWA" if windowed else "non-SWA") if kinds[True] else "KV"
        caches.append(KVCache(kind, size, streams, layers, elements, k, v))
    return tuple(caches)


def read_bytes(spec: ModelSpec, batch: int, length: int, type_k: str, type_v: str) -> int:
    """What a decode step at ``length`` tokens reads of the caches of B sequences: the tokens
    each layer attends to (:func:`costcalc.memory.kv_cache_tokens`: a window caps them) x its K
    and V rows of the cache types."""
    from costcalc.memory import kv_cache_tokens

    _check(spec)
    total = 0
    for stack in spec.stacks:
        width_k, width_v = _widths(stack)
        if not width_k or not stack.runs_on_text or stack.shares_kv:
            continue
        row = row_bytes(type_k, width_k, "key") + (
            row_bytes(type_v, width_v, "value") if width_v else 0
        )
        total += batch * cached_layers(stack) * kv_cache_tokens(stack, length) * row
    return total


def _split(name: str) -> int:
    """GGUF tensors one costcalc tensor is written as: stacked experts' fused gate and up
    (transformers' ``gate_up_proj``) are ``ffn_gate_exps`` and ``ffn_up_exps``, two halves."""
    return 2 if "experts.gate_up_proj" in name else 1


def model_buffer(spec: ModelSpec, dtype: str) -> int:
    """``CPU_Mapped model buffer size``: the span of the GGUF file's tensor data that
    ``llama_model_loader::get_mapping_range`` (src/llama-model-loader.cpp) maps, from the first
    tensor's data to the last one's end: every tensor (as :mod:`costcalc.gguf_mix` types it)
    padded to the file's 32-byte alignment but the last, the final norm (``output_norm``,
    ``model.norm.weight`` being the last of the checkpoint's names, as convert_hf_to_gguf.py
    writes them sorted)."""
    from costcalc.quant import format_bytes
    from costcalc.weight_format import parse_format

    fmt = parse_format(DTYPE_FILES.get(dtype, dtype))
    if fmt.name != "gguf":
        raise UsageError(
            f"llama.cpp loads GGUF files: give --dtype gguf:TYPE (gguf:F16, gguf:Q8_0, "
            f"gguf:Q4_K_M, ...), or bf16 / fp16 for a converted file, not {dtype}"
        )
    total = 0
    for row in format_bytes(spec, fmt).tensors:
        pieces = _split(row.name)
        total += row.copies * pieces * pad(row.bytes // row.copies // pieces, ALIGNMENT)
    if spec.final_norm:
        last = 4 * spec.d_model  # output_norm, F32
        total -= pad(last, ALIGNMENT) - last
    return total


def output_buffer(spec: ModelSpec, sequences: int) -> int:
    """``llama_context::output_reserve`` (src/llama-context.cpp) at construction: float logits
    for n_vocab x max(n_outputs, n_seq_max) = n_seq_max outputs."""
    return LOGIT_BYTES * spec.vocab_size * sequences


@dataclass(frozen=True)
class LlamaCppMemory:
    """What llama.cpp allocates for ``-c context -np sequences``."""

    context: int
    sequences: int
    n_ctx: int
    n_ctx_seq: int
    type_k: str
    type_v: str
    swa_full: bool
    model_buffer: int
    caches: tuple[KVCache, ...]
    output_buffer: int

    @property
    def kv_bytes(self) -> int:
        return sum(c.bytes for c in self.caches)

    @property
    def kv_elements(self) -> int:
        return sum(c.elements for c in self.caches)

    name: ClassVar[str] = "llamacpp"

    @property
    def cache_words(self) -> str:
        """The cache's size in llama.cpp's unit: ``8,192 cells``."""
        return f"{self.n_ctx_seq:,} cells"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": VERSION,
            "context": self.context,
            "sequences": self.sequences,
            "n_ctx": self.n_ctx,
            "n_ctx_seq": self.n_ctx_seq,
            "cache_type_k": self.type_k,
            "cache_type_v": self.type_v,
            "swa_full": self.swa_full,
            "model_buffer_bytes": self.model_buffer,
            "kv_caches": [
                {
                    "kind": c.kind,
                    "cells": c.cells,
                    "streams": c.streams,
                    "layers": c.layers,
                    "k_bytes": c.k_bytes,
                    "v_bytes": c.v_bytes,
                    "bytes": c.bytes,
                }
                for c in self.caches
            ],
            "output_buffer_bytes": self.output_buffer,
            "not_counted": list(NOT_COUNTED),
        }

    def notes(self) -> list[str]:
        return notes(self)

    @property
    def cache_label(self) -> str:
        """``f16``, or ``q8_0 / f16`` when K and V differ."""
        return self.type_k if self.type_k == self.type_v else f"{self.type_k} / {self.type_v}"


def llamacpp_memory(
    spec: ModelSpec,
    dtype: str,
    context: int | None = None,
    sequences: int = 1,
    type_k: str = "f16",
    type_v: str = "f16",
    swa_full: bool = False,
) -> LlamaCppMemory:
    """The model buffer, the KV caches and the output buffer of ``-c context -np sequences``
    (``context`` None or 0: the model's training context, as llama.cpp takes ``-c 0``)."""
    type_k, type_v = check_cache_type(type_k), check_cache_type(type_v)
    context = context or spec.context_length
    n_ctx, n_ctx_seq = context_cells(context, sequences)
    caches = kv_caches(
        spec, n_ctx_seq, sequences, type_k, type_v, ubatch=min(context, UBATCH), swa_full=swa_full
    )
    return LlamaCppMemory(
        context=context,
        sequences=sequences,
        n_ctx=n_ctx,
        n_ctx_seq=n_ctx_seq,
        type_k=type_k,
        type_v=type_v,
        swa_full=swa_full,
        model_buffer=model_buffer(spec, dtype),
        caches=caches,
        output_buffer=output_buffer(spec, sequences),
    )


def llamacpp_report(spec: ModelSpec, setup: MemorySetup, length: int) -> MemoryReport:
    """The inference memory of ``setup`` as llama.cpp allocates it for B sequences of T tokens
    (``-c B x T -np B``): the model buffer as the weights, its KV caches (cells x layers x row
    bytes of the cache types: ``--cache-type-k`` / ``-v``, else the --kv-dtype given, else
    f16) and the output buffer."""
    from costcalc.memory import MemoryReport
    from costcalc.params import total_params
    from costcalc.tensors import tensor_count

    engine = setup.engine
    default = DTYPE_CACHE_TYPES.get(setup.kv_dtype or "fp16", setup.kv_dtype or "f16")
    memory = llamacpp_memory(
        spec,
        setup.dtype,
        length * setup.batch,
        setup.batch,
        engine.cache_type_k or default,
        engine.cache_type_v or default,
        engine.swa_full,
    )
    return MemoryReport(
        setup=setup,
        length=length,
        kv_dtype=memory.cache_label,
        params_total=total_params(spec),
        parameter_tensors=tensor_count(spec),
        bytes_weights=memory.model_buffer,
        bytes_gradients=0,
        bytes_master_weights=0,
        elements_optimizer_moments=0,
        elements_optimizer_steps=0,
        bytes_optimizer=0,
        bytes_activations=0,
        bytes_attention_scores=0,
        elements_logits=0,
        bytes_logits=0,
        bytes_logits_fp32=0,
        kv_cache_tokens=memory.n_ctx_seq,
        elements_kv_cache=memory.kv_elements,
        bytes_kv_cache=memory.kv_bytes,
        elements_state=0,
        bytes_state=0,
        bytes_output=memory.output_buffer,
        engine=memory,
    )


def notes(memory: LlamaCppMemory) -> list[str]:
    """How llama.cpp's figures were counted, and what they leave out, in words."""
    caches = "; ".join(
        f"{c.kind + ' ' if c.kind != 'KV' else ''}{c.cells:,} cells x {c.streams} stream"
        f"{'s' if c.streams > 1 else ''} x {c.layers} layers"
        for c in memory.caches
    )
    swa = ""
    if any(c.kind == "SWA" for c in memory.caches):
        full = " (--swa-full: as many as the full cache)" if memory.swa_full else ""
        swa = (
            " The sliding-window layers' cache holds min(cells, window + n_ubatch 512) cells, "
            f"padded to 256{full}."
        )
    return [
        f"{VERSION}, run as -c {memory.context:,} -np {memory.sequences}: n_ctx {memory.n_ctx:,} "
        f"cells (padded to a multiple of 256), {memory.n_ctx_seq:,} per sequence. KV cache: "
        f"{caches}; each cell of a layer holds K heads x key width of {memory.type_k} and K "
        f"heads x value width of {memory.type_v} (block-quantized types: width / 32 blocks)." + swa,
        "Model buffer: the GGUF file's tensor data as llama.cpp maps it, each tensor 32-byte "
        "aligned (as costcalc types a file of --dtype's type). Output buffer: float logits of "
        "the vocabulary per sequence.",
        "Not counted: " + "; ".join(NOT_COUNTED) + ".",
    ]
