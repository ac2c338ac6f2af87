"""Gradient row of shard_hint: the identity (the semi-auto pass removes it before AD)."""
from . import GradCase

CASES = [
    GradCase("shard_hint", [(4, 6)], {"strategy": [2, 3]}),
]
