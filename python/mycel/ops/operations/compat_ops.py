"""MindSpore primitive classes that are other names of registry ops (TensorAdd, RealDiv,
GatherV2, Pack, BatchMatMul, Gelu) or small composites of them (BiasAdd, AddN,
ArgMaxWithValue, ArgMinWithValue, L2Normalize, SigmoidCrossEntropyWithLogits, HSwish, FastGelu,
LayerNorm with MindSpore's defaults and its variance output).
Each composite is a Primitive whose call graph mode parses (`_mycel_graph_function`)."""
from mycel import _mycel
from mycel.ops.operations import Primitive

_ops = _mycel.ops


class _Composite(Primitive):
    """A Primitive computed by self._call from registry ops; attributes are set in __init__."""

    __signature__ = None

    def __init__(self, **attrs):
        Primitive.__init__(self, type(self).__name__)
        for k, v in attrs.items():
            setattr(self, k, v)
            self.add_prim_attr(k, v)

    def __call__(self, *args):
        return self._call(*args)

    @property
    def _mycel_graph_function(self):
        return self._call


class BiasAdd(_Composite):
    """x + bias over the channel dim (1 for NCHW, last for NHWC)."""

    def __init__(self, data_format="NCHW"):
        if data_format not in ("NCHW", "NHWC", "NCDHW"):
            raise ValueError(f"BiasAdd: data_format must be NCHW, NHWC or NCDHW, got {data_format!r}")
        super().__init__(data_format=data_format)

    def _call(self, input_x, bias):
        if self.data_format == "NHWC" or input_x.ndim < 3:
            return input_x + bias
        return input_x + _ops.reshape(bias, (bias.shape[0],) + (1,) * (input_x.ndim - 2))


class AddN(_Composite):
    """The sum of a tuple or list of tensors."""

    def _call(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out


class ArgMaxWithValue(_Composite):
    """(index, value) of the maximum along axis."""

    def __init__(self, axis=0, keep_dims=False):
        super().__init__(axis=axis, keep_dims=keep_dims)

    def _call(self, x):
        return (_ops.argmax(x, self.axis, self.keep_dims), _ops.max(x, (self.axis,), self.keep_dims))


class ArgMinWithValue(_Composite):
    """(index, value) of the minimum along axis."""

    def __init__(self, axis=0, keep_dims=False):
        super().__init__(axis=axis, keep_dims=keep_dims)

    def _call(self, x):
        return (_ops.argmin(x, self.axis, self.keep_dims), _ops.min(x, (self.axis,), self.keep_dims))


class L2Normalize(_Composite):
    """x / sqrt(max(sum(x^2 over axis), epsilon))."""

    def __init__(self, axis=0, epsilon=1e-4):
        super().__init__(axis=axis, epsilon=float(epsilon))

    def _call(self, x):
        axes = (self.axis,) if isinstance(self.axis, int) else tuple(self.axis)
        return x / _ops.sqrt(_ops.maximum(_ops.sum(x * x, axes, True), self.epsilon))


class SigmoidCrossEntropyWithLogits(_Composite):
    """Elementwise -(y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))), unreduced."""

    def _call(self, logits, label):
        return _ops.binary_cross_entropy_with_logits(logits, label, None, None, reduction="none")


class HSwish(_Composite):
    """x * relu6(x + 3) / 6."""

    def _call(self, x):
        return x * _ops.relu6(x + 3.0) / 6.0


class FastGelu(_Composite):
    """x / (1 + exp(-1.702 |x|)) * exp(0.851 (x - |x|)), MindSpore's fast GELU."""

    def _call(self, x):
        a = _ops.abs(x)
        return x / (1.0 + _ops.exp(-1.702 * a)) * _ops.exp(0.851 * (x - a))


class GatherD(_Composite):
    """MindSpore's GatherD: GatherD()(x, dim, index), gather_elements along dim."""

    def _call(self, x, dim, index):
        return _ops.gather_elements(x, index, dim=dim)


class LayerNorm(_Composite):
    """MindSpore's LayerNorm(begin_norm_axis=1, begin_params_axis=1, epsilon=1e-7): returns
    (y, mean, variance). The registry op saves rstd = 1 / sqrt(variance + epsilon) for its
    backward, so the variance is recovered from it (differentiably, through the op's bprop)."""

    def __init__(self, begin_norm_axis=1, begin_params_axis=1, epsilon=1e-7):
        super().__init__(begin_norm_axis=begin_norm_axis, begin_params_axis=begin_params_axis,
                         epsilon=epsilon)

    def _call(self, input_x, gamma, beta):
        y, mean, rstd = _ops.layer_norm(input_x, gamma, beta, begin_norm_axis=self.begin_norm_axis,
                                        begin_params_axis=self.begin_params_axis, epsilon=self.epsilon)
        return y, mean, 1.0 / (rstd * rstd) - self.epsilon


def aliases(namespace):
    """MindSpore's older names of generated primitive classes."""
    return {"TensorAdd": namespace["Add"], "RealDiv": namespace["Div"], "GatherV2": namespace["Gather"],
            "Pack": namespace["Stack"], "BatchMatMul": namespace["MatMul"], "Gelu": namespace["GeLU"]}


COMPOSITES = ["BiasAdd", "AddN", "ArgMaxWithValue", "ArgMinWithValue", "L2Normalize",
              "SigmoidCrossEntropyWithLogits", "HSwish", "FastGelu", "GatherD", "LayerNorm"]
