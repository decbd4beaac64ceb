"""The parts blocks are built of, each owning in one module what it holds and costs.

A part gives its parameter tensors (the shapes PyTorch holds, :class:`~costcalc.anatomy.tensor.
Tensor`), the multiply-accumulates that are not per-token matrix products (query-key pairs, a
scan over the sequence), the cache or state it keeps between tokens, the rules its sizes obey
and its name in words.
Every quantity of costcalc (parameters, MACs, memory, LoRA, quantized bytes) reads these.

- :mod:`costcalc.anatomy.tensor`: the tensor record, the layer shapes (linear, norm, conv) and
  what a part reads of its block.
- :mod:`costcalc.anatomy.saved`: what a measured part saves for backward in a training step.
- :mod:`costcalc.anatomy.mixer`: what a token mixer is, and the one that a block's ``mixer``
  names: :mod:`costcalc.anatomy.attention` (with its sub-parts), :mod:`costcalc.anatomy.mla`
  or a recurrent mixer.
- :mod:`costcalc.anatomy.ffn`: the block's FFN (dense, experts, none), chosen by its fields.
- :mod:`costcalc.anatomy.norms`: the block's norms.
- :mod:`costcalc.anatomy.residual`: several residual streams (hyper-connections, AltUp) and
  LAuReL's branch.
- :mod:`costcalc.anatomy.per_layer`: Gemma 4's per-layer inputs (the block's branch, the model's
  table and projection).
- :mod:`costcalc.anatomy.model`: the tensors outside the blocks (tables, embedding, final norm,
  LM head).
- :mod:`costcalc.anatomy.reuse`: a block reused at several depths (weight sets, adapters).
- :mod:`costcalc.anatomy.recurrent`: what a recurrent token mixer is, and the one that a block
  kind names, loaded on first use from the module of the same name (``mamba2``, ``mamba``,
  ``gated_deltanet``, ``kimi_delta``, ``rg_lru``, ``short_conv``, ``lightning``, ``rwkv``,
  ``mlstm``).
"""
