"""Loss scaling for low-precision training (MindSpore's FixedLossScaleUpdateCell,
DynamicLossScaleUpdateCell and TrainOneStepWithLossScaleCell).

The loss is multiplied by a scale before differentiation so that small gradients survive a
low-precision backward pass; the gradients are divided by it again before the update. When any
gradient is inf or nan the step is an overflow: the update is skipped and a dynamic scale shrinks.
"""
import numpy as np

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.parameter import Parameter, ParameterTuple
from mycel.common.tensor import Tensor
from mycel.nn.cell import Cell
from mycel.nn.wrap.cell_wrapper import TrainOneStepCell


def _positive_float(who, arg, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{who}: '{arg}' must be a number > 0, got {value!r}")
    return float(value)


class FixedLossScaleUpdateCell(Cell):
    """A constant loss scale: construct(loss_scale, overflow) changes nothing and returns overflow."""

    def __init__(self, loss_scale_value):
        super().__init__()
        self.loss_scale_value = _positive_float("FixedLossScaleUpdateCell", "loss_scale_value",
                                                loss_scale_value)

    def get_loss_scale(self):
        return self.loss_scale_value

    def construct(self, loss_scale, overflow):
        return overflow


class DynamicLossScaleUpdateCell(Cell):
    """A loss scale that adapts: on overflow it is divided by scale_factor (not below 1); after
    scale_window consecutive steps without overflow it is multiplied by scale_factor.
    construct(loss_scale, overflow) updates the loss_scale Parameter in place and returns overflow."""

    def __init__(self, loss_scale_value, scale_factor, scale_window):
        super().__init__()
        who = "DynamicLossScaleUpdateCell"
        self.loss_scale_value = _positive_float(who, "loss_scale_value", loss_scale_value)
        self.scale_factor = _positive_float(who, "scale_factor", scale_factor)
        if isinstance(scale_window, bool) or not isinstance(scale_window, int) or scale_window < 1:
            raise ValueError(f"{who}: 'scale_window' must be an int >= 1, got {scale_window!r}")
        self.scale_window = scale_window
        # Step counters as Parameters, so the update stays inside a compiled step.
        self.cur_iter = Parameter(Tensor(np.array(1, np.int32)), name="current_iterator_step",
                                  requires_grad=False)
        self.last_overflow_iter = Parameter(Tensor(np.array(0, np.int32)),
                                            name="last_overflow_iterator_step", requires_grad=False)

    def get_loss_scale(self):
        return self.loss_scale_value

    def construct(self, loss_scale, overflow):
        # Every branch is a select, so one program serves both outcomes.
        scale_on_overflow = ops.select(overflow, ops.maximum(loss_scale / self.scale_factor, 1.0),
                                       loss_scale)
        should_inc = ops.less_equal(self.scale_window, self.cur_iter - self.last_overflow_iter)
        restart_window = ops.logical_or(overflow, should_inc)
        ops.assign(self.last_overflow_iter,
                   ops.select(restart_window, self.cur_iter, self.last_overflow_iter))
        grow = ops.logical_and(should_inc, ops.logical_not(overflow))
        ops.assign(loss_scale, ops.select(grow, scale_on_overflow * self.scale_factor,
                                          scale_on_overflow))
        ops.assign(self.cur_iter, self.cur_iter + 1)
        return overflow


def _unscale(grads, scale):
    """Each gradient divided by the loss scale (in its own dtype)."""
    out = ()
    for g in grads:
        out = out + (g / ops.cast(scale, g.dtype),)
    return out


def _all_finite(grads):
    """A bool scalar: True when no gradient holds inf or nan."""
    finite = ops.all(ops.isfinite(grads[0]))
    for g in grads:
        finite = ops.logical_and(finite, ops.all(ops.isfinite(g)))
    return finite


class TrainOneStepWithLossScaleCell(TrainOneStepCell):
    """TrainOneStepCell with loss scaling. scale_sense is an update Cell (Fixed/Dynamic
    LossScaleUpdateCell, whose scale lives in the Parameter `scale_sense`) or a Tensor with a
    fixed scale. construct(*inputs) returns (loss, overflow, scale used this step).

    An overflowing step skips the optimizer: in graph mode `if not overflow` stays a run-time
    branch of the compiled step, and the update's writes happen only when it is taken."""

    def __init__(self, network, optimizer, scale_sense):
        super().__init__(network, optimizer, sens=1.0)
        who = "TrainOneStepWithLossScaleCell"
        if isinstance(scale_sense, Cell):
            self.loss_scaling_manager = scale_sense
            value = np.array(scale_sense.get_loss_scale(), np.float32)
        elif isinstance(scale_sense, Tensor):
            self.loss_scaling_manager = None
            value = scale_sense.asnumpy().astype(np.float32)
            if value.size != 1:
                raise ValueError(f"{who}: a Tensor 'scale_sense' must hold one value, got shape {value.shape}")
            value = value.reshape(())
        else:
            raise TypeError(f"{who}: 'scale_sense' must be a Cell or a Tensor, got {type(scale_sense).__name__}")
        self.has_manager = self.loss_scaling_manager is not None
        self.scale_sense = Parameter(Tensor(value), name="scale_sense", requires_grad=False)

    def set_sense_scale(self, sens):
        """Sets the loss scale (a Tensor or number)."""
        value = sens.asnumpy() if isinstance(sens, Tensor) else np.asarray(sens)
        ops.assign(self.scale_sense, Tensor(np.asarray(value, np.float32).reshape(())))

    def construct(self, *inputs):
        loss = self.network(*inputs)
        scaling_sens = self.scale_sense + 0.0  # this step's scale, read before the manager updates it
        sens = ops.ones_like(loss) * ops.cast(scaling_sens, loss.dtype)
        grads = self.grad(self.network, self.weights)(*inputs, sens)
        grads = _unscale(grads, scaling_sens)
        if self.reducer_flag:  # reduced first: a rank's inf reaches every rank, so all skip alike
            grads = self.grad_reducer(grads)
        overflow = ops.logical_not(_all_finite(grads))
        if self.has_manager:  # a Python bool: graph mode folds it
            overflow = self.loss_scaling_manager(self.scale_sense, overflow)
        if not overflow:  # a run-time branch: the update runs only for a finite step
            loss = ops.depend(loss, self.optimizer(grads))
        return loss, overflow, scaling_sens
