"""mindspore.mint.nn: PyTorch-style layers (constructor arguments as PyTorch's: in_features,
out_features, bias, p, dim) built on mycel.nn's layers and mint.nn.functional."""
from mycel import nn as _nn
from mycel.mint.nn import functional as _F
from mycel.nn import Cell as _Cell

Identity, ReLU, SiLU, Sigmoid, Tanh, Flatten = _nn.Identity, _nn.ReLU, _nn.SiLU, _nn.Sigmoid, _nn.Tanh, _nn.Flatten
Hardswish = getattr(_nn, "HSwish")


class Linear(_nn.Dense):
    """y = x @ W.T + b, W of shape (out_features, in_features) (MindSpore's Dense underneath)."""

    def __init__(self, in_features, out_features, bias=True, weight_init=None, bias_init=None, dtype=None):
        kw = {} if dtype is None else {"dtype": dtype}
        super().__init__(in_features, out_features, weight_init=weight_init, bias_init=bias_init,
                         has_bias=bias, **kw)
        self.in_features, self.out_features = in_features, out_features


class Dropout(_Cell):
    """Zeroes each element with probability p in training (scaling the rest by 1 / (1 - p))."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p!r}")
        self.p = float(p)
        self.inner = _nn.Dropout(p=self.p) if 0.0 < self.p < 1.0 else None

    def construct(self, x):
        if not self.training or self.p == 0.0:
            return x
        if self.inner is None:
            return x * 0.0
        return self.inner(x)


class GELU(_Cell):
    """gelu, exact ('none') or with the tanh approximation."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def construct(self, x):
        return _F.gelu(x, self.approximate)


class Softmax(_Cell):
    """softmax along dim."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def construct(self, x):
        return _F.softmax(x, self.dim)


class LogSoftmax(_Cell):
    """log_softmax along dim."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def construct(self, x):
        return _F.log_softmax(x, self.dim)


class CrossEntropyLoss(_nn.CrossEntropyLoss):
    """Cross entropy of logits against class indices or probabilities (PyTorch's arguments)."""


class MSELoss(_Cell):
    """(input - target)^2, reduced."""

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def construct(self, input, target):
        return _F.mse_loss(input, target, self.reduction)


class L1Loss(_Cell):
    """|input - target|, reduced."""

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def construct(self, input, target):
        return _F.l1_loss(input, target, self.reduction)


class BCEWithLogitsLoss(_Cell):
    """Binary cross entropy on logits (weight, pos_weight as PyTorch's)."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__()
        self.weight, self.reduction, self.pos_weight = weight, reduction, pos_weight

    def construct(self, input, target):
        return _F.binary_cross_entropy_with_logits(input, target, self.weight, self.pos_weight, self.reduction)


__all__ = ["Identity", "ReLU", "SiLU", "Sigmoid", "Tanh", "Flatten", "Hardswish", "Linear", "Dropout",
           "GELU", "Softmax", "LogSoftmax", "CrossEntropyLoss", "MSELoss", "L1Loss", "BCEWithLogitsLoss",
           "functional"]
