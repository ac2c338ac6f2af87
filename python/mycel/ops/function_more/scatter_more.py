"""MindSpore's scatter families over the registry's tensor_scatter_add/mul/div/max/min
(ops/gather.cc, ops/scatter_reduce.cc): scatter_nd_* (N-d index rows), scatter_* (rows along
axis 0), each updating a Parameter input in place and returning it; inplace_index_add, diagonal_scatter, index_put and fill_diagonal."""
import numpy as np

import mycel.ops as _P
from mycel import _mycel
from mycel.common.dtype import int64 as _int64
from mycel.common.tensor import Tensor
from mycel.ops.primitive import constexpr

_ops = _mycel.ops


def _tensor_scatter_sub(input_x, indices, updates):
    return _ops.tensor_scatter_add(input_x, indices, -updates)


def _store(input_x, value):
    """value written into the Parameter input_x, which is returned (MindSpore's in-place
    scatters take Parameters; graph mode cannot tell a Parameter from a Tensor by isinstance)."""
    return _P.assign(input_x, value)


def _row_indices(input_x, indices):
    """Row indices along axis 0 as index rows of depth 1."""
    return _ops.reshape(indices, (-1, 1))


def _row_updates(input_x, updates):
    return _ops.reshape(updates, (-1,) + tuple(input_x.shape[1:]))


def scatter_nd_add(input_x, indices, updates, use_locking=False):
    """input_x[indices] += updates (index rows of depth indices.shape[-1]; duplicates add up)."""
    return _store(input_x, _ops.tensor_scatter_add(input_x, indices, updates))


def scatter_nd_sub(input_x, indices, updates, use_locking=False):
    """input_x[indices] -= updates."""
    return _store(input_x, _ops.tensor_scatter_add(input_x, indices, -updates))


def scatter_nd_mul(input_x, indices, updates, use_locking=False):
    """input_x[indices] *= updates."""
    return _store(input_x, _ops.tensor_scatter_mul(input_x, indices, updates))


def scatter_nd_div(input_x, indices, updates, use_locking=False):
    """input_x[indices] /= updates."""
    return _store(input_x, _ops.tensor_scatter_div(input_x, indices, updates))


def scatter_nd_max(input_x, indices, updates, use_locking=False):
    """input_x[indices] = max(input_x[indices], updates)."""
    return _store(input_x, _ops.tensor_scatter_max(input_x, indices, updates))


def scatter_nd_min(input_x, indices, updates, use_locking=False):
    """input_x[indices] = min(input_x[indices], updates)."""
    return _store(input_x, _ops.tensor_scatter_min(input_x, indices, updates))


def scatter_add_rows(input_x, indices, updates, use_locking=False):
    """input_x[indices[...], :] += updates, written into the Parameter input_x (P.ScatterAdd;
    ops.scatter_add, the registry op, returns a new tensor)."""
    return _store(input_x, _ops.tensor_scatter_add(input_x, _row_indices(input_x, indices),
                                                   _row_updates(input_x, updates)))


def scatter_sub(input_x, indices, updates, use_locking=False):
    """input_x[indices[...], :] -= updates (rows along axis 0)."""
    return _store(input_x, _ops.tensor_scatter_add(input_x, _row_indices(input_x, indices),
                                                   -_row_updates(input_x, updates)))


def scatter_mul(input_x, indices, updates, use_locking=False):
    """input_x[indices[...], :] *= updates."""
    return _store(input_x, _ops.tensor_scatter_mul(input_x, _row_indices(input_x, indices),
                                                   _row_updates(input_x, updates)))


def scatter_div(input_x, indices, updates, use_locking=False):
    """input_x[indices[...], :] /= updates."""
    return _store(input_x, _ops.tensor_scatter_div(input_x, _row_indices(input_x, indices),
                                                   _row_updates(input_x, updates)))


def scatter_max(input_x, indices, updates, use_locking=False):
    """input_x[indices[...], :] = max(input_x[indices[...], :], updates)."""
    return _store(input_x, _ops.tensor_scatter_max(input_x, _row_indices(input_x, indices),
                                                   _row_updates(input_x, updates)))


def scatter_min(input_x, indices, updates, use_locking=False):
    """input_x[indices[...], :] = min(input_x[indices[...], :], updates)."""
    return _store(input_x, _ops.tensor_scatter_min(input_x, _row_indices(input_x, indices),
                                                   _row_updates(input_x, updates)))


def inplace_index_add(var, indices, updates, axis):
    """var's slices `indices` along axis plus updates, written into the Parameter var."""
    from mycel.ops.function_more.array import index_add
    return index_add(var, indices, updates, axis)


@constexpr
def _diagonal_positions(rows, cols, offset):
    """Flat positions of the offset diagonal in a (rows, cols) matrix, as an int64 Tensor."""
    i = np.arange(max(0, -offset), min(rows, cols - offset) if cols - offset > 0 else 0)
    return Tensor((i * cols + i + offset).astype(np.int64))


def _moved_to_end(input, dim1, dim2):
    nd = input.ndim
    d1, d2 = dim1 % nd, dim2 % nd
    if d1 == d2:
        raise ValueError(f"diagonal_scatter: dim1 and dim2 must differ, got {dim1} and {dim2}")
    rest = tuple(d for d in range(nd) if d not in (d1, d2))
    perm = rest + (d1, d2)
    inverse = tuple(perm.index(d) for d in range(nd))
    return perm, inverse


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """input with src written over its diagonal (offset, dim1, dim2) (src has the shape of
    ops.diagonal(input, offset, dim1, dim2): the other dims first, the diagonal last)."""
    if input.ndim < 2:
        raise ValueError(f"diagonal_scatter: input must have rank >= 2, got shape {tuple(input.shape)}")
    perm, inverse = _moved_to_end(input, dim1, dim2)
    moved = _ops.transpose(input, perm)
    lead = tuple(moved.shape[:-2])
    rows, cols = moved.shape[-2], moved.shape[-1]
    pos = _diagonal_positions(rows, cols, offset)
    n = pos.shape[0]
    if tuple(src.shape) != lead + (n,):
        raise ValueError(f"diagonal_scatter: src shape {tuple(src.shape)} must be {lead + (n,)}, "
                         f"the shape of the diagonal")
    flat = _ops.reshape(moved, (-1, rows * cols))
    idx = _ops.broadcast_to(_ops.reshape(pos, (1, n)), (flat.shape[0], n))
    out = _ops.tensor_scatter_elements(flat, idx, _ops.reshape(src, (-1, n)), 1)
    return _ops.transpose(_ops.reshape(out, lead + (rows, cols)), inverse)


def index_put(input, indices, values, accumulate=False):
    """input with values written (or added, accumulate=True) at input[indices[0], indices[1],
    ...]: the index tensors broadcast together; values broadcast to the indexed shape."""
    if not isinstance(indices, (tuple, list)) or not indices:
        raise TypeError("index_put: indices must be a non-empty tuple or list of integer tensors")
    if len(indices) > input.ndim:
        raise ValueError(f"index_put: {len(indices)} index tensors for an input of rank {input.ndim}")
    shape = tuple(np.broadcast_shapes(*[tuple(i.shape) for i in indices]))
    cols = [_ops.cast(_ops.broadcast_to(i, shape), _int64) for i in indices]
    nd_index = _ops.stack(tuple(cols), -1)
    upd = _ops.broadcast_to(values, shape + tuple(input.shape[len(indices):]))
    if upd.dtype != input.dtype:
        upd = _ops.cast(upd, input.dtype)
    if accumulate:
        return _ops.tensor_scatter_add(input, nd_index, upd)
    return _P.tensor_scatter_update(input, nd_index, upd)


@constexpr
def _fill_diagonal_positions(shape, wrap):
    """Flat positions numpy.fill_diagonal writes (all dims equal beyond 2-d; wrap for tall
    matrices)."""
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError(f"fill_diagonal: all dimensions of a tensor of rank > 2 must be equal, got {shape}")
    probe = np.zeros(shape, np.int8)
    np.fill_diagonal(probe, 1, wrap=wrap)
    return Tensor(np.flatnonzero(probe).astype(np.int64))


def fill_diagonal(input, fill_value, wrap=False):
    """A copy of input with its main diagonal set to fill_value (numpy's fill_diagonal)."""
    if input.ndim < 2:
        raise ValueError(f"fill_diagonal: input must have rank >= 2, got shape {tuple(input.shape)}")
    pos = _fill_diagonal_positions(tuple(input.shape), bool(wrap))
    flat = _ops.reshape(input, (-1, 1))
    upd = _ops.fill(input.dtype, (pos.shape[0], 1), fill_value)
    return _ops.reshape(_P.tensor_scatter_update(flat, _ops.expand_dims(pos, -1), upd), tuple(input.shape))


def _fill_(self, value):
    """self filled with value, in place (eager)."""
    self[...] = value
    return self


def _m_scatter_div(self, indices, updates):
    return _ops.tensor_scatter_div(self, indices, updates)


def _m_scatter_mul(self, indices, updates):
    return _ops.tensor_scatter_mul(self, indices, updates)


def _m_scatter_max(self, indices, updates):
    return _ops.tensor_scatter_max(self, indices, updates)


def _m_scatter_min(self, indices, updates):
    return _ops.tensor_scatter_min(self, indices, updates)


def _m_scatter_sub(self, indices, updates):
    return _tensor_scatter_sub(self, indices, updates)


def _m_index_put(self, indices, values, accumulate=False):
    return index_put(self, indices, values, accumulate)


def _m_fill_diagonal(self, fill_value, wrap=False):
    return fill_diagonal(self, fill_value, wrap)


def _m_diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    return diagonal_scatter(self, src, offset, dim1, dim2)


# MindSpore's Tensor methods: x.scatter_div(indices, updates) is tensor_scatter_div (a new tensor).
TENSOR_METHODS = {"scatter_div": _m_scatter_div, "scatter_mul": _m_scatter_mul,
                  "scatter_max": _m_scatter_max, "scatter_min": _m_scatter_min,
                  "scatter_sub": _m_scatter_sub, "index_put": _m_index_put,
                  "fill_diagonal": _m_fill_diagonal, "diagonal_scatter": _m_diagonal_scatter,
                  "fill_": _fill_}

__all__ = ["scatter_nd_add", "scatter_nd_sub", "scatter_nd_mul", "scatter_nd_div", "scatter_nd_max",
           "scatter_nd_min", "scatter_sub", "scatter_mul", "scatter_div", "scatter_max", "scatter_min",
           "inplace_index_add", "diagonal_scatter", "index_put"]
