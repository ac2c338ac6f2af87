"""Shape manipulation (mindspore.numpy): reshape, transpose, concatenate, split, flip, ..."""
from mycel import _mycel
from mycel.numpy.math import _t

_ops = _mycel.ops


def reshape(a, newshape):
    """a with a new shape (one dim may be -1)."""
    return _ops.reshape(_t(a), (newshape,) if isinstance(newshape, int) else tuple(newshape))


def ravel(a):
    """a flattened to 1-d."""
    return _ops.reshape(_t(a), (-1,))


def transpose(a, axes=None):
    """a with its axes permuted (reversed when axes is None)."""
    a = _t(a)
    return _ops.transpose(a, tuple(range(a.ndim))[::-1] if axes is None else tuple(axes))


def swapaxes(a, axis1, axis2):
    """a with two axes exchanged."""
    a = _t(a)
    perm = list(range(a.ndim))
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return _ops.transpose(a, tuple(perm))


def moveaxis(a, source, destination):
    """a with axis `source` moved to position `destination`."""
    a = _t(a)
    perm = [i for i in range(a.ndim) if i != source % a.ndim]
    perm.insert(destination % a.ndim, source % a.ndim)
    return _ops.transpose(a, tuple(perm))


def expand_dims(a, axis):
    """a with a new axis of size 1 at `axis`."""
    return _ops.expand_dims(_t(a), axis)


def squeeze(a, axis=None):
    """a without its size-1 axes (or only `axis`)."""
    return _ops.squeeze(_t(a), () if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis)))


def concatenate(arrays, axis=0):
    """The tensors joined along an existing axis (flattened first when axis is None)."""
    arrays = tuple(_t(a) for a in arrays)
    if axis is None:
        arrays, axis = tuple(_ops.reshape(a, (-1,)) for a in arrays), 0
    return _ops.concat(arrays, axis)


def stack(arrays, axis=0):
    """The tensors joined along a new axis."""
    return _ops.stack(tuple(_t(a) for a in arrays), axis)


def vstack(tup):
    """Stacked by rows (1-d inputs become rows)."""
    return _ops.concat(tuple(_ops.reshape(_t(a), (1, -1)) if _t(a).ndim == 1 else _t(a) for a in tup), 0)


def hstack(tup):
    """Stacked by columns (1-d inputs joined end to end)."""
    tup = tuple(_t(a) for a in tup)
    return _ops.concat(tup, 0 if tup[0].ndim == 1 else 1)


def split(ary, indices_or_sections, axis=0):
    """Equal sections (an int) or pieces cut at the given indices, along axis."""
    ary = _t(ary)
    n = ary.shape[axis]
    if isinstance(indices_or_sections, int):
        if n % indices_or_sections:
            raise ValueError(f"split: axis {axis} of size {n} does not divide into {indices_or_sections} equal sections")
        sizes = (n // indices_or_sections,) * indices_or_sections
    else:
        cuts = [0] + [min(max(int(i), 0), n) for i in indices_or_sections] + [n]
        sizes = tuple(max(b - a, 0) for a, b in zip(cuts[:-1], cuts[1:]))
    pieces = _ops.split(ary, axis=axis, size_splits=sizes)
    return list(pieces) if isinstance(pieces, tuple) else [pieces]


def tile(a, reps):
    """a repeated reps times along each axis."""
    a = _t(a)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    while a.ndim < len(reps):
        a = _ops.expand_dims(a, 0)
    reps = (1,) * (a.ndim - len(reps)) + reps
    return _ops.tile(a, reps)


def repeat(a, repeats, axis=None):
    """Each element repeated `repeats` times (an int) along axis (flattened when None)."""
    a = _t(a)
    if axis is None:
        a, axis = _ops.reshape(a, (-1,)), 0
    axis %= a.ndim
    expanded = _ops.expand_dims(a, axis + 1)
    reps = [1] * expanded.ndim
    reps[axis + 1] = repeats
    out_shape = list(a.shape)
    out_shape[axis] *= repeats
    return _ops.reshape(_ops.tile(expanded, tuple(reps)), tuple(out_shape))


def broadcast_to(array, shape):
    """array broadcast to shape."""
    return _ops.broadcast_to(_t(array), tuple(shape))


def flip(m, axis=None):
    """m with the order of elements reversed along axis (all axes when None)."""
    m = _t(m)
    axes = range(m.ndim) if axis is None else ((axis,) if isinstance(axis, int) else axis)
    key = [slice(None)] * m.ndim
    for ax in axes:
        key[ax] = slice(None, None, -1)
    return m[tuple(key)]


def tril(m, k=0):
    """m with the elements above the k-th diagonal zeroed."""
    return _ops.tril(_t(m), k)


def triu(m, k=0):
    """m with the elements below the k-th diagonal zeroed."""
    return _ops.triu(_t(m), k)


def sort(a, axis=-1):
    """Sorted along axis (ascending)."""
    out = _ops.sort(_t(a), axis)
    return out[0] if isinstance(out, tuple) else out


def argsort(a, axis=-1):
    """Indices that sort a along axis."""
    return _ops.argsort(_t(a), axis)


def atleast_1d(*arys):
    """Each input with at least one dimension."""
    out = [_t(a) if _t(a).ndim else _ops.reshape(_t(a), (1,)) for a in arys]
    return out[0] if len(out) == 1 else out


def size(a, axis=None):
    """Number of elements (along axis)."""
    a = _t(a)
    return a.size if axis is None else a.shape[axis]


def shape(a):
    """The shape tuple."""
    return tuple(_t(a).shape)


def ndim(a):
    """The number of dimensions."""
    return _t(a).ndim
