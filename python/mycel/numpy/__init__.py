"""MindSpore's `mindspore.numpy`: a NumPy-style API whose functions take and return Tensors and
run as Mycel ops (so they work in both modes and are differentiable). A subset: creation,
elementwise math, reductions, shape manipulation, comparison and linear algebra basics. Python
floats become float32 (MindSpore's default float); NumPy arrays keep their dtype."""
from mycel.numpy.creation import (array, asarray, zeros, ones, full, empty, zeros_like, ones_like,  # noqa: F401
                                  full_like, empty_like, arange, linspace, eye, identity, tri)
from mycel.numpy.math import (add, subtract, multiply, divide, true_divide, floor_divide, power,  # noqa: F401
                              remainder, mod, negative, positive, absolute, abs, sign, sqrt, square,
                              exp, expm1, log, log1p, log2, log10, sin, cos, tan, arctan2, tanh,
                              floor, ceil, rint, maximum, minimum, clip, reciprocal, isnan, isinf,
                              isfinite, logical_and, logical_or, logical_not, logical_xor, equal,
                              not_equal, greater, greater_equal, less, less_equal, where, isclose,
                              allclose, cumsum)
from mycel.numpy.reduce import (sum, mean, amax, amin, max, min, prod, std, var, argmax,  # noqa: F401,A004
                                argmin, all, any, average)
from mycel.numpy.shape import (reshape, ravel, transpose, swapaxes, moveaxis, expand_dims,  # noqa: F401
                               squeeze, concatenate, stack, vstack, hstack, split, tile, repeat,
                               broadcast_to, flip, tril, triu, sort, argsort, atleast_1d, size,
                               shape, ndim)
from mycel.numpy.linalg import dot, matmul, outer, inner, trace  # noqa: F401
from mycel.common.dtype import (bool_, int8, uint8, int16, int32, int64, float16, float32,  # noqa: F401
                                float64)

float_ = float32
int_ = int32
pi = 3.141592653589793
e = 2.718281828459045
inf = float("inf")
nan = float("nan")
newaxis = None
