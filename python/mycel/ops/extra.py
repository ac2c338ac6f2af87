"""MindSpore functional ops made of registry ops: dot, tensor_scatter_update (and the in-place
ScatterNdUpdate of a Parameter), and the data-dependent-shape ops unique and masked_select,
which run eagerly only (their output shape comes from the values; graph mode compiles fixed
shapes, so it raises there with what to use instead)."""
import numpy as np

from mycel import _mycel
from mycel.common.index_geometry import along_dim_shapes, scatter_nd_geometry
from mycel.common.tensor import Tensor
from mycel.ops.operations import Primitive
from mycel.ops.effects import assign

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
    out = _ops.tensor_scatter_elements(table, _ops.broadcast_to(rows, flat_updates.shape), flat_updates, axis=0)
    return _ops.reshape(out, input_x.shape)


def scatter_nd_update(input_x, indices, updates):
    """MindSpore's ScatterNdUpdate: writes tensor_scatter_update(...) into the Parameter input_x
    and returns it."""
    return assign(input_x, tensor_scatter_update(input_x, indices, updates))


def unique(input):  # noqa: A002
    """(sorted unique values, indices into them of each element), eagerly (see the module doc)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"unique: input must be a Tensor, got {type(input).__name__}")
    values, inverse = np.unique(input.asnumpy(), return_inverse=True)
    return Tensor(values, dtype=input.dtype), Tensor(inverse.reshape(input.shape).astype(np.int32))


def masked_select(input, mask):  # noqa: A002
    """The elements of input where the (broadcast) bool mask is True, as a 1-d tensor, eagerly
    (see the module doc; in a graph use ops.select or ops.masked_fill)."""
    if not isinstance(input, Tensor) or not isinstance(mask, Tensor):
        raise TypeError("masked_select: input and mask must be Tensors")
    a, m = np.broadcast_arrays(input.asnumpy(), mask.asnumpy())
    if m.dtype != np.bool_:
        raise TypeError(f"masked_select: mask must be bool, got {mask.dtype}")
    return Tensor(np.ascontiguousarray(a[m]), dtype=input.dtype)


class _EagerOnly:
    """A function whose output shape depends on the values: graph mode refuses it clearly."""

    def __init__(self, fn, instead):
        self._fn, self._instead = fn, instead
        self.__name__ = self.__qualname__ = fn.__name__
        self.__doc__ = fn.__doc__

    def __call__(self, *args):
        return self._fn(*args)

    @property
    def _mycel_graph_function(self):
        name, instead = self.__name__, self._instead

        def graph_only_error(*args):
            raise NotImplementedError(f"{name}: its output shape depends on the values, which graph mode "
                                      f"cannot compile; {instead}")
        return graph_only_error


unique = _EagerOnly(unique, "call it outside the compiled function")
masked_select = _EagerOnly(masked_select, "use ops.select or ops.masked_fill to keep the shape")


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

__all__ = ["dot", "take_along_dim", "tensor_scatter_update", "scatter_nd_update", "unique", "masked_select", "lin_space"]
PRIMITIVES = ["TensorScatterUpdate", "ScatterNdUpdate", "Unique", "MaskedSelect", "LinSpace"]
