"""Array construction, reshaping, indexing and scatters of MindSpore 2.x's functional ops."""
import math

import numpy as np

import mycel.ops as _P  # the Python-level ops (masked_fill, assign, ...); this package loads last
from mycel import _mycel
from mycel.common.dtype import (float16, bfloat16, float32, float64, int32, int64, bool_, complex64,
                                complex128)
from mycel.common.parameter import Parameter as _Parameter
from mycel.common.tensor import Tensor
from mycel.ops import tensor_composites as _tc
from mycel.ops.primitive import constexpr
from mycel.ops.function_more._base import _axis, _dims_from, _float_like, _FLOATS, _COMPLEX

_ops = _mycel.ops

# ---- array ---------------------------------------------------------------------------------------
def cat(tensors, axis=0):
    """concat (MindSpore 2.x's name)."""
    return _ops.concat(tensors, axis)


def _atleast(x, n):
    if x.ndim >= n:
        return x
    if n == 2:
        return x.reshape((1,) + tuple(x.shape) if x.ndim == 1 else (1, 1))
    return x.reshape((1, x.shape[0], 1) if x.ndim == 1 else (1,) * (3 - x.ndim) + tuple(x.shape)
                     if x.ndim == 0 else tuple(x.shape) + (1,))


def hstack(tensors):
    """Concatenation along the columns (the first axis for 1-d tensors)."""
    ts = tuple(tensors)
    return _ops.concat(ts, 0 if all(t.ndim == 1 for t in ts) else 1)


def vstack(inputs):
    """Concatenation of the inputs (made at least 2-d) along the rows."""
    return _ops.concat(tuple(_atleast(t, 2) for t in inputs), 0)


def dstack(inputs):
    """Concatenation of the inputs (made at least 3-d) along the third axis."""
    return _ops.concat(tuple(_atleast(t, 3) for t in inputs), 2)


def column_stack(tensors):
    """1-d tensors as columns (higher ones as they are), side by side."""
    return _ops.concat(tuple(t.reshape((-1, 1)) if t.ndim <= 1 else t for t in tensors), 1)


def block_diag(*inputs):
    """A block-diagonal matrix of the inputs (0-d and 1-d ones become 1-row blocks)."""
    blocks = [t.reshape((1, -1)) if t.ndim < 2 else t for t in inputs]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        rows.append(_ops.pad(b, (0, 0, left, width - left - b.shape[1])))
        left += b.shape[1]
    return _ops.concat(tuple(rows), 0)


def channel_shuffle(x, groups):
    """Channels (axis 1) regrouped: (N, g, C/g, ...) transposed to (N, C/g, g, ...)."""
    n, c = x.shape[0], x.shape[1]
    if groups <= 0 or c % groups:
        raise ValueError(f"channel_shuffle: {c} channels do not split into {groups} groups")
    rest = tuple(x.shape[2:])
    y = x.reshape((n, groups, c // groups) + rest)
    y = _ops.transpose(y, (0, 2, 1) + tuple(range(3, 3 + len(rest))))
    return y.reshape((n, c) + rest)


def deepcopy(input_x):
    """A new tensor with input_x's values."""
    return _ops.identity(input_x)


def fliplr(input):
    """input reversed along its second dimension."""
    return _tc.flip(input, (1,))


def flipud(input):
    """input reversed along its first dimension."""
    return _tc.flip(input, (0,))


def reverse(x, axis):
    """x reversed along the given axes (ReverseV2)."""
    return _tc.flip(x, axis)


@constexpr
def _roll_plan(shape, shifts, dims):
    """((axis, shift) ...) with shifts taken modulo the axis length; checked."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(dims)} dims")
    plan = []
    for s, d in zip(shifts, dims):
        d = d % len(shape)
        if shape[d] and s % shape[d]:
            plan.append((d, s % shape[d], shape[d]))
    return tuple(plan)


def roll(input, shifts, dims=None):
    """Elements shifted along dims, wrapping around (the flattened tensor when dims is None)."""
    if dims is None:
        return roll(input.reshape((-1,)), shifts, 0).reshape(input.shape)
    out = input
    for d, s, n in _roll_plan(input.shape, shifts, dims):
        out = _ops.concat((_tc.narrow(out, d, n - s, s), _tc.narrow(out, d, 0, n - s)), d)
    return out


def index_select(input, axis, index):
    """The entries of input at index (1-d) along axis."""
    if index.ndim != 1:
        raise ValueError(f"index_select: index must be 1-d, got shape {tuple(index.shape)}")
    return _ops.gather(input, index, axis)


def index_fill(x, axis, index, value):
    """x with the positions index (1-d) along axis set to value."""
    d = _axis(x, axis)
    hit = _ops.any(_ops.equal(_ops.expand_dims(_ops.arange(x.shape[d], dtype=index.dtype), 1),
                                     _ops.expand_dims(index, 0)), (1,))
    shape = tuple(x.shape[d] if i == d else 1 for i in range(x.ndim))
    return _P.masked_fill(x, _ops.broadcast_to(hit.reshape(shape), tuple(x.shape)), value)


def moveaxis(x, source, destination):
    """x with the axes `source` moved to the positions `destination`."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    src = tuple(_axis(x, s) for s in src)
    dst = tuple(_axis(x, s) for s in dst)
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: {len(src)} source axes for {len(dst)} destinations")
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _ops.transpose(x, tuple(order))


movedim = moveaxis


def meshgrid(*inputs, indexing="xy"):
    """Coordinate grids from 1-d inputs ('xy': the first two axes swapped, as NumPy)."""
    ts = tuple(inputs[0]) if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)) else inputs
    return meshgrid_of(ts, indexing)


def meshgrid_of(ts, indexing):
    """meshgrid of the tuple ts (P.Meshgrid's call: positional, as graph mode needs)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    shape = tuple(t.shape[0] for t in ts)
    if indexing == "xy" and len(ts) >= 2:  # a new tuple: graph mode has no item assignment
        shape = (shape[1], shape[0]) + shape[2:]
    outs = ()  # a tuple built up (graph mode's tuple() needs compile-time items)
    for i, t in enumerate(ts):
        axis = (1 if i == 0 else 0 if i == 1 else i) if indexing == "xy" and len(ts) >= 2 else i
        view = tuple(n if d == axis else 1 for d, n in enumerate(shape))
        outs = outs + (_ops.broadcast_to(t.reshape(view), shape),)
    return outs


def numel(input):
    """The number of elements."""
    return int(np.prod(input.shape)) if input.shape else 1


def repeat_elements(x, rep, axis=0):
    """Each element repeated rep times along axis."""
    d = _axis(x, axis)
    y = _ops.expand_dims(x, d + 1)
    shape = tuple(x.shape[:d + 1]) + (rep,) + tuple(x.shape[d + 1:])
    y = _ops.broadcast_to(y, shape)
    return y.reshape(tuple(x.shape[:d]) + (x.shape[d] * rep,) + tuple(x.shape[d + 1:]))


def repeat_interleave(input, repeats, axis=None):
    """Each element repeated `repeats` (an int) times along axis (the flattened input when None)."""
    if not isinstance(repeats, int) or isinstance(repeats, bool):
        raise TypeError("repeat_interleave: repeats must be an int (per-element repeats give a "
                        "data-dependent shape)")
    if axis is None:
        return repeat_elements(input.reshape((-1,)), repeats, 0)
    return repeat_elements(input, repeats, axis)


def scatter(input, axis, index, src):
    """input with src written at index along axis (tensor_scatter_elements)."""
    return _ops.tensor_scatter_elements(input, index, src, axis)


def scatter_nd(indices, updates, shape):
    """A zero tensor of `shape` with updates added at indices (duplicates add up)."""
    return _ops.tensor_scatter_add(_ops.zeros(tuple(shape), updates.dtype), indices, updates)


def sequence_mask(lengths, maxlen=None):
    """mask[..., j] = j < lengths[...]; maxlen (the mask's length) defaults to max(lengths)."""
    if maxlen is None:
        maxlen = int(_ops.max(lengths).asnumpy())
    return _ops.less(_ops.arange(maxlen, dtype=lengths.dtype), _ops.expand_dims(lengths, -1))


def unstack(input_x, axis=0):
    """The slices along axis, as a tuple."""
    return _tc.unbind(input_x, axis)


def unsorted_segment_sum(input_x, segment_ids, num_segments):
    """out[s] = the sum of input_x's slices whose segment id is s (ids in [0, num_segments))."""
    tail = _dims_from(input_x.shape, segment_ids.ndim)
    out = _ops.zeros((num_segments,) + tail, input_x.dtype)
    return _ops.tensor_scatter_add(out, _ops.expand_dims(segment_ids, -1), input_x)


def _index_added(x, indices, y, axis):
    """x with y's slices added at `indices` (1-d) along axis (a new tensor)."""
    d = _axis(x, axis)
    moved = moveaxis(x, d, 0)
    summed = _ops.tensor_scatter_add(moved, _ops.expand_dims(indices, -1), moveaxis(y, d, 0))
    return moveaxis(summed, 0, d)


def index_add_method(self, *args, **kwargs):
    """Tensor.index_add in both of MindSpore's forms: (indices, y, axis, use_lock=True,
    check_index_bound=True), as ops.index_add (a Parameter is updated), or (dim, index, source, *,
    alpha=1), which returns self with alpha * source added (an int first argument, or `dim`)."""
    if "dim" in kwargs or (args and isinstance(args[0], int) and not isinstance(args[0], bool)):
        names = ("dim", "index", "source")
        given = dict(zip(names, args), **kwargs)
        missing = [n for n in names if n not in given]
        if missing or len(args) > 3 or set(given) - set(names) - {"alpha"}:
            raise TypeError(f"Tensor.index_add(dim, index, source, *, alpha=1): got positional {len(args)} "
                            f"and keywords {sorted(kwargs)}")
        alpha = given.get("alpha", 1)
        source = given["source"] if alpha == 1 else given["source"] * alpha
        return _index_added(self, given["index"], source, given["dim"])
    return index_add(self, *args, **kwargs)


def index_add(x, indices, y, axis, use_lock=True, check_index_bound=True):
    """x with y's slices added at `indices` (1-d) along axis; a Parameter x is updated in place
    (MindSpore's IndexAdd) and returned."""
    out = _index_added(x, indices, y, axis)
    # The sum is returned (ordered after the write), so that gradients reach x and y through
    # tensor_scatter_add, as MindSpore's IndexAdd's bprop gives (dout, dout gathered at indices).
    return _P.depend(out, _P.assign(x, out)) if isinstance(x, _Parameter) else out


def tensor_scatter_sub(input_x, indices, updates):
    """input_x with updates subtracted at indices (duplicates subtract up)."""
    return _ops.tensor_scatter_add(input_x, indices, -updates)


def scatter_update(input_x, indices, updates):
    """input_x[indices[...]] = updates (along the first axis), assigned to the Parameter input_x."""
    idx = indices.reshape((-1, 1))
    upd = updates.reshape((-1,) + tuple(input_x.shape[1:]))
    return _P.assign(input_x, _P.tensor_scatter_update(input_x, idx, upd))


@constexpr
def _slice_bounds(n, start, end, step):
    """(first, stop, positions) of start:end:step over n elements."""
    lo, hi, _ = slice(start, end, step).indices(n)
    return lo, hi, Tensor(np.arange(lo, hi, step, dtype=np.int64))


def slice_scatter(input, src, axis=0, start=None, end=None, step=1):
    """input with src written over input[start:end:step] along axis."""
    d = _axis(input, axis)
    n = input.shape[d]
    lo, hi, positions = _slice_bounds(n, start, end, step)
    if step == 1:
        parts = []
        if lo > 0:
            parts.append(_tc.narrow(input, d, 0, lo))
        parts.append(src)
        if hi < n:
            parts.append(_tc.narrow(input, d, hi, n - hi))
        return _ops.concat(parts, d)
    moved = moveaxis(input, d, 0)
    out = _P.tensor_scatter_update(moved, _ops.expand_dims(positions, -1), moveaxis(src, d, 0))
    return moveaxis(out, 0, d)


def select_scatter(input, src, axis, index):
    """input with src written over the slice `index` of axis (src lacks that axis)."""
    d = _axis(input, axis)
    i = index % input.shape[d]
    return slice_scatter(input, _ops.expand_dims(src, d), d, i, i + 1)


def view_as_real(input):
    """A complex tensor as real pairs: a last dimension of (real, imag)."""
    if input.dtype not in _COMPLEX:
        raise TypeError(f"view_as_real: expected a complex tensor, got {input.dtype}")
    return _ops.stack((_ops.real(input), _ops.imag(input)), -1)


def inplace_update(x, v, indices):
    """x with rows indices (along axis 0) replaced by v (a new tensor, as MindSpore's). An int
    index is one row: v has a leading dim of 1, as for a tuple of indices."""
    idx = indices if isinstance(indices, Tensor) else Tensor(np.atleast_1d(np.asarray(indices, np.int32)))
    return _P.tensor_scatter_update(x, _ops.expand_dims(idx, -1), v)


def inplace_add(x, v, indices):
    """x with v added to rows indices (a new tensor)."""
    idx = indices if isinstance(indices, Tensor) else Tensor(np.atleast_1d(np.asarray(indices, np.int32)))
    return _ops.tensor_scatter_add(x, _ops.expand_dims(idx, -1), v)


def inplace_sub(x, v, indices):
    """x with v subtracted from rows indices (a new tensor)."""
    return inplace_add(x, -v, indices)


def is_nonzero(input):
    """Whether the one element of input is nonzero."""
    if numel(input) != 1:
        raise ValueError(f"is_nonzero: expected one element, got shape {tuple(input.shape)}")
    return bool(input.asnumpy().reshape(()) != 0)


def scalar_cast(input_x, input_y):
    """A Python scalar cast to a mycel dtype's Python type."""
    name = input_y.name
    if name == "bool":
        return bool(input_x)
    return int(input_x) if name.startswith(("int", "uint")) else float(input_x)


def scalar_to_tensor(input_x, dtype=float32):
    """A 0-d Tensor of a Python scalar."""
    return Tensor(np.asarray(input_x, np.dtype(dtype.name)))


def tuple_to_array(input_x):
    """A 1-d Tensor of a tuple of numbers (int64 for ints, float32 for floats)."""
    a = np.asarray(input_x)
    return Tensor(a.astype(np.int64 if a.dtype.kind in "iu" else np.float32))


def eps(x):
    """A tensor like x filled with its dtype's smallest positive (subnormal) value."""
    return _P.full_like(x, float(np.finfo(np.dtype(x.dtype.name)).smallest_subnormal))


def logspace(start, end, steps, base=10, *, dtype=float32):
    """base ** linspace(start, end, steps)."""
    exps = np.linspace(float(start), float(end), int(steps), dtype=np.float64)
    return Tensor((float(base) ** exps).astype(np.dtype(dtype.name)))


def _range(start, end, step):
    """[start, end) by step (MindSpore's ops.range; arange's dtype rules)."""
    return _ops.arange(start, end, step)


def _window(who, window_length, periodic, dtype, make):
    if isinstance(window_length, bool) or not isinstance(window_length, int) or window_length < 0:
        raise ValueError(f"{who}: window_length must be an int >= 0, got {window_length!r}")
    if window_length <= 1:
        return Tensor(np.ones(window_length, np.dtype(dtype.name)))
    n = window_length + 1 if periodic else window_length
    w = make(n)[:window_length]
    return Tensor(np.asarray(w, np.float64).astype(np.dtype(dtype.name)))


def bartlett_window(window_length, periodic=True, *, dtype=float32):
    """The triangular window (periodic: the first window_length of window_length + 1)."""
    return _window("bartlett_window", window_length, periodic, dtype, np.bartlett)


def blackman_window(window_length, periodic=True, *, dtype=float32):
    """The Blackman window."""
    return _window("blackman_window", window_length, periodic, dtype, np.blackman)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=float32):
    """alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype,
                   lambda n: alpha - beta * np.cos(2 * np.pi * np.arange(n) / (n - 1)))


def hann_window(window_length, periodic=True, *, dtype=float32):
    """The Hann window."""
    return _window("hann_window", window_length, periodic, dtype, np.hanning)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=float32):
    """The Kaiser window of shape parameter beta."""
    return _window("kaiser_window", window_length, periodic, dtype, lambda n: np.kaiser(n, beta))


# ---- clipping and parameters ---------------------------------------------------------------------
def clip_by_norm(x, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """x (a tensor or a tuple of them) scaled so that its total norm is at most max_norm."""
    many = isinstance(x, (list, tuple))
    ts = tuple(x) if many else (x,)
    if norm_type == float("inf"):
        total = _ops.max(_ops.stack(tuple(_ops.max(_ops.abs(t)) for t in ts)))
    else:
        total = _ops.pow(sum(_ops.sum(_ops.pow(_ops.abs(t), float(norm_type))) for t in ts), 1.0 / norm_type)
    if error_if_nonfinite and not bool(_ops.isfinite(total).asnumpy()):
        raise RuntimeError(f"clip_by_norm: the total norm {float(total.asnumpy())} is not finite")
    scale = _ops.minimum(max_norm / (total + 1e-6), 1.0)
    out = tuple(t * _ops.cast(scale, t.dtype) for t in ts)
    return out if many else out[0]


def assign_add(variable, value):
    """variable += value (a Parameter), returned."""
    return _P.assign(variable, variable + value)


def assign_sub(variable, value):
    """variable -= value (a Parameter), returned."""
    return _P.assign(variable, variable - value)
