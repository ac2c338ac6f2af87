"""Three more of MindSpore's optimizer primitives, composed of registry ops as optim_ops.py's
are: ApplyAdamWithAmsgrad, SparseApplyRMSProp and FusedAdaFactor (with its global-norm form).
Each writes its state arguments in place (Parameters of the Cell or passed to construct) and
returns what MindSpore's returns."""
from mycel import _mycel
from mycel.common.dtype import float32
from mycel.common.tensor import Tensor
from mycel.ops.operations.compat_ops import _Composite
from mycel.ops.operations.optim_ops import _assign
from mycel.ops.operations.optim_ops2 import _dense, _rows

_ops = _mycel.ops

_F32_EPS = 1.1920928955078125e-07  # float32's machine epsilon
_TINY = 1e-30  # MindSpore's FusedAdaFactor floor for second moments and norms


def _check_float(who, name, value, lo=None, hi=None):
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{who}: '{name}' must be a float, got {type(value).__name__}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"{who}: '{name}' must be in [{lo}, {hi}], got {value}")
    return float(value)


class ApplyAdamWithAmsgrad(_Composite):
    """Adam with AMSGrad's running maximum of v: m, v as Adam; vhat = max(vhat, v);
    var -= lr sqrt(1 - beta2_power) / (1 - beta1_power) m / (sqrt(vhat) + epsilon).
    Returns (var, m, v, vhat)."""

    def __init__(self, beta1=0.9, beta2=0.999, epsilon=1e-8, use_locking=False):
        who = "ApplyAdamWithAmsgrad"
        super().__init__(beta1=_check_float(who, "beta1", beta1), beta2=_check_float(who, "beta2", beta2),
                         epsilon=_check_float(who, "epsilon", epsilon), use_locking=bool(use_locking))

    def _call(self, var, m, v, vhat, beta1_power, beta2_power, lr, grad):
        m_new = self.beta1 * m + (1.0 - self.beta1) * grad
        v_new = self.beta2 * v + (1.0 - self.beta2) * grad * grad
        vhat_new = _ops.maximum(vhat, v_new)
        lr_t = lr * _ops.sqrt(1.0 - beta2_power) / (1.0 - beta1_power)
        _assign(m, m_new)
        _assign(v, v_new)
        _assign(vhat, vhat_new)
        return _assign(var, var - lr_t * m_new / (_ops.sqrt(vhat_new) + self.epsilon)), m, v, vhat


class SparseApplyRMSProp(_Composite):
    """Rows `indices` (repeats summed): ms = rho ms + (1 - rho) grad^2 where |grad| > float32's
    epsilon (elsewhere ms stays, as in MindSpore's kernel); mom = momentum mom + lr grad /
    sqrt(ms + epsilon); var -= mom. Returns (var, ms, mom)."""

    def __init__(self, rho, momentum, epsilon, use_locking=False):
        who = "SparseApplyRMSProp"
        super().__init__(rho=_check_float(who, "rho", rho, 0.0, 1.0),
                         momentum=_check_float(who, "momentum", momentum, 0.0),
                         epsilon=_check_float(who, "epsilon", epsilon, 0.0), use_locking=bool(use_locking))

    def _call(self, var, ms, mom, lr, grad, indices):
        # float32 arithmetic, each state rounded to its dtype once (MindSpore's float16 kernel)
        g, mask = _dense(self.name, var, _ops.cast(grad, float32), indices)
        ms32, mom32, var32 = _ops.cast(ms, float32), _ops.cast(mom, float32), _ops.cast(var, float32)
        moved = _ops.greater(_ops.abs(g), _F32_EPS)
        ms_new = _ops.select(moved, ms32 * self.rho + g * g * (1.0 - self.rho), ms32)
        mom_new = _ops.cast(mom32 * self.momentum + lr * g / _ops.sqrt(ms_new + self.epsilon), mom.dtype)
        _assign(ms, _rows(mask, _ops.cast(ms_new, ms.dtype), ms))
        _assign(mom, _rows(mask, mom_new, mom))
        return _assign(var, _rows(mask, _ops.cast(var32 - _ops.cast(mom_new, float32), var.dtype), var)), ms, mom


def _rms(x):
    return _ops.sqrt(_ops.mean(x * x))


def _pair(epsilon):
    """(epsilon1, epsilon2) from a pair of numbers or a two-element tensor."""
    if isinstance(epsilon, tuple) or isinstance(epsilon, list):  # (graph mode: one type each)
        if len(epsilon) != 2:
            raise ValueError(f"FusedAdaFactor: 'epsilon' must be a pair, got {epsilon}")
        return float(epsilon[0]), float(epsilon[1])
    return epsilon[0], epsilon[1]


class FusedAdaFactor(_Composite):
    """Adafactor (Shazeer & Stern 2018) as MindSpore's CPU kernel computes it, in float32:
    g = grad / global_norm; u = g^2 + epsilon1. A param of rank >= 2 keeps factored second
    moments over its last two dims (row: mean over the last dim, col: mean over the one before);
    a vector keeps exp_avg_sq. The update g / sqrt(v) is clipped to RMS clip_threshold, scaled by
    lr (times max(epsilon2, RMS(param)) with enable_scale_parameter), averaged into exp_avg
    (enable_first_moment) and subtracted with weight decay lr * weight_decay * param
    (enable_weight_decay). Returns param."""

    def __init__(self, enable_scale_parameter=False, enable_first_moment=False, enable_weight_decay=False):
        for k, v in (("enable_scale_parameter", enable_scale_parameter),
                     ("enable_first_moment", enable_first_moment), ("enable_weight_decay", enable_weight_decay)):
            if not isinstance(v, bool):
                raise TypeError(f"{type(self).__name__}: '{k}' must be a bool, got {type(v).__name__}")
        super().__init__(enable_scale_parameter=enable_scale_parameter, enable_first_moment=enable_first_moment,
                         enable_weight_decay=enable_weight_decay)

    def _call(self, epsilon, clip_threshold, beta1, beta2, weight_decay, learning_rate, grad, param, exp_avg,
              exp_avg_sq_row, exp_avg_sq_col, exp_avg_sq):
        return self._step(epsilon, clip_threshold, beta1, beta2, weight_decay, learning_rate, grad, param,
                          exp_avg, exp_avg_sq_row, exp_avg_sq_col, exp_avg_sq, 1.0)

    def _step(self, epsilon, clip_threshold, beta1, beta2, weight_decay, learning_rate, grad, param, exp_avg,
              exp_avg_sq_row, exp_avg_sq_col, exp_avg_sq, inv_norm):
        if len(grad.shape) != len(param.shape):
            raise ValueError("FusedAdaFactor: 'grad' must have the shape of 'param' (its rank differs)")
        for a, b in zip(grad.shape, param.shape):  # a run-time check where a dimension is dynamic
            if a != b:
                raise ValueError("FusedAdaFactor: 'grad' must have the shape of 'param'")
        eps1, eps2 = _pair(epsilon)
        g = _ops.cast(grad, float32) * inv_norm
        u = g * g + eps1
        if param.ndim >= 2:
            row = beta2 * _ops.cast(exp_avg_sq_row, float32) + (1.0 - beta2) * _ops.mean(u, (-1,))
            row_mean = _ops.maximum(_ops.mean(row, (-1,), True), _TINY)
            col = _ops.maximum(beta2 * _ops.cast(exp_avg_sq_col, float32) + (1.0 - beta2) * _ops.mean(u, (-2,)),
                               _TINY)
            norm = _ops.expand_dims(_ops.sqrt(row / row_mean), -1) * _ops.expand_dims(_ops.sqrt(col), -2)
            upd = g / _ops.maximum(norm, _TINY)
            _assign(exp_avg_sq_row, row)
            _assign(exp_avg_sq_col, col)
        else:
            sq = _ops.maximum(beta2 * _ops.cast(exp_avg_sq, float32) + (1.0 - beta2) * u, _TINY)
            upd = g / _ops.sqrt(sq)
            _assign(exp_avg_sq, sq)
        p = _ops.cast(param, float32)
        lr = learning_rate * _ops.maximum(_rms(p), eps2) if self.enable_scale_parameter else learning_rate
        upd = upd * (lr / _ops.maximum(_rms(upd) / clip_threshold, 1.0))
        if self.enable_first_moment:
            upd = beta1 * _ops.cast(exp_avg, float32) + (1.0 - beta1) * upd
            _assign(exp_avg, upd)
        if self.enable_weight_decay:
            upd = upd + p * weight_decay * lr
        return _assign(param, p - upd)


class FusedAdaFactorWithGlobalNorm(FusedAdaFactor):
    """FusedAdaFactor on grad / global_norm (global_norm below 1e-30: grad as is)."""

    def _call(self, epsilon, clip_threshold, beta1, beta2, weight_decay, learning_rate, grad, param, exp_avg,
              exp_avg_sq_row, exp_avg_sq_col, exp_avg_sq, global_norm):
        if not isinstance(global_norm, Tensor):  # a number (graph mode: maybe known at run time)
            inv = 1.0 if global_norm < _TINY else 1.0 / global_norm
        else:
            gn = _ops.cast(global_norm, float32)
            small = _ops.less(gn, _TINY)
            inv = _ops.select(small, _ops.ones_like(gn), 1.0 / _ops.select(small, _ops.ones_like(gn), gn))
        return self._step(epsilon, clip_threshold, beta1, beta2, weight_decay, learning_rate, grad, param,
                          exp_avg, exp_avg_sq_row, exp_avg_sq_col, exp_avg_sq, inv)


COMPOSITES = [n for n, v in dict(globals()).items()
              if isinstance(v, type) and issubclass(v, _Composite) and v is not _Composite]
