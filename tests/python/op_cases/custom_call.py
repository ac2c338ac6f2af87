"""Table rows for custom_call: a Python host function (ops.Custom func_type="pyfunc") per dtype,
registered at import; numpy evaluated directly gives the reference. The help example registers
its own host function through ops.Custom (the ids here exist only in the test process)."""
import numpy as np

from mycel._mycel import te as _te
from op_cases import OpCase


def _host(a, b):
    return np.abs(a) * b - a


def _register(dtype):
    def infer(metas):
        (sa, da), (sb, db) = metas
        return [(list(np.broadcast_shapes(tuple(sa), tuple(sb))), da)]

    def run(tensors):
        a, b = (t.asnumpy() for t in tensors)
        return _host(a, b).astype(dtype)
    return _te.register_pyfunc(f"abs_mul_sub_{dtype}", infer, run)


_EXAMPLE_SETUP = (">>> abs_mul_sub = ops.Custom(lambda a, b: np.abs(a) * b - a, func_type='pyfunc',",
                  "...     out_shape=lambda sa, sb: np.broadcast_shapes(sa, sb), out_dtype=lambda da, db: da)")

CASES = [OpCase("custom_call", lambda a, b, fn: _host(a, b), [(3, 4), (4,)], {"fn": _register(dt)},
                dtypes=(dt,), id=dt, example_setup=_EXAMPLE_SETUP,
                example_attrs={"fn": "abs_mul_sub.host_fn"})
         for dt in ("float32", "float64", "int32", "int64")]
