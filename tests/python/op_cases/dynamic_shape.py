"""Table rows for the ops whose output size depends on the values (docs/dynamic_shape.md):
unique_with_counts, masked_select, nonzero, masked_scatter and masked_scatter_grad, against
numpy (np.unique, boolean indexing, np.argwhere), and reshape_dynamic (sizes
given by tensors)."""
import numpy as np

from op_cases import OpCase, make_input

CORE = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")
EVERY = CORE + ("uint16", "uint32", "uint64", "complex64", "complex128")


def _x(shape, mask_shape=None, source=None, ties=False):
    """x (with repeated values when ties), then a bool mask over x's leading dims, then source."""
    def gen(rng, dtype):
        if np.dtype(dtype).kind == "c":
            x = (rng.normal(size=shape) + 1j * rng.integers(-1, 2, size=shape)).astype(dtype)
        elif ties:
            x = rng.integers(0 if np.dtype(dtype).kind in "ub" else -2, 3, size=shape).astype(dtype)
        else:
            x = make_input(rng, shape, dtype)
        out = [x]
        if mask_shape is not None:
            out.append(rng.random(mask_shape) < 0.5)
        if source is not None:
            out.append(make_input(rng, source, dtype) if np.dtype(dtype).kind != "c"
                       else (rng.normal(size=source) + 1j).astype(dtype))
        return out
    return gen


def _unique_ref(x, consecutive=False):
    flat = x.reshape(-1)
    if consecutive:
        starts = np.r_[True, flat[1:] != flat[:-1]] if flat.size else np.zeros(0, bool)
        run = np.cumsum(starts) - 1
        return flat[starts], run.reshape(x.shape).astype(np.int64), np.bincount(run).astype(np.int64)
    v, inv, cnt = np.unique(flat, return_inverse=True, return_counts=True)
    return v, inv.reshape(x.shape).astype(np.int64), cnt.astype(np.int64)


def _scatter_ref(x, mask, source):
    out = x.copy()
    k = int(mask.sum())
    out[mask] = source.reshape(-1)[:k * (x.size // max(mask.size, 1))].reshape((k,) + x.shape[mask.ndim:])
    return out


def _scatter_grad_ref(dout, mask, source):
    rows = dout[mask].reshape(-1)
    out = np.zeros(source.size, dout.dtype)
    out[:rows.size] = rows
    return out.reshape(source.shape)


def _reshape_to(shape, sizes):
    """x of `shape`, then the int64 sizes tensor to reshape it by."""
    def gen(rng, dtype):
        return [make_input(rng, shape, dtype), np.array(sizes, np.int64)]
    return gen


CASES = [
    OpCase("reshape_dynamic", lambda x, s: x.reshape(tuple(s)), _reshape_to((3, 4), [2, -1, 3]), dtypes=EVERY),
    OpCase("reshape_dynamic", lambda x, s: x.reshape(tuple(s)), _reshape_to((2, 3), [6]), id="flat"),
    OpCase("reshape_dynamic", lambda x, s: x.reshape(tuple(s)), _reshape_to((0, 3), [3, 0]), id="empty"),
    OpCase("unique_with_counts", _unique_ref, _x((3, 5), ties=True), dtypes=CORE),
    OpCase("unique_with_counts", _unique_ref, _x((12,), ties=True), dict(consecutive=True), id="consecutive",
           dtypes=("int32", "float32", "float64")),
    OpCase("unique_with_counts", _unique_ref, _x((0, 3)), id="empty"),
    OpCase("masked_select", lambda x, m: x[m], _x((3, 4), (3, 4)), dtypes=EVERY),
    OpCase("masked_select", lambda x, m: x[m], _x((4, 2, 3), (4,)), id="rows"),
    OpCase("masked_select", lambda x, m: x[m], _x((0, 3), (0,)), id="empty"),
    OpCase("nonzero", np.argwhere, _x((3, 4), ties=True), dtypes=EVERY),
    OpCase("nonzero", np.argwhere, _x((2, 0, 3)), id="empty"),
    OpCase("masked_scatter", _scatter_ref, _x((3, 4), (3, 4), source=(12,)), dtypes=EVERY),
    OpCase("masked_scatter", _scatter_ref, _x((4, 3), (4,), source=(5, 3)), id="rows"),
    OpCase("masked_scatter_grad", _scatter_grad_ref, _x((3, 4), (3, 4), source=(12,)), dtypes=EVERY),
    OpCase("masked_scatter_grad", _scatter_grad_ref, _x((4, 3), (4,), source=(5, 3)), id="rows"),
]
