"""mindspore.mint.nn: PyTorch-style layers (constructor arguments as PyTorch's: in_features,
out_features, bias, p, dim) built on mycel.nn's layers and mint.nn.functional."""
from mycel import nn as _nn
from mycel import ops as _ops
from mycel.mint.nn import functional as _F
from mycel.nn import Cell as _Cell

Identity, ReLU, SiLU, Sigmoid, Tanh, Flatten = _nn.Identity, _nn.ReLU, _nn.SiLU, _nn.Sigmoid, _nn.Tanh, _nn.Flatten
Hardswish = getattr(_nn, "HSwish")


Linear = _nn.Linear
Dropout = _nn.DropoutExt


class GELU(_Cell):
    """gelu, exact ('none') or with the tanh approximation."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def construct(self, x):
        return _F.gelu(x, self.approximate)


class GLU(_Cell):
    """The gated linear unit: x's halves a, b along dim, a * sigmoid(b)."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def construct(self, x):
        return _ops.glu(x, self.dim)


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
           "GELU", "GLU", "Softmax", "LogSoftmax", "CrossEntropyLoss", "MSELoss", "L1Loss", "BCEWithLogitsLoss",
           "functional"]
