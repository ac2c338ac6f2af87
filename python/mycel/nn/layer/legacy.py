"""MindSpore's older nn Cells that its programs and tests still use (nn/layer/math.py and basic.py
of MindSpore: Range, Norm, OneHot, ReduceLogSumExp, LGamma, DiGamma, IGamma, LBeta, MatMul,
Moments, MatInverse, MatDet, ClipByNorm, MatrixDiag, MatrixDiagPart, MatrixSetDiag) and the
PyTorch-style Linear and DropoutExt. Each is a thin Cell over Mycel's ops, so it runs in both
modes and is differentiable wherever those ops are."""
import numpy as np

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.tensor import Tensor
from mycel.nn.cell import Cell
from mycel.nn.layer.basic import Dense, Dropout
from mycel.ops.primitive import constexpr

_FLOAT16_32 = (mstype.float16, mstype.float32)


@constexpr
def _check_float16_32(cell, arg, dtype):
    if dtype not in _FLOAT16_32:
        raise TypeError(f"{cell}: input '{arg}' must be float16 or float32, got {dtype}")


def _axes(axis):
    return tuple(axis) if isinstance(axis, (tuple, list)) else (int(axis),)


class Linear(Dense):
    """y = x @ W.T + b, W of shape (out_features, in_features): Dense with PyTorch's argument
    names (MindSpore 2.x's nn.Linear)."""

    def __init__(self, in_features, out_features, bias=True, weight_init=None, bias_init=None, dtype=None):
        kw = {} if dtype is None else {"dtype": dtype}
        super().__init__(in_features, out_features, weight_init=weight_init, bias_init=bias_init,
                         has_bias=bias, **kw)
        self.in_features, self.out_features = in_features, out_features


class DropoutExt(Cell):
    """Zeroes each element with probability p in training, scaling the rest by 1 / (1 - p)
    (PyTorch's argument: the drop probability)."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"DropoutExt: p must be in [0, 1], got {p!r}")
        self.p = float(p)
        self.inplace = inplace
        self.inner = Dropout(p=self.p) if 0.0 < self.p < 1.0 else None

    def construct(self, x):
        if not self.training or self.p == 0.0:
            return x
        if self.inner is None:
            return x * 0.0
        return self.inner(x)


class Range(Cell):
    """The constant np.arange(start, limit, delta): float32 if any bound is a float, else int32."""

    def __init__(self, start, limit=None, delta=1):
        super().__init__()
        if delta == 0:
            raise ValueError("Range: 'delta' can not be zero")
        data = np.arange(start, limit, delta)
        self.result_tensor = Tensor(data, dtype=mstype.float32 if data.dtype.kind == "f" else mstype.int32)

    def construct(self):
        return self.result_tensor


class Norm(Cell):
    """The Euclidean norm over `axis` (every axis for ())."""

    def __init__(self, axis=(), keep_dims=False):
        super().__init__()
        if not isinstance(keep_dims, bool):
            raise TypeError(f"Norm: 'keep_dims' must be a bool, got {type(keep_dims).__name__}")
        self.axis = () if axis == () else _axes(axis)
        self.keep_dims = keep_dims

    def construct(self, x):
        return ops.sqrt(ops.reduce_sum(ops.square(x), self.axis, self.keep_dims))


class OneHot(Cell):
    """One-hot of integer indices along a new `axis`, on_value/off_value cast to `dtype`."""

    def __init__(self, axis=-1, depth=1, on_value=1.0, off_value=0.0, dtype=mstype.float32):
        super().__init__()
        self.axis, self.depth, self.dtype = axis, depth, dtype
        self.on_value, self.off_value = on_value, off_value

    def construct(self, indices):
        return ops.one_hot(indices, self.depth, self.on_value, self.off_value, self.axis, self.dtype)


class ReduceLogSumExp(Cell):
    """log(sum(exp(x))) over `axis`, computed stably."""

    def __init__(self, axis, keep_dims=False):
        super().__init__()
        if not isinstance(axis, (int, list, tuple)):
            raise TypeError(f"ReduceLogSumExp: 'axis' must be an int, list or tuple, got {type(axis).__name__}")
        if not isinstance(keep_dims, bool):
            raise TypeError(f"ReduceLogSumExp: 'keep_dims' must be a bool, got {type(keep_dims).__name__}")
        self.axis, self.keep_dims = _axes(axis), keep_dims

    def construct(self, x):
        return ops.logsumexp(x, self.axis, self.keep_dims)


class LGamma(Cell):
    """log|Gamma(x)| elementwise (+inf at the poles 0, -1, -2, ...)."""

    def construct(self, x):
        _check_float16_32("LGamma", "x", x.dtype)
        return ops.lgamma(x)


class DiGamma(Cell):
    """The digamma function d/dx log Gamma(x) elementwise (NaN at the poles)."""

    def construct(self, x):
        _check_float16_32("DiGamma", "x", x.dtype)
        return ops.digamma(x)


class IGamma(Cell):
    """The regularized lower incomplete gamma function P(a, x)."""

    def construct(self, a, x):
        _check_float16_32("IGamma", "a", a.dtype)
        if x.dtype != a.dtype:
            raise TypeError(f"IGamma: input 'x' must have the dtype of 'a' ({a.dtype}), got {x.dtype}")
        return ops.igamma(a, x)


class LBeta(Cell):
    """log|Beta(x, y)| = lgamma(x) + lgamma(y) - lgamma(x + y), broadcast."""

    def construct(self, x, y):
        _check_float16_32("LBeta", "x", x.dtype)
        if y.dtype != x.dtype:
            raise TypeError(f"LBeta: input 'y' must have the dtype of 'x' ({x.dtype}), got {y.dtype}")
        return ops.lgamma(x) + ops.lgamma(y) - ops.lgamma(x + y)


class MatMul(Cell):
    """numpy.matmul with optional transposes of the last two dims of x1 and x2 (batch dims
    broadcast; a 1-D operand is a vector)."""

    def __init__(self, transpose_x1=False, transpose_x2=False):
        super().__init__()
        for name, v in (("transpose_x1", transpose_x1), ("transpose_x2", transpose_x2)):
            if not isinstance(v, bool):
                raise TypeError(f"MatMul: '{name}' must be a bool, got {type(v).__name__}")
        self.transpose_x1, self.transpose_x2 = transpose_x1, transpose_x2

    def construct(self, x1, x2):
        if self.transpose_x1 and x1.ndim >= 2:
            x1 = ops.swapaxes(x1, -1, -2)
        if self.transpose_x2 and x2.ndim >= 2:
            x2 = ops.swapaxes(x2, -1, -2)
        return ops.matmul(x1, x2)


class Moments(Cell):
    """(mean, variance) of x over `axis` (every axis for None); float16 input is computed in
    float32 and returned as float16."""

    def __init__(self, axis=None, keep_dims=None):
        super().__init__()
        self.axis = () if axis is None or axis == () else _axes(axis)
        self.keep_dims = bool(keep_dims)

    def construct(self, x):
        _check_float16_32("Moments", "x", x.dtype)
        xf = ops.cast(x, mstype.float32)
        mean = ops.reduce_mean(xf, self.axis, self.keep_dims)
        centred = xf - ops.stop_gradient(ops.reduce_mean(xf, self.axis, True))
        var = ops.reduce_mean(ops.square(centred), self.axis, self.keep_dims)
        return ops.cast(mean, x.dtype), ops.cast(var, x.dtype)


class MatInverse(Cell):
    """The inverse of symmetric positive-definite matrices, through their Cholesky factor."""

    def construct(self, a):
        _check_float16_32("MatInverse", "a", a.dtype)
        return ops.cholesky_inverse(ops.cholesky(a))


class MatDet(Cell):
    """The determinant of symmetric positive-definite matrices: the squared product of the
    Cholesky factor's diagonal."""

    def construct(self, a):
        _check_float16_32("MatDet", "a", a.dtype)
        d = ops.diagonal(ops.cholesky(a), 0, -2, -1)
        return ops.square(ops.prod(d, -1))


class ClipByNorm(Cell):
    """x * clip_norm / max(||x||_2 over `axis`, clip_norm): x scaled down where its L2 norm
    exceeds clip_norm (every axis for None)."""

    def __init__(self, axis=None):
        super().__init__()
        self.axis = () if axis is None else _axes(axis)

    def construct(self, x, clip_norm):
        norm = ops.sqrt(ops.reduce_sum(ops.square(x), self.axis, True))
        clip = ops.cast(clip_norm, x.dtype)
        return x * clip / ops.maximum(norm, clip)


class MatrixDiag(Cell):
    """(..., n) -> (..., n, n) matrices with x on their diagonal."""

    def construct(self, x):
        return ops.diag_embed(x)


class MatrixDiagPart(Cell):
    """(..., m, n) -> the main diagonals, (..., min(m, n))."""

    def construct(self, x):
        return ops.diagonal(x, 0, -2, -1)


class MatrixSetDiag(Cell):
    """x with its main diagonals (..., min(m, n)) replaced by `diagonal`."""

    def construct(self, x, diagonal):
        return ops.diagonal_scatter(x, diagonal, 0, -2, -1)


__all__ = ["Linear", "DropoutExt", "Range", "Norm", "OneHot", "ReduceLogSumExp", "LGamma", "DiGamma", "IGamma",
           "LBeta", "MatMul", "Moments", "MatInverse", "MatDet", "ClipByNorm", "MatrixDiag", "MatrixDiagPart",
           "MatrixSetDiag"]
