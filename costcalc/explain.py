"""Each parameter row's formula with the numbers put in, the way the GPT book counts a block:
``12D^2 + 13D, D = 256 => 786,432 + 3,328 = 789,760`` (the book writes d for the width; here D
is the width and d the head width).

The substituted expression uses only integers, ``x``, ``+``, ``-`` and parentheses, so a test
can evaluate it and compare with the count the formulas give.
"""

from __future__ import annotations

from costcalc.anatomy.ffn import ffn_part
from costcalc.anatomy.mixer import token_mixer
from costcalc.anatomy.norms import block_norms_formula, norm_words
from costcalc.compute import MacReport
from costcalc.params import (
    ParamReport,
    attention_params,
    block_norm_params,
    ffn_params,
)
from costcalc.spec import ModelSpec
from costcalc.tensors import Tensor, block_norm_tensors, ffn_tensors, mixer_tensors


def _n(value: int) -> str:
    return f"{value:,}"


def _terms(*parts: tuple[str, int]) -> str:
    """'a + b' over the non-zero parts, '0' when there are none."""
    shown = [f"{label} {_n(value)}" if label else _n(value) for label, value in parts if value]
    return " + ".join(shown) or "0"


def is_gpt2_block(spec: ModelSpec) -> bool:
    """A block whose count is 12 D^2 + 13 D: MHA, 4x MLP, every bias, two LayerNorms."""
    return (
        spec.kv_heads == spec.n_heads
        and spec.head_width * spec.n_heads == spec.d_model
        and spec.ffn == "mlp"
        and spec.ffn_width == 4 * spec.d_model
        and spec.moe_experts is None
        and spec.qkv_bias
        and spec.attn_out_bias
        and spec.ffn_bias
        and spec.norm == "layernorm"
        and spec.has_norm_bias
        and spec.norms_per_block == 2
    )


def explain(spec: ModelSpec, report: ParamReport) -> dict[str, str]:
    """Formula and substituted numbers for each row of the parameter report."""
    V, D, E, L = spec.vocab_rows, spec.d_model, spec.embed_width, spec.n_layers
    rows: dict[str, str] = {}
    rows["token_embedding"] = f"V x E = {_n(V)} x {_n(E)} = {_n(report.token_embedding)}"
    if spec.position == "learned" and spec.position_offset:
        n, k = spec.context_length, spec.position_offset
        rows["position_embedding"] = (
            f"(N + offset) x D, offset = {_n(k)} extra rows before position 0, as OPT keeps => "
            f"({_n(n)} + {_n(k)}) x {_n(D)} = {_n(report.position_embedding)}"
        )
    elif spec.position == "learned":
        n = spec.position_rows
        rows["position_embedding"] = f"N x D = {_n(n)} x {_n(D)} = {_n(report.position_embedding)}"
    elif report.position_embedding:  # rotary_scale: a learned scale per rotary frequency
        rows["position_embedding"] = (
            f"r / 2 learned rotary frequency scales = {_n(report.position_embedding)}"
        )
    else:
        rows["position_embedding"] = f"{spec.position} positions have no weights = 0"
    if report.embedding_projection:
        rows["embedding_projection"] = (
            f"2 x E x D = 2 x {_n(E)} x {_n(D)} = {_n(report.embedding_projection)}"
        )
    if report.embedding_norm:
        rows["embedding_norm"] = f"{spec.norm} E = {_n(report.embedding_norm)}"
    P = spec.per_layer_input_width
    if P is not None:
        V2 = spec.per_layer_rows
        rows["per_layer_embedding"] = (
            f"V' x L x P = {_n(V2)} x {L} x {_n(P)} = {_n(report.per_layer_embedding)}"
        )
        rows["per_layer_projection"] = (
            f"D x L x P + norm P = {_n(D)} x {L} x {_n(P)} + {_n(P)}"
            f" = {_n(report.per_layer_projection)}"
        )
    if report.per_block is None:
        rows.update(_layered_rows(report))
    else:
        rows.update(block_rows(spec.stacks[0], L))
    if report.stream_collapse:
        n, r = spec.residual_streams, spec.stream_rank
        rows["stream_collapse"] = (
            f"n x n D + n + 1, n = {n} streams => {n} x {n} x {_n(spec.d_model)} + {n} + 1"
            f" = {_n(report.stream_collapse)}"
            if r is None
            else f"n D + 2 r n D, n = {n} streams, r = {r} => {n} x {_n(spec.d_model)} x "
            f"(1 + 2 x {r}) = {_n(report.stream_collapse)}"
        )
    if report.altup_projections:
        m = spec.altup_streams or 1
        rows["altup_projections"] = (
            f"2 (n - 1) D^2, n = {m} AltUp streams => 2 x {m - 1} x {_n(spec.d_model)}^2"
            f" = {_n(report.altup_projections)}"
        )
    if report.initial_state:
        rows["initial_state"] = f"D = {_n(report.initial_state)}"
    final_norm = report.final_norm
    rows["final_norm"] = (
        f"{norm_words(spec, spec.has_final_norm_bias)} = {_n(final_norm)}"
        if spec.final_norm
        else "no final norm = 0"
    )
    Vh, head = spec.output_rows, "V" if spec.output_rows == V else "head rows"
    head_weights = (
        "tied to the token table" if spec.tie_embeddings else f"{head} x E = {_n(Vh)} x {_n(E)}"
    )
    head_bias = f" + {head} bias {_n(Vh)}" if spec.lm_head_bias else ""
    head_bias += f" + {head} logit scales {_n(Vh)}" if spec.logit_scale else ""
    rows["lm_head"] = f"{head_weights}{head_bias} = {_n(report.lm_head)}"
    rows["total"] = (
        "embeddings + blocks + "
        + ("residual streams' last collapse + " if report.stream_collapse else "")
        + ("AltUp stream projections + " if report.altup_projections else "")
        + "final norm + "
        + ("second stream's initial state + " if report.initial_state else "")
        + "LM head = "
        + _terms(
            ("", report.token_embedding),
            ("", report.position_embedding),
            ("", report.embedding_projection),
            ("", report.per_layer_embedding),
            ("", report.per_layer_projection),
            ("", report.blocks),
            ("", report.stream_collapse),
            ("", report.altup_projections),
            ("", report.final_norm),
            ("", report.initial_state),
            ("", report.lm_head),
        )
        + f" = {_n(report.total)}"
    )
    rows["non_embedding"] = (
        f"total - position table = {_n(report.total)} - {_n(report.position_embedding)}"
        f" = {_n(report.non_embedding)}"
        if not report.per_layer_embedding
        else f"total - position table - per-layer input table = {_n(report.total)} - "
        f"{_n(report.position_embedding)} - {_n(report.per_layer_embedding)}"
        f" = {_n(report.non_embedding)}"
    )
    head = " - LM head" if report.lm_head else " (tied: it is the LM head)"
    rows["non_embedding_kaplan"] = (
        f"non-embedding (nanoGPT) - token table{head} = {_n(report.non_embedding)} - "
        f"{_n(report.token_embedding)}"
        + (f" - {_n(report.lm_head)}" if report.lm_head else "")
        + f" = {_n(report.non_embedding_kaplan)}"
    )
    if report.active != report.total:
        idle = "; ".join(
            [
                f"{s.n_layers:,} x ({s.experts - s.experts_active} of {s.experts})"
                for s in spec.stacks
                if s.moe_experts is not None
            ]
            + [
                f"{s.n_layers:,} x ({X - (s.n_heads or 0) // s.kv_heads} of {X} attention experts)"
                for s in spec.stacks
                if (X := s.attention_experts) is not None
            ]
        )
        rows["active"] = (
            f"total - routed experts a token skips (layers x (X - k of X): {idle}) => "
            f"{_n(report.total)} - {_n(report.total - report.active)} = {_n(report.active)}"
        )
        rows["active_non_embedding"] = (
            f"active - looked-up tables = {_n(report.active)} - "
            f"{_n(report.active - report.active_non_embedding)} = "
            f"{_n(report.active_non_embedding)}"
        )
    rows["untied_total"] = (
        f"total + V x E = {_n(report.total)} + {_n(report.tying_saving)}"
        f" = {_n(report.untied_total)}"
        if spec.tie_embeddings
        else f"already untied = {_n(report.untied_total)}"
    )
    return rows


def _tensor_sum(tensors: list[Tensor], total: int) -> str:
    """Each tensor's shape multiplied out, summed: '1,024 x 896 + 128 + ... = total'."""
    terms = [
        " x ".join(_n(n) for n in (t.copies, *t.shape) if t.copies > 1 or n is not t.copies)
        for t in tensors
    ]
    return " + ".join(terms) + f" = {_n(total)}"


def block_rows(b: ModelSpec, L: int) -> dict[str, str]:
    """The per-block rows of a model whose blocks are all alike (``b`` is one of them)."""
    D = b.d_model
    attention, ffn, norms = attention_params(b), ffn_params(b), block_norm_params(b)
    rows: dict[str, str] = {}
    formula = None if b.parallel_mamba2 else token_mixer(b.mixer).formula(b, attention)
    if formula is not None:
        rows["attention"] = formula
    else:
        mixers = f"{b.mixer} + mamba2" if b.parallel_mamba2 else b.mixer
        rows["attention"] = f"{mixers} tensors: " + _tensor_sum(mixer_tensors(b), attention)
    if b.per_layer_input_width is not None:
        rows["ffn"] = "FFN and per-layer input branch: " + _tensor_sum(ffn_tensors(b), ffn)
    elif b.ngpt_scales or b.residual_scales:
        rows["ffn"] = "FFN and its learned scales: " + _tensor_sum(ffn_tensors(b), ffn)
    else:
        part = ffn_part(b)
        rows["ffn"] = part.formula(b, ffn) or f"{part.label}: " + _tensor_sum(ffn_tensors(b), ffn)
    rows["norms"] = block_norms_formula(b, norms) or "norms: " + _tensor_sum(
        block_norm_tensors(b), norms
    )
    per_block = attention + ffn + norms
    if is_gpt2_block(b) and per_block == 12 * D * D + 13 * D:
        rows["per_block"] = (
            f"12D^2 + 13D, D = {_n(D)} => {_n(12 * D * D)} + {_n(13 * D)} = {_n(per_block)}"
        )
    else:
        rows["per_block"] = (
            f"attention + FFN + norms = {_n(attention)} + {_n(ffn)} + {_n(norms)} = {_n(per_block)}"
        )
    rows["blocks"] = f"L x block = {L} x {_n(per_block)} = {_n(L * per_block)}"
    return rows


def _layered_rows(report: ParamReport) -> dict[str, str]:
    """Blocks that differ: each kind's layers x its block, summed."""
    terms = " + ".join(
        f"{s.layers:,} x {_n(s.per_block)}" + (f" + shared {_n(s.shared)}" if s.shared else "")
        for s in report.stacks
    )
    kinds = "; ".join(f"{s.kind}: {s.layers:,} layers" for s in report.stacks)
    return {"blocks": f"sum over kinds of L x block ({kinds}) => {terms} = {_n(report.blocks)}"}


def explain_macs(
    spec: ModelSpec, report: MacReport, batch: int, length: int, causal: bool
) -> dict[str, str]:
    """Each forward MAC row's formula with the numbers put in: a MAC per weight per token for
    the matrices, a MAC per query-key pair and head width for attention."""
    from costcalc import macs

    B, T = _n(batch), _n(length)
    rows: dict[str, str] = {}

    def per_token(key: str, words: str, weights: int) -> None:
        rows[key] = f"B x T x {words} => {B} x {T} x {_n(weights)} = {_n(getattr(report, key))}"

    per_token(
        "attention_projections",
        "q, k, v, o weights of all blocks, D x (H + 2K) x d + H x d x D each",
        macs.attention_projection_macs_per_token(spec),
    )
    per_token(
        "ffn",
        "FFN weights a token goes through (in MoE blocks, its k experts of X)",
        macs.ffn_macs_per_token(spec),
    )
    if report.router:
        per_token("router", "router weights, D x X per MoE block", macs.router_macs_per_token(spec))
    rows["projection_ffn"] = (
        f"attention projections + FFN + router = {_n(report.attention_projections)} + "
        f"{_n(report.ffn)} + {_n(report.router)} = {_n(report.projection_ffn)}"
    )
    pairs = "T(T + 1)/2" if causal else "T^2"
    if causal and any(s.bidirectional_attention for s in spec.stacks):
        pairs += " (T^2 in bidirectional blocks)"
    terms = (
        " + ".join(
            f"{s.n_layers:,} x {_n(macs.pair_width(s))} x {_n(macs.stack_pairs(s, length, causal))}"
            for s in spec.stacks
            if macs.pair_width(s)
        )
        or "0"
    )
    compressed = " + ".join(
        f"{s.n_layers:,} x {_n(macs.compressed_pair_width(s))} x "
        f"{_n(macs.compressed_pairs(s, length, causal))}"
        for s in spec.stacks
        if macs.compressed_pairs(s, length, causal)
    )
    if compressed:
        pooled = any(s.indexer_key_pool for s in spec.stacks)
        terms += f" + {'pooled' if pooled else 'compressed'} keys: {compressed}"
    blocks = " + ".join(
        f"{s.n_layers:,} x {_n(macs.block_indexer_width(s))} x "
        f"{_n(macs.indexer_blocks(s, 0, length - 1))}"
        for s in spec.stacks
        if macs.block_indexer_width(s)
    )
    if blocks:
        terms += f" + indexer over pooled key blocks: {blocks}"
    rows["attention_pair"] = (
        f"B x L x 2Hd x pairs, pairs = {pairs} per head (within any window) => "
        f"{B} x ({terms}) = {_n(report.attention_pair)}"
    )
    if report.sequence_mixing:
        rows["sequence_mixing"] = (
            f"convolutions and scans of the recurrent mixers = {_n(report.sequence_mixing)}"
        )
    if report.stream_mixing:
        words = "n x n by n x D twice per block, n x n D to collapse the n residual streams"
        if spec.altup_streams is not None:
            words = (
                "n x n by D x n and the router n x D again per block, 2 (n - 1) D^2 into and "
                "out of the n AltUp streams"
            )
        elif spec.stream_rank is not None or not spec.stream_mixing:
            collapse = "n x n D" if spec.stream_rank is None else "2 r n D (rank r)"
            words = f"{collapse} to collapse the n residual streams (no mixing per block)"
        per_token("stream_mixing", words, macs.residual_stream_macs_per_token(spec))
    if report.embedding_projection:
        words = "2 x E x D" if spec.embed_width != spec.d_model else ""
        if spec.per_layer_input_width is not None:
            words = " + ".join(filter(None, [words, "D x L x P (per-layer inputs)"]))
        per_token("embedding_projection", words, macs.embedding_projection_macs_per_token(spec))
    per_token(
        "lm_head", "E x V (tied or not, the logits are computed)", macs.lm_head_macs_per_token(spec)
    )
    rows["total"] = (
        "projections + FFN + attention pairs + scans + "
        + ("residual streams + " if report.stream_mixing else "")
        + "embedding projections + LM head = "
        + _terms(
            ("", report.projection_ffn),
            ("", report.attention_pair),
            ("", report.sequence_mixing),
            ("", report.stream_mixing),
            ("", report.embedding_projection),
            ("", report.lm_head),
        )
        + f" = {_n(report.total)}"
    )
    return rows
