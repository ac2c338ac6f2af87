"""SGD with momentum, dampening and Nesterov momentum (MindSpore's nn.SGD)."""
import numpy as np

from mycel import ops
from mycel.common.parameter import Parameter, ParameterTuple
from mycel.common.tensor import Tensor
from mycel.nn.optim._checks import check_bool, check_float
from mycel.nn.optim.optimizer import Optimizer


class SGD(Optimizer):
    """v = momentum * v + (1 - dampening) * g (v = g on the first step);
    p -= lr * (g + momentum * v) with nesterov, else p -= lr * v. With momentum 0: p -= lr * g."""

    def __init__(self, params, learning_rate=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, loss_scale=1.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        who = "SGD"
        self.momentum = check_float(who, "momentum", momentum, low=0.0)
        self.dampening = check_float(who, "dampening", dampening, low=0.0)
        self.nesterov = check_bool(who, "nesterov", nesterov)
        if nesterov and (self.momentum <= 0.0 or self.dampening != 0.0):
            raise ValueError(f"{who}: nesterov=True needs momentum > 0 and dampening 0, got momentum "
                             f"{self.momentum} and dampening {self.dampening}")
        self.accum = self._clone_state("accum")
        # stat is 1 until a parameter's first step, when the momentum buffer starts as g itself.
        self.stat = self._register_state(ParameterTuple(
            Parameter(Tensor(np.ones((), np.float32)), name=f"stat.{p.name}", requires_grad=False)
            for p in self.parameters))

    def construct(self, gradients):
        step = self._next_step()
        if self.momentum == 0.0:
            for p, g, wd, lr_cell in zip(self.parameters, gradients, self._param_wd, self._param_lr_cells):
                ops.assign(p, self._in_dtype_of(p, p - self._lr(lr_cell, step) * self._grad(p, g, wd)))
            return True
        for p, g, v, first, wd, lr_cell in zip(self.parameters, gradients, self.accum, self.stat,
                                               self._param_wd, self._param_lr_cells):
            g = self._grad(p, g, wd)
            v_new = first * g + (1.0 - first) * (self.momentum * v + (1.0 - self.dampening) * g)
            if self.nesterov:
                update = g + self.momentum * v_new
            else:
                update = v_new
            ops.assign(v, v_new)
            ops.assign(first, first * 0.0)
            ops.assign(p, self._in_dtype_of(p, p - self._lr(lr_cell, step) * update))
        return True
