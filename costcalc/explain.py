"""Each parameter row's formula with the numbers put in, the way seed 004 writes
``12d^2 + 13d, d = 256 => 786,432 + 3,328 = 789,760``.

The substituted expression uses only integers, ``x``, ``+`` and parentheses, so a test can
evaluate it and compare with the count the formulas give.
"""

from __future__ import annotations

from costcalc.params import (
    ParamReport,
    attention_params,
    norm_params,
)
from costcalc.spec import ModelSpec


def _n(value: int) -> str:
    return f"{value:,}"


def _terms(*parts: tuple[str, int]) -> str:
    """'a + b' over the non-zero parts, '0' when there are none."""
    shown = [f"{label} {_n(value)}" if label else _n(value) for label, value in parts if value]
    return " + ".join(shown) or "0"


def is_gpt2_block(spec: ModelSpec) -> bool:
    """A block whose count is 12 d^2 + 13 d: MHA, 4x MLP, every bias, two LayerNorms."""
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
    H, K, d, h = spec.n_heads or 0, spec.kv_heads, spec.head_width, spec.ffn_width
    rows: dict[str, str] = {}
    rows["token_embedding"] = f"V x E = {_n(V)} x {_n(E)} = {_n(report.token_embedding)}"
    if spec.position == "learned":
        n = spec.position_rows
        rows["position_embedding"] = f"N x D = {_n(n)} x {_n(D)} = {_n(report.position_embedding)}"
    else:
        rows["position_embedding"] = f"{spec.position} positions have no weights = 0"
    if report.embedding_projection:
        rows["embedding_projection"] = (
            f"2 x E x D = 2 x {_n(E)} x {_n(D)} = {_n(report.embedding_projection)}"
        )
    qkv = (H + 2 * K) * d
    attn_bias = (qkv if spec.qkv_bias else 0) + (D if spec.attn_out_bias else 0)
    rows["attention"] = (
        f"D x (H + 2K) x d + H x d x D + biases = {_n(D)} x {_n(qkv)} + {_n(H * d)} x {_n(D)}"
        f" + {_n(attn_bias)} = {_n(attention_params(spec))}"
    )
    first = 2 * h if spec.gated else h
    ffn_bias = first + D if spec.ffn_bias else 0
    one_ffn = (
        f"{_n(D)} x {_n(first)} + {_n(h)} x {_n(D)} + {_n(ffn_bias)}"
        if ffn_bias
        else f"{_n(D)} x {_n(first)} + {_n(h)} x {_n(D)}"
    )
    shape = "D x 2h + h x D" if spec.gated else "D x h + h x D"
    if spec.moe_experts is None:
        rows["ffn"] = f"{shape} + biases = {one_ffn} = {_n(report.ffn)}"
    else:
        X = spec.moe_experts
        rows["ffn"] = (
            f"X x ({shape} + biases) + D x X = {_n(X)} x ({one_ffn}) + {_n(D)} x {_n(X)}"
            f" = {_n(report.ffn)}"
        )
    rows["norms"] = (
        f"{spec.norms_per_block} x {spec.norm} {_n(norm_params(spec))} = {_n(report.norms)}"
    )
    if is_gpt2_block(spec):
        rows["per_block"] = (
            f"12d^2 + 13d, d = {_n(D)} => {_n(12 * D * D)} + {_n(13 * D)} = {_n(report.per_block)}"
        )
    else:
        rows["per_block"] = (
            f"attention + FFN + norms = {_n(report.attention)} + {_n(report.ffn)} + "
            f"{_n(report.norms)} = {_n(report.per_block)}"
        )
    rows["blocks"] = f"L x block = {L} x {_n(report.per_block)} = {_n(report.blocks)}"
    rows["final_norm"] = (
        f"{spec.norm} D = {_n(report.final_norm)}" if spec.final_norm else "no final norm = 0"
    )
    head_weights = (
        "tied to the token table" if spec.tie_embeddings else f"V x E = {_n(V)} x {_n(E)}"
    )
    head_bias = f" + V bias {_n(V)}" if spec.lm_head_bias else ""
    rows["lm_head"] = f"{head_weights}{head_bias} = {_n(report.lm_head)}"
    rows["total"] = (
        "embeddings + blocks + final norm + LM head = "
        + _terms(
            ("", report.token_embedding),
            ("", report.position_embedding),
            ("", report.embedding_projection),
            ("", report.blocks),
            ("", report.final_norm),
            ("", report.lm_head),
        )
        + f" = {_n(report.total)}"
    )
    rows["untied_total"] = (
        f"total + V x E = {_n(report.total)} + {_n(report.tying_saving)}"
        f" = {_n(report.untied_total)}"
        if spec.tie_embeddings
        else f"already untied = {_n(report.untied_total)}"
    )
    return rows
