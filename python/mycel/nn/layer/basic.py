"""Dense, Flatten, Dropout and L1Regularizer."""
import math

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.initializer import HeUniform, Uniform
from mycel.common.tensor import Tensor
from mycel.common.layer_checks import input_dtype_error
from mycel.common.validator import flatten_shape
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_int, make_param
from mycel.nn.layer.activation import get_activation


class Dense(Cell):
    """y = activation(x @ weight.T + bias), weight (out_channels, in_channels). Defaults as in
    MindSpore 2.x: weight HeUniform(sqrt(5)), bias U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_channels, out_channels, weight_init=None, bias_init=None, has_bias=True,
                 activation=None, dtype=mstype.float32):
        super().__init__()
        self.in_channels = check_int(in_channels, "Dense", "in_channels")
        self.out_channels = check_int(out_channels, "Dense", "out_channels")
        self.has_bias = bool(has_bias)
        if weight_init is None:
            weight_init = HeUniform(math.sqrt(5))
        self.weight = make_param(weight_init, (out_channels, in_channels), dtype, "weight")
        self.bias = None
        if self.has_bias:
            if bias_init is None:
                bias_init = Uniform(1 / math.sqrt(in_channels))
            self.bias = make_param(bias_init, (out_channels,), dtype, "bias")
        self.activation = get_activation(activation)

    def construct(self, x):
        if self._float_dtype is not None and self.weight.dtype != self._float_dtype:
            return self._construct_in(self._float_dtype, x)
        if x.dtype != self.weight.dtype:  # say which dtype came from the user, which from the layer
            raise TypeError(input_dtype_error("Dense", x.dtype, self.weight.dtype))
        y = ops.dense(x, self.weight, self.bias)
        if self.activation is not None:
            y = self.activation(y)
        return y

    def _construct_in(self, dtype, x):
        # to_float(dtype) on a layer whose Parameters stay float32: compute in dtype with the
        # Parameters cast at use, as MindSpore's to_float does (x was cast on the way in).
        bias = None if self.bias is None else ops.cast(self.bias, dtype)
        y = ops.dense(x, ops.cast(self.weight, dtype), bias)
        if self.activation is not None:
            y = self.activation(y)
        return y

    def extend_repr(self):
        return f"input_channels={self.in_channels}, output_channels={self.out_channels}, has_bias={self.has_bias}"


class Flatten(Cell):
    """Merges dims start_dim..end_dim into one (default: all but the batch dim)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = int(start_dim), int(end_dim)

    def construct(self, x):
        if self.start_dim == 1 and self.end_dim == -1:
            return ops.flatten(x)
        return ops.reshape(x, flatten_shape(x.shape, self.start_dim, self.end_dim))


class Dropout(Cell):
    """In training, zeroes elements with probability p = 1 - keep_prob and scales the rest by
    1/keep_prob; the identity in evaluation. Give `p` (MindSpore 2.x) or `keep_prob` (1.x)."""

    def __init__(self, keep_prob=None, p=None, dtype=mstype.float32):
        super().__init__()
        if p is None:
            keep_prob = 0.5 if keep_prob is None else keep_prob
        elif keep_prob is not None:
            raise ValueError("Dropout: give either keep_prob or p, not both")
        else:
            if not 0 <= p < 1:
                raise ValueError(f"Dropout: p must be in [0, 1), got {p}")
            keep_prob = 1 - p
        if not 0 < keep_prob <= 1:
            raise ValueError(f"Dropout: keep_prob must be in (0, 1], got {keep_prob}")
        self.keep_prob = float(keep_prob)
        self.p = 1 - self.keep_prob

    def construct(self, x):
        if not self.training or self.keep_prob == 1.0:
            return x
        y, _ = ops.dropout(x, keep_prob=self.keep_prob)
        return y

    def extend_repr(self):
        return f"p={self.p}"


class L1Regularizer(Cell):
    """scale * sum(|weights|), a float32 (or wider) scalar; scale a finite number > 0."""

    def __init__(self, scale):
        super().__init__()
        if not isinstance(scale, (int, float)) or isinstance(scale, bool):
            raise TypeError(f"L1Regularizer: 'scale' must be an int or a float, got {type(scale).__name__}")
        if math.isinf(scale) or math.isnan(scale):
            raise ValueError(f"L1Regularizer: 'scale' can not be INF or NAN, got {scale}")
        if scale <= 0:
            raise ValueError(f"L1Regularizer: 'scale' must be greater than 0, got {scale}")
        self.scale = float(scale)

    def construct(self, weights):
        if not isinstance(weights, Tensor):
            raise TypeError("L1Regularizer: 'weights' must be a Tensor")
        total = ops.sum(ops.abs(weights))
        if total.dtype != mstype.float64:
            total = ops.cast(total, mstype.float32)
        return total * self.scale
