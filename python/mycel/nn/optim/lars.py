"""MindSpore's LARS (You et al., "Large batch training of convolutional networks"): wraps an
optimizer and rescales each selected parameter's gradient by a layer-wise trust ratio before
the optimizer applies it."""
from mycel import ops
from mycel.nn.cell import Cell
from mycel.nn.optim._checks import check_bool, check_float
from mycel.nn.optim.optimizer import Optimizer
from mycel.ops.operations.compat_ops4 import lars_gradient


def _default_filter(p):
    return "LayerNorm" not in p.name and "bias" not in p.name


class LARS(Cell):
    """For each parameter w with lars_filter(w) true: ratio = coefficient * |w| / (|g| +
    wd * |w| + epsilon) (1 where |w| or |g| is 0), with use_clip min(ratio / lr, 1); the gradient
    becomes ratio * (g + wd * w). wd is the wrapped optimizer's weight decay, which LARS takes
    over (the optimizer no longer adds it); the other parameters keep g + wd * w."""

    def __init__(self, optimizer, epsilon=1e-05, coefficient=0.001, use_clip=False, lars_filter=_default_filter):
        super().__init__(auto_prefix=False)
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"LARS: optimizer must be an nn.Optimizer, got {type(optimizer).__name__}")
        self.opt = optimizer
        self.epsilon = check_float("LARS", "epsilon", epsilon, low=0.0)
        self.coefficient = check_float("LARS", "coefficient", coefficient, low=0.0)
        self.use_clip = check_bool("LARS", "use_clip", use_clip)
        self.parameters = optimizer.parameters
        self.lars_flag = tuple(bool(lars_filter(p)) for p in self.parameters)
        self._wd = tuple(optimizer._param_wd)
        optimizer._param_wd = tuple(0.0 for _ in self._wd)  # LARS adds the decay itself
        optimizer.exec_weight_decay = False
        self._scale = optimizer.loss_scale

    def construct(self, gradients):
        step = self.opt.global_step
        new = ()
        for p, g, flag, wd, lr_cell in zip(self.parameters, gradients, self.lars_flag, self._wd,
                                           self.opt._param_lr_cells):
            g = g * (1.0 / self._scale)
            if flag:
                g = self._lars(p, g, wd, self.opt._lr(lr_cell, step))
            elif wd > 0.0:
                g = g + wd * p
            new = new + (g * self._scale,)
        return self.opt(new)

    def _lars(self, w, g, wd, lr):
        return lars_gradient(w, g, ops.sum(w * w), ops.sum(g * g), wd, lr, self.epsilon, self.coefficient,
                             self.use_clip)


__all__ = ["LARS"]
