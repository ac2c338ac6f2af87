"""Activation layers: thin Cells over the registry's activation ops."""
from mycel import ops
from mycel.nn.cell import Cell


class ReLU(Cell):
    """max(x, 0)."""

    def construct(self, x):
        return ops.relu(x)


class ReLU6(Cell):
    """min(max(x, 0), 6)."""

    def construct(self, x):
        return ops.relu6(x)


class LeakyReLU(Cell):
    """x if x > 0 else alpha * x."""

    def __init__(self, alpha=0.2):
        super().__init__()
        self.alpha = float(alpha)

    def construct(self, x):
        return ops.leaky_relu(x, alpha=self.alpha)

    def extend_repr(self):
        return f"alpha={self.alpha}"


class GELU(Cell):
    """x * Phi(x); approximate=True (MindSpore's default) uses the tanh form."""

    def __init__(self, approximate=True):
        super().__init__()
        self.approximate = "tanh" if approximate else "none"

    def construct(self, x):
        return ops.gelu(x, approximate=self.approximate)


class SiLU(Cell):
    """x * sigmoid(x)."""

    def construct(self, x):
        return ops.silu(x)


class Sigmoid(Cell):
    """1 / (1 + e**-x)."""

    def construct(self, x):
        return ops.sigmoid(x)


class Tanh(Cell):
    """Hyperbolic tangent."""

    def construct(self, x):
        return ops.tanh(x)


class Softmax(Cell):
    """exp(x) / sum(exp(x)) along `axis`."""

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = int(axis)

    def construct(self, x):
        return ops.softmax(x, axis=self.axis)


class LogSoftmax(Cell):
    """x - logsumexp(x) along `axis`."""

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = int(axis)

    def construct(self, x):
        return ops.log_softmax(x, axis=self.axis)


_ACTIVATIONS = {"relu": ReLU, "relu6": ReLU6, "leakyrelu": LeakyReLU, "gelu": GELU, "silu": SiLU,
                "sigmoid": Sigmoid, "tanh": Tanh, "softmax": Softmax, "logsoftmax": LogSoftmax}


def get_activation(name):
    """The activation Cell for `name` ("relu", "gelu", ...); a Cell or None is returned as is."""
    if name is None or isinstance(name, Cell):
        return name
    if not isinstance(name, str) or name.lower() not in _ACTIVATIONS:
        raise ValueError(f"get_activation: unknown activation {name!r}; expected one of {sorted(_ACTIVATIONS)}")
    return _ACTIVATIONS[name.lower()]()
