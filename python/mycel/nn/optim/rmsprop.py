"""RMSProp (MindSpore's nn.RMSProp), plain or centered."""
from mycel import ops
from mycel.nn.optim._checks import check_bool, check_float
from mycel.nn.optim.optimizer import Optimizer


class RMSProp(Optimizer):
    """s = decay s + (1-decay) g^2; mom = momentum mom + lr g / sqrt(s + eps); p -= mom.
    centered: also gm = decay gm + (1-decay) g and the denominator is sqrt(s - gm^2 + eps).
    mean_square starts at ones, as in MindSpore."""

    def __init__(self, params, learning_rate=0.1, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking=False,
                 centered=False, loss_scale=1.0, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        who = "RMSProp"
        self.decay = check_float(who, "decay", decay, low=0.0)
        self.momentum = check_float(who, "momentum", momentum, low=0.0)
        self.epsilon = check_float(who, "epsilon", epsilon, low=0.0, low_inclusive=False)
        check_bool(who, "use_locking", use_locking)
        self.centered = check_bool(who, "centered", centered)
        self.mean_square = self._clone_state("mean_square", init="ones")
        self.moment = self._clone_state("moment")
        self.mean_grad = self._clone_state("mean_grad") if centered else self.moment

    def construct(self, gradients):
        step = self._next_step()
        for p, g, s, mom, gm, wd, lr_cell in zip(self.parameters, gradients, self.mean_square, self.moment,
                                                 self.mean_grad, self._param_wd, self._param_lr_cells):
            g = self._grad(p, g, wd)
            s_new = self.decay * s + (1.0 - self.decay) * g * g
            ops.assign(s, s_new)
            denom = s_new + self.epsilon
            if self.centered:
                gm_new = self.decay * gm + (1.0 - self.decay) * g
                ops.assign(gm, gm_new)
                denom = denom - gm_new * gm_new
            mom_new = self.momentum * mom + self._lr(lr_cell, step) * g / ops.sqrt(denom)
            ops.assign(mom, mom_new)
            ops.assign(p, self._in_dtype_of(p, p - mom_new))
        return True
