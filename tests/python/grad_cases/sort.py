"""Gradient rows for sort and top_k (distinct values: the order is locally constant)."""
from . import GradCase

CASES = [
    GradCase("sort", [(3, 5)]),
    GradCase("sort", [(4, 3)], dict(axis=0, descending=True), id="axis0_descending"),
    GradCase("sort", [(2, 3, 4)], dict(axis=1), id="middle"),
    GradCase("sort", [()], id="0d"),
    GradCase("top_k", [(3, 6)], dict(k=2)),
    GradCase("top_k", [(2, 3, 5)], dict(k=5), id="all"),
    GradCase("top_k", [(4,)], dict(k=1, sorted=False), id="1d"),
]
