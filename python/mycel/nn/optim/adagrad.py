"""Adagrad (MindSpore's nn.Adagrad)."""
from mycel import ops
from mycel.nn.optim._checks import check_bool, check_float
from mycel.nn.optim.optimizer import Optimizer


class Adagrad(Optimizer):
    """h += g^2 (when update_slots); p -= lr * g / sqrt(h). h starts at `accum`."""

    def __init__(self, params, accum=0.1, learning_rate=0.001, update_slots=True, loss_scale=1.0, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.initial_accum = check_float("Adagrad", "accum", accum, low=0.0)
        self.update_slots = check_bool("Adagrad", "update_slots", update_slots)
        self.accum = self._filled_state("accum", self.initial_accum)

    def construct(self, gradients):
        step = self._next_step()
        for p, g, h, wd, lr_cell in zip(self.parameters, gradients, self.accum, self._param_wd,
                                        self._param_lr_cells):
            g = self._grad(p, g, wd)
            h_new = h
            if self.update_slots:
                h_new = h + g * g
                ops.assign(h, h_new)
            ops.assign(p, self._in_dtype_of(p, p - self._lr(lr_cell, step) * g / ops.sqrt(h_new)))
        return True
