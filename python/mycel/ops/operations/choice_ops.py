"""MindSpore's RandomChoiceWithMask (ops.choice_with_mask): up to `count` positions of the true
elements of a bool tensor, in random order, with a mask of the valid rows. A composite with
static shapes, so it compiles: every element gets a uniform key (true ones below 1, false ones
above), the first `count` of the argsort are the sample, and the rows past the true elements
are zeros with mask False (MindSpore's padding)."""
import numpy as np

from mycel import _mycel
from mycel.ops.operations.compat_ops import _Composite
from mycel.ops.primitive import constexpr

_ops = _mycel.ops
_INT32_LIMIT = 2 ** 31 - 1


def _check_int(who, name, value, low):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise TypeError(f"{who}: {name} must be an int >= {low}, got {value!r}")


@constexpr
def _geometry(shape, count):
    """(row-major strides (1, rank), dims (1, rank), the padding rows and mask) as Tensors."""
    strides = np.cumprod((1,) + tuple(shape)[:0:-1])[::-1].astype(np.int64).reshape(1, -1)
    pad = max(count - int(np.prod(shape)), 0)
    return (_mycel.Tensor(strides), _mycel.Tensor(np.array(shape, np.int64).reshape(1, -1)),
            _mycel.Tensor(np.zeros((pad, len(shape)), np.int32)), _mycel.Tensor(np.zeros(pad, np.bool_)),
            _mycel.Tensor(np.float32(2)))


class RandomChoiceWithMask(_Composite):
    """RandomChoiceWithMask(count=256, seed=0, seed2=0)(input_x): (int32 (count, rank) indices of
    randomly chosen true elements, bool (count,) mask of the rows that hold one)."""

    def __init__(self, count=256, seed=0, seed2=0):
        _check_int("RandomChoiceWithMask", "count", count, 1)
        for name, value in (("seed", seed), ("seed2", seed2)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"RandomChoiceWithMask: {name} must be an int, got {value!r}")
        super().__init__(count=count, seed=seed, seed2=seed2)

    def _call(self, input_x):
        if not isinstance(input_x, _mycel.Tensor) or input_x.dtype != _mycel.dtype.bool:
            raise TypeError(f"RandomChoiceWithMask: input_x must be a bool Tensor, got "
                            f"{getattr(input_x, 'dtype', type(input_x).__name__)}")
        shape = tuple(input_x.shape)
        if not 1 <= len(shape) <= 5:
            raise ValueError(f"RandomChoiceWithMask: input_x must have rank 1 to 5, got shape {shape}")
        if self.count * len(shape) > _INT32_LIMIT:
            # MindSpore's kernel indexes the output with int32 and fails the same way
            raise RuntimeError(f"RandomChoiceWithMask: count ({self.count}) x rank ({len(shape)}) "
                               f"exceeds the int32 range of the index output")
        n = 1
        for d in shape:
            n *= d
        strides, dims, pad_rows, pad_mask, two = _geometry(shape, self.count)
        flat = _ops.reshape(input_x, (-1,))
        keys = _ops.uniform(shape=(n,), seed=self.seed, seed2=self.seed2)
        keys = _ops.select(flat, keys, _ops.add(keys, two))
        order = _ops.argsort(keys)[:min(self.count, n)]
        mask = _ops.gather(flat, order, 0)
        coords = _ops.mod(_ops.floor_div(_ops.reshape(_ops.cast(order, _mycel.dtype.int64), (-1, 1)), strides), dims)
        coords = _ops.mul(_ops.cast(coords, _mycel.dtype.int32),
                          _ops.cast(_ops.reshape(mask, (-1, 1)), _mycel.dtype.int32))
        if self.count > n:
            coords = _ops.concat((coords, pad_rows), 0)
            mask = _ops.concat((mask, pad_mask), 0)
        return coords, mask


def choice_with_mask(input_x, count=256, seed=None):
    """ops.choice_with_mask: RandomChoiceWithMask(count, seed)(input_x)."""
    seed = 0 if seed is None else seed
    return RandomChoiceWithMask(count, seed, 0)(input_x)


COMPOSITES = ("RandomChoiceWithMask",)
