"""More of MindSpore's optimizers: Adadelta, AdaMax, Rprop, ProximalAdagrad, FTRL, ASGD and
LazyAdam (Adam itself for dense gradients). Each follows the primitive MindSpore runs
(ApplyAdadelta, ApplyAdaMax, ApplyProximalAdagrad, ApplyFtrl) or PyTorch's algorithm where
MindSpore took it from there (Rprop, ASGD)."""
from mycel import ops
from mycel.nn.optim._checks import check_float
from mycel.nn.optim.adam import Adam
from mycel.nn.optim.optimizer import Optimizer


class Adadelta(Optimizer):
    """accum = rho accum + (1 - rho) g^2; update = sqrt(accum_update + eps) / sqrt(accum + eps) g;
    accum_update = rho accum_update + (1 - rho) update^2; p -= lr update."""

    def __init__(self, params, learning_rate=1.0, rho=0.9, epsilon=1e-6, loss_scale=1.0, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.rho = check_float("Adadelta", "rho", rho, low=0.0, high=1.0)
        self.epsilon = check_float("Adadelta", "epsilon", epsilon, low=0.0)
        self.accum = self._clone_state("accum")
        self.accum_update = self._clone_state("accum_update")

    def construct(self, gradients):
        step = self._next_step()
        for p, g, a, u, wd, lr_cell in zip(self.parameters, gradients, self.accum, self.accum_update,
                                           self._param_wd, self._param_lr_cells):
            g = self._grad(p, g, wd)
            a_new = self.rho * a + (1.0 - self.rho) * g * g
            update = ops.sqrt(u + self.epsilon) / ops.sqrt(a_new + self.epsilon) * g
            ops.assign(a, a_new)
            ops.assign(u, self.rho * u + (1.0 - self.rho) * update * update)
            ops.assign(p, self._in_dtype_of(p, p - self._lr(lr_cell, step) * update))
        return True


class AdaMax(Optimizer):
    """m = b1 m + (1 - b1) g; v = max(b2 v, |g|); p -= lr / (1 - b1^t) m / (v + eps)."""

    def __init__(self, params, learning_rate=0.001, beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0.0,
                 loss_scale=1.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.beta1 = check_float("AdaMax", "beta1", beta1, low=0.0, high=1.0)
        self.beta2 = check_float("AdaMax", "beta2", beta2, low=0.0, high=1.0)
        self.eps = check_float("AdaMax", "eps", eps, low=0.0)
        self.beta1_power = self._scalar_state("beta1_power", 1.0)
        self.moment1 = self._clone_state("moment1")
        self.moment2 = self._clone_state("moment2")

    def construct(self, gradients):
        step = self._next_step()
        b1p = self.beta1_power * self.beta1
        ops.assign(self.beta1_power, b1p)
        for p, g, m, v, wd, lr_cell in zip(self.parameters, gradients, self.moment1, self.moment2,
                                           self._param_wd, self._param_lr_cells):
            g = self._grad(p, g, wd)
            m_new = self.beta1 * m + (1.0 - self.beta1) * g
            v_new = ops.maximum(self.beta2 * v, ops.abs(g))
            ops.assign(m, m_new)
            ops.assign(v, v_new)
            lr = self._lr(lr_cell, step) / (1.0 - b1p)
            ops.assign(p, self._in_dtype_of(p, p - lr * m_new / (v_new + self.eps)))
        return True


class Rprop(Optimizer):
    """Resilient backpropagation: each weight's step grows by etas[1] while its gradient keeps its
    sign and shrinks by etas[0] when it flips (then that step is skipped), within step_sizes;
    p -= sign(g) * step. Steps start at the learning rate."""

    def __init__(self, params, learning_rate=0.1, etas=(0.5, 1.2), step_sizes=(1e-6, 50.0), weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay)
        etaminus, etaplus = (check_float("Rprop", "etas", e, low=0.0) for e in etas)
        if not etaminus < 1.0 < etaplus:
            raise ValueError(f"Rprop: etas must be (etaminus < 1, etaplus > 1), got {etas!r}")
        self.etaminus, self.etaplus = etaminus, etaplus
        self.step_min, self.step_max = (float(s) for s in step_sizes)
        if not 0.0 <= self.step_min <= self.step_max:
            raise ValueError(f"Rprop: step_sizes must be (min, max) with 0 <= min <= max, got {step_sizes!r}")
        self.prev = self._clone_state("prev")
        self.step_size = self._clone_state("step_size")
        for s, lr_cell in zip(self.step_size, self._param_lr_cells):  # each group's lr
            s.set_data(s.asnumpy() + float(lr_cell(self.global_step).asnumpy().reshape(())))

    def construct(self, gradients):
        for p, g, prev, s, wd in zip(self.parameters, gradients, self.prev, self.step_size, self._param_wd):
            g = self._grad(p, g, wd)
            same = g * prev
            scale = ops.select(ops.greater(same, 0.0), ops.full_like(g, self.etaplus),
                               ops.select(ops.less(same, 0.0), ops.full_like(g, self.etaminus), ops.ones_like(g)))
            s_new = ops.clip_by_value(s * scale, self.step_min, self.step_max)
            g = ops.select(ops.less(same, 0.0), ops.zeros_like(g), g)
            ops.assign(s, s_new)
            ops.assign(prev, g)
            ops.assign(p, self._in_dtype_of(p, p - ops.sign(g) * s_new))
        return True


class ProximalAdagrad(Optimizer):
    """accum += g^2; lr_t = lr / sqrt(accum); v = p - lr_t g;
    p = sign(v) max(|v| - lr_t l1, 0) / (1 + lr_t l2)."""

    def __init__(self, params, accum=0.1, learning_rate=0.001, l1=0.0, l2=0.0, use_locking=False,
                 loss_scale=1.0, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.initial_accum = check_float("ProximalAdagrad", "accum", accum, low=0.0)
        self.l1 = check_float("ProximalAdagrad", "l1", l1, low=0.0)
        self.l2 = check_float("ProximalAdagrad", "l2", l2, low=0.0)
        self.accum = self._filled_state("accum", self.initial_accum)

    def construct(self, gradients):
        step = self._next_step()
        for p, g, h, wd, lr_cell in zip(self.parameters, gradients, self.accum, self._param_wd,
                                        self._param_lr_cells):
            g = self._grad(p, g, wd)
            h_new = h + g * g
            ops.assign(h, h_new)
            lr_t = self._lr(lr_cell, step) / ops.sqrt(h_new)
            v = p - lr_t * g
            shrunk = ops.sign(v) * ops.relu(ops.abs(v) - lr_t * self.l1) / (1.0 + lr_t * self.l2)
            ops.assign(p, self._in_dtype_of(p, shrunk))
        return True


class FTRL(Optimizer):
    """Follow-the-regularized-leader (ApplyFtrl): accum' = accum + g^2;
    linear += g - (accum'^-lr_power - accum^-lr_power) / lr * p;
    p = (sign(linear) l1 - linear) / (accum'^-lr_power / lr + 2 l2) where |linear| > l1, else 0."""

    def __init__(self, params, initial_accum=0.1, learning_rate=0.001, lr_power=-0.5, l1=0.0, l2=0.0,
                 use_locking=False, loss_scale=1.0, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.initial_accum = check_float("FTRL", "initial_accum", initial_accum, low=0.0)
        self.lr_power = float(lr_power)
        if self.lr_power > 0:
            raise ValueError(f"FTRL: lr_power must be <= 0, got {lr_power!r}")
        self.l1 = check_float("FTRL", "l1", l1, low=0.0)
        self.l2 = check_float("FTRL", "l2", l2, low=0.0)
        self.moments = self._filled_state("moments", self.initial_accum)
        self.linear = self._clone_state("linear")

    def construct(self, gradients):
        step = self._next_step()
        for p, g, a, lin, wd, lr_cell in zip(self.parameters, gradients, self.moments, self.linear,
                                             self._param_wd, self._param_lr_cells):
            g = self._grad(p, g, wd)
            lr = self._lr(lr_cell, step)
            a_new = a + g * g
            pw_new = ops.pow(a_new, -self.lr_power)
            lin_new = lin + g - (pw_new - ops.pow(a, -self.lr_power)) / lr * p
            quadratic = pw_new / lr + 2.0 * self.l2
            p_new = ops.select(ops.greater(ops.abs(lin_new), self.l1),
                               (ops.sign(lin_new) * self.l1 - lin_new) / quadratic, ops.zeros_like(p))
            ops.assign(a, a_new)
            ops.assign(lin, lin_new)
            ops.assign(p, self._in_dtype_of(p, p_new))
        return True


class ASGD(Optimizer):
    """Averaged SGD (PyTorch's algorithm, which MindSpore follows): p *= 1 - lambd eta;
    p -= eta g; ax averages p from step t0 on; eta = lr / (1 + lambd lr t)^alpha,
    mu = 1 / max(1, t - t0)."""

    def __init__(self, params, learning_rate=0.1, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay)
        self.lambd = check_float("ASGD", "lambd", lambd, low=0.0)
        self.alpha = check_float("ASGD", "alpha", alpha, low=0.0)
        self.t0 = check_float("ASGD", "t0", t0, low=0.0)
        self.ax = self._clone_state("ax")
        lr0 = float(self._param_lr_cells[0](self.global_step).asnumpy().reshape(()))
        self.eta = self._scalar_state("eta", lr0)
        self.mu = self._scalar_state("mu", 1.0)
        self.step_t = self._scalar_state("step_t", 0.0)

    def construct(self, gradients):
        step = self._next_step()
        t = self.step_t + 1.0
        ops.assign(self.step_t, t)
        eta, mu = self.eta, self.mu
        for p, g, ax, wd in zip(self.parameters, gradients, self.ax, self._param_wd):
            g = self._grad(p, g, wd)
            p_new = p * (1.0 - self.lambd * eta) - eta * g
            ops.assign(p, self._in_dtype_of(p, p_new))
            ops.assign(ax, ax + (p_new - ax) * mu)  # mu = 1 until t0: ax follows p
        lr = self._lr(self._param_lr_cells[0], step)
        ops.assign(self.eta, lr / ops.pow(1.0 + self.lambd * lr * t, self.alpha))
        ops.assign(self.mu, 1.0 / ops.maximum(t - self.t0, 1.0))
        return True


class LazyAdam(Adam):
    """MindSpore's LazyAdam updates only the rows a sparse gradient touches; with the dense
    gradients Mycel's autodiff gives, that is every row, i.e. Adam."""


__all__ = ["Adadelta", "AdaMax", "Rprop", "ProximalAdagrad", "FTRL", "ASGD", "LazyAdam"]
