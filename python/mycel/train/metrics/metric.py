"""Metric base class. Metrics run outside the graph, on numpy copies of the outputs."""
import numpy as np

from mycel.common.tensor import Tensor


def to_numpy(x, who, arg):
    """A Tensor, numpy array or list as a numpy array."""
    if isinstance(x, Tensor):
        return x.asnumpy()
    if isinstance(x, (np.ndarray, list, tuple, int, float)):
        return np.asarray(x)
    raise TypeError(f"{who}.update: '{arg}' must be a Tensor, numpy array or list, got {type(x).__name__}")


class Metric:
    """clear() resets, update(*inputs) accumulates one batch, eval() returns the result."""

    def __init__(self):
        self.clear()

    def clear(self):
        raise NotImplementedError

    def update(self, *inputs):
        raise NotImplementedError

    def eval(self):
        raise NotImplementedError

    def _check_inputs(self, inputs, n):
        if len(inputs) != n:
            raise ValueError(f"{type(self).__name__}.update: expects {n} inputs, got {len(inputs)}")


def predicted_classes(y_pred, y, who):
    """(predicted class indices, true class indices): y_pred is scores (N, C) (argmax) and y is
    indices (N,) or one-hot (N, C)."""
    y_pred, y = to_numpy(y_pred, who, "y_pred"), to_numpy(y, who, "y")
    if y_pred.ndim != 2:
        raise ValueError(f"{who}.update: y_pred must be (N, C) scores, got shape {y_pred.shape}")
    if y.ndim == 2 and y.shape == y_pred.shape:
        y = y.argmax(axis=1)
    if y.ndim != 1 or y.shape[0] != y_pred.shape[0]:
        raise ValueError(f"{who}.update: y must be (N,) indices or (N, C) one-hot matching y_pred {y_pred.shape}, "
                         f"got shape {y.shape}")
    return y_pred.argmax(axis=1), y.astype(np.int64)
