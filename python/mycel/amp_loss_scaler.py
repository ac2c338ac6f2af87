"""MindSpore's functional loss scaling (mindspore.amp): all_finite, StaticLossScaler and
DynamicLossScaler. The scale and the step counter are Parameters updated with ops.assign, so a
training step that calls them works eagerly and inside @jit / graph mode alike."""
import numpy as np

from mycel import _mycel
from mycel.common.dtype import float32, int32
from mycel.common.parameter import Parameter
from mycel.ops.effects import assign

_ops = _mycel.ops


def _as_tuple(inputs):
    return inputs if isinstance(inputs, tuple) else (inputs,)


def all_finite(inputs):
    """A 0-d bool Tensor: whether every element of the tensor(s) is finite (no inf, no NaN)."""
    ok = _ops.fill(_mycel.dtype.bool, (), 1)
    for x in _as_tuple(inputs):
        ok = _ops.logical_and(ok, _ops.all(_ops.isfinite(x)))
    return ok


def _scale_all(inputs, factor):
    if isinstance(inputs, tuple):
        out = ()
        for x in inputs:
            out = out + (x * _ops.cast(factor, x.dtype),)
        return out
    return inputs * _ops.cast(factor, inputs.dtype)


class LossScaler:
    """Base: scale(inputs) multiplies by the scale, unscale(inputs) divides by it."""

    def scale(self, inputs):
        """inputs (a tensor or a tuple of them) times the loss scale."""
        return _scale_all(inputs, self.scale_value)

    def unscale(self, inputs):
        """inputs divided by the loss scale."""
        return _scale_all(inputs, 1.0 / self.scale_value)

    def adjust(self, grads_finite):
        """Updates the scale after a step (see the subclasses)."""
        raise NotImplementedError


class StaticLossScaler(LossScaler):
    """A fixed loss scale."""

    def __init__(self, scale_value):
        if not isinstance(scale_value, (int, float)) or scale_value <= 0:
            raise ValueError(f"StaticLossScaler: scale_value must be a positive number, got {scale_value!r}")
        self.scale_value = Parameter(_mycel.Tensor(np.array(scale_value, np.float32)), name="scale_value",
                                     requires_grad=False)

    def adjust(self, grads_finite):
        """A static scale never changes."""
        return False


class DynamicLossScaler(LossScaler):
    """A loss scale divided by scale_factor after a step with non-finite gradients (not below
    1) and multiplied by it after scale_window finite steps in a row, as MindSpore's."""

    def __init__(self, scale_value, scale_factor, scale_window):
        if not isinstance(scale_value, (int, float)) or scale_value <= 0:
            raise ValueError(f"DynamicLossScaler: scale_value must be a positive number, got {scale_value!r}")
        if not isinstance(scale_factor, (int, float)) or scale_factor <= 1:
            raise ValueError(f"DynamicLossScaler: scale_factor must be a number > 1, got {scale_factor!r}")
        if not isinstance(scale_window, int) or scale_window < 1:
            raise ValueError(f"DynamicLossScaler: scale_window must be a positive int, got {scale_window!r}")
        self.scale_value = Parameter(_mycel.Tensor(np.array(scale_value, np.float32)), name="scale_value",
                                     requires_grad=False)
        self.scale_factor = float(scale_factor)
        self.scale_window = scale_window
        self.counter = Parameter(_mycel.Tensor(np.array(0, np.int32)), name="counter", requires_grad=False)

    def adjust(self, grads_finite):
        """Grows or shrinks the scale from this step's finiteness (a 0-d bool Tensor)."""
        grown = self.scale_value * self.scale_factor
        at_window = _ops.equal(self.counter, self.scale_window - 1)
        finite_scale = _ops.select(_ops.logical_and(at_window, _ops.isfinite(grown)), grown, self.scale_value)
        shrunk = _ops.maximum(self.scale_value / self.scale_factor, _ops.ones((), float32))
        new_scale = _ops.select(grads_finite, finite_scale, shrunk)
        new_counter = _ops.select(grads_finite, (self.counter + 1) % self.scale_window,
                                  _ops.zeros((), int32))
        assign(self.scale_value, new_scale)
        assign(self.counter, new_counter)
        return True
