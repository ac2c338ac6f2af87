"""More of MindSpore's activation Cells, each a composite of registry ops (gradients from the
ops): ELU, CELU, SeLU, Softplus, Softsign, Hardtanh, HSigmoid, HSwish, Mish, LogSigmoid,
Tanhshrink, SoftShrink, HShrink, PReLU, RReLU, Identity."""
from mycel import ops
from mycel.common import dtype as mstype
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_int, make_param


class ELU(Cell):
    """x if x > 0 else alpha * (e^x - 1)."""

    def __init__(self, alpha=1.0):
        super().__init__()
        self.alpha = float(alpha)

    def construct(self, x):
        return ops.elu(x, alpha=self.alpha)


class CELU(Cell):
    """max(0, x) + min(0, alpha * (e^(x / alpha) - 1))."""

    def __init__(self, alpha=1.0):
        super().__init__()
        if alpha == 0:
            raise ValueError("CELU: alpha must not be 0")
        self.alpha = float(alpha)

    def construct(self, x):
        return ops.celu(x, self.alpha)


class SeLU(Cell):
    """scale * elu(x, alpha) with the self-normalizing constants."""

    def construct(self, x):
        return ops.selu(x)


class Softplus(Cell):
    """log(1 + e^(beta x)) / beta, linear above threshold."""

    def __init__(self, beta=1, threshold=20):
        super().__init__()
        self.beta, self.threshold = float(beta), float(threshold)

    def construct(self, x):
        return ops.softplus(x, beta=self.beta, threshold=self.threshold)


class Softsign(Cell):
    """x / (1 + |x|)."""

    def construct(self, x):
        return ops.softsign(x)


class Hardtanh(Cell):
    """x clipped to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0):
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
        self.min_val, self.max_val = float(min_val), float(max_val)

    def construct(self, x):
        return ops.hardtanh(x, self.min_val, self.max_val)


class HSigmoid(Cell):
    """relu6(x + 3) / 6."""

    def construct(self, x):
        return ops.hardsigmoid(x)


class HSwish(Cell):
    """x * relu6(x + 3) / 6."""

    def construct(self, x):
        return ops.hardswish(x)


class Mish(Cell):
    """x * tanh(softplus(x))."""

    def construct(self, x):
        return ops.mish(x)


class LogSigmoid(Cell):
    """log(sigmoid(x)) = -softplus(-x)."""

    def construct(self, x):
        return ops.logsigmoid(x)


class Tanhshrink(Cell):
    """x - tanh(x)."""

    def construct(self, x):
        return ops.tanhshrink(x)


class SoftShrink(Cell):
    """x - lambd above lambd, x + lambd below -lambd, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        if lambd < 0:
            raise ValueError(f"SoftShrink: lambd must be >= 0, got {lambd}")
        self.lambd = float(lambd)

    def construct(self, x):
        return ops.softshrink(x, self.lambd)


class HShrink(Cell):
    """x where |x| > lambd, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = float(lambd)

    def construct(self, x):
        return ops.hardshrink(x, self.lambd)


class PReLU(Cell):
    """x if x > 0 else w * x, with a learnable w per channel (dim 1), initialized to w."""

    def __init__(self, channel=1, w=0.25, dtype=mstype.float32):
        super().__init__()
        self.channel = check_int(channel, "PReLU", "channel")
        self.w = make_param(float(w), (self.channel,), dtype, "w")

    def construct(self, x):
        w = self.w
        if x.ndim > 1 and self.channel > 1:  # one slope per channel of dim 1
            w = ops.reshape(w, (self.channel,) + (1,) * (x.ndim - 2))
        return ops.select(ops.greater(x, 0.0), x, x * w)


class RReLU(Cell):
    """Randomized leaky ReLU: x where x >= 0, else a * x with a drawn from U(lower, upper) for
    each element in training, a = (lower + upper) / 2 in inference."""

    def __init__(self, lower=1 / 8, upper=1 / 3):
        super().__init__()
        for arg, v in (("lower", lower), ("upper", upper)):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"RReLU: {arg} must be a float, got {type(v).__name__}")
        if lower > upper:
            raise ValueError(f"RReLU: lower ({lower}) must not exceed upper ({upper})")
        self.lower, self.upper = float(lower), float(upper)

    def construct(self, x):
        if self.training:
            a = ops.cast(ops.uniform(x.shape, minval=self.lower, maxval=self.upper), x.dtype)
        else:
            a = (self.lower + self.upper) / 2
        return ops.select(ops.greater_equal(x, 0.0), x, x * a)


class Identity(Cell):
    """Returns its input."""

    def construct(self, x):
        return x


__all__ = ["ELU", "CELU", "SeLU", "Softplus", "Softsign", "Hardtanh", "HSigmoid", "HSwish", "Mish",
           "LogSigmoid", "Tanhshrink", "SoftShrink", "HShrink", "PReLU", "RReLU", "Identity"]
