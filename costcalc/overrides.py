"""Command-line overrides of a model's fields, named once for the options and their errors.

Kept free of imports: the command line reads it at start-up.
"""

OVERRIDE_OPTIONS: dict[str, str] = {
    "vocab_size": "--vocab",
    "context_length": "--context",
    "d_model": "--d",
    "n_layers": "--layers",
    "n_heads": "--heads",
    "n_kv_heads": "--kv-heads",
    "head_dim": "--head-dim",
    "ffn": "--ffn",
    "ffn_mult": "--ffn-mult",
    "ffn_hidden": "--ffn-hidden",
    "norm": "--norm",
    "tie_embeddings": "--tie/--no-tie",
    "position": "--position",
}
"""The command-line option that overrides each :class:`ModelSpec` field; errors name it."""
