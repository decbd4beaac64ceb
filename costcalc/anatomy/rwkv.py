"""RWKV-4's time mix (``RwkvSelfAttention``): receptance, key and value projections of the
token-shifted input, a WKV recurrence with a learned decay per channel, an output projection."""

from __future__ import annotations

from pydantic import Field

from costcalc.anatomy.recurrent import MixerSizes, RecurrentMixer
from costcalc.anatomy.tensor import Block, Part, Tensor, linear
from costcalc.scalars import Size


class RwkvSizes(MixerSizes):
    """RWKV-4's time mix (``RwkvSelfAttention``): receptance, key and value projections of the
    token-shifted input, a WKV recurrence with a learned decay per channel, an output
    projection."""

    attention_width: Size = Field(
        description="Width A of the receptance, key and value (attention_hidden_size)."
    )


def token_shift_mix(name: str, kinds: tuple[str, ...], width: int, part: Part) -> list[Tensor]:
    """RWKV's token-shift mix: ``time_mix_<kind>`` (1 x 1 x D) per input it mixes from the token
    and the one before; elementwise, no MACs."""
    return [Tensor(f"{name}.time_mix_{kind}", (1, 1, width), part) for kind in kinds]


class Rwkv(RecurrentMixer[RwkvSizes]):
    kind = "rwkv"
    words = "RWKV time mix"
    sizes_model = RwkvSizes

    def tensors(self, spec: Block) -> list[Tensor]:
        """``time_decay`` and ``time_first`` (A each), ``time_mix_key``/``_value``/
        ``_receptance`` (1 x 1 x D each), ``key``, ``value`` and ``receptance`` D -> A,
        ``output`` A -> D; no biases, no conv; the WKV recurrence is elementwise."""
        D, A = spec.d_model, self.sizes(spec).attention_width
        return [
            Tensor("attn.time_decay", (A,), "mixer"),
            Tensor("attn.time_first", (A,), "mixer"),
            *token_shift_mix("attn", ("key", "value", "receptance"), D, "mixer"),
            *linear("attn.key", A, D, False, "mixer"),
            *linear("attn.value", A, D, False, "mixer"),
            *linear("attn.receptance", A, D, False, "mixer"),
            *linear("attn.output", D, A, False, "mixer"),
        ]

    def state_width(self, spec: Block) -> int:
        """2 D + 3 A: the previous token's input to the time mix and to the channel mix, and
        the WKV numerator, denominator and running maximum; D + 3 A without a channel mix."""
        shifts = 2 if spec.ffn == "channel_mix" else 1
        return shifts * spec.d_model + 3 * self.sizes(spec).attention_width


PART = Rwkv()
