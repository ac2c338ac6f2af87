"""More of MindSpore 2.x's functional ops (mindspore.ops.<name>), written over the registry ops
so that gradients, vmap and graph mode come with them (graph mode parses these functions).
MindSpore's signatures and conventions win where they differ from NumPy's or PyTorch's
(ops.diag is TensorFlow's any-rank diag, ops.smooth_l1_loss reduces with 'none' by default).
The Tensor-method composites (tensor_composites.py) are exported here under their functional
names too. Measured coverage: bench/compat_api_coverage.py."""
import inspect

import mycel.ops as _P
from mycel import _mycel
from mycel.common.dtype import bool_, int32, int64
from mycel.common.tensor import Tensor
from mycel.ops.function_more._base import *  # noqa: F401,F403
from mycel.ops.function_more._base import _COMPLEX, _FLOATS, _axis, _float_like  # noqa: F401
from mycel.ops.function_more.elementwise import *  # noqa: F401,F403
from mycel.ops.function_more.reductions import *  # noqa: F401,F403
from mycel.ops.function_more.linalg import *  # noqa: F401,F403
from mycel.ops.function_more.array import *  # noqa: F401,F403
from mycel.ops.function_more.array import _range, index_add_method
from mycel.ops.function_more.nn import *  # noqa: F401,F403
from mycel.ops.function_more.random import *  # noqa: F401,F403
# issue 14 (compat13): special functions, scatter reductions, reshuffles; each module lists
# its Tensor methods in TENSOR_METHODS.
from mycel.ops import tensor_composites as _tc
from mycel.ops.function_more import special as _special
from mycel.ops.function_more.special import *  # noqa: F401,F403
from mycel.ops.function_more import scatter_more as _scatter
from mycel.ops.function_more.scatter_more import *  # noqa: F401,F403
from mycel.ops.function_more import reshuffle as _reshuffle
from mycel.ops.function_more.reshuffle import *  # noqa: F401,F403
# issue 14 (compat19): choose, itemset, resize, renorm.
from mycel.ops.function_more import array_methods as _array_methods
from mycel.ops.function_more.array_methods import *  # noqa: F401,F403
from mycel.ops.operations.compat_ops5 import choice_with_mask  # noqa: F401,E402
_MODULE_METHODS = [_special.TENSOR_METHODS, _scatter.TENSOR_METHODS, _reshuffle.TENSOR_METHODS,
                   _array_methods.TENSOR_METHODS]
from mycel.ops.function_more.nn2 import *  # noqa: F401,F403
from mycel.ops.function_more.vision import *  # noqa: F401,F403
from mycel.ops.function_more.grid3d import *  # noqa: F401,F403
from mycel.ops.function_more.deform import *  # noqa: F401,F403
from mycel.ops.function_more.spectral import *  # noqa: F401,F403  (compat21: stft)

_ops = _mycel.ops

# ---- Tensor methods ------------------------------------------------------------------------------
# MindSpore's Tensor methods that are these functions with the tensor first.
_TENSOR_METHODS = (
    "cov", "ldexp", "unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod", "cummax", "cummin", "slice_scatter", "select_scatter", "erfc", "erfinv", "xdivy", "fmax", "heaviside", "nanmean", "ptp", "fliplr", "flipud", "reverse", "hardshrink",
    "addbmm", "addcdiv", "addcmul", "addmv", "addr", "baddbmm", "copysign", "count_nonzero", "cross",
    "deg2rad", "diag", "diagflat", "diagonal", "diff", "float_power", "fmod", "frac", "hypot",
    "index_fill", "index_select", "inner", "isneginf", "isposinf", "isreal", "is_complex",
    "is_floating_point", "kron", "logaddexp", "logaddexp2", "logit", "median", "moveaxis", "movedim",
    "msort", "nansum", "outer", "rad2deg", "repeat_interleave", "roll", "rot90", "sgn", "signbit",
    "sinc", "trace", "ger", "logdet", "remainder", "true_divide", "subtract",
    "multiply", "divide", "negative", "positive", "nan_to_num", "aminmax", "logcumsumexp", "histc",
    "unsorted_segment_sum")


def _permute(self, *axis):
    """x.permute(*dims) (or one tuple of them)."""
    dims = tuple(axis[0]) if len(axis) == 1 and isinstance(axis[0], (tuple, list)) else axis
    return _ops.transpose(self, dims)


def _expand(self, *size):
    """x broadcast to size (one tuple, the sizes, or MindSpore's 1-d int tensor; -1 keeps a
    dimension)."""
    if len(size) == 1 and isinstance(size[0], Tensor):
        return expand(self, size[0])
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    return _ops.broadcast_to(self, shape)


def expand(input_x, size):
    """input_x broadcast to `size`, a 1-d int tensor (MindSpore's ops.expand) or a tuple; -1
    keeps a dimension."""
    if isinstance(size, Tensor):
        if size.ndim != 1 or size.dtype not in (int32, int64):
            raise TypeError(f"expand: 'size' must be a 1-d int32 or int64 tensor, got {size.dtype} of shape "
                            f"{tuple(size.shape)}")
        size = tuple(int(v) for v in size.asnumpy())
    return _ops.broadcast_to(input_x, tuple(size))


def _where(self, condition, y):
    """where(condition, self, y)."""
    return _ops.select(condition, self, y)


def _type(self, dtype=None):
    """The dtype's name when dtype is None (MindSpore's 'Float32'), else self cast to dtype."""
    return str(self.dtype) if dtype is None else _ops.cast(self, dtype)


def _sum_to_size(self, *size):
    """self summed down to `size` (the shape it was broadcast from)."""
    target = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    lead = self.ndim - len(target)
    axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(target) if n == 1 and self.shape[lead + k] != 1)
    return _ops.sum(self, axes, True).reshape(target) if axes else self.reshape(target)


_OTHER_METHODS = {
    "bmm": lambda self, mat2: _P.bmm(self, mat2),
    "dot": lambda self, other: _ops.sum(self * other),
    "det": lambda self: _P.det(self),
    "inverse": lambda self: _P.inverse(self),
    "slogdet": lambda self: _P.slogdet(self),
    "svd": lambda self, full_matrices=False, compute_uv=True: _P.svd(self, full_matrices, compute_uv),
    "cholesky": lambda self, upper=False: _P.cholesky(self, upper),
    "expand": _expand,
    "lstsq": lambda self, A: _ops.lstsq(self, A),
    "searchsorted": lambda self, v, *, out_int32=False, right=False, side=None, sorter=None:
        searchsorted(self, v, out_int32=out_int32, right=right, side=side, sorter=sorter),
    "inplace_update": lambda self, v, indices: inplace_update(self, v, indices),
    "approximate_equal": lambda self, other, tolerance=1e-5: approximate_equal(self, other, tolerance),
    "new_ones": lambda self, size, dtype=None: _P.ones(tuple(size), dtype or self.dtype),
    "new_zeros": lambda self, size, dtype=None: _P.zeros(tuple(size), dtype or self.dtype),
    "ndimension": lambda self: self.ndim,
    "masked_select": lambda self, mask: _P.masked_select(self, mask),
    "nonzero": lambda self, as_tuple=False: _P.nonzero(self, as_tuple=as_tuple),
    "reshape_as": lambda self, other: self.reshape(other.shape),
    "view_as": lambda self, other: self.reshape(other.shape),
    "type_as": lambda self, other: _ops.cast(self, other.dtype),
    "to": lambda self, dtype: _ops.cast(self, dtype),
    "type": _type,
    "where": _where,
    "take": lambda self, indices: _ops.gather(self.reshape((-1,)), indices, 0),
    "scatter": lambda self, axis, index, src: scatter(self, axis, index, src),
    "inv": lambda self: _ops.reciprocal(self),
    "is_signed": lambda self: self.dtype not in (bool_,) and not str(self.dtype).lower().startswith("u"),
    "unique_consecutive": lambda self, return_idx=False, return_counts=False, axis=None:
        _P.unique_consecutive(self, return_idx, return_counts, axis),
    "gather_nd": lambda self, indices: _P.gather_nd(self, indices),
    "argwhere": lambda self: _P.argwhere(self),
    "argmax_with_value": lambda self, axis=0, keep_dims=False:
        (_ops.argmax(self, axis, keep_dims), _ops.max(self, (axis,), keep_dims)),
    "argmin_with_value": lambda self, axis=0, keep_dims=False:
        (_ops.argmin(self, axis, keep_dims), _ops.min(self, (axis,), keep_dims)),
    "cholesky_solve": lambda self, input2, upper=False: _P.cholesky_solve(self, input2, upper),
    "lu_solve": lambda self, LU_data, LU_pivots: _P.lu_solve(self, LU_data, LU_pivots),
    "masked_scatter": lambda self, mask, source: _P.masked_scatter(self, mask, source),
    "multinomial": lambda self, num_samples, replacement=True, seed=None:
        _P.multinomial(self, num_samples, replacement, seed),
    "random_categorical": lambda self, num_sample, seed=0, dtype=None:
        _P.random_categorical(self, num_sample, seed) if dtype is None else _P.random_categorical(self, num_sample, seed, dtype),
    "bernoulli": lambda self, p=0.5, seed=None: _ops.cast(
        _ops.less(_ops.uniform(tuple(self.shape), 0.0, 1.0, 0 if seed is None else int(seed)), p), self.dtype),
    "invert": lambda self: _P.invert(self),
    "sum_to_size": _sum_to_size,
    "index_add": index_add_method,  # both of MindSpore's argument orders
    "select": lambda self, condition, y: _ops.select(condition, self, y),
    "unfold": lambda self, kernel_size, dilation=1, padding=0, stride=1: unfold(self, kernel_size, dilation, padding, stride),
}


def _install_tensor_methods():
    for name in _TENSOR_METHODS:
        fn = globals().get(name)
        if fn is not None and not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    if not hasattr(Tensor, "permute"):
        Tensor.permute = _permute
    for name, fn in _OTHER_METHODS.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    for table in _MODULE_METHODS:
        for name, fn in table.items():
            if not hasattr(Tensor, name):
                setattr(Tensor, name, fn)
                _tc.METHODS.setdefault(name, fn)  # graph mode parses x.name(...) as fn(x, ...)


_install_tensor_methods()


# ops.range: defined as _range so that array.py's own loops keep Python's range.
FUNCTIONS = {n: v for n, v in globals().items() if not n.startswith("_") and inspect.isfunction(v)
             and n != "constexpr"}
FUNCTIONS["range"] = _range
