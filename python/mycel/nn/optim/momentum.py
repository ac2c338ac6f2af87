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
        gradients = self.scale_grad(self.decay_weight(gradients))
        lrs = self._lr_per_param(self.get_lr())
        for p, g, v, lr in zip(self.parameters, gradients, self.moments, lrs):
            v_new = self.momentum * v + g
            if self.use_nesterov:
                step = g + self.momentum * v_new
            else:
                step = v_new
            ops.assign(v, v_new)
            ops.assign(p, p - lr * step)
        return True
