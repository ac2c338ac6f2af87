"""mindspore.mint: MindSpore's PyTorch-style functional API (MindSpore 2.3+). The same
operators as mycel.ops with PyTorch's names and arguments: `input`/`other`, `dim`/`keepdim`,
`max(x, dim)` returning (values, indices). Each function maps onto the registry ops, so gradients
and graph mode come with them. mint.nn, mint.nn.functional and mint.optim are submodules."""
import collections

from mycel import ops as _ops
from mycel.common.dtype import float32 as _float32
from mycel.ops import function_more as _more

_ValuesIndices = collections.namedtuple("values_indices", ["values", "indices"])


def _dims(dim):
    return () if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))


def _cast(x, dtype):
    return x if dtype is None else _ops.cast(x, dtype)


# ---- arithmetic and elementwise -----------------------------------------------------------------
def add(input, other, *, alpha=1):
    """input + alpha * other."""
    return _ops.add(input, other if alpha == 1 else other * alpha)


def sub(input, other, *, alpha=1):
    """input - alpha * other."""
    return _more.subtract(input, other, alpha=alpha)


def mul(input, other):
    """input * other."""
    return _ops.mul(input, other)


def div(input, other, *, rounding_mode=None):
    """input / other, rounded 'floor' or 'trunc' when asked."""
    return _more.divide(input, other, rounding_mode=rounding_mode)


def clamp(input, min=None, max=None):  # noqa: A002 (PyTorch's names)
    """input limited to [min, max] (either may be None)."""
    return _ops.clamp(input, min, max)


abs, atan2, cos, sin, tanh, exp, log, sqrt, rsqrt = (_ops.abs, _ops.atan2, _ops.cos, _ops.sin, _ops.tanh,
                                                     _ops.exp, _ops.log, _ops.sqrt, _ops.rsqrt)
erf, reciprocal, sigmoid, square, neg, pow = _ops.erf, _ops.reciprocal, _ops.sigmoid, _ops.square, _ops.neg, _ops.pow
negative, maximum, minimum, isfinite, isclose = _more.negative, _ops.maximum, _ops.minimum, _ops.isfinite, _more.isclose
erfinv = _more.erfinv
logical_and, logical_or, logical_not = _ops.logical_and, _ops.logical_or, _ops.logical_not
eq, ne, gt, ge, lt, le = _ops.equal, _ops.not_equal, _ops.greater, _ops.greater_equal, _ops.less, _ops.less_equal
greater, greater_equal, less, less_equal = gt, ge, lt, le
matmul, bmm, where, searchsorted = _ops.matmul, _ops.bmm, _ops.where, _more.searchsorted


# ---- reductions -------------------------------------------------------------------------------
def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001
    """The sum over dim (all of input when None)."""
    return _ops.sum(_cast(input, dtype), _dims(dim), keepdim)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean over dim (all of input when None)."""
    return _ops.mean(_cast(input, dtype), _dims(dim), keepdim)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """The product over dim (all of input when None)."""
    return _ops.prod(_cast(input, dtype), _dims(dim), keepdim)


def all(input, dim=None, keepdim=False):  # noqa: A001
    """Whether all elements along dim are true."""
    return _ops.all(input, _dims(dim), keepdim)


def any(input, dim=None, keepdim=False):  # noqa: A001
    """Whether any element along dim is true."""
    return _ops.any(input, _dims(dim), keepdim)


def _extreme(fn, arg, input, dim, keepdim):
    if dim is None:
        return fn(input)
    return _ValuesIndices(fn(input, (dim,), keepdim), arg(input, dim, keepdim))


def max(input, dim=None, keepdim=False):  # noqa: A001
    """The maximum of input, or (values, indices) along dim."""
    return _extreme(_ops.max, _ops.argmax, input, dim, keepdim)


def min(input, dim=None, keepdim=False):  # noqa: A001
    """The minimum of input, or (values, indices) along dim."""
    return _extreme(_ops.min, _ops.argmin, input, dim, keepdim)


def argmax(input, dim=None, keepdim=False):
    """The index of the maximum (of the flattened input when dim is None)."""
    if dim is None:
        return _ops.argmax(input.reshape((-1,)), 0, False)
    return _ops.argmax(input, dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    """The index of the minimum (of the flattened input when dim is None)."""
    if dim is None:
        return _ops.argmin(input.reshape((-1,)), 0, False)
    return _ops.argmin(input, dim, keepdim)


def cumsum(input, dim, dtype=None):
    """The running sum along dim."""
    return _ops.cumsum(input, dim, dtype)


def sort(input, *, dim=-1, descending=False, stable=False):
    """(values, indices) sorted along dim (the sort is stable)."""
    del stable  # the registry sort is stable
    values, indices = _ops.sort(input, dim, descending)
    return _ValuesIndices(values, indices)


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    """(values, indices) of the k largest (or smallest) along dim."""
    d = dim % input.ndim
    last = input.ndim - 1
    x = input if d == last else _more.moveaxis(input, d, -1)
    if not largest:
        x = -x
    values, indices = _ops.topk(x, k, sorted)
    if not largest:
        values = -values
    if d != last:
        values, indices = _more.moveaxis(values, -1, d), _more.moveaxis(indices, -1, d)
    return _ValuesIndices(values, indices)


# ---- creation and shape -----------------------------------------------------------------------
def arange(start=0, end=None, step=1, *, dtype=None):
    """[start, end) by step (one argument: [0, start))."""
    if end is None:
        start, end = 0, start
    return _ops.arange(start, end, step, dtype=dtype)


def _size(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)


def zeros(*size, dtype=None):
    """A tensor of zeros (float32 by default)."""
    return _ops.zeros(_size(size), dtype or _float32)


def ones(*size, dtype=None):
    """A tensor of ones (float32 by default)."""
    return _ops.ones(_size(size), dtype or _float32)


def zeros_like(input, *, dtype=None):
    """Zeros shaped like input."""
    return _cast(_ops.zeros_like(input), dtype)


def ones_like(input, *, dtype=None):
    """Ones shaped like input."""
    return _cast(_ops.ones_like(input), dtype)


def cat(tensors, dim=0):
    """Concatenation along dim."""
    return _ops.concat(tensors, dim)


def stack(tensors, dim=0):
    """Stacking along a new dim."""
    return _ops.stack(tensors, dim)


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of split_size (the last may be smaller) or of the given sizes along dim."""
    n = tensor.shape[dim]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        sizes = [size] * (n // size) + ([n % size] if n % size else [])
    else:
        sizes = list(split_size_or_sections)
    out, start = [], 0
    for s in sizes:
        out.append(_more.narrow(tensor, dim, start, s))
        start += s
    return tuple(out)


def flatten(input, start_dim=0, end_dim=-1):
    """Dimensions start_dim..end_dim merged into one."""
    nd = input.ndim
    if nd == 0:
        return input.reshape((1,))
    s, e = start_dim % nd, end_dim % nd
    shape = tuple(input.shape)
    merged = 1
    for d in shape[s:e + 1]:
        merged *= d
    return input.reshape(shape[:s] + (merged,) + shape[e + 1:])


def permute(input, dims):
    """input with its dimensions reordered."""
    return _ops.transpose(input, tuple(dims))


def broadcast_to(input, size):
    """input broadcast to size (-1 keeps a dimension)."""
    return _ops.broadcast_to(input, tuple(size))


def tile(input, dims):
    """input repeated dims times per dimension (leading 1s added as needed)."""
    dims = tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return _ops.tile(input, dims)


def flip(input, dims):
    """input reversed along dims."""
    return _more.flip(input, dims)


def gather(input, dim, index):
    """out[i][j] = input[index[i][j]][j] along dim (PyTorch's gather)."""
    d = dim % input.ndim
    sizes = tuple(input.shape[k] if k == d else index.shape[k] for k in range(input.ndim))
    if sizes != tuple(input.shape):  # PyTorch lets index be smaller off dim: read that corner
        input = _ops.slice(input, (0,) * input.ndim, sizes)
    return _ops.gather_elements(input, d, index)


def index_select(input, dim, index):
    """The entries at index (1-d) along dim."""
    return _more.index_select(input, dim, index)


def scatter_add(input, dim, index, src):
    """input with src added at index along dim."""
    return _ops.tensor_scatter_elements(input, index, src, dim, "add")


def masked_select(input, mask):
    """The elements where mask is true, as a 1-d tensor."""
    return _ops.masked_select(input, mask)


def nonzero(input, *, as_tuple=False):
    """The indices of the nonzero elements."""
    return _ops.nonzero(input, as_tuple=as_tuple)


def repeat_interleave(input, repeats, dim=None):
    """Each element repeated `repeats` (an int) times along dim."""
    return _more.repeat_interleave(input, repeats, dim)


def tril(input, diagonal=0):
    """The lower triangle."""
    return _ops.tril(input, diagonal)


def triu(input, diagonal=0):
    """The upper triangle."""
    return _ops.triu(input, diagonal)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The sorted unique elements (of the flattened input), with the inverse indices and the
    counts when asked."""
    if dim is not None:
        raise NotImplementedError("mint.unique: dim is not supported; unique flattens the input")
    values, inverse, counts = _ops.unique_with_counts(input.reshape((-1,)))
    res = [values]
    if return_inverse:
        res.append(inverse.reshape(input.shape))
    if return_counts:
        res.append(counts)
    return res[0] if len(res) == 1 else tuple(res)


def bernoulli(input, *, generator=None):
    """0/1 draws with probabilities input (from the default generator)."""
    if generator is not None:
        raise NotImplementedError("mint.bernoulli: draws come from the default generator; pass generator=None")
    u = _ops.uniform(tuple(input.shape), 0.0, 1.0, dtype=_float32)
    return _ops.cast(_ops.less(u, _ops.cast(input, _float32)), input.dtype)


def normal(mean=0.0, std=1.0, size=None, *, generator=None):
    """Draws from N(mean, std) of shape size (or the broadcast shape of mean and std tensors)."""
    if generator is not None:
        raise NotImplementedError("mint.normal: draws come from the default generator; pass generator=None")
    if size is not None:
        return _ops.normal(tuple(size), float(mean), float(std))
    m = mean if hasattr(mean, "shape") else None
    s = std if hasattr(std, "shape") else None
    shape = tuple((m if m is not None else s).shape)
    z = _ops.normal(shape, 0.0, 1.0)
    return z * std + mean


from mycel.mint import nn, optim  # noqa: E402,F401
from mycel.mint.nn import functional  # noqa: E402,F401

__all__ = [n for n in dir() if not n.startswith("_") and n not in ("collections", "nn", "optim", "functional")]
