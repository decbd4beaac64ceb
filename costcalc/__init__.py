"""costcalc: exact parameter counts, MACs, FLOPs and bytes of a transformer from its config."""

__version__ = "0.1.0"
