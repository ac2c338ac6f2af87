"""Products (mindspore.numpy): dot, matmul, outer, inner, trace."""
from mycel import _mycel
from mycel.numpy.creation import eye
from mycel.numpy.math import _t

_ops = _mycel.ops


def matmul(x1, x2):
    """Matrix product with numpy's rules for 1-d operands (a vector is promoted, then squeezed)."""
    a, b = _t(x1), _t(x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: scalar operands are not allowed, use multiply")
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    out = _ops.matmul(_ops.expand_dims(a, 0) if a_vec else a, _ops.expand_dims(b, 1) if b_vec else b)
    if b_vec:
        out = _ops.squeeze(out, (-1,))
    if a_vec:
        out = _ops.squeeze(out, (-1 if b_vec else -2,))
    return out


def dot(a, b):
    """numpy.dot: products of scalars, inner product of vectors, matmul of matrices, and for N-d
    a sum over a's last axis and b's second-to-last."""
    a, b = _t(a), _t(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if b.ndim <= 2:
        return matmul(a, b)
    # N-d b: move its second-to-last axis first, flatten the rest, multiply, restore the dims.
    bt = _ops.transpose(b, (b.ndim - 2,) + tuple(i for i in range(b.ndim) if i != b.ndim - 2))
    rest = tuple(bt.shape[1:])
    out = matmul(a, _ops.reshape(bt, (bt.shape[0], -1)))
    return _ops.reshape(out, tuple(a.shape[:-1]) + rest)


def outer(a, b):
    """a[i] * b[j] of the flattened inputs."""
    return _ops.reshape(_t(a), (-1, 1)) * _ops.reshape(_t(b), (1, -1))


def inner(a, b):
    """Sum over the last axes of a and b."""
    a, b = _t(a), _t(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return dot(a, _ops.transpose(b, tuple(range(b.ndim - 1))[:-1] + (b.ndim - 1, b.ndim - 2))
               if b.ndim >= 2 else b)


def trace(a, offset=0):
    """Sum of the offset diagonal of a 2-d tensor."""
    a = _t(a)
    if a.ndim != 2:
        raise ValueError(f"trace: expects a 2-d tensor, got {a.ndim}-d")
    n, m = a.shape
    return _ops.sum(a * eye(n, m, offset, a.dtype))
