"""Helpers for graph-mode syntax. Item assignment `x[key] = value` is a functional update that the
frontend rebinds x to (Parser::assign_item); the setitem functions are parsed like user code, and
`key.dtype in (bool_,)` and the other dtype tests fold at compile time, so each assignment
specializes to a few registry ops. Eager `Tensor.__setitem__` writes in place through numpy;
these give the same values. f-strings call format_fstring at compile time. starred_end,
pop_index, call_method, call_keywords and index_placement are plain Python run at compile time (starred
assignment, list.pop, methods of compile-time values, an index tensor in a tuple key), raising
the errors eager Python raises."""
import builtins

from mycel import _mycel
from mycel.common.dtype import bool_, float32, float64, int32, int64
from mycel.common.tensor import Tensor

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


_RUN_TIME_MARKER = "@@mycel-run-time@@"  # analysis/engine.cc's kRunTimeFieldMarker


class _RunTimeField:
    """A value known only at run time in an f-string (an error message in a branch that the
    compiled code may take, naming a dynamic dim): shown as what the compiler knows of it, e.g.
    <int>, whatever the field's conversion or format spec."""

    def __init__(self, known):
        self._text = f"<{known}>"

    def __format__(self, spec):
        return self._text

    def __repr__(self):
        return self._text

    __str__ = __repr__


def format_fstring(template, *values):
    """An f-string of compile-time values, formatted when the graph is specialized: the frontend
    turns f"a {x!r:>4}" into format_fstring("a {!r:>4}", x)."""
    return template.format(*values)


def format_message(template, *values):
    """format_fstring for an f-string passed to a raised exception: a value known only at run
    time arrives as a marked str (analysis evaluates the call at compile time) and shows as
    <its abstract>, e.g. <int>."""
    values = [_RunTimeField(v[len(_RUN_TIME_MARKER):])
              if isinstance(v, str) and v.startswith(_RUN_TIME_MARKER) else v for v in values]
    return template.format(*values)


def getitem_index(x, key):
    """x[key] with key an index tensor or an int known only at run time (a while loop's counter):
    identity makes the int a 0-d int64 tensor (and is dropped for a tensor), then gather; a bool
    key over x's leading dims selects rows (masked_select, a size known only at run time)."""
    key = _ops.identity(key)
    if key.dtype == bool_:  # x[mask]: the selected rows, counted at run time
        return _ops.masked_select(x, key)
    return _ops.gather(x, key, 0)


def starred_end(n, before, after):
    """`a, *rest, b = seq` with len(seq) == n known at compile time: where the starred part ends
    (evaluated at compile time; raises Python's error when seq is too short)."""
    if n < before + after:
        raise ValueError(f"not enough values to unpack (expected at least {before + after}, got {n})")
    return n - after


def pop_index(n, i):
    """`lst.pop(i)` with len(lst) == n known at compile time: i made non-negative, after Python's
    checks (evaluated at compile time)."""
    if n == 0:
        raise IndexError("pop from empty list")
    if not -n <= i < n:
        raise IndexError("pop index out of range")
    return i + n if i < 0 else i


def call_method(obj, name, keywords, *args):
    """`obj.name(*args)` of a method that is not a Tensor method (str.lower, tuple.index,
    str.format, ...), with obj and the arguments compile-time values (evaluated at compile time);
    the last len(keywords) arguments are the values of those keywords."""
    n = len(args) - len(keywords)
    return getattr(obj, name)(*args[:n], **dict(zip(keywords, args[n:])))


def call_keywords(fn, keywords, *args):
    """`fn(*args)` of a compile-time callable (a Primitive's class, a Python helper) whose keyword
    arguments are known only once analysis specializes the graph (a parameter's value): the last
    len(keywords) arguments are the values of those keywords."""
    n = len(args) - len(keywords)
    return fn(*args[:n], **dict(zip(keywords, args[n:])))


def index_placement(kinds, ndim, index_dtype, index_ndim):
    """x[key] with one index tensor among basic items, as eager `_strided_path` places it (run at
    compile time). kinds has one letter per key item: i int, s slice, n None, e ..., a the tensor.
    Returns the axis of the sliced x to gather along, and the permutation that moves the gathered
    dims first (numpy's rule when an int index is not next to the tensor) or None."""
    if index_dtype == bool_:
        raise NotImplementedError("graph mode: a bool mask inside a tuple key (x[:, mask]) is not "
                                  "supported; select with ops.masked_select or index the axis alone")
    if index_dtype not in (int32, int64):
        raise IndexError(f"tensors used as indices must be integer or bool, got {index_dtype}")
    consumed = sum(k in "isa" for k in kinds)
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor: tensor is {ndim}-dimensional, but "
                         f"{consumed} were indexed")
    axis, out_dim, expanded = 0, 0, []
    for k in kinds:
        if k == "a":
            axis = out_dim
        out_dim += {"n": 1, "s": 1, "a": 1, "i": 0, "e": ndim - consumed}[k]
        expanded.extend("s" * (ndim - consumed) if k == "e" else k)
    pos = [j for j, k in enumerate(expanded) if k in "ia"]
    if pos[-1] - pos[0] + 1 == len(pos):
        return axis, None
    out_ndim = out_dim - 1 + index_ndim
    rest = [d for d in range(out_ndim) if not axis <= d < axis + index_ndim]
    return axis, tuple(range(axis, axis + index_ndim)) + tuple(rest)


def getitem_gather(part, index, axis, perm):
    """The gather of x[..., idx, ...] after its basic items sliced x into `part`."""
    out = _ops.gather(part, index, axis)
    if perm is not None:
        out = _ops.transpose(out, perm)
    return out


def builtin_max(*args):
    """max(a, b, ...) and max(seq) (the frontend's builtin()): Python's max at compile time
    when no item is a tensor; else Python's loop, m = v where v > m (the first maximal item
    wins), the comparison's truth needing one element as eager bool() does. The pick is a
    select, so a number against a tensor comes back as a tensor (of the number's weak dtype)."""
    seq = args[0] if len(args) == 1 else args
    tensors = isinstance(seq, Tensor)
    for v in seq:
        if isinstance(v, Tensor):
            tensors = True
    if not tensors:
        return py_builtin("max", args)
    m = seq[0]
    for v in seq[1:]:
        c = v > m
        if one_element(c.shape):  # (an unused call would not be evaluated)
            m = _ops.select(c, v, m)
    return m


def builtin_min(*args):
    """min(a, b, ...) and min(seq): as builtin_max, with m = v where v < m. (Written out again:
    these helpers are parsed one by one, and a call between them would be a Python call.)"""
    seq = args[0] if len(args) == 1 else args
    tensors = isinstance(seq, Tensor)
    for v in seq:
        if isinstance(v, Tensor):
            tensors = True
    if not tensors:
        return py_builtin("min", args)
    m = seq[0]
    for v in seq[1:]:
        c = v < m
        if one_element(c.shape):  # (an unused call would not be evaluated)
            m = _ops.select(c, v, m)
    return m


def builtin_sum(seq, start=0):
    """sum(seq, start): Python's sum at compile time when no item is a tensor; else
    start + seq[0] + seq[1] + ... in that order, as Python adds them."""
    tensors = isinstance(seq, Tensor) or isinstance(start, Tensor)
    for v in seq:
        if isinstance(v, Tensor):
            tensors = True
    if not tensors:
        return py_builtin("sum", (seq, start))
    total = start
    for v in seq:
        total = total + v
    return total


def py_builtin(name, args):
    """The builtin `name` on compile-time arguments (evaluated at compile time)."""
    return getattr(builtins, name)(*args)


def one_element(shape):
    """True, after the check eager bool(tensor) makes, on a comparison's shape (evaluated at
    compile time)."""
    n = 1
    for d in shape:
        n *= d
    if n != 1:
        raise ValueError(f"item(): only a tensor with one element can be converted to a Python scalar, got shape {shape}")
    return True


def tensor_size(x):
    """x.size: the number of elements (folds to a constant for a static shape)."""
    n = 1
    for d in x.shape:
        n = n * d
    return n


def needs_positions(key):
    """Whether a key known at compile time needs numpy's advanced indexing beyond one integer
    array (a bool mask, a list, several arrays): then getitem_positions selects the elements."""
    import numpy as np
    items = key if isinstance(key, tuple) else (key,)
    arrays = 0
    for k in items:
        if isinstance(k, (bool, np.bool_, list)):
            return True
        if isinstance(k, Tensor):
            k = np.asarray(k.asnumpy()) if k.ndim > 0 else None
        if isinstance(k, np.ndarray):
            if k.dtype == np.bool_:
                return True
            arrays += 1
    return arrays > 1


def key_positions(shape, key):
    """(flat positions as an int64 tensor, result shape) of x[key] for x of this shape, by numpy's
    own indexing (run at compile time)."""
    from mycel.common.tensor_methods import _positions_of
    if any(d is None or d < 0 for d in shape):
        raise IndexError("graph mode: a boolean-mask, list or several-array index needs the indexed "
                         f"tensor's shape at compile time, got {tuple(shape)} (a dynamic dim)")
    pos = _positions_of(shape, key)
    return Tensor(pos.reshape(-1)), pos.shape


def gather_positions(x, flat_positions, shape):
    """x[key] for an advanced key known at compile time (key_positions gave the positions)."""
    return _ops.reshape(_ops.gather(_ops.reshape(x, (-1,)), flat_positions, 0), shape)


def function_stand_in(name):
    """What compile-time Python sees for a graph-mode function value (isinstance(f, tuple) is
    False for it): a function that says it cannot run at compile time."""
    def stand_in(*args, **kwargs):
        raise TypeError(f"graph mode: the function value {name} cannot be called by Python code "
                        "evaluated at compile time")
    stand_in.__qualname__ = stand_in.__name__ = f"graph function {name}"
    return stand_in


def make_record(cls, names, *fields):
    """The record that a record class's __init__ builds in graph mode (analysis makes it the
    tuple of the run-time fields; called here only when every field is a compile-time value)."""
    from mycel.common.records import rebuild
    return rebuild(cls, names, fields)


def record_attr(obj, name, tensor_attr):
    """`obj.name` of a value only known at compile time here (analysis answers records and
    tensors itself): Python's getattr."""
    return getattr(obj, name)


def record_method(obj, name, keywords, tensor_method, *args):
    """`obj.name(*args)` whose name some record class defines: analysis calls the record's method
    or, for a tensor, tensor_method (the Tensor method); here a compile-time receiver."""
    return call_method(obj, name, keywords, *args)


_method_names = (0, frozenset())


def record_method_names():
    """The method names of the record classes (the parser routes those through record_method)."""
    global _method_names
    from mycel.common import records
    if _method_names[0] != len(records._CLASSES):
        _method_names = (len(records._CLASSES), frozenset(records.method_names()))
    return _method_names[1]


def forwarding_without_call(message):
    """What `f(*args, **kwargs)` is in a function parsed without a call's shape (only its
    signature is read from that parse; each call parses it again for its own arguments): reached
    only when the function is used another way, e.g. passed as a value."""
    raise TypeError(message)
