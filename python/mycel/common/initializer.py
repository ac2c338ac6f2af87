"""Parameter initializers (MindSpore's mindspore.common.initializer).

`initializer(init, shape, dtype)` returns a Tensor filled by `init`: an Initializer object, one of
the names in `_NAMES` ("normal", "he_uniform", ...), a number (a constant) or a Tensor (checked
and returned). Random initializers draw from the framework's global generator (ops.uniform,
ops.normal), so `mycel.set_seed(s)` makes every model's initial weights reproducible.
"""
import math
import numbers

import numpy as np

from mycel import _mycel
from mycel.common.tensor import Tensor
from mycel.common import dtype as mstype

_ops = _mycel.ops
_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


def _is_float(dtype):
    return str(getattr(dtype, "name", dtype)).lower() in _FLOAT_DTYPES


def _fans(shape, who):
    """(fan_in, fan_out) of a weight: dims 0 and 1 times the receptive field of the rest."""
    if len(shape) < 2:
        raise ValueError(f"{who}: needs a shape with at least 2 dims to compute fan_in/fan_out, got {shape}")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for `nonlinearity` (as in PyTorch and MindSpore)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, numbers.Number):
            raise ValueError(f"calculate_gain: negative_slope must be a number, got {slope!r}")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _uniform(shape, low, high, dtype):
    gen_dtype = dtype if _is_float(dtype) else mstype.float32
    t = _ops.uniform(tuple(shape), minval=float(low), maxval=float(high), dtype=gen_dtype)
    return t if gen_dtype == dtype else _ops.cast(t, dtype)


def _normal(shape, mean, std, dtype):
    gen_dtype = dtype if _is_float(dtype) else mstype.float32
    t = _ops.normal(tuple(shape), mean=float(mean), stddev=float(std), dtype=gen_dtype)
    return t if gen_dtype == dtype else _ops.cast(t, dtype)


class Initializer:
    """Base class: subclasses fill a Tensor of a given shape and dtype in `_generate`."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def _generate(self, shape, dtype):
        raise NotImplementedError

    def __call__(self, arr):
        """Fills the numpy array `arr` in place (MindSpore's Initializer protocol)."""
        arr[...] = self._generate(tuple(arr.shape), mstype.float64).asnumpy().astype(arr.dtype)
        return arr

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({args})"


class Constant(Initializer):
    """Every element is `value`."""

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _generate(self, shape, dtype):
        return _ops.fill(dtype, tuple(shape), float(self.value))


class Zero(Constant):
    """Zeros."""

    def __init__(self):
        Constant.__init__(self, 0)
        self._kwargs = {}


class One(Constant):
    """Ones."""

    def __init__(self):
        Constant.__init__(self, 1)
        self._kwargs = {}


class Normal(Initializer):
    """N(mean, sigma**2)."""

    def __init__(self, sigma=0.01, mean=0.0):
        super().__init__(sigma=sigma, mean=mean)
        self.sigma, self.mean = sigma, mean

    def _generate(self, shape, dtype):
        return _normal(shape, self.mean, self.sigma, dtype)


class Uniform(Initializer):
    """U(-scale, scale)."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _generate(self, shape, dtype):
        return _uniform(shape, -self.scale, self.scale, dtype)


class TruncatedNormal(Initializer):
    """N(mean, sigma**2) restricted to [mean + a*sigma, mean + b*sigma]: out-of-range draws are
    replaced by fresh ones until none is left (the expected number of rounds is tiny)."""

    def __init__(self, sigma=0.01, mean=0.0, a=-2.0, b=2.0):
        if not a < b:
            raise ValueError(f"TruncatedNormal: need a < b, got a={a}, b={b}")
        super().__init__(sigma=sigma, mean=mean, a=a, b=b)
        self.sigma, self.mean, self.a, self.b = sigma, mean, a, b

    def _generate(self, shape, dtype):
        shape = tuple(shape)
        z = _ops.normal(shape, dtype=mstype.float64)
        for _ in range(200):
            bad = _ops.logical_or(_ops.less(z, float(self.a)), _ops.greater(z, float(self.b)))
            if not bool(_ops.any(bad)):
                break
            z = _ops.select(bad, _ops.normal(shape, dtype=mstype.float64), z)
        else:
            raise RuntimeError(f"TruncatedNormal: [{self.a}, {self.b}] is too narrow to sample")
        return _ops.cast(z * float(self.sigma) + float(self.mean), dtype)


class XavierUniform(Initializer):
    """U(-bound, bound) with bound = gain * sqrt(6 / (fan_in + fan_out)) (Glorot)."""

    def __init__(self, gain=1):
        super().__init__(gain=gain)
        self.gain = gain

    def _generate(self, shape, dtype):
        fan_in, fan_out = _fans(shape, "XavierUniform")
        bound = self.gain * math.sqrt(6.0 / (fan_in + fan_out))
        return _uniform(shape, -bound, bound, dtype)


class XavierNormal(Initializer):
    """N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, gain=1):
        super().__init__(gain=gain)
        self.gain = gain

    def _generate(self, shape, dtype):
        fan_in, fan_out = _fans(shape, "XavierNormal")
        return _normal(shape, 0.0, self.gain * math.sqrt(2.0 / (fan_in + fan_out)), dtype)


class _He(Initializer):
    def __init__(self, negative_slope=0, mode="fan_in", nonlinearity="leaky_relu"):
        if mode not in ("fan_in", "fan_out"):
            raise ValueError(f"{type(self).__name__}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
        super().__init__(negative_slope=negative_slope, mode=mode, nonlinearity=nonlinearity)
        self.negative_slope, self.mode, self.nonlinearity = negative_slope, mode, nonlinearity

    def _std(self, shape):
        fan_in, fan_out = _fans(shape, type(self).__name__)
        fan = fan_in if self.mode == "fan_in" else fan_out
        return calculate_gain(self.nonlinearity, self.negative_slope) / math.sqrt(fan)


class HeUniform(_He):
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (Kaiming uniform)."""

    def _generate(self, shape, dtype):
        bound = math.sqrt(3.0) * self._std(shape)
        return _uniform(shape, -bound, bound, dtype)


class HeNormal(_He):
    """N(0, (gain / sqrt(fan))**2) (Kaiming normal)."""

    def _generate(self, shape, dtype):
        return _normal(shape, 0.0, self._std(shape), dtype)


_NAMES = {
    "zeros": Zero, "zero": Zero, "ones": One, "one": One, "normal": Normal, "uniform": Uniform,
    "truncatednormal": TruncatedNormal, "truncated_normal": TruncatedNormal,
    "xavier_uniform": XavierUniform, "xavieruniform": XavierUniform,
    "xavier_normal": XavierNormal, "xaviernormal": XavierNormal,
    "he_uniform": HeUniform, "heuniform": HeUniform, "he_normal": HeNormal, "henormal": HeNormal,
}


def _as_initializer(init):
    if isinstance(init, Initializer):
        return init
    if isinstance(init, str):
        cls = _NAMES.get(init.lower())
        if cls is None:
            raise ValueError(f"initializer: unknown init {init!r}; expected one of {sorted(_NAMES)}")
        return cls()
    if isinstance(init, numbers.Number) and not isinstance(init, bool):
        return Constant(init)
    raise TypeError(f"initializer: init must be an Initializer, a str, a number or a Tensor, "
                    f"got {type(init).__name__}")


def initializer(init, shape=None, dtype=mstype.float32):
    """A Tensor of `shape` and `dtype` filled by `init`."""
    if isinstance(init, (Tensor, np.ndarray)):
        t = init if isinstance(init, Tensor) else Tensor(init)
        if shape is not None and tuple(t.shape) != tuple(_shape(shape)):
            raise ValueError(f"initializer: init Tensor has shape {tuple(t.shape)}, expected {tuple(_shape(shape))}")
        return t
    if shape is None:
        raise ValueError("initializer: shape is required unless init is a Tensor")
    return _as_initializer(init)._generate(_shape(shape), dtype)


def _shape(shape):
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    shape = tuple(shape)
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 0:
            raise ValueError(f"initializer: shape must be non-negative ints, got {shape}")
    return tuple(int(d) for d in shape)


__all__ = ["initializer", "Initializer", "Constant", "Zero", "One", "Normal", "Uniform",
           "TruncatedNormal", "XavierUniform", "XavierNormal", "HeUniform", "HeNormal",
           "calculate_gain"]
