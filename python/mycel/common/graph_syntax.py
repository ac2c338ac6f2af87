"""Helpers for graph-mode syntax. Item assignment `x[key] = value` is a functional update that the
frontend rebinds x to (Parser::assign_item); the setitem functions are parsed like user code, and
`key.dtype in (bool_,)` and the other dtype tests fold at compile time, so each assignment
specializes to a few registry ops. Eager `Tensor.__setitem__` writes in place through numpy;
these give the same values. f-strings call format_fstring at compile time."""
from mycel import _mycel
from mycel.common.dtype import bool_, float32, float64

_ops = _mycel.ops


def setitem_strided(x, value, begin, end, strides, begin_mask, end_mask, ellipsis_mask,
                    new_axis_mask, shrink_axis_mask):
    """x[ints, slices, None, ...] = value. strided_slice_grad scatters into zeros shaped like x
    (floating only, so values travel as float64, exact for every dtype but int64 above 2**53);
    a scattered mask of ones says which elements were written."""
    part = _ops.strided_slice(x, begin, end, strides, begin_mask, end_mask, ellipsis_mask,
                              new_axis_mask, shrink_axis_mask)
    # numpy casts the value to x's dtype first, then broadcasts it to the selected part.
    v = _ops.broadcast_like(_ops.cast(_ops.cast(value, x.dtype), float64), part)
    full = _ops.strided_slice_grad(v, x, begin, end, strides, begin_mask, end_mask,
                                   ellipsis_mask, new_axis_mask, shrink_axis_mask)
    written = _ops.strided_slice_grad(_ops.ones_like(part, float32), x, begin, end, strides,
                                      begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                                      shrink_axis_mask)
    return _ops.select(_ops.cast(written, bool_), _ops.cast(full, x.dtype), x)


def setitem_tensor(x, key, value):
    """x[mask] = value (a bool tensor over x's leading dims; value a scalar or broadcastable to
    x.shape[mask.ndim:]) or x[indices] = value (an integer tensor of rows along axis 0, or an
    int known only at run time)."""
    v = _ops.cast(value, x.dtype)
    key = _ops.identity(key)  # an int only known at run time (a while loop's counter) -> 0-d tensor
    if key.dtype in (bool_,):
        mask = key
        for _ in range(x.ndim - key.ndim):
            mask = _ops.expand_dims(mask, -1)
        return _ops.select(mask, v, x)
    index = _ops.reshape(key, (-1,))
    rows = _ops.gather(x, index, 0)
    for _ in range(x.ndim - 1):
        index = _ops.expand_dims(index, -1)
    return _ops.tensor_scatter_elements(x, _ops.broadcast_like(index, rows),
                                        _ops.broadcast_like(v, rows), 0, "none")


def format_fstring(template, *values):
    """An f-string of compile-time values, formatted when the graph is specialized: the frontend
    turns f"a {x!r:>4}" into format_fstring("a {!r:>4}", x)."""
    return template.format(*values)


def getitem_index(x, key):
    """x[key] with key an index tensor or an int known only at run time (a while loop's counter):
    identity makes the int a 0-d int64 tensor (and is dropped for a tensor), then gather."""
    return _ops.gather(x, _ops.identity(key), 0)
