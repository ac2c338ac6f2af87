"""MindSpore's optimizer primitives (ApplyMomentum, ApplyAdagrad, ApplyRMSProp, Adam, ...): each
updates its Parameter arguments in place with ops.assign and returns them, as MindSpore's do, so
custom optimizers written on the primitives run. The formulas are the ones MindSpore documents
for each primitive; hyper-parameters may be Python numbers or tensors."""
import mycel.ops as _P  # ops.assign; the package is still loading when this module is imported
from mycel import _mycel
from mycel.ops.operations.compat_ops import _Composite

_ops = _mycel.ops


def _assign(param, value):
    return _P.assign(param, _ops.cast(value, param.dtype) if value.dtype != param.dtype else value)


class ApplyGradientDescent(_Composite):
    """var -= alpha * delta."""

    def _call(self, var, alpha, delta):
        return _assign(var, var - alpha * delta)


class ApplyProximalGradientDescent(_Composite):
    """prox_v = var - alpha * delta; var = sign(prox_v) max(|prox_v| - alpha l1, 0) / (1 + alpha l2)."""

    def _call(self, var, alpha, l1, l2, delta):
        v = var - alpha * delta
        return _assign(var, _ops.sign(v) * _ops.relu(_ops.abs(v) - alpha * l1) / (1.0 + alpha * l2))


class ApplyMomentum(_Composite):
    """accum = accum * momentum + grad; var -= lr * accum (Nesterov: lr * (grad + momentum * accum))."""

    def __init__(self, use_nesterov=False, use_locking=False, gradient_scale=1.0):
        super().__init__(use_nesterov=bool(use_nesterov), gradient_scale=float(gradient_scale))

    def _call(self, variable, accumulation, learning_rate, gradient, momentum):
        g = gradient * self.gradient_scale if self.gradient_scale != 1.0 else gradient
        acc = accumulation * momentum + g
        _assign(accumulation, acc)
        step = (g + momentum * acc) if self.use_nesterov else acc
        return _assign(variable, variable - learning_rate * step)


class SGD(_Composite):
    """MindSpore's SGD primitive: accum = momentum accum + (1 - dampening) g (g + wd p first;
    accum = g on the first step, stat 1 -> 0); p -= lr (g + momentum accum) with nesterov, else lr accum."""

    def __init__(self, dampening=0.0, weight_decay=0.0, nesterov=False):
        super().__init__(dampening=float(dampening), weight_decay=float(weight_decay), nesterov=bool(nesterov))

    def _call(self, parameters, gradient, learning_rate, accum, momentum, stat):
        g = gradient + self.weight_decay * parameters if self.weight_decay else gradient
        first = _ops.greater(stat, 0.0)
        acc = _ops.select(_ops.broadcast_to(first, g.shape), g, momentum * accum + (1.0 - self.dampening) * g)
        _assign(accum, acc)
        _assign(stat, _ops.zeros_like(stat))
        step = g + momentum * acc if self.nesterov else acc
        return _assign(parameters, parameters - learning_rate * step)


class ApplyAdagrad(_Composite):
    """accum += grad^2 (update_slots); var -= lr grad / sqrt(accum)."""

    def __init__(self, update_slots=True):
        super().__init__(update_slots=bool(update_slots))

    def _call(self, var, accum, lr, grad):
        acc = accum + grad * grad if self.update_slots else accum
        _assign(accum, acc)
        return _assign(var, var - lr * grad / _ops.sqrt(acc)), accum


class ApplyAdagradV2(_Composite):
    """accum += grad^2 (update_slots); var -= lr grad / (sqrt(accum) + epsilon)."""

    def __init__(self, epsilon, update_slots=True):
        super().__init__(epsilon=float(epsilon), update_slots=bool(update_slots))

    def _call(self, var, accum, lr, grad):
        acc = accum + grad * grad if self.update_slots else accum
        _assign(accum, acc)
        return _assign(var, var - lr * grad / (_ops.sqrt(acc) + self.epsilon)), accum


class ApplyProximalAdagrad(_Composite):
    """accum += grad^2; lr_t = lr / sqrt(accum); prox_v = var - lr_t grad;
    var = sign(prox_v) max(|prox_v| - lr_t l1, 0) / (1 + lr_t l2)."""

    def _call(self, var, accum, lr, l1, l2, grad):
        acc = accum + grad * grad
        _assign(accum, acc)
        lr_t = lr / _ops.sqrt(acc)
        v = var - lr_t * grad
        return _assign(var, _ops.sign(v) * _ops.relu(_ops.abs(v) - lr_t * l1) / (1.0 + lr_t * l2)), accum


class ApplyRMSProp(_Composite):
    """ms = decay ms + (1 - decay) grad^2; mom = momentum mom + lr grad / sqrt(ms + epsilon); var -= mom."""

    def __init__(self, use_locking=False):
        super().__init__()

    def _call(self, var, mean_square, moment, learning_rate, grad, decay, momentum, epsilon):
        ms = decay * mean_square + (1.0 - decay) * grad * grad
        mom = momentum * moment + learning_rate * grad / _ops.sqrt(ms + epsilon)
        _assign(mean_square, ms)
        _assign(moment, mom)
        return _assign(var, var - mom)


class ApplyCenteredRMSProp(_Composite):
    """As ApplyRMSProp with mg = decay mg + (1 - decay) grad and the denominator sqrt(ms - mg^2 + epsilon)."""

    def __init__(self, use_locking=False):
        super().__init__()

    def _call(self, var, mean_gradient, mean_square, moment, grad, learning_rate, decay, momentum, epsilon):
        mg = decay * mean_gradient + (1.0 - decay) * grad
        ms = decay * mean_square + (1.0 - decay) * grad * grad
        mom = momentum * moment + learning_rate * grad / _ops.sqrt(ms - mg * mg + epsilon)
        _assign(mean_gradient, mg)
        _assign(mean_square, ms)
        _assign(moment, mom)
        return _assign(var, var - mom)


class ApplyAdaMax(_Composite):
    """m = b1 m + (1 - b1) g; v = max(b2 v, |g|); var -= lr / (1 - beta1_power) m / (v + epsilon)."""

    def _call(self, var, m, v, beta1_power, lr, beta1, beta2, epsilon, grad):
        m_new = beta1 * m + (1.0 - beta1) * grad
        v_new = _ops.maximum(beta2 * v, _ops.abs(grad))
        _assign(m, m_new)
        _assign(v, v_new)
        return _assign(var, var - lr / (1.0 - beta1_power) * m_new / (v_new + epsilon)), m, v


class ApplyAdadelta(_Composite):
    """accum = rho accum + (1 - rho) g^2; update = sqrt(accum_update + eps) / sqrt(accum + eps) g;
    accum_update = rho accum_update + (1 - rho) update^2; var -= lr update."""

    def _call(self, var, accum, accum_update, lr, rho, epsilon, grad):
        a = rho * accum + (1.0 - rho) * grad * grad
        upd = _ops.sqrt(accum_update + epsilon) / _ops.sqrt(a + epsilon) * grad
        _assign(accum, a)
        _assign(accum_update, rho * accum_update + (1.0 - rho) * upd * upd)
        return _assign(var, var - lr * upd), accum, accum_update


class ApplyAddSign(_Composite):
    """m = beta m + (1 - beta) g; var -= lr (alpha + sign_decay sign(g) sign(m)) g."""

    def _call(self, var, m, lr, alpha, sign_decay, beta, grad):
        m_new = beta * m + (1.0 - beta) * grad
        _assign(m, m_new)
        return _assign(var, var - lr * (alpha + sign_decay * _ops.sign(grad) * _ops.sign(m_new)) * grad), m


class ApplyPowerSign(_Composite):
    """m = beta m + (1 - beta) g; var -= lr exp(logbase sign_decay sign(g) sign(m)) g."""

    def _call(self, var, m, lr, logbase, sign_decay, beta, grad):
        m_new = beta * m + (1.0 - beta) * grad
        _assign(m, m_new)
        return _assign(var, var - lr * _ops.exp(logbase * sign_decay * _ops.sign(grad) * _ops.sign(m_new)) * grad), m


class ApplyFtrl(_Composite):
    """FTRL-proximal: accum' = accum + g^2; linear += g - (accum'^-p - accum^-p) / lr var;
    var = (sign(linear) l1 - linear) / (accum'^-p / lr + 2 l2) where |linear| > l1, else 0."""

    def __init__(self, use_locking=False):
        super().__init__()

    def _call(self, var, accum, linear, grad, lr, l1, l2, lr_power):
        a_new = accum + grad * grad
        pw_new = _ops.pow(a_new, -lr_power)
        lin = linear + grad - (pw_new - _ops.pow(accum, -lr_power)) / lr * var
        quadratic = pw_new / lr + 2.0 * l2
        out = _ops.select(_ops.greater(_ops.abs(lin), l1), (_ops.sign(lin) * l1 - lin) / quadratic, _ops.zeros_like(var))
        _assign(accum, a_new)
        _assign(linear, lin)
        return _assign(var, out)


class Adam(_Composite):
    """MindSpore's Adam primitive: m, v updated; lr_t = lr sqrt(1 - beta2_power) / (1 - beta1_power);
    var -= lr_t m / (sqrt(v) + epsilon) (use_nesterov: (b1 m + (1 - b1) g) in place of m)."""

    def __init__(self, use_locking=False, use_nesterov=False):
        super().__init__(use_nesterov=bool(use_nesterov))

    def _call(self, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, gradient):
        m_new = beta1 * m + (1.0 - beta1) * gradient
        v_new = beta2 * v + (1.0 - beta2) * gradient * gradient
        lr_t = lr * _ops.sqrt(1.0 - beta2_power) / (1.0 - beta1_power)
        num = beta1 * m_new + (1.0 - beta1) * gradient if self.use_nesterov else m_new
        _assign(m, m_new)
        _assign(v, v_new)
        return _assign(var, var - lr_t * num / (_ops.sqrt(v_new) + epsilon)), m, v


class AdamWeightDecay(_Composite):
    """m, v as Adam without bias correction; var -= lr (m / (sqrt(v) + epsilon) + decay var)."""

    def __init__(self, use_locking=False):
        super().__init__()

    def _call(self, var, m, v, lr, beta1, beta2, epsilon, decay, gradient):
        m_new = beta1 * m + (1.0 - beta1) * gradient
        v_new = beta2 * v + (1.0 - beta2) * gradient * gradient
        _assign(m, m_new)
        _assign(v, v_new)
        return _assign(var, var - lr * (m_new / (_ops.sqrt(v_new) + epsilon) + decay * var)), m, v


COMPOSITES = [n for n, v in dict(globals()).items()
              if isinstance(v, type) and issubclass(v, _Composite) and v is not _Composite]
