"""Momentum (MindSpore's nn.Momentum): heavy-ball SGD with optional Nesterov."""
from mycel import ops
from mycel.nn.optim._checks import check_bool, check_float
from mycel.nn.optim.optimizer import Optimizer


class Momentum(Optimizer):
    """v = momentum * v + g; p -= lr * (g + momentum * v) with use_nesterov, else p -= lr * v."""

    def __init__(self, params, learning_rate, momentum, weight_decay=0.0, loss_scale=1.0, use_nesterov=False):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.momentum = check_float("Momentum", "momentum", momentum, low=0.0)
        self.use_nesterov = check_bool("Momentum", "use_nesterov", use_nesterov)
        self.moments = self._clone_state("moments")

    def construct(self, gradients):
        step = self._next_step()
        for p, g, v, wd, lr_cell in zip(self.parameters, gradients, self.moments, self._param_wd,
                                        self._param_lr_cells):
            g = self._grad(p, g, wd)
            v_new = self.momentum * v + g
            if self.use_nesterov:
                update = g + self.momentum * v_new
            else:
                update = v_new
            ops.assign(v, v_new)
            ops.assign(p, self._in_dtype_of(p, p - self._lr(lr_cell, step) * update))
        return True
