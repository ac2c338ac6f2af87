"""Table rows for the summary ops: their output is a placeholder int32 [1] of 0; what they
record is tested against TensorBoard's reader in test_insight_summary.py."""
import numpy as np

from op_cases import OpCase

ALL = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")


def _placeholder(x, **attrs):
    return np.zeros(1, np.int32)


CASES = [
    OpCase("scalar_summary", _placeholder, [()], attrs={"name": "s"}, dtypes=ALL),
    OpCase("scalar_summary", _placeholder, [(1, 1)], attrs={"name": "s"}, id="1x1"),
    OpCase("histogram_summary", _placeholder, [(3, 4)], attrs={"name": "h"}, dtypes=ALL),
    OpCase("histogram_summary", _placeholder, [(0,)], attrs={"name": "h"}, id="empty"),
    OpCase("tensor_summary", _placeholder, [(2, 3)], attrs={"name": "t"}, dtypes=ALL),
    OpCase("image_summary", _placeholder, [(2, 3, 4, 5)], attrs={"name": "i"}, dtypes=ALL),
]
