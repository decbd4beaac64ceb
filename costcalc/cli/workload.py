"""Workload options shared by the commands that count MACs: batch, length, attention convention."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from costcalc.cli.common import count_option

if TYPE_CHECKING:
    from costcalc.compute import Workload
    from costcalc.loaders import LoadedModel

PANEL = "Compute (MACs and FLOPs)"

BatchOption = Annotated[
    int | None,
    count_option(
        "--batch", "-B", help="Sequences B in a batch (default 1).", rich_help_panel=PANEL
    ),
]
LengthOption = Annotated[
    int | None,
    count_option(
        "--length",
        "-T",
        help="Tokens T per sequence: adds the forward MAC table.",
        rich_help_panel=PANEL,
    ),
]
CausalOption = Annotated[
    bool,
    typer.Option(
        "--causal",
        help="Count only the T(T+1)/2 query-key pairs a causal mask keeps (default: the full "
        "T^2 square, as eager attention computes it).",
        rich_help_panel=PANEL,
    ),
]
RecomputeOption = Annotated[
    str | None,
    typer.Option(
        "--recompute",
        metavar="MODE",
        help="What a training step recomputes: none (3 x forward), selective (+ attention "
        "pairs) or full (4 x forward).",
        rich_help_panel=PANEL,
    ),
]
AttentionOption = Annotated[
    str | None,
    typer.Option(
        "--attention",
        metavar="KERNEL",
        help="Attention kernel of the training step: eager (default, as the MAC tables count), "
        "sdpa or flash (their backward recomputes QK^T: + half the attention pairs).",
        rich_help_panel=PANEL,
    ),
]
PromptOption = Annotated[
    int | None,
    count_option(
        "--prompt",
        help="Prompt tokens P for KV-cache decoding (with --generate).",
        rich_help_panel=PANEL,
    ),
]
GenerateOption = Annotated[
    int | None,
    count_option(
        "--generate",
        help="Tokens N generated after the prompt with a KV cache (with --prompt).",
        rich_help_panel=PANEL,
    ),
]


def workload_from(
    batch: int | None,
    length: int | None,
    causal: bool,
    recompute: str | None,
    prompt: int | None,
    generated: int | None,
    attention: str | None = None,
) -> Workload | None:
    """The workload the options describe, None when no MACs were asked for.

    Options that only make sense with another (--batch, --causal, --recompute, --attention
    without --length or --prompt; --prompt without --generate) are usage errors rather than
    ignored.
    """
    from costcalc.errors import UsageError

    if (prompt is None) != (generated is None):
        raise UsageError("--prompt and --generate go together: P prompt tokens, N generated")
    if length is None and prompt is None:
        given = [
            name
            for name, value in (
                ("--batch", batch),
                ("--causal", causal),
                ("--recompute", recompute),
                ("--attention", attention),
            )
            if value not in (None, False)
        ]
        if given:
            raise UsageError(f"{', '.join(given)} needs --length T (or --prompt P --generate N)")
        return None
    from costcalc.compute import Workload
    from costcalc.macs import check_attention, check_recompute

    for name, value in (("--recompute", recompute), ("--attention", attention)):
        if value is not None and length is None:
            raise UsageError(f"{name} needs --length T (a training step is a full forward)")
    if recompute is not None:
        check_recompute(recompute)
    if attention is not None:
        check_attention(attention)
    return Workload(
        batch=1 if batch is None else batch,
        length=length,
        causal=causal,
        recompute=recompute or "none",
        attention=attention or "eager",
        prompt=prompt,
        generated=generated,
    )


def workload_tokens(workload: Workload | None) -> int | None:
    """The positions a workload reaches: its length, or prompt + generated tokens."""
    if workload is None:
        return None
    return workload.length or (workload.prompt or 0) + (workload.generated or 0)


def warn_past_context(models: list[LoadedModel], tokens: int | None) -> None:
    """A warning on stderr for each model without a position table asked about more tokens than
    its context: rotary (or no) positions run past it, but the model was not trained there."""
    import sys

    if tokens is None:
        return
    for model in models:
        spec = model.spec
        if spec.position != "learned" and tokens > spec.context_length:
            sys.stderr.write(
                f"warning: {tokens:,} tokens is past {model.name}'s trained context of "
                f"{spec.context_length:,}; {spec.position} positions run on, so the count is "
                "made, but the model was not trained on sequences this long\n"
            )
