"""Table rows for the creation ops (zeros, ones, fill, dynamic_fill, zeros_like, ones_like, arange,
eye).

Ops without tensor inputs take their dtype from an attribute, so each row names the dtype once in
`dtypes` (for the completeness check) and once in `attrs` (what the op actually gets). A bfloat16
result reads back as float32 (numpy lacks bfloat16), so bfloat16 rows compare with float32."""
import numpy as np

from op_cases import OpCase

ALL = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")


def _np(dtype):
    return np.dtype("float32" if dtype == "bfloat16" else dtype)


def _zeros(shape, dtype="float32"):
    return np.zeros(shape, _np(dtype))


def _ones(shape, dtype="float32"):
    return np.ones(shape, _np(dtype))


def _fill(shape, value, dtype="float32"):
    return np.full(shape, value, _np(dtype))


def _arange(start, limit=None, delta=1, dtype=None):
    if limit is None:
        start, limit = 0, start
    ints = all(float(v).is_integer() for v in (start, limit, delta))
    out = np.arange(start, limit, delta, dtype=np.float64)
    return out.astype(_np(dtype) if dtype else np.int64 if ints else np.float32)


def _eye(n, m=None, dtype="float32"):
    return np.eye(n, m, dtype=_np(dtype))


def _per_dtype(op, ref, attrs, dtypes=ALL + ("bfloat16",)):
    return [OpCase(op, ref, [], dict(attrs, dtype=dt), dtypes=(dt,), id=dt) for dt in dtypes]


def _dynamic_fill(*refs, shape, ref_dims, value, dtype="float32"):
    out = list(shape)
    for i in range(0, len(ref_dims), 3):
        at, r, d = ref_dims[i:i + 3]
        out[at] = refs[r].shape[d]
    return np.full(out, value, _np(dtype))


CASES = [
    *_per_dtype("zeros", _zeros, dict(shape=(2, 3))),
    OpCase("zeros", _zeros, [], dict(shape=()), id="0d"),
    OpCase("zeros", _zeros, [], dict(shape=(0, 4)), id="empty"),
    OpCase("zeros", _zeros, [], dict(shape=(300, 200)), id="large"),
    *_per_dtype("ones", _ones, dict(shape=(2, 3))),
    OpCase("ones", _ones, [], dict(shape=()), id="0d"),
    OpCase("ones", _ones, [], dict(shape=(3, 0)), id="empty"),
    OpCase("ones", _ones, [], dict(shape=(300, 200)), id="large"),
    *_per_dtype("fill", _fill, dict(shape=(2, 3), value=3)),
    OpCase("fill", _fill, [], dict(shape=(2, 2), value=-2.5, dtype="float32"), id="neg_float"),
    OpCase("fill", _fill, [], dict(shape=(), value=7.0, dtype="float64"), id="0d"),
    OpCase("fill", _fill, [], dict(shape=(0,), value=1.0, dtype="float32"), id="empty"),
    OpCase("fill", _fill, [], dict(shape=(300, 200), value=0.5, dtype="float32"), id="large"),
    OpCase("dynamic_fill", _dynamic_fill, [(3, 5)],
           dict(shape=(2, -1, 4), ref_dims=(1, 0, 1), value=1.5, dtype="float32"), dtypes=ALL),
    OpCase("dynamic_fill", _dynamic_fill, [(3, 5), (7,)],
           dict(shape=(-1, -1), ref_dims=(0, 1, 0, 1, 0, 0), value=-2.0, dtype="int32"), id="two_refs"),
    OpCase("dynamic_fill", _dynamic_fill, [(0, 2)],
           dict(shape=(-1, 3), ref_dims=(0, 0, 0), value=1.0, dtype="float64"), id="empty"),
    OpCase("zeros_like", lambda x: np.zeros_like(x), [(3, 4)], dtypes=ALL),
    OpCase("zeros_like", lambda x, dtype: np.zeros_like(x, dtype), [(3, 4)], dict(dtype="int32"), id="dtype"),
    OpCase("zeros_like", lambda x: np.zeros_like(x), [()], id="0d"),
    OpCase("zeros_like", lambda x: np.zeros_like(x), [(0, 3)], id="empty"),
    OpCase("zeros_like", lambda x: np.zeros_like(x), [(300, 200)], id="large"),
    OpCase("ones_like", lambda x: np.ones_like(x), [(3, 4)], dtypes=ALL),
    OpCase("ones_like", lambda x, dtype: np.ones_like(x, dtype), [(3, 4)], dict(dtype="bool"), id="dtype"),
    OpCase("ones_like", lambda x: np.ones_like(x), [()], id="0d"),
    OpCase("ones_like", lambda x: np.ones_like(x), [(0, 3)], id="empty"),
    OpCase("ones_like", lambda x: np.ones_like(x), [(300, 200)], id="large"),
    *_per_dtype("arange", _arange, dict(start=1, limit=11, delta=3), ALL[1:] + ("bfloat16",)),
    OpCase("arange", _arange, [], dict(start=0, limit=2, delta=1, dtype="bool"), dtypes=("bool",),
           id="bool"),
    OpCase("arange", _arange, [], dict(start=5), dtypes=("int64",), id="n"),
    OpCase("arange", _arange, [], dict(start=0.0, limit=1.0, delta=0.1), id="float"),
    OpCase("arange", _arange, [], dict(start=10, limit=-3, delta=-3), dtypes=("int64",), id="neg_delta"),
    OpCase("arange", _arange, [], dict(start=-1.5, limit=2.25, delta=0.5), id="frac"),
    OpCase("arange", _arange, [], dict(start=3, limit=3), dtypes=("int64",), id="empty"),
    OpCase("arange", _arange, [], dict(start=40000, dtype="float64"), dtypes=("float64",), id="large"),
    *_per_dtype("eye", _eye, dict(n=3, m=4)),
    OpCase("eye", _eye, [], dict(n=4), id="square"),
    OpCase("eye", _eye, [], dict(n=0, m=3), id="empty"),
    OpCase("eye", _eye, [], dict(n=300, m=200), id="large"),
]
