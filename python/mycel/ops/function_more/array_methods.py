"""MindSpore's NumPy-like Tensor methods choose, itemset and resize, and renorm (also
ops.renorm), written over the registry ops so that they differentiate and parse in graph mode.
Shapes and indices are settled at compile time (constexpr); values flow through ops."""
import numpy as np

from mycel import _mycel
from mycel.common.dtype import dtype_to_nptype, int64, pytype_to_dtype
from mycel.common.tensor import Tensor
from mycel.ops.primitive import constexpr

_ops = _mycel.ops


# ---- choose ---------------------------------------------------------------------------------------
@constexpr
def _broadcast_shape(who, *shapes):
    """NumPy's broadcast of `shapes`, or a ValueError naming them."""
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise ValueError(f"{who}: the tensor and the choices cannot be broadcast together, "
                         f"shapes {[tuple(s) for s in shapes]}") from None


@constexpr
def _common_dtype(dtypes):
    """The dtype NumPy promotes `dtypes` to (stacking needs one dtype)."""
    return pytype_to_dtype(np.result_type(*[dtype_to_nptype(d) for d in dtypes]))


def _check_choose(x, n, mode):
    """mode='raise': every index must be in [0, n) (reads the values: eager only)."""
    a = x.asnumpy()
    if a.size and (a.min() < 0 or a.max() >= n):
        raise ValueError(f"Tensor.choose: with mode='raise' every index must be in [0, {n}), "
                         f"got values from {a.min()} to {a.max()}")


@constexpr
def _check_ranks(x_ndim, shape):
    if x_ndim == 0 or not shape:
        raise ValueError(f"Tensor.choose: the tensor and the choices must have rank > 0, "
                         f"got tensor rank {x_ndim} and broadcast shape {shape}")
    return True


def choose(x, choices, mode="clip"):
    """out[i...] = choices[x[i...]][i...] (NumPy's choose): x and every choice broadcast to one
    shape. choices is a sequence of tensors, or a tensor whose first dim is the sequence. mode
    says what an index outside [0, n) does: 'clip' to the range (negative -> 0), 'wrap' modulo
    n, 'raise' an error (eager only). The values keep the choices' dtype."""
    _check_mode(mode)
    if isinstance(choices, Tensor):
        n = choices.shape[0]
        shape = _broadcast_shape("Tensor.choose", x.shape, choices.shape[1:])
        stacked = _ops.broadcast_to(choices, (n,) + shape)
    else:
        items, shapes, dtypes, n = (), (x.shape,), (), 0  # loops, not len(): graph mode parses this
        for c in choices:
            t = c if isinstance(c, Tensor) else Tensor(np.asarray(c))
            items += (t,)
            shapes += (t.shape,)
            dtypes += (t.dtype,)
            n = n + 1
        shape = _broadcast_shape("Tensor.choose", *shapes)
        dtype = _common_dtype(dtypes)
        parts = ()
        for c in items:
            parts += (_ops.broadcast_to(_ops.cast(c, dtype), shape),)
        stacked = _ops.stack(parts, 0)
    _check_ranks(x.ndim, shape)
    idx = _ops.broadcast_to(_ops.cast(x, int64), shape)
    if mode == "raise":
        _check_choose(idx, n, mode)
    elif mode == "wrap":
        idx = _ops.mod(idx, n)  # floored: non-negative
    else:
        idx = _ops.clip_by_value(idx, 0, n - 1)
    return _ops.squeeze(_ops.gather_elements(stacked, _ops.expand_dims(idx, 0), 0), (0,))


@constexpr
def _check_mode(mode):
    if mode not in ("clip", "wrap", "raise"):
        raise ValueError(f"Tensor.choose: argument 'mode' must be 'clip', 'wrap' or 'raise', got {mode!r}")
    return True


# ---- itemset --------------------------------------------------------------------------------------
@constexpr
def _item_position(shape, index):
    """The flat position of `index` (an int counting over the flattened tensor, or one int per
    dim), checked against shape."""
    size = int(np.prod(shape, dtype=np.int64))
    if isinstance(index, (tuple, list)):
        if len(index) != len(shape):
            raise IndexError(f"Tensor.itemset: a tuple index needs one int per dimension "
                             f"({len(shape)}), got {tuple(index)}")
        for i, (k, d) in enumerate(zip(index, shape)):
            if not -d <= int(k) < d:
                raise IndexError(f"Tensor.itemset: index {int(k)} is out of bounds for dimension "
                                 f"{i} with size {d}")
        return int(np.ravel_multi_index(tuple(int(k) % d for k, d in zip(index, shape)), shape))
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"Tensor.itemset: the index must be an int or a tuple of ints, "
                        f"got {type(index).__name__}")
    if not -size <= int(index) < size:
        raise IndexError(f"Tensor.itemset: index {int(index)} is out of bounds for size {size}")
    return int(index) % size


@constexpr
def _position_mask(size, pos):
    """A bool vector of `size` that is True at pos only."""
    m = np.zeros(size, dtype=np.bool_)
    m[pos] = True
    return Tensor(m)


def itemset(x, *args):
    """A copy of x with one element set (x itself is unchanged): itemset(value) for a tensor of
    one element, itemset(index, value) with a flat int index or a tuple of one int per dim. The
    value is cast to x's dtype."""
    if len(args) == 1:
        if x.size != 1:
            raise IndexError(f"Tensor.itemset: with one argument (the value) the tensor must "
                             f"have one element, got shape {tuple(x.shape)}")
        pos, value = 0, args[0]
    elif len(args) == 2:
        pos, value = _item_position(tuple(x.shape), args[0]), args[1]
    else:
        raise ValueError(f"Tensor.itemset: takes 1 or 2 arguments (an index and a value), got {len(args)}")
    flat = _ops.reshape(x, (-1,))
    fill = _ops.fill(x.dtype, (x.size,), value) if not isinstance(value, Tensor) else \
        _ops.broadcast_to(_ops.cast(_ops.reshape(value, ()), x.dtype), (x.size,))
    return _ops.reshape(_ops.select(_position_mask(x.size, pos), fill, flat), x.shape)


# ---- resize ---------------------------------------------------------------------------------------
@constexpr
def _resize_shape(new_shape):
    """resize's arguments (ints, or one tuple of them) as a shape."""
    if len(new_shape) == 1 and isinstance(new_shape[0], (tuple, list)):
        new_shape = tuple(new_shape[0])
    for d in new_shape:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
            raise ValueError(f"Tensor.resize: the new shape must be non-negative ints, got {tuple(new_shape)}")
    return tuple(int(d) for d in new_shape)


def resize(x, *new_shape):
    """A tensor of new_shape holding x's elements in row-major order, cut short or padded with
    zeros (ndarray.resize; x itself is unchanged, as in MindSpore). No shape: x."""
    if not new_shape:
        return x
    shape = _resize_shape(new_shape)
    size = int(np.prod(shape, dtype=np.int64))
    flat = _ops.reshape(x, (-1,))
    if size > x.size:
        flat = _ops.concat((flat, _ops.zeros((size - x.size,), x.dtype)), 0)
    elif size < x.size:
        flat = _ops.slice(flat, (0,), (size,))
    return _ops.reshape(flat, shape)


# ---- renorm ---------------------------------------------------------------------------------------
@constexpr
def _renorm_axes(who, ndim, p, axis, maxnorm):
    """The dims the norm runs over (all but axis), after checking the arguments."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not p > 0:
        raise ValueError(f"{who}: argument 'p' must be a number > 0, got {p!r}")
    if isinstance(maxnorm, bool) or not isinstance(maxnorm, (int, float)) or not maxnorm >= 0:
        raise ValueError(f"{who}: argument 'maxnorm' must be a number >= 0, got {maxnorm!r}")
    if ndim == 0 or not -ndim <= axis < ndim:
        raise ValueError(f"{who}: argument 'axis' must be in [{-ndim}, {ndim}) for a tensor of rank "
                         f"{ndim}, got {axis}")
    return tuple(d for d in range(ndim) if d != axis % ndim)


def renorm(input, p, axis, maxnorm):  # noqa: A002  (MindSpore's argument name)
    """Each sub-tensor input[..., i, ...] along `axis` whose p-norm exceeds maxnorm, scaled
    down to norm maxnorm (x / norm * maxnorm); the others unchanged."""
    dims = _renorm_axes("renorm", input.ndim, p, axis, maxnorm)
    a = _ops.abs(input)
    if p == 1:
        norm = _ops.sum(a, dims, True)
    elif p == 2:
        norm = _ops.sqrt(_ops.sum(a * a, dims, True))
    else:
        norm = _ops.pow(_ops.sum(_ops.pow(a, float(p)), dims, True), 1.0 / p)
    over = _ops.greater(norm, float(maxnorm))
    safe = _ops.select(over, norm, _ops.ones_like(norm))  # no 0/0 where nothing is scaled
    scale = _ops.select(over, float(maxnorm) / safe, _ops.ones_like(norm))
    return input * scale


TENSOR_METHODS = {"choose": choose, "itemset": itemset, "resize": resize, "renorm": renorm}

__all__ = ["renorm"]
