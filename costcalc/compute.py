"""Compute cost of a model under a workload: the MAC report, its JSON and its tables.

A :class:`Workload` says what runs: a full-sequence forward of B sequences of T tokens, and/or a
prompt of P tokens followed by N generated tokens with a KV cache. The formulas are in
:mod:`costcalc.macs`; this module checks the workload against the model and collects the counts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from costcalc import macs
from costcalc.errors import RangeError
from costcalc.spec import ModelSpec
from costcalc.units import MAX_COUNT, MAX_DIGITS

if TYPE_CHECKING:
    from costcalc.render import Grid


@dataclass(frozen=True)
class Workload:
    """What the model runs: ``length`` and ``prompt``/``generated`` are each optional."""

    batch: int = 1
    length: int | None = None
    causal: bool = False
    recompute: str = "none"
    attention: str = "eager"
    prompt: int | None = None
    generated: int | None = None


def check_count(name: str, value: int, maximum: int | None = None) -> int:
    """``value`` if it is a positive integer of at most MAX_DIGITS digits (and at most
    ``maximum``, a size's limit), else a RangeError: of wrong usage below 1 or over MAX_DIGITS
    digits, as the command line reads counts; of a value that cannot be taken past
    ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RangeError(name, value, "expected a positive whole number", usage=True)
    if value > MAX_COUNT:
        raise RangeError(name, value, f"expected at most {MAX_DIGITS} digits", usage=True)
    if maximum is not None and value > maximum:
        raise RangeError(name, value, f"expected at most {maximum:,}")
    return value


def position_limit(spec: ModelSpec, positions: int) -> str | None:
    """Why ``positions`` positions do not fit a learned position table; None when they fit.

    A learned table embeds positions 0 .. context_length - 1 (OPT's two offset rows shift the
    lookup, they add no position); rotary, sinusoidal and no positions have no such limit.
    """
    limit = spec.context_length
    if spec.position != "learned" or positions <= limit:
        return None
    return (
        f"needs {positions:,} positions, past the learned position table of {limit:,} positions "
        "(context_length); a learned table has no embedding for later positions"
    )


def check_positions(spec: ModelSpec, name: str, value: int, positions: int) -> None:
    """A RangeError when ``positions`` do not fit the model's learned position table."""
    problem = position_limit(spec, positions)
    if problem is not None:
        raise RangeError(name, value, problem)


@dataclass(frozen=True)
class MacReport:
    """Forward MACs of one full-sequence pass; the parts add up to ``total``."""

    attention_projections: int
    ffn: int
    router: int
    projection_ffn: int
    attention_pair: int
    sequence_mixing: int
    stream_mixing: int
    embedding_projection: int
    lm_head: int
    total: int


def mac_report(spec: ModelSpec, batch: int, length: int, causal: bool = False) -> MacReport:
    """Every forward MAC term of ``spec`` for B sequences of T tokens."""
    return MacReport(
        attention_projections=macs.attention_projection_macs(spec, batch, length),
        ffn=macs.ffn_macs(spec, batch, length),
        router=macs.router_macs(spec, batch, length),
        projection_ffn=macs.projection_ffn_macs(spec, batch, length),
        attention_pair=macs.attention_pair_macs(spec, batch, length, causal),
        sequence_mixing=macs.mixer_sequence_macs(spec, batch, length),
        stream_mixing=macs.residual_stream_macs(spec, batch, length),
        embedding_projection=macs.embedding_projection_macs(spec, batch, length),
        lm_head=macs.lm_head_macs(spec, batch, length),
        total=macs.forward_macs(spec, batch, length, causal),
    )


@dataclass(frozen=True)
class DecodeReport:
    """A prompt of P tokens, then N generated tokens with a KV cache (B sequences)."""

    prompt: int
    generated: int
    steps: int
    prefill: int
    first_step: int
    last_step: int
    decode: int
    total: int


def decode_report(
    spec: ModelSpec, batch: int, prompt: int, generated: int, causal: bool = False
) -> DecodeReport:
    """Prefill (a full-sequence forward of the prompt) plus N - 1 cached decode steps."""
    prefill = macs.forward_macs(spec, batch, prompt, causal)
    decode = macs.decode_macs(spec, prompt, generated, batch)
    return DecodeReport(
        prompt=prompt,
        generated=generated,
        steps=macs.decode_steps(generated),
        prefill=prefill,
        first_step=macs.decode_token_macs(spec, prompt, batch),
        last_step=macs.decode_token_macs(spec, prompt + max(generated - 2, 0), batch),
        decode=decode,
        total=prefill + decode,
    )


@dataclass(frozen=True)
class ComputeResult:
    """The compute cost of one model under one workload."""

    spec: ModelSpec
    workload: Workload
    forward: MacReport | None
    decoding: DecodeReport | None

    @property
    def attention(self) -> str:
        return "causal" if self.workload.causal else "full"

    @property
    def training_rule(self) -> str:
        """How a training step relates to the forward, in words: '3 x forward'."""
        return macs.training_rule(self.workload.recompute, self.workload.attention)

    def training(self, forward: MacReport) -> int:
        """MACs of one training step over ``forward``."""
        w = self.workload
        return macs.training_macs(forward.total, forward.attention_pair, w.recompute, w.attention)

    def to_dict(self) -> dict[str, Any]:
        """The JSON fields ``workload``, ``convention``, ``macs``, ``flops`` and ``decode``."""
        w = self.workload
        data: dict[str, Any] = {
            "workload": {
                "batch": w.batch,
                "length": w.length,
                "prompt": w.prompt,
                "generated": w.generated,
            },
            "convention": {
                "attention": self.attention,
                "sliding_window": self.spec.sliding_window,
                "training": self.training_rule,
                "recompute": w.recompute,
                "attn_implementation": w.attention,
                "flops_per_mac": macs.flops(1),
            },
        }
        if self.forward is not None:
            data["macs"] = asdict(self.forward)
            data["flops"] = {
                "forward": macs.flops(self.forward.total),
                "training": macs.flops(self.training(self.forward)),
            }
        if self.decoding is not None:
            d = self.decoding
            data["decode"] = {
                "prompt": d.prompt,
                "generated": d.generated,
                "steps": d.steps,
                "macs": {
                    "prefill": d.prefill,
                    "first_step": d.first_step,
                    "last_step": d.last_step,
                    "decode": d.decode,
                    "total": d.total,
                },
            }
        return data


def compute_result(spec: ModelSpec, workload: Workload) -> ComputeResult:
    """Check ``workload`` against ``spec`` and count its MACs."""
    w = workload
    check_count("batch", w.batch)
    forward = None
    if w.length is not None:
        check_count("length", w.length)
        check_positions(spec, "length", w.length, w.length)
        forward = mac_report(spec, w.batch, w.length, w.causal)
    decoding = None
    if w.prompt is not None and w.generated is not None:
        check_count("prompt", w.prompt)
        check_count("generated", w.generated)
        # Positions 0 .. P + N - 2 are fed; the last generated token is only produced.
        check_positions(spec, "generated", w.generated, w.prompt + w.generated - 1)
        decoding = decode_report(spec, w.batch, w.prompt, w.generated, w.causal)
    return ComputeResult(spec, workload, forward, decoding)


FORWARD_ROWS = (
    ("attention_projections", "  attention projections (q, k, v, o)"),
    ("ffn", "  FFN"),
    ("router", "  MoE router"),
    ("projection_ffn", "projections + FFN"),
    ("attention_pair", "attention pairs (QK^T, weights x V)"),
    ("sequence_mixing", "convolutions and recurrent scans"),
    ("stream_mixing", "residual streams (mixing, projections)"),
    ("embedding_projection", "embedding projections (in, out, per-layer inputs)"),
    ("lm_head", "LM head"),
    ("total", "forward total"),
)


def compute_grids(names: list[str], results: list[ComputeResult]) -> list[Grid]:
    """The forward MAC table and the KV-cache decoding table, a column per model."""
    from costcalc.render import Grid

    grids = []
    first = results[0]
    w = first.workload
    forwards = [r.forward for r in results if r.forward is not None]
    if forwards and w.length is not None:
        rows = [
            [label, *(f"{getattr(f, key):,}" for f in forwards)]
            for key, label in FORWARD_ROWS
            if key not in ("router", "sequence_mixing", "stream_mixing", "embedding_projection")
            or any(getattr(f, key) for f in forwards)
        ]
        rows.append(["forward FLOPs", *(f"{macs.flops(f.total):,}" for f in forwards)])
        rows.append(
            [
                f"training step FLOPs ({first.training_rule})",
                *(f"{macs.flops(first.training(f)):,}" for f in forwards),
            ]
        )
        title = f"Forward MACs, B={w.batch:,} sequences of T={w.length:,} tokens (no KV cache)"
        grids.append(
            Grid(
                title,
                ["", *names],
                rows,
                forward_notes(results, w.length),
                frozenset(index for index, row in enumerate(rows) if row[0] == "forward total"),
            )
        )
    decodings = [r.decoding for r in results if r.decoding is not None]
    if decodings:
        grids.append(decode_grid(names, first, decodings))
    return grids


def forward_notes(results: list[ComputeResult], length: int) -> list[str]:
    """What the forward table counts, in words: convention, FLOPs, training, windows."""
    first = results[0]
    if first.workload.causal:
        pairs = "causal: only the T(T+1)/2 query-key pairs a causal mask keeps"
    else:
        pairs = "full T^2 square of query-key pairs, as eager attention and FlopCounterMode count"
    w = first.workload
    given = (("--recompute", w.recompute, "none"), ("--attention", w.attention, "eager"))
    options = [f"{name} {value}" for name, value, default in given if value != default]
    recompute = f" ({', '.join(options)})" if options else ""
    notes = [
        f"Attention convention: {pairs}.",
        "MACs count matrix products only; FLOPs = 2 x MACs. "
        f"Training step = {first.training_rule}{recompute}.",
    ]
    skipped = [macs.skipped_layers(result.spec) for result in results]
    if any(skipped):
        counts = " / ".join(f"{n:,}" for n in skipped)
        notes.append(f"{counts} {macs.SKIPPED_WORDS}: 0 MACs.")
    if any(s.moe_modality_ffn_hidden for r in results for s in r.spec.stacks):
        notes.append(
            "Another modality's experts (moe_modality_ffn_hidden, such as vision experts) are "
            "counted in the parameters; text-only input runs none of them: 0 MACs."
        )
    if any(s.bidirectional_attention for r in results for s in r.spec.stacks):
        notes.append(
            "Bidirectional attention (no causal mask): those blocks keep the same pairs in both "
            "conventions, all T^2, or within a sliding window W those fewer than W positions "
            "apart on either side (W the bidirectional_window where a block gives one: Gemma "
            "4's masks keep keys at most its sliding_window away, sliding_window + 1)."
        )
    for kind in ("Sliding window", "Attention chunk"):
        spans = sorted({n for r in results for n in macs.windows_below(r.spec, length)[kind]})
        if spans:
            notes.append(
                f"{kind} {', '.join(f'{n:,}' for n in spans)} < T: only pairs inside it are "
                "counted (eager attention masks the others but computes the whole square)."
            )
    return notes


def decode_grid(names: list[str], first: ComputeResult, decodings: list[DecodeReport]) -> Grid:
    """Prefill, one cached step at the first and last decode position, and the totals."""
    from costcalc.render import Grid

    d0 = decodings[0]
    P, N = d0.prompt, d0.generated
    rows = [
        [f"prefill: forward of the P={P:,} prompt tokens", *(f"{d.prefill:,}" for d in decodings)],
        [f"one decode step, token at position t={P:,}", *(f"{d.first_step:,}" for d in decodings)],
    ]
    if N > 2:
        rows.append(
            [
                f"one decode step, token at position t={P + N - 2:,}",
                *(f"{d.last_step:,}" for d in decodings),
            ]
        )
    rows += [
        [f"decode: {d0.steps:,} cached steps", *(f"{d.decode:,}" for d in decodings)],
        ["prefill + decode", *(f"{d.total:,}" for d in decodings)],
    ]
    notes = [
        "The prefill yields the first new token; each of the other N - 1 tokens costs one cached "
        "step over the token before it (its keys: every earlier token, within any sliding window).",
        "The prefill computes logits for every prompt position, as a plain forward does. "
        "FLOPs = 2 x MACs.",
    ]
    title = (
        f"Decoding with a KV cache: MACs, B={first.workload.batch:,}, prompt P={P:,}, "
        f"N={N:,} generated tokens"
    )
    return Grid(title, ["", *names], rows, notes, frozenset({len(rows) - 1}))
