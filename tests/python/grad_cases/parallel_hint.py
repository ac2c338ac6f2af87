"""Gradient rows of shard_hint (the identity; the semi-auto pass removes it before AD) and of
sliced_weight in a world of one (the whole weight is its only slice)."""
from . import GradCase

CASES = [
    GradCase("shard_hint", [(4, 6)], {"strategy": [2, 3]}),
    GradCase("sliced_weight", [(4, 6)], {"device_matrix": [1], "tensor_map": [-1, -1], "shape": [4, 6]}),
]
