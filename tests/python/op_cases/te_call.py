"""Table rows for te_call: one TE function per dtype (a broadcasting elementwise chain and a
matmul-like reduction), registered at import; numpy gives the reference."""
import numpy as np

from mycel import te
from mycel._mycel import te as _te
from op_cases import OpCase


def _chain(dtype):
    a = te.placeholder((3, 4), dtype, "a")
    b = te.placeholder((4,), dtype, "b")
    y = te.compute((3, 4), lambda i, j: te.tanh(a[i, j]) * b[j] + te.exp(a[i, j] * 0.5), "y")
    return _te.register_function(te.build([a, b], [y])._built)


def _contract(dtype):
    a = te.placeholder((2, 5), dtype, "a")
    b = te.placeholder((5, 3), dtype, "b")
    k = te.reduce_axis((0, 5), "k")
    y = te.compute((2, 3), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), "y")
    return _te.register_function(te.build([a, b], [y])._built)


CASES = []
for _dt in ("float32", "float64"):
    CASES.append(OpCase("te_call", lambda a, b, kernel: np.tanh(a) * b + np.exp(a * 0.5),
                        [(3, 4), (4,)], {"kernel": _chain(_dt)}, dtypes=(_dt,), id=f"chain_{_dt}"))
    CASES.append(OpCase("te_call", lambda a, b, kernel: a @ b, [(2, 5), (5, 3)],
                        {"kernel": _contract(_dt)}, dtypes=(_dt,), id=f"contract_{_dt}"))
