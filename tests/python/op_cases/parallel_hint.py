"""shard_hint: the identity outside the semi-auto parallel pass (which reads and removes it);
sliced_weight: the whole weight from its slices (here a world of one)."""
from . import OpCase

ALL = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")


def _same(x, **_):
    return x


CASES = [
    OpCase("shard_hint", _same, [(4, 6)], {"strategy": [2, 3]}, dtypes=ALL),
    OpCase("shard_hint", _same, [()], {"strategy": []}, id="0d"),
]

# sliced_weight in a world of one: the only slice of a 1-device layout is the whole weight.
CASES += [
    OpCase("sliced_weight", _same, [(4, 6)], {"device_matrix": [1], "tensor_map": [-1, -1], "shape": [4, 6]},
           dtypes=ALL + ("bfloat16",)),
]
