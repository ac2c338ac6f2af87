"""Table rows for tensor_scatter_mul/div/max/min (ops/scatter_reduce.cc): a loop over the index
rows in order, applying numpy's operator to each addressed slice."""
import numpy as np

from op_cases import OpCase, make_input

NUMERIC = ("int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")


def _int_div(a, b):
    q = np.where(b == 0, 0, np.trunc(a.astype(np.float64) / np.where(b == 0, 1, b)))
    return q.astype(a.dtype)


_OPS = {"tensor_scatter_mul": np.multiply, "tensor_scatter_max": np.maximum,
        "tensor_scatter_min": np.minimum, "tensor_scatter_div": None}


def _ref(name):
    def ref(x, idx, upd):
        out = x.copy()
        k = idx.shape[-1]
        rows = idx.reshape(-1, k)
        upd = upd.reshape((rows.shape[0],) + x.shape[k:])
        for r in range(rows.shape[0]):
            key = tuple(int(v) % x.shape[d] for d, v in enumerate(rows[r]))
            if name == "tensor_scatter_div":
                with np.errstate(all="ignore"):
                    out[key] = out[key] / upd[r] if x.dtype.kind == "f" else _int_div(out[key], upd[r])
            else:
                with np.errstate(all="ignore"):
                    out[key] = _OPS[name](out[key], upd[r]).astype(x.dtype)
        return out
    return ref


def _gen(x_shape, idx_shape, lo, hi, upd_shape, nonzero=False):
    def gen(rng, dtype):
        u = make_input(rng, upd_shape, dtype, "nonzero" if nonzero else "normal")
        return [make_input(rng, x_shape, dtype), rng.integers(lo, hi, size=idx_shape).astype(np.int64), u]
    return gen


CASES = []
for _name in _OPS:
    nz = _name == "tensor_scatter_div"
    CASES += [
        OpCase(_name, _ref(_name), _gen((4, 5), (6, 1), -4, 4, (6, 5), nz), dtypes=NUMERIC),
        OpCase(_name, _ref(_name), _gen((3, 4), (5, 2), 0, 3, (5,), nz), id="elements"),
        OpCase(_name, _ref(_name), _gen((3, 4), (0, 1), 0, 3, (0, 4), nz), id="empty"),
    ]
