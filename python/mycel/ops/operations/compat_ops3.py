"""MindSpore's primitive classes for issue 14's ops that the registry does not generate (their
calling convention differs from the registry op's, or they are compositions): Rint, the scatter
reductions on Parameters, the reshuffles and the small math primitives."""
import numpy as _np

from mycel import _mycel
from mycel.common import dtype as _dt
from mycel.common.tensor import Tensor as _Tensor
from mycel.ops.function_more import random as _random
from mycel.ops.function_more import reductions as _reductions
from mycel.ops.function_more import reshuffle as _reshuffle
from mycel.ops.function_more import scatter_more as _scatter_more
from mycel.ops.operations.compat_ops import _Composite
from mycel.ops.primitive import constexpr

_ops = _mycel.ops


class Rint(_Composite):
    """x rounded to the nearest integer, ties to even (numpy's rint)."""

    def _call(self, x):
        return _ops.round(x)


COMPOSITES = ["Rint"]


class _Locking(_Composite):
    """A scatter primitive with MindSpore's use_locking attribute, called (input_x, indices,
    updates): `_fn` names the function of ops/function_more/scatter_more.py it runs."""
    _fn = None

    def __init__(self, use_locking=False):
        if not isinstance(use_locking, bool):
            raise TypeError(f"{type(self).__name__}: use_locking must be a bool, got {use_locking!r}")
        super().__init__(use_locking=use_locking)

    def _call(self, input_x, indices, updates):
        return self._fn(input_x, indices, updates)


def _scatter_primitives():
    table = {"ScatterAdd": "scatter_add_rows", "ScatterSub": "scatter_sub", "ScatterMul": "scatter_mul", "ScatterDiv": "scatter_div",
             "ScatterMax": "scatter_max", "ScatterMin": "scatter_min",
             "ScatterNdAdd": "scatter_nd_add", "ScatterNdSub": "scatter_nd_sub",
             "ScatterNdMul": "scatter_nd_mul", "ScatterNdDiv": "scatter_nd_div",
             "ScatterNdMax": "scatter_nd_max", "ScatterNdMin": "scatter_nd_min"}
    return {n: type(n, (_Locking,), {"_fn": staticmethod(getattr(_scatter_more, f)), "__doc__": f"ops.{f} as a primitive (a Parameter "
                                     "input_x is updated in place)."}) for n, f in table.items()}


globals().update(_scatter_primitives())


class ScatterNonAliasingAdd(_Composite):
    """input_x[indices] += updates (N-d index rows), written into the Parameter input_x."""

    def _call(self, input_x, indices, updates):
        from mycel.ops.function_more import scatter_more as _s
        return _s.scatter_nd_add(input_x, indices, updates)


class _Segment(_Composite):
    """ops.<_fn>(x, segment_ids, num_segments) as a primitive."""
    _fn = None

    def _call(self, x, segment_ids, num_segments):
        return self._fn(x, segment_ids, num_segments)


UnsortedSegmentMax = type("UnsortedSegmentMax", (_Segment,), {"_fn": staticmethod(_reductions.unsorted_segment_max)})
UnsortedSegmentMin = type("UnsortedSegmentMin", (_Segment,), {"_fn": staticmethod(_reductions.unsorted_segment_min)})
UnsortedSegmentProd = type("UnsortedSegmentProd", (_Segment,), {"_fn": staticmethod(_reductions.unsorted_segment_prod)})

COMPOSITES += ["ScatterSub", "ScatterMul", "ScatterDiv", "ScatterMax", "ScatterMin", "ScatterNdAdd",
               "ScatterNdSub", "ScatterNdMul", "ScatterNdDiv", "ScatterNdMax", "ScatterNdMin",
               "ScatterNonAliasingAdd", "UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd"]


# ---- reshuffles and small math primitives -----------------------------------------------------


class SpaceToBatchND(_Composite):
    """ops.space_to_batch_nd with block_shape and paddings fixed."""

    def __init__(self, block_shape, paddings):
        super().__init__(block_shape=block_shape, paddings=paddings)

    def _call(self, input_x):
        return _reshuffle.space_to_batch_nd(input_x, self.block_shape, self.paddings)


class BatchToSpaceND(_Composite):
    """ops.batch_to_space_nd with block_shape and crops fixed."""

    def __init__(self, block_shape, crops):
        super().__init__(block_shape=block_shape, crops=crops)

    def _call(self, input_x):
        return _reshuffle.batch_to_space_nd(input_x, self.block_shape, self.crops)


class SpaceToBatch(_Composite):
    """SpaceToBatchND with one block size for both spatial dims (4-d NCHW input)."""

    def __init__(self, block_size, paddings):
        super().__init__(block_size=block_size, paddings=paddings)

    def _call(self, input_x):
        return _reshuffle.space_to_batch_nd(input_x, (self.block_size, self.block_size), self.paddings)


class BatchToSpace(_Composite):
    """BatchToSpaceND with one block size for both spatial dims (4-d NCHW input)."""

    def __init__(self, block_size, crops):
        super().__init__(block_size=block_size, crops=crops)

    def _call(self, input_x):
        return _reshuffle.batch_to_space_nd(input_x, (self.block_size, self.block_size), self.crops)


class DepthToSpace(_Composite):
    """(N, C b^2, H, W) -> (N, C, H b, W b)."""

    def __init__(self, block_size, data_format="NCHW"):
        if data_format != "NCHW":
            raise ValueError(f"DepthToSpace: data_format must be 'NCHW', got {data_format!r}")
        super().__init__(block_size=block_size)

    def _call(self, x):
        return _reshuffle.depth_to_space(x, self.block_size)


class SpaceToDepth(_Composite):
    """(N, C, H, W) -> (N, C b^2, H / b, W / b)."""

    def __init__(self, block_size, data_format="NCHW"):
        if data_format != "NCHW":
            raise ValueError(f"SpaceToDepth: data_format must be 'NCHW', got {data_format!r}")
        super().__init__(block_size=block_size)

    def _call(self, x):
        return _reshuffle.space_to_depth(x, self.block_size)


class ReverseSequence(_Composite):
    """ops.reverse_sequence with seq_dim and batch_dim fixed."""

    def __init__(self, seq_dim, batch_dim=0):
        super().__init__(seq_dim=seq_dim, batch_dim=batch_dim)

    def _call(self, x, seq_lengths):
        return _reshuffle.reverse_sequence(x, seq_lengths, self.seq_dim, self.batch_dim)


class UniqueWithPad(_Composite):
    """ops.unique_with_pad."""

    def _call(self, x, pad_num):
        return _reshuffle.unique_with_pad(x, pad_num)


class HistogramFixedWidth(_Composite):
    """Counts in nbins equal bins over range (a 2-element tensor)."""

    def __init__(self, nbins, dtype="int32"):
        if not isinstance(nbins, int) or nbins < 1:
            raise ValueError(f"HistogramFixedWidth: nbins must be an int >= 1, got {nbins!r}")
        super().__init__(nbins=nbins, dtype=dtype)

    def _call(self, x, range):  # noqa: A002
        dt = _dt.int32 if self.dtype in ("int32", _dt.int32) else _dt.int64
        return _reshuffle.histogram_fixed_width(x, range, self.nbins, dt)


class InvertPermutation(_Composite):
    """y[x[i]] = i for a permutation x (a tuple gives a tuple)."""

    def _call(self, input_x):
        return _reshuffle.invert_permutation(input_x)


class InTopK(_Composite):
    """Whether each target is among its row's k largest predictions."""

    def __init__(self, k):
        super().__init__(k=k)

    def _call(self, x1, x2):
        return _reshuffle.intopk(x1, x2, self.k)


@constexpr
def _check_square_sum_all(x_dtype, y_dtype):
    for name, t in (("x", x_dtype), ("y", y_dtype)):
        if t not in (_dt.float16, _dt.float32):
            raise TypeError(f"SquareSumAll: '{name}' must be float16 or float32, got {t}")
    if x_dtype != y_dtype:
        raise TypeError(f"SquareSumAll: 'x' and 'y' must have the same dtype, got {x_dtype} and {y_dtype}")
    return True


class SquareSumAll(_Composite):
    """(sum(x^2), sum(y^2)) for x and y of one shape and dtype (float16 or float32)."""

    def _call(self, x, y):
        _check_square_sum_all(x.dtype, y.dtype)
        if len(x.shape) != len(y.shape):
            raise ValueError("SquareSumAll: 'x' and 'y' must have the same shape (rank)")
        for a, b in zip(x.shape, y.shape):  # a run-time check where a dimension is dynamic
            if a != b:
                raise ValueError("SquareSumAll: 'x' and 'y' must have the same shape")
        return _ops.sum(x * x), _ops.sum(y * y)


@constexpr
def _check_approximate_equal(x_shape, y_shape):
    if tuple(x_shape) != tuple(y_shape):
        raise ValueError(f"ApproximateEqual: 'x1' must have the same shape as 'x2', got {tuple(x_shape)} "
                         f"and {tuple(y_shape)}")
    if len(x_shape) >= 8:  # MindSpore's kernel limit
        raise RuntimeError(f"ApproximateEqual: the x's rank should be less than 8, got shape {tuple(x_shape)}")
    return True


class ApproximateEqual(_Composite):
    """|x - y| < tolerance, for x and y of one shape (MindSpore's: no broadcasting, rank < 8)."""

    def __init__(self, tolerance=1e-5):
        if not isinstance(tolerance, float):
            raise TypeError(f"ApproximateEqual: the type of 'tolerance' should be 'float', got "
                            f"{type(tolerance).__name__}")
        super().__init__(tolerance=tolerance)

    def _call(self, x, y):
        _check_approximate_equal(x.shape, y.shape)
        return _ops.less(_ops.abs(x - y), self.tolerance)


class EqualCount(_Composite):
    """The number of equal elements, as a 1-element tensor of x's dtype."""

    def _call(self, x, y):
        return _ops.reshape(_ops.cast(_ops.sum(_ops.cast(_ops.equal(x, y), _dt.int64)), x.dtype), (1,))


class LpNorm(_Composite):
    """(sum |x|^p)^(1/p) over axis (p = 0: the count of nonzeros)."""

    def __init__(self, axis, p=2, keep_dims=False, epsilon=1e-12):
        axis = (axis,) if isinstance(axis, int) else tuple(axis)
        super().__init__(axis=axis, p=int(p), keep_dims=bool(keep_dims), epsilon=float(epsilon))

    def _call(self, input):  # noqa: A002
        axis = tuple(a % input.ndim for a in self.axis)
        if self.p == 0:
            return _ops.sum(_ops.cast(_ops.not_equal(input, 0), input.dtype), axis, self.keep_dims)
        if self.p == 1:
            return _ops.sum(_ops.abs(input), axis, self.keep_dims)
        s = _ops.sum(_ops.pow(_ops.abs(input), float(self.p)), axis, self.keep_dims)
        return _ops.pow(s, 1.0 / self.p)


class MaskedFill(_Composite):
    """input with value where mask is True."""

    def _call(self, input, mask, value):  # noqa: A002
        # value (a number or a Tensor) broadcast to input and cast to its dtype; written with ops
        # only, so graph mode compiles it (a Tensor built from value would need constants).
        filled = _ops.cast(_ops.zeros_like(input) + value, input.dtype)
        return _ops.select(mask, filled, input)


class SplitV(_Composite):
    """x split along split_dim into pieces of size_splits (one -1 takes the rest)."""

    def __init__(self, size_splits, split_dim, num_split):
        sizes = [int(v) for v in size_splits]
        if len(sizes) != num_split or sizes.count(-1) > 1:
            raise ValueError(f"SplitV: size_splits {size_splits!r} must hold num_split={num_split} sizes, at most one -1")
        super().__init__(size_splits=tuple(sizes), split_dim=int(split_dim), num_split=int(num_split))

    def _call(self, x):
        d = self.split_dim % x.ndim
        sizes = list(self.size_splits)
        if -1 in sizes:
            sizes[sizes.index(-1)] = x.shape[d] - (sum(sizes) + 1)
        if sum(sizes) != x.shape[d] or min(sizes) < 0:
            raise ValueError(f"SplitV: sizes {tuple(sizes)} do not add up to dim {d} ({x.shape[d]})")
        out, start = [], 0
        for n in sizes:
            begin = [0] * x.ndim
            size = list(x.shape)
            begin[d], size[d] = start, n
            out.append(_ops.slice(x, tuple(begin), tuple(size)))
            start += n
        return tuple(out)


class TensorShape(_Composite):
    """x's shape as an int64 tensor."""

    def _call(self, x):
        return _Tensor(_np.array(x.shape, _np.int64))


DynamicShape = type("DynamicShape", (TensorShape,), {"__doc__": "x's shape as an int64 tensor."})


class ScalarCast(_Composite):
    """A Python number cast to the scalar type of a dtype (float, int or bool)."""

    def _call(self, x, t):
        if t == _dt.bool_:
            return bool(x)
        return float(x) if t in (_dt.float16, _dt.float32, _dt.float64, _dt.bfloat16) else int(x)


class ScalarToTensor(_Composite):
    """A 0-d tensor of a number (float32 by default)."""

    def _call(self, input_x, dtype=_dt.float32):
        if not isinstance(input_x, (int, float, bool)):
            raise TypeError(f"ScalarToTensor: input_x must be a number, got {type(input_x).__name__}")
        return _Tensor(_np.array(input_x), dtype=dtype)


ScalarToArray = type("ScalarToArray", (ScalarToTensor,), {"__doc__": "A 0-d tensor of a number."})


class TupleToArray(_Composite):
    """A 1-d tensor of a tuple of numbers (int64 for ints, float32 for floats)."""

    def _call(self, input_x):
        if not isinstance(input_x, (tuple, list)) or not input_x:
            raise TypeError(f"TupleToArray: input_x must be a non-empty tuple of numbers, got {input_x!r}")
        ints = all(isinstance(v, int) for v in input_x)
        return _Tensor(_np.array(input_x, _np.int64 if ints else _np.float32))


class RandomShuffle(_Composite):
    """x with its first dimension randomly permuted (ops.shuffle), drawn from the stream of
    (seed, seed2); both 0: the default generator."""

    def __init__(self, seed=0, seed2=0):
        for name, v in (("seed", seed), ("seed2", seed2)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"RandomShuffle: {name} must be an int >= 0, got {v!r}")
        super().__init__(seed=seed, seed2=seed2)

    def _call(self, x):
        return _random.shuffle(x, self.seed, self.seed2)


COMPOSITES += ["RandomShuffle"]


class Randperm(_Composite):
    """A random permutation of 0..n-1 padded with `pad` to max_length (n a 1-element tensor)."""

    def __init__(self, max_length=1, pad=-1, dtype=_dt.int32):
        if not isinstance(max_length, int) or max_length < 1:
            raise ValueError(f"Randperm: max_length must be an int >= 1, got {max_length!r}")
        super().__init__(max_length=max_length, pad=pad, dtype=dtype)

    def _call(self, n):
        count = int(_np.asarray(n.asnumpy() if isinstance(n, _Tensor) else n).reshape(-1)[0])
        if not 0 <= count <= self.max_length:
            raise ValueError(f"Randperm: n ({count}) must be in [0, max_length={self.max_length}]")
        perm = _ops.cast(_random.randperm(count), self.dtype) if count else _ops.zeros((0,), self.dtype)
        if count == self.max_length:
            return perm
        pad = _ops.fill(self.dtype, (self.max_length - count,), self.pad)
        return _ops.concat((perm, pad), 0)


class Gamma(_Composite):
    """Samples of Gamma(alpha, beta) (rate beta) of shape `shape` + the broadcast parameters."""

    def __init__(self, seed=0, seed2=0):
        super().__init__(seed=seed, seed2=seed2)

    def _call(self, shape, alpha, beta):
        return _P_ops().gamma(tuple(shape), alpha, beta, self.seed or None)


class Poisson(_Composite):
    """Samples of Poisson(mean) of shape `shape` + mean's shape, as int32."""

    def __init__(self, seed=0, seed2=0):
        super().__init__(seed=seed, seed2=seed2)

    def _call(self, shape, mean):
        return _P_ops().random_poisson(tuple(shape), mean, self.seed, self.seed2, _dt.int32)


def _P_ops():
    import mycel.ops as ops  # the public namespace (ops.gamma is a function_more composite)
    return ops


COMPOSITES += ["SpaceToBatchND", "BatchToSpaceND", "SpaceToBatch", "BatchToSpace", "DepthToSpace",
               "SpaceToDepth", "ReverseSequence", "UniqueWithPad", "HistogramFixedWidth",
               "InvertPermutation", "InTopK", "SquareSumAll", "ApproximateEqual", "EqualCount", "LpNorm",
               "MaskedFill", "SplitV", "TensorShape", "DynamicShape", "ScalarCast", "ScalarToTensor",
               "ScalarToArray", "TupleToArray", "Randperm", "Gamma", "Poisson"]
