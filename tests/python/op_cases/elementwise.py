"""Table rows for unary and binary elementwise ops."""
import numpy as np

from op_cases import OpCase

INT = ("int8", "uint8", "int16", "int32", "int64")
SIGNED_INT = ("int8", "int16", "int32", "int64")
FLOAT = ("float16", "float32", "float64")

CASES = [
    OpCase("neg", np.negative, [(3, 4)], dtypes=FLOAT + SIGNED_INT),
    OpCase("neg", np.negative, [()], id="0d"),
    OpCase("neg", np.negative, [(0, 3)], id="empty"),
    OpCase("exp", np.exp, [(3, 4)], dtypes=FLOAT),
    OpCase("exp", np.exp, [(300, 301)], id="large"),
    OpCase("exp", np.exp, [(5,)], dtypes=INT + ("bool",), id="int"),
    OpCase("relu", lambda x: np.maximum(x, 0).astype(x.dtype), [(3, 4)], dtypes=FLOAT + SIGNED_INT),
    OpCase("isnan", np.isnan, [(3, 4)], dtypes=FLOAT + INT + ("bool",)),
    OpCase("add", np.add, [(3, 4), (3, 4)], dtypes=FLOAT + INT + ("bool",)),
    OpCase("add", np.add, [(2, 1, 4), (3, 1)], id="broadcast"),
    OpCase("add", np.add, [(), (3,)], id="0d"),
    OpCase("add", np.add, [(0, 3), (1, 3)], id="empty"),
    OpCase("add", np.add, [(257, 1, 130), (1, 129, 1)], id="large_bcast"),
    OpCase("sub", np.subtract, [(3, 4), (4,)], dtypes=FLOAT + INT),
    OpCase("mul", np.multiply, [(3, 4), (3, 1)], dtypes=FLOAT + INT + ("bool",)),
    OpCase("div", np.true_divide, [(3, 4), (3, 4)], dtypes=FLOAT, domain="nonzero"),
    OpCase("div", np.true_divide, [(3, 4), (4,)], dtypes=INT + ("bool",), domain="nonzero", id="int"),
    OpCase("equal", np.equal, [(3, 4), (3, 4)], dtypes=FLOAT + INT + ("bool",), domain="int"),
]
