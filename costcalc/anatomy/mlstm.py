"""xLSTM's mLSTM layer (``xLSTMLayer``): queries, keys, values and an output gate, input and
forget gates per head, a matrix memory per head, computed chunk by chunk."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from costcalc.anatomy.recurrent import MixerSizes, RecurrentMixer
from costcalc.anatomy.tensor import Block, Tensor, linear
from costcalc.scalars import Count, Flag, Size


class MlstmSizes(MixerSizes):
    """xLSTM's mLSTM layer (``xLSTMLayer``): queries, keys, values and an output gate, input and
    forget gates per head, a matrix memory per head, computed chunk by chunk."""

    heads: Size = Field(description="Heads H; each has a dk x dv matrix memory.")
    qk_width: Size = Field(description="Width H dk of the queries and of the keys.")
    v_width: Count = Field(
        description="Width H dv of the values and of the output gate (0: the layer adds nothing)."
    )
    chunk_size: Size = Field(
        default=64,
        description="Tokens per chunk of the chunkwise prompt; the rest run step by step "
        "(changes MACs only).",
    )
    piece_size: Size = Field(
        default=16384,
        description=(
            "Longest prompt run at once at inference (max_inference_chunksize); a longer one "
            "runs in pieces of this many tokens, each chunked then stepped (changes MACs only)."
        ),
    )
    fused: Flag = Field(
        default=False,
        description=(
            "qkv_opreact and ifgate_preact as two tensors (weight_mode fused) instead of q, k, "
            "v, ogate_preact, igate_preact and fgate_preact; the same parameters."
        ),
    )
    bias: Flag = Field(
        default=False,
        description=(
            "Biases (use_bias) on q, k, v and the output gate (or qkv_opreact), on out_proj and "
            "on multihead_norm; the input and forget gates have theirs regardless."
        ),
    )


class Mlstm(RecurrentMixer[MlstmSizes]):
    kind = "mlstm"
    words = "mLSTM"
    sizes_model = MlstmSizes

    def tensors(self, spec: Block) -> list[Tensor]:
        """``q``, ``k`` D -> H dk, ``v`` and the output gate ``ogate_preact`` D -> H dv, the
        input and forget gates ``igate_preact``, ``fgate_preact`` D -> H with biases (fused:
        ``qkv_opreact`` D -> 2 H dk + 2 H dv and ``ifgate_preact`` D -> 2 H), the per-head
        LayerNorm ``multihead_norm`` (a weight of H dv), ``out_proj`` H dv -> D; with ``bias``
        (``bias=config.use_bias``) a bias on each but the gates' (theirs are always there)
        and on ``multihead_norm`` (H dv)."""
        m = self.sizes(spec)
        D, qk, v, H, b = spec.d_model, m.qk_width, m.v_width, m.heads, m.bias
        if m.fused:
            projections = [
                *linear("attn.qkv_opreact", 2 * qk + 2 * v, D, b, "mixer"),
                *linear("attn.ifgate_preact", 2 * H, D, True, "mixer"),
            ]
        else:
            projections = [
                *linear("attn.q", qk, D, b, "mixer"),
                *linear("attn.k", qk, D, b, "mixer"),
                *linear("attn.v", v, D, b, "mixer"),
                *linear("attn.ogate_preact", v, D, b, "mixer"),
                *linear("attn.igate_preact", H, D, True, "mixer"),
                *linear("attn.fgate_preact", H, D, True, "mixer"),
            ]
        norm = [Tensor(f"attn.multihead_norm.{kind}", (v,), "mixer") for kind in ("weight", "bias")]
        return [*projections, *norm[: 2 if b else 1], *linear("attn.out_proj", D, v, b, "mixer")]

    def scan_macs(self, spec: Block, batch: int, length: int) -> int:
        """xLSTM's native kernels in inference mode, chunks of c tokens (T = n c + r: n chunks
        then r single steps): B H (n c (2 dk dv + c (dk + dv) + dk) + r (2 dk dv + dk)): per
        chunk the keys x values added to the memory (c dk dv), Q K^T (c^2 dk), the queries read
        the memory and the normalizer carried in (c dk dv + c dk) and the gated scores x V
        (c^2 dv); per step the key-value outer product and the query reading the memory (dk dv
        each) and the normalizer (dk). A prompt longer than the piece size M runs in pieces of
        M tokens (T = p M + s): p times the cost of M tokens plus that of s."""
        m = self.sizes(spec)
        pieces, rest = divmod(length, m.piece_size)
        return batch * (pieces * self._run_macs(m, m.piece_size) + self._run_macs(m, rest))

    @staticmethod
    def _run_macs(m: MlstmSizes, length: int) -> int:
        """One sequence's products over ``length`` tokens run at once."""
        c, dk, dv = m.chunk_size, m.qk_width // m.heads, m.v_width // m.heads
        n, r = divmod(length, c)
        return m.heads * (n * c * (2 * dk * dv + c * (dk + dv) + dk) + r * (2 * dk * dv + dk))

    def state_width(self, spec: Block) -> int:
        """H (dk dv + dk + 1): each head's memory, normalizer and stabilizer."""
        m = self.sizes(spec)
        dk, dv = m.qk_width // m.heads, m.v_width // m.heads
        return m.heads * (dk * dv + dk + 1)

    def problems(self, sizes: MlstmSizes) -> Iterator[str]:
        for key in ("qk_width", "v_width"):
            width = getattr(sizes, key)
            if width % sizes.heads:
                yield f"{key} {width:,} does not split into {sizes.heads:,} heads"


PART = Mlstm()
