"""Hypothesis strategies for valid model specs: every layout the formulas distinguish."""

from __future__ import annotations

from hypothesis import strategies as st

from costcalc.spec import ModelSpec


@st.composite
def specs(draw: st.DrawFn) -> ModelSpec:
    """A buildable ModelSpec: heads grouped over KV heads, even rotary widths, optional MoE."""
    kv_heads = draw(st.integers(1, 8))
    heads = kv_heads * draw(st.integers(1, 4))
    head_dim = 2 * draw(st.integers(1, 32))
    explicit_head_dim = draw(st.booleans())
    d_model = heads * head_dim if not explicit_head_dim else draw(st.integers(8, 512))
    experts = draw(st.one_of(st.none(), st.integers(2, 8)))
    ffn = draw(st.sampled_from(["mlp", "swiglu", "geglu"]))
    norm = draw(st.sampled_from(["layernorm", "rmsnorm"]))
    return ModelSpec(
        vocab_size=draw(st.integers(2, 200_000)),
        vocab_pad_multiple=draw(st.one_of(st.none(), st.sampled_from([64, 128]))),
        d_model=d_model,
        n_layers=draw(st.integers(1, 64)),
        n_heads=heads,
        n_kv_heads=kv_heads,
        head_dim=head_dim if explicit_head_dim else None,
        context_length=draw(st.integers(1, 8192)),
        position=draw(st.sampled_from(["learned", "sinusoidal", "rotary", "none"])),
        embedding_dim=draw(st.one_of(st.none(), st.integers(8, 512))),
        ffn=ffn,
        ffn_hidden=draw(st.one_of(st.none(), st.integers(1, 4096))),
        fused_gate_up=ffn != "mlp" and draw(st.booleans()),
        moe_experts=experts,
        moe_top_k=None if experts is None else draw(st.integers(1, experts)),
        norm=norm,
        norm_bias=False if norm == "rmsnorm" else draw(st.booleans()),
        norms_per_block=draw(st.integers(0, 3)),
        final_norm=draw(st.booleans()),
        qkv_bias=draw(st.booleans()),
        fused_qkv=draw(st.booleans()),
        attn_out_bias=draw(st.booleans()),
        ffn_bias=draw(st.booleans()),
        lm_head_bias=draw(st.booleans()),
        tie_embeddings=draw(st.booleans()),
        sliding_window=draw(st.one_of(st.none(), st.integers(1, 4096))),
    )
