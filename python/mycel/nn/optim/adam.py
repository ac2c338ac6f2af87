"""Adam (L2 weight decay on the gradient) and AdamOffload (the same update), AdamWeightDecay
(decoupled decay, no bias correction) and AdamW (decoupled decay with bias correction), as
MindSpore and PyTorch define them."""
from mycel import ops
from mycel.nn.optim._checks import check_bool, check_float
from mycel.nn.optim.optimizer import Optimizer


def _check_betas(who, beta1, beta2, eps):
    return (check_float(who, "beta1", beta1, 0.0, 1.0, False, False),
            check_float(who, "beta2", beta2, 0.0, 1.0, False, False),
            check_float(who, "eps", eps, low=0.0, low_inclusive=False))


class Adam(Optimizer):
    """m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; lr_t = lr sqrt(1-b2^t) / (1-b1^t);
    p -= lr_t m / (sqrt(v) + eps). use_nesterov uses b1 m + (1-b1) g for m; use_amsgrad uses
    the running max of v. weight_decay adds wd * p to g."""

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, use_locking=False,
                 use_nesterov=False, weight_decay=0.0, loss_scale=1.0, use_amsgrad=False, **kwargs):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        who = type(self).__name__  # AdamOffload's errors name it
        self.beta1, self.beta2, self.eps = _check_betas(who, beta1, beta2, eps)
        check_bool(who, "use_locking", use_locking)
        self.use_nesterov = check_bool(who, "use_nesterov", use_nesterov)
        self.use_amsgrad = check_bool(who, "use_amsgrad", use_amsgrad)
        if use_nesterov and use_amsgrad:
            raise ValueError(f"{who}: use_nesterov and use_amsgrad cannot both be True")
        # MindSpore's use_lazy (LazyAdam for sparse gradients) and use_offload (AdamOffload):
        # with dense gradients both are this update.
        unknown = set(kwargs) - {"use_lazy", "use_offload"}
        if unknown:
            raise KeyError(f"{who}: unexpected keyword arguments {sorted(unknown)}; the extra ones "
                           "supported are 'use_lazy' and 'use_offload'")
        self.use_lazy = check_bool(who, "use_lazy", kwargs.get("use_lazy", False))
        self.use_offload = check_bool(who, "use_offload", kwargs.get("use_offload", False))
        if self.use_lazy and self.use_offload:
            raise ValueError(f"{who}: use_lazy and use_offload cannot both be True")
        if use_amsgrad and (self.use_lazy or self.use_offload):
            raise ValueError(f"{who}: use_amsgrad cannot be combined with use_lazy or use_offload")
        self.beta1_power = self._scalar_state("beta1_power", 1.0)
        self.beta2_power = self._scalar_state("beta2_power", 1.0)
        self.moment1 = self._clone_state("moment1")
        self.moment2 = self._clone_state("moment2")
        self.vhat = self._clone_state("vhat") if use_amsgrad else self.moment2

    def construct(self, gradients):
        step = self._next_step()
        b1p = self.beta1_power * self.beta1
        b2p = self.beta2_power * self.beta2
        ops.assign(self.beta1_power, b1p)
        ops.assign(self.beta2_power, b2p)
        correction = ops.sqrt(1.0 - b2p) / (1.0 - b1p)
        for p, g, m, v, vmax, wd, lr_cell in zip(self.parameters, gradients, self.moment1, self.moment2,
                                                 self.vhat, self._param_wd, self._param_lr_cells):
            g = self._grad(p, g, wd)
            m_new = self.beta1 * m + (1.0 - self.beta1) * g
            v_new = self.beta2 * v + (1.0 - self.beta2) * g * g
            ops.assign(m, m_new)
            ops.assign(v, v_new)
            if self.use_amsgrad:
                v_new = ops.maximum(vmax, v_new)
                ops.assign(vmax, v_new)
            if self.use_nesterov:
                m_new = self.beta1 * m_new + (1.0 - self.beta1) * g
            step_size = self._lr(lr_cell, step) * correction
            ops.assign(p, self._in_dtype_of(p, p - step_size * m_new / (ops.sqrt(v_new) + self.eps)))
        return True


class AdamOffload(Adam):
    """Adam with the same update (MindSpore runs it on the host CPU to save device memory; on
    Mycel's CPU that is where every optimizer runs). No use_amsgrad, as in MindSpore."""

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, use_locking=False,
                 use_nesterov=False, weight_decay=0.0, loss_scale=1.0):
        super().__init__(params, learning_rate, beta1, beta2, eps, use_locking, use_nesterov,
                         weight_decay, loss_scale)


class AdamWeightDecay(Optimizer):
    """m and v as in Adam, no bias correction; p -= lr * (m / (sqrt(v) + eps) + wd * p)."""

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-6, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay)
        self.beta1, self.beta2, self.eps = _check_betas("AdamWeightDecay", beta1, beta2, eps)
        self.moments1 = self._clone_state("adam_m")
        self.moments2 = self._clone_state("adam_v")

    def construct(self, gradients):
        step = self._next_step()
        for p, g, m, v, wd, lr_cell in zip(self.parameters, gradients, self.moments1, self.moments2,
                                           self._param_wd, self._param_lr_cells):
            m_new = self.beta1 * m + (1.0 - self.beta1) * g
            v_new = self.beta2 * v + (1.0 - self.beta2) * g * g
            update = self._decoupled(m_new / (ops.sqrt(v_new) + self.eps), p, wd)
            ops.assign(m, m_new)
            ops.assign(v, v_new)
            ops.assign(p, self._in_dtype_of(p, p - self._lr(lr_cell, step) * update))
        return True


class AdamW(Optimizer):
    """Decoupled weight decay with bias correction (Loshchilov & Hutter): p *= 1 - lr * wd;
    p -= lr * m_hat / (sqrt(v_hat) + eps), m_hat = m / (1-b1^t), v_hat = v / (1-b2^t)."""

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2,
                 loss_scale=1.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.beta1, self.beta2, self.eps = _check_betas("AdamW", beta1, beta2, eps)
        self.beta1_power = self._scalar_state("beta1_power", 1.0)
        self.beta2_power = self._scalar_state("beta2_power", 1.0)
        self.moment1 = self._clone_state("moment1")
        self.moment2 = self._clone_state("moment2")

    def construct(self, gradients):
        step = self._next_step()
        b1p = self.beta1_power * self.beta1
        b2p = self.beta2_power * self.beta2
        ops.assign(self.beta1_power, b1p)
        ops.assign(self.beta2_power, b2p)
        for p, g, m, v, wd, lr_cell in zip(self.parameters, gradients, self.moment1, self.moment2,
                                           self._param_wd, self._param_lr_cells):
            g = self._unscale(g)
            lr = self._lr(lr_cell, step)
            m_new = self.beta1 * m + (1.0 - self.beta1) * g
            v_new = self.beta2 * v + (1.0 - self.beta2) * g * g
            ops.assign(m, m_new)
            ops.assign(v, v_new)
            update = (m_new / (1.0 - b1p)) / (ops.sqrt(v_new / (1.0 - b2p)) + self.eps)
            ops.assign(p, self._in_dtype_of(p, p - lr * self._decoupled(update, p, wd)))
        return True
