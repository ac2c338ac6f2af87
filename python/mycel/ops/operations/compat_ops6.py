"""More primitives at MindSpore's import paths, each composed of registry ops (so both modes and
gradients come with them): random_ops.Uniform, image_ops.RGBToHSV, ConjugateTranspose, Median."""
from mycel import _mycel
from mycel.common.dtype import complex64, complex128, float16, float32, float64, int16, int32, int64
from mycel.ops.operations.compat_ops import _Composite

_ops = _mycel.ops


class Uniform(_Composite):
    """Random numbers uniform on [minval, maxval) with x's shape and dtype (MindSpore's
    random_ops.Uniform: x gives only its shape and dtype)."""

    def __init__(self, minval=0.0, maxval=1.0, seed=0, offset=0):
        for name, v in (("seed", seed), ("offset", offset)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"Uniform: argument '{name}' must be an int, got {v!r}")
        for name, v in (("minval", minval), ("maxval", maxval)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise ValueError(f"Uniform: argument '{name}' must be a non-negative float, got {v!r}")
        if minval > maxval:
            raise ValueError(f"Uniform: 'minval' ({minval}) must be <= 'maxval' ({maxval})")
        super().__init__(minval=float(minval), maxval=float(maxval), seed=seed, offset=offset)
        self._seed, self._seed2 = seed & 0x7FFFFFFF, offset & 0x7FFFFFFF

    def _call(self, x):
        if x.dtype not in (float16, float32, float64):
            raise TypeError(f"Uniform: input 'x' must be float16, float32 or float64, got {x.dtype}")
        return _ops.uniform(tuple(x.shape), self.minval, self.maxval, self._seed, x.dtype, self._seed2)


class RGBToHSV(_Composite):
    """RGB images (..., 3) with values in [0, 1] to HSV, each in [0, 1] (TensorFlow's and
    MindSpore's formula: hue in sixths of the circle, 0 where the pixel is grey; saturation 0
    where the value is 0)."""

    def _call(self, images):
        if images.dtype not in (float16, float32, float64):
            raise TypeError(f"RGBToHSV: input 'images' must be float16, float32 or float64, got {images.dtype}")
        if images.ndim < 1 or images.shape[-1] != 3:
            raise ValueError(f"RGBToHSV: input 'images' must have a last dim of 3, got shape {tuple(images.shape)}")
        r, g, b = _ops.split(images, axis=-1, output_num=3)
        value = _ops.maximum(_ops.maximum(r, g), b)
        chroma = value - _ops.minimum(_ops.minimum(r, g), b)
        zero = _ops.zeros_like(value)
        grey = _ops.equal(chroma, zero)
        safe = _ops.select(grey, _ops.ones_like(chroma), chroma)
        hue = _ops.select(_ops.equal(value, r), (g - b) / safe,
                          _ops.select(_ops.equal(value, g), (b - r) / safe + 2.0, (r - g) / safe + 4.0)) / 6.0
        hue = _ops.select(_ops.less(hue, zero), hue + 1.0, hue)
        hue = _ops.select(grey, zero, hue)
        saturation = _ops.select(_ops.greater(value, zero),
                                 chroma / _ops.select(_ops.greater(value, zero), value, _ops.ones_like(value)), zero)
        return _ops.concat((hue, saturation, value), -1)


class ConjugateTranspose(_Composite):
    """The conjugate of x with its dims permuted by perm (transpose for real x)."""

    def _call(self, x, perm):
        y = _ops.transpose(x, tuple(perm))
        return _ops.conj(y) if y.dtype in (complex64, complex128) else y


class Median(_Composite):
    """(values, indices) of the median along axis, or of all elements (global_median): the lower
    middle for an even count, as MindSpore's math_ops.Median. A slice holding NaN has the median
    NaN (its index points at a NaN) unless ignore_nan, which takes the median of the rest. An
    empty input's global median is NaN for floats and 0 for integers."""

    _DTYPES = (int16, int32, int64, float16, float32, float64)

    def __init__(self, global_median=False, axis=0, keep_dims=False, ignore_nan=False):
        for name, v in (("global_median", global_median), ("keep_dims", keep_dims), ("ignore_nan", ignore_nan)):
            if not isinstance(v, bool):
                raise TypeError(f"Median: argument '{name}' must be a bool, got {v!r}")
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError(f"Median: argument 'axis' must be an int, got {axis!r}")
        super().__init__(global_median=global_median, axis=axis, keep_dims=keep_dims, ignore_nan=ignore_nan)

    def _call(self, x):
        if x.dtype not in self._DTYPES:
            raise TypeError(f"Median: input 'x' must be int16, int32, int64, float16, float32 or float64, "
                            f"got {x.dtype}")
        floating = x.dtype in (float16, float32, float64)
        if self.global_median:
            x, axis, keep = _ops.reshape(x, (-1,)), 0, False
        else:
            rank = max(x.ndim, 1)
            if not -rank <= self.axis < rank:
                raise ValueError(f"Median: argument 'axis' must be in [{-rank}, {rank}) for an input of "
                                 f"shape {tuple(x.shape)}, got {self.axis}")
            axis, keep = self.axis % rank, self.keep_dims
            if x.ndim == 0:
                x = _ops.reshape(x, (1,))
        n = x.shape[axis]
        # Shaped like the slices' results, axis kept: the zeros the answers are built on.
        base = _ops.sum(_ops.zeros_like(x, int64), (axis,), True)
        if n == 0:  # no element to take: NaN for floats, 0 for integers, as MindSpore
            v, i = _ops.cast(base, x.dtype), base
            if floating:
                v = v + float("nan")
            if not keep:
                v, i = _ops.squeeze(v, (axis,)), _ops.squeeze(i, (axis,))
            return v, i
        values, order = _ops.sort(x, axis)
        middle = base + (n - 1) // 2
        k = middle
        if floating:
            # NaN sorts last: count the numbers before it, per slice.
            count = _ops.sum(_ops.cast(_ops.logical_not(_ops.isnan(values)), int64), (axis,), True)
            if self.ignore_nan:
                k = _ops.maximum(_ops.floor_div(count - 1, 2), base)
            else:
                k = _ops.select(_ops.less(count, n), base + (n - 1), middle)
        v, i = _ops.gather_elements(values, k, axis), _ops.gather_elements(order, k, axis)
        if not keep:
            v, i = _ops.squeeze(v, (axis,)), _ops.squeeze(i, (axis,))
        return v, i


COMPOSITES = [n for n, v in dict(globals()).items()
              if isinstance(v, type) and issubclass(v, _Composite) and v is not _Composite]
