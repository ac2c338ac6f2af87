"""MindSpore functional ops made of registry ops: dot, tensor_scatter_update (and the in-place
ScatterNdUpdate of a Parameter), and the data-dependent-shape ops unique, unique_consecutive,
masked_select, masked_scatter, nonzero and argwhere (their output size comes from the values;
both modes run them, docs/dynamic_shape.md)."""
import numpy as np

from mycel import _mycel
from mycel.common.index_geometry import along_dim_shapes, broadcast_shape, scatter_nd_geometry
from mycel.common.dtype import int32, int64
from mycel.common.tensor import Tensor
from mycel.ops.operations import Primitive
from mycel.ops.effects import assign
from mycel.ops.linalg import _with_example

_ops = _mycel.ops


def dot(input, other):  # noqa: A002 (MindSpore's argument name)
    """Sum over input's last axis and other's second-to-last (numpy.dot; matmul for matrices)."""
    if other.ndim <= 2 or input.ndim == 0:
        if input.ndim == 0 or other.ndim == 0:
            return input * other
        return _ops.matmul(input, other)
    # N-d other: its second-to-last axis first, the rest flattened, then the dims restored.
    k = other.ndim - 2
    perm = (k,) + tuple(i for i in range(other.ndim) if i != k)
    moved = _ops.transpose(other, perm)
    out = _ops.matmul(input, _ops.reshape(moved, (moved.shape[0], -1)))
    return _ops.reshape(out, tuple(input.shape[:-1]) + tuple(moved.shape[1:]))


def gather_elements(input, dim, index):  # noqa: A002
    """input's values at `index` along dim (out[i][j] = input[index[i][j]][j] for dim 0), in
    MindSpore's argument order; the registry op (P.GatherElements) takes (input, index, dim=)."""
    if isinstance(dim, Tensor) and not isinstance(index, Tensor):
        raise TypeError("gather_elements: arguments are (input, dim, index) as in MindSpore; got a "
                        "Tensor for dim and an int for index")
    return _ops.gather_elements(input, index, dim=dim)


gather_d = gather_elements  # MindSpore's other functional name (ops.gather_d(x, dim, index))


def take_along_dim(input, indices, dim=None):  # noqa: A002
    """input's values at `indices` along dim, with input and indices broadcast on the other dims
    (numpy.take_along_axis); dim None takes from the flattened input."""
    if dim is None:
        return _ops.gather_elements(_ops.reshape(input, (-1,)), _ops.reshape(indices, (-1,)), dim=0)
    x_shape, i_shape, axis = along_dim_shapes(input.shape, indices.shape, dim)
    return _ops.gather_elements(_ops.broadcast_to(input, x_shape), _ops.broadcast_to(indices, i_shape), dim=axis)


def tensor_scatter_update(input_x, indices, updates):
    """input_x with the slices input_x[indices[..., :]] replaced by updates (indices (..., K),
    updates (...) + input_x.shape[K:]): a copy, as MindSpore's TensorScatterUpdate."""
    outer, inner, strides = scatter_nd_geometry(input_x.shape, indices.shape[-1])
    idx = _ops.cast(indices, _mycel.dtype.int64)
    rows = _ops.sum(idx * _ops.cast(Tensor(strides), _mycel.dtype.int64), (-1,))
    rows = _ops.reshape(rows, (-1, 1))
    flat_updates = _ops.reshape(updates, (-1, inner))
    table = _ops.reshape(input_x, (outer, inner))
    # broadcast_like: the update count may be known only at run time (graph mode, dynamic shapes)
    out = _ops.tensor_scatter_elements(table, _ops.broadcast_like(rows, flat_updates), flat_updates, axis=0)
    return _ops.reshape(out, input_x.shape)


def scatter_nd_update(input_x, indices, updates):
    """MindSpore's ScatterNdUpdate: writes tensor_scatter_update(...) into the Parameter input_x
    and returns it."""
    return assign(input_x, tensor_scatter_update(input_x, indices, updates))


def unique(input):  # noqa: A002
    """(unique values of the flattened input in order of first appearance, int32 index into them
    of each element, shaped like input): MindSpore's Unique, whose CPU kernel keeps that order
    (np.unique sorts). Runs in both modes (the values' count is known only when the kernel has
    run; graph mode sizes what follows at run time, docs/dynamic_shape.md)."""
    values, inverse, _ = _ops.unique_with_counts(input, sorted=False)
    return values, _ops.cast(inverse, int32)


def unique_consecutive(input, return_idx=False, return_counts=False, axis=None):  # noqa: A002
    """One value per run of equal neighbours, with (if asked) the int64 index of each element's
    run and the run lengths: MindSpore's ops.unique_consecutive. axis None works on the flattened
    input (the index is shaped like input); an axis compares whole slices along it (the index
    has that axis' length)."""
    if axis is None:
        values, inverse, counts = _ops.unique_with_counts(input, consecutive=True)
    else:
        values, inverse, counts = _unique_consecutive_slices(input, axis)
    if return_idx and return_counts:
        return values, inverse, counts
    if return_idx:
        return values, inverse
    if return_counts:
        return values, counts
    return values


def _unique_consecutive_slices(input, axis):  # noqa: A002
    """Runs of equal slices along axis: a slice starts a run when any element differs from the
    previous slice's; the run starts are gathered, the run index is the running count of starts."""
    nd = input.ndim
    if not isinstance(axis, int) or isinstance(axis, bool) or not -nd <= axis < max(nd, 1):
        raise ValueError(f"unique_consecutive: axis must be an int in [{-nd}, {nd}), got {axis!r}")
    if nd == 0:
        raise ValueError("unique_consecutive: a 0-d input has no axis; use axis=None")
    ax = axis % nd
    perm = (ax,) + tuple(i for i in range(nd) if i != ax)
    back = tuple(range(1, ax + 1)) + (0,) + tuple(range(ax + 1, nd))
    moved = _ops.transpose(input, perm)
    n = moved.shape[0]
    rows = _ops.reshape(moved, (n, -1))
    changed = _ops.any(_ops.not_equal(rows[1:], rows[:-1]), (1,))
    starts = _ops.concat((_ops.ones((min(n, 1),), changed.dtype), changed), 0)
    first = _ops.reshape(_ops.nonzero(starts), (-1,))
    values = _ops.transpose(_ops.gather(moved, first, 0), back)
    inverse = _ops.cumsum(_ops.cast(starts, int64), 0) - 1
    counts = _ops.unique_with_counts(inverse, consecutive=True)[2]
    return values, inverse, counts


def masked_select(input, mask):  # noqa: A002
    """The elements of input where the bool mask is True (the two broadcast together), as a 1-d
    tensor in row-major order: MindSpore's MaskedSelect. Differentiable in input."""
    if not isinstance(input, Tensor) or not isinstance(mask, Tensor):
        raise TypeError("masked_select: input and mask must be Tensors")
    shape = broadcast_shape(input.shape, mask.shape, "masked_select")
    x = input if tuple(input.shape) == shape else _ops.broadcast_to(input, shape)
    m = mask if tuple(mask.shape) == shape else _ops.broadcast_to(mask, shape)
    return _ops.masked_select(x, m)


def masked_scatter(input, mask, source):  # noqa: A002
    """input with the positions where the bool mask (broadcast to input's shape) is True filled,
    in row-major order, with source's leading elements: MindSpore's ops.masked_scatter."""
    if not isinstance(input, Tensor) or not isinstance(mask, Tensor) or not isinstance(source, Tensor):
        raise TypeError("masked_scatter: input, mask and source must be Tensors")
    m = mask if tuple(mask.shape) == tuple(input.shape) else _ops.broadcast_to(mask, input.shape)
    return _ops.masked_scatter(input, m, _ops.reshape(source, (-1,)))


def argwhere(input):  # noqa: A002
    """int64 (count, input.ndim) coordinates of input's nonzero elements: MindSpore's argwhere."""
    return _ops.nonzero(input)


def nonzero(input, as_tuple=False):  # noqa: A002
    """input's nonzero coordinates: a (count, ndim) int64 tensor, or with as_tuple one 1-d
    tensor per dim (MindSpore's ops.nonzero)."""
    if not isinstance(input, Tensor):
        raise TypeError("nonzero: input must be a Tensor")
    idx = _ops.nonzero(input)
    if not as_tuple:
        return idx
    return tuple(_ops.reshape(s, (-1,)) for s in _ops.split(idx, 1, max(input.ndim, 1)))


# The op table's runnable examples (their rows call these with full-shape masks, which the
# broadcasting forms take unchanged).
for _fn, _name in ((masked_select, "masked_select"), (masked_scatter, "masked_scatter"), (nonzero, "nonzero")):
    _with_example(_fn, _name)


def lin_space(start, stop, num):
    """num evenly spaced values from start to stop, both included (MindSpore's LinSpace; start
    and stop may be 0-d Tensors)."""
    if not isinstance(num, int) or num < 1:
        raise ValueError(f"LinSpace: num must be a positive int, got {num!r}")
    start = start if isinstance(start, Tensor) else Tensor(np.array(start, np.float32))
    stop = stop if isinstance(stop, Tensor) else Tensor(np.array(stop, np.float32))
    if num == 1:
        return _ops.reshape(start, (1,))
    steps = _ops.cast(_ops.arange(0, num - 1, 1), start.dtype)
    values = start + steps * ((stop - start) / (num - 1))
    return _ops.concat((values, _ops.reshape(stop, (1,))), 0)  # the last value exactly stop


def _primitive(name, fn, doc):
    """A Primitive class calling fn (so graph mode configures it in place and parses fn)."""
    def init(self, **kwargs):  # attributes such as use_locking change nothing here
        Primitive.__init__(self, name)
        for k, v in kwargs.items():
            self.add_prim_attr(k, v)

    def call(self, *args):
        return fn(*args)
    return type(name, (Primitive,), {"__init__": init, "__call__": call, "__doc__": doc,
                                     "__module__": "mycel.ops.operations", "__signature__": None,
                                     "_mycel_graph_function": property(lambda self: fn)})


TensorScatterUpdate = _primitive("TensorScatterUpdate", tensor_scatter_update, tensor_scatter_update.__doc__)
ScatterNdUpdate = _primitive("ScatterNdUpdate", scatter_nd_update, scatter_nd_update.__doc__)
Unique = _primitive("Unique", unique, unique.__doc__)
MaskedSelect = _primitive("MaskedSelect", masked_select, masked_select.__doc__)
LinSpace = _primitive("LinSpace", lin_space, lin_space.__doc__)

__all__ = ["dot", "take_along_dim", "tensor_scatter_update", "scatter_nd_update", "unique",
           "unique_consecutive", "masked_select", "masked_scatter", "argwhere", "nonzero", "lin_space"]
PRIMITIVES = ["TensorScatterUpdate", "ScatterNdUpdate", "Unique", "MaskedSelect", "LinSpace"]
