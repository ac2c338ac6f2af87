"""Tensor methods built on registry ops: numpy-style indexing and the reshape-like methods.

Indexing follows numpy exactly. A key made of leading integers, then at most one step-1 slice,
then only full slices (`x[0]`, `x[1, 2]`, `x[2:5]`, `x[0, 1:3, ...]`) returns a view sharing the
tensor's storage (recorded as `slice`/`reshape` while a PyNative gradient records); any other
basic key runs `strided_slice`, and one integer array (list, numpy array or Tensor) adds a
`gather` along its axis. Boolean masks and several integer arrays are numpy's own indexing
applied to the element positions, then one `gather` of those positions: numpy decides the
semantics, and the gather carries the gradient.
"""
import math
import operator

import numpy as np

from mycel import _mycel

# The class itself, not mycel.common.tensor (which imports this module to install the methods):
# no import cycle.
Tensor = _mycel.Tensor

_ops = _mycel.ops
_FULL = slice(None)

# Item kinds after parsing a key.
_INT, _SLICE, _NEWAXIS, _ELLIPSIS, _ARRAY, _NUMPY = range(6)


def _as_int(item):
    """The Python int an integer-like scalar index stands for, or None."""
    if isinstance(item, (bool, np.bool_)):
        return None
    if isinstance(item, Tensor):
        if item.ndim == 0 and item.dtype.name in ("int8", "uint8", "int16", "int32", "int64"):
            return int(item.item())
        return None
    try:
        return operator.index(item)
    except TypeError:
        return None


def _classify(item):
    """(kind, normalized item) for one entry of an index key."""
    if item is None:
        return _NEWAXIS, None
    if item is Ellipsis:
        return _ELLIPSIS, None
    if isinstance(item, slice):
        return _SLICE, item
    k = _as_int(item)
    if k is not None:
        return _INT, k
    if isinstance(item, Tensor):
        if item.dtype.name == "bool":
            return _NUMPY, item.asnumpy()
        if item.dtype.name not in ("int32", "int64"):
            raise IndexError(f"tensors used as indices must be integer or bool, got {item.dtype}")
        return _ARRAY, item
    if isinstance(item, (list, tuple, np.ndarray)):
        a = np.asarray(item)
        if a.size == 0 and a.dtype.kind == "f":
            a = a.astype(np.int64)
        if a.dtype.kind == "b":
            return _NUMPY, a
        if a.dtype.kind not in "iu":
            raise IndexError(f"arrays used as indices must be integer or bool, got dtype {a.dtype}")
        return _ARRAY, Tensor(a.astype(np.int64))
    if isinstance(item, (bool, np.bool_)):
        return _NUMPY, item
    raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and integer or boolean "
                     f"arrays are valid indices, got {type(item).__name__}")


def _parse(self, key):
    """The key as a list of (kind, item); raises IndexError for too many indices."""
    if not isinstance(key, tuple):
        key = (key,)
    items = [_classify(k) for k in key]
    if sum(kind == _ELLIPSIS for kind, _ in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for kind, _ in items if kind in (_INT, _SLICE, _ARRAY))
    if consumed > self.ndim:
        raise IndexError(f"too many indices for tensor: tensor is {self.ndim}-dimensional, but "
                         f"{consumed} were indexed")
    return items, consumed


def _view_path(self, items):
    """The result as a view when the key is leading ints, one step-1 slice, then full slices."""
    t, shape, i, n = self, list(self.shape), 0, len(items)
    while i < n and items[i][0] == _INT:
        k, d = items[i][1], shape[0]
        if k < -d or k >= d:
            raise IndexError(f"index {k} is out of bounds for axis {i} with size {d}")
        t = t._narrow(k + d if k < 0 else k, 1)._view(shape[1:])
        shape = shape[1:]
        i += 1
    if i < n and items[i][0] == _SLICE and items[i][1].step in (None, 1):
        start, stop, _ = items[i][1].indices(shape[0])
        t = t._narrow(start, max(0, stop - start))
        i += 1
    for kind, item in items[i:]:
        if not (kind == _ELLIPSIS or (kind == _SLICE and item == _FULL)):
            return None
    return t if t is not self else self._view(shape)


def _strided_path(self, items, consumed):
    """Basic indexing through strided_slice; one integer array becomes a gather on its axis."""
    begin, end, strides = [], [], []
    masks = dict(begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0)
    gather_at, gather_idx, out_dim = None, None, 0
    for j, (kind, item) in enumerate(items):
        bit = 1 << j
        b, e, s = 0, 0, 1
        if kind == _NEWAXIS:
            masks["new_axis_mask"] |= bit
            out_dim += 1
        elif kind == _ELLIPSIS:
            masks["ellipsis_mask"] |= bit
            out_dim += self.ndim - consumed
        elif kind == _INT:
            b, e = item, item + 1
            masks["shrink_axis_mask"] |= bit
        elif kind == _SLICE:
            if item.step is not None:
                s = operator.index(item.step)
                if s == 0:
                    raise ValueError("slice step cannot be zero")
            if item.start is None:
                masks["begin_mask"] |= bit
            else:
                b = operator.index(item.start)
            if item.stop is None:
                masks["end_mask"] |= bit
            else:
                e = operator.index(item.stop)
            out_dim += 1
        else:  # the integer array: take the whole axis now, gather it afterwards
            masks["begin_mask"] |= bit
            masks["end_mask"] |= bit
            gather_at, gather_idx = out_dim, item
            out_dim += 1
        begin.append(b)
        end.append(e)
        strides.append(s)
    out = _ops.strided_slice(self, begin, end, strides, **masks)
    if gather_idx is not None:
        out = _ops.gather(out, gather_idx, gather_at)
        if not _advanced_adjacent(items, self.ndim - consumed):
            # numpy: integers count as advanced indices too; when they are not next to the array,
            # the indexed dimensions go first.
            k = gather_idx.ndim
            rest = [d for d in range(out.ndim) if not gather_at <= d < gather_at + k]
            out = _ops.transpose(out, list(range(gather_at, gather_at + k)) + rest)
    return out


def _advanced_adjacent(items, ellipsis_dims):
    """Whether the integer and array entries of a key are consecutive (numpy's placement rule)."""
    kinds = []
    for kind, _ in items:
        kinds.extend([_SLICE] * ellipsis_dims if kind == _ELLIPSIS else [kind])
    pos = [i for i, kind in enumerate(kinds) if kind in (_INT, _ARRAY)]
    return pos[-1] - pos[0] + 1 == len(pos)


def _numpy_key(key):
    """The key with Tensors replaced by numpy arrays."""
    if isinstance(key, tuple):
        return tuple(_numpy_key(k) for k in key)
    return key.asnumpy() if isinstance(key, Tensor) else key


def _positions_of(shape, key):
    """numpy's x[key] applied to the flat element positions of an x of this shape: which element
    each output element is (int64, the shape of x[key]). Also graph mode's, at compile time."""
    return np.arange(math.prod(shape), dtype=np.int64).reshape(shape)[_numpy_key(key)]


def _positions(self, key):
    return _positions_of(self.shape, key)


def _advanced_path(self, key):
    """Boolean masks and several integer arrays: one gather of the selected flat positions."""
    pos = _positions(self, key)
    flat = _ops.reshape(self, (self.size,))
    return _ops.reshape(_ops.gather(flat, Tensor(pos.reshape(-1)), 0), pos.shape)


def _getitem(self, key):
    items, consumed = _parse(self, key)
    kinds = [kind for kind, _ in items]
    if _NUMPY in kinds or kinds.count(_ARRAY) > 1:
        return _advanced_path(self, key)
    if _ARRAY not in kinds:
        view = _view_path(self, items)
        if view is not None:
            return view
    return _strided_path(self, items, consumed)


def _setitem_recorded(self, key, value):
    """x[key] = value while a PyNative gradient records: the update as ops (the new values
    gathered to the positions they land on, numpy's last write winning, then a select between old
    and new), written into x and recorded as x's new value, so gradients reach x and value."""
    pos = _positions(self, key).reshape(-1)
    written, first_from_end = np.unique(pos[::-1], return_index=True)
    source = pos.size - 1 - first_from_end  # which item of the broadcast value lands on each
    v = value if isinstance(value, Tensor) else Tensor(np.asarray(value), dtype=self.dtype)
    if v.dtype != self.dtype:
        v = _ops.cast(v, self.dtype)
    n = self.size
    v = _ops.reshape(_ops.broadcast_to(v, _positions(self, key).shape), (pos.size,))
    new = _ops.tensor_scatter_add(_ops.zeros((n,), self.dtype), Tensor(written.reshape(-1, 1)),
                                  _ops.gather(v, Tensor(source.astype(np.int64)), 0))
    keep = np.ones(n, dtype=bool)
    keep[written] = False
    new = _ops.select(Tensor(keep), _ops.reshape(self, (n,)), new)
    _mycel.pynative.assign_recorded(self, _ops.reshape(new, self.shape))


def _setitem(self, key, value):
    """In-place assignment through numpy (asnumpy() shares memory except for bfloat16)."""
    if _mycel.pynative.recording():
        return _setitem_recorded(self, key, value)
    if isinstance(value, Tensor):
        value = value.asnumpy()
    key = _numpy_key(key)
    if self.dtype.name == "bfloat16":
        a = self.asnumpy()
        a[key] = value
        self._assign(Tensor(a, dtype=self.dtype))
    else:
        self.asnumpy()[key] = value


def _shape_args(args):
    """reshape(2, 3) and reshape((2, 3)) both mean the shape (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _flatten(self, order="C", *, start_dim=0, end_dim=-1):
    """Flattens dimensions start_dim..end_dim (all by default) into one."""
    if order != "C":
        raise ValueError(f"flatten: only order='C' is supported, got {order!r}")
    if self.ndim == 0:
        return _ops.reshape(self, (1,))
    nd = self.ndim
    s, e = start_dim + nd if start_dim < 0 else start_dim, end_dim + nd if end_dim < 0 else end_dim
    if not 0 <= s <= e < nd:
        raise ValueError(f"flatten: invalid start_dim {start_dim} / end_dim {end_dim} for rank {nd}")
    shape = self.shape
    return _ops.reshape(self, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


def _squeeze(self, axis=None):
    if axis is None:
        axis = ()
    return _ops.squeeze(self, axis)


def _install():
    t = Tensor
    t.__getitem__ = _getitem
    t.__setitem__ = _setitem
    t.reshape = lambda self, *shape: _ops.reshape(self, _shape_args(shape))
    t.view = lambda self, *shape: _ops.reshape(self, _shape_args(shape))
    t.flatten = _flatten
    t.transpose = lambda self, *perm: _ops.transpose(self, _shape_args(perm))
    t.T = property(lambda self: _ops.transpose(self, ()))
    t.expand_dims = lambda self, axis: _ops.expand_dims(self, axis)
    t.squeeze = _squeeze
    t.broadcast_to = lambda self, shape: _ops.broadcast_to(self, shape)
    t.tile = lambda self, *multiples: _ops.tile(self, _shape_args(multiples))
    t.copy = lambda self: self.clone()


_install()
