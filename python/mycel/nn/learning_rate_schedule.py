"""Learning-rate schedules as Cells (MindSpore's nn.learning_rate_schedule): `construct(global_step)`
returns the learning rate of that step as a float32 Tensor, so an optimizer can compute it inside
the compiled training step. `global_step` is the optimizer's int32 step counter (shape [1] or [])."""
import math

from mycel import ops
from mycel.common import dtype as mstype
from mycel.nn.cell import Cell


def _check_number(who, arg, value, positive=False, non_negative=False, integer=False):
    """Validates a hyper-parameter at construction; the message names the schedule and argument."""
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        want = "an int" if integer else "a float"
        raise TypeError(f"{who}: argument '{arg}' must be {want}, got {type(value).__name__} {value!r}")
    if positive and not value > 0:
        raise ValueError(f"{who}: argument '{arg}' must be > 0, got {value!r}")
    if non_negative and not value >= 0:
        raise ValueError(f"{who}: argument '{arg}' must be >= 0, got {value!r}")
    return float(value) if not integer else value


def _step_float(global_step):
    return ops.cast(global_step, mstype.float32)


class LearningRateSchedule(Cell):
    """Base class: subclasses define construct(global_step) -> learning-rate Tensor."""

    def __init__(self):
        super().__init__()

    def construct(self, global_step):
        raise NotImplementedError(f"{type(self).__name__}.construct(global_step) is not defined")


class _DecayLR(LearningRateSchedule):
    """Shared arguments of the exponential, natural-exponential and inverse decays."""

    def __init__(self, learning_rate, decay_rate, decay_steps, is_stair=False):
        super().__init__()
        who = type(self).__name__
        self.learning_rate = _check_number(who, "learning_rate", learning_rate, positive=True)
        self.decay_rate = _check_number(who, "decay_rate", decay_rate, positive=True)
        self.decay_steps = float(_check_number(who, "decay_steps", decay_steps, positive=True, integer=True))
        if not isinstance(is_stair, bool):
            raise TypeError(f"{who}: argument 'is_stair' must be a bool, got {type(is_stair).__name__}")
        self.is_stair = is_stair

    def _progress(self, global_step):
        p = _step_float(global_step) / self.decay_steps
        if self.is_stair:
            p = ops.floor(p)
        return p


class ExponentialDecayLR(_DecayLR):
    """lr * decay_rate ** p, p = step / decay_steps (floored when is_stair)."""

    def construct(self, global_step):
        return self.learning_rate * ops.exp(self._progress(global_step) * math.log(self.decay_rate))


class NaturalExpDecayLR(_DecayLR):
    """lr * exp(-decay_rate * p), p = step / decay_steps (floored when is_stair)."""

    def construct(self, global_step):
        return self.learning_rate * ops.exp(self._progress(global_step) * (-self.decay_rate))


class InverseDecayLR(_DecayLR):
    """lr / (1 + decay_rate * p), p = step / decay_steps (floored when is_stair)."""

    def construct(self, global_step):
        return self.learning_rate / (self._progress(global_step) * self.decay_rate + 1.0)


class CosineDecayLR(LearningRateSchedule):
    """min_lr + (max_lr - min_lr) * (1 + cos(pi * min(step, decay_steps) / decay_steps)) / 2."""

    def __init__(self, min_lr, max_lr, decay_steps):
        super().__init__()
        who = "CosineDecayLR"
        self.min_lr = _check_number(who, "min_lr", min_lr, non_negative=True)
        self.max_lr = _check_number(who, "max_lr", max_lr, positive=True)
        if self.min_lr >= self.max_lr:
            raise ValueError(f"{who}: argument 'min_lr' must be < max_lr ({self.max_lr}), got {self.min_lr}")
        self.decay_steps = float(_check_number(who, "decay_steps", decay_steps, positive=True, integer=True))

    def construct(self, global_step):
        p = ops.minimum(_step_float(global_step), self.decay_steps) / self.decay_steps
        return self.min_lr + (self.max_lr - self.min_lr) * 0.5 * (ops.cos(p * math.pi) + 1.0)


class PolynomialDecayLR(LearningRateSchedule):
    """(lr - end_lr) * (1 - step / decay_steps) ** power + end_lr, the step capped at decay_steps;
    with update_decay_steps the horizon grows instead to the next multiple of decay_steps."""

    def __init__(self, learning_rate, end_learning_rate, decay_steps, power, update_decay_steps=False):
        super().__init__()
        who = "PolynomialDecayLR"
        self.learning_rate = _check_number(who, "learning_rate", learning_rate, positive=True)
        self.end_learning_rate = _check_number(who, "end_learning_rate", end_learning_rate, non_negative=True)
        self.decay_steps = float(_check_number(who, "decay_steps", decay_steps, positive=True, integer=True))
        self.power = _check_number(who, "power", power, positive=True)
        if not isinstance(update_decay_steps, bool):
            raise TypeError(f"{who}: argument 'update_decay_steps' must be a bool, "
                            f"got {type(update_decay_steps).__name__}")
        self.update_decay_steps = update_decay_steps

    def construct(self, global_step):
        step = _step_float(global_step)
        if self.update_decay_steps:
            horizon = ops.maximum(ops.ceil(step / self.decay_steps), 1.0) * self.decay_steps
        else:
            step = ops.minimum(step, self.decay_steps)
            horizon = self.decay_steps
        base = 1.0 - step / horizon
        return (self.learning_rate - self.end_learning_rate) * ops.pow(base, self.power) + self.end_learning_rate


class WarmUpLR(LearningRateSchedule):
    """lr * min(step, warmup_steps) / warmup_steps."""

    def __init__(self, learning_rate, warmup_steps):
        super().__init__()
        who = "WarmUpLR"
        self.learning_rate = _check_number(who, "learning_rate", learning_rate, positive=True)
        self.warmup_steps = float(_check_number(who, "warmup_steps", warmup_steps, positive=True, integer=True))

    def construct(self, global_step):
        return self.learning_rate * ops.minimum(_step_float(global_step), self.warmup_steps) / self.warmup_steps


__all__ = ["LearningRateSchedule", "ExponentialDecayLR", "NaturalExpDecayLR", "InverseDecayLR",
           "CosineDecayLR", "PolynomialDecayLR", "WarmUpLR"]
