"""shard_hint: the identity outside the semi-auto parallel pass (which reads and removes it)."""
from . import OpCase

ALL = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")


def _same(x, **_):
    return x


CASES = [
    OpCase("shard_hint", _same, [(4, 6)], {"strategy": [2, 3]}, dtypes=ALL),
    OpCase("shard_hint", _same, [()], {"strategy": []}, id="0d"),
]
