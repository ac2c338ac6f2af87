"""More of MindSpore's optimizer primitives: AdamNoUpdateParam (the Adam step, returned instead
of applied), ApplyAdagradDA, and the sparse ones (SparseApply*, FusedSparse*), which update
only the rows `indices` names. A sparse gradient is scattered into a dense one (repeated
indices summed: the "fused" merge, which also defines the unfused ops' case MindSpore leaves
undefined); the dense rule then runs and a row mask keeps the untouched rows as they were.
FusedSparseAdam alone updates every row (its m and v decay everywhere), as MindSpore's does."""
from mycel import _mycel
from mycel.common.dtype import float16, float32, int32, int64
from mycel.ops.operations.compat_ops import _Composite
from mycel.ops.operations.optim_ops import _assign
from mycel.ops.primitive import constexpr

_ops = _mycel.ops


@constexpr
def _check_indices(who, dtype):
    if dtype not in (int32, int64):
        raise TypeError(f"{who}: 'indices' must be int32 or int64, got {dtype}")
    return True


def _check_sparse(who, var, grad, indices):
    """indices 1-d, grad of shape (len(indices),) + var.shape[1:]: checked when compiled, or at
    run time for a dimension known only then (an index count from Unique)."""
    _check_indices(who, indices.dtype)
    rule = who + ": 'indices' must be 1-d and 'grad' of shape (len(indices),) + var.shape[1:]"
    if len(indices.shape) != 1 or len(grad.shape) != len(var.shape):
        raise ValueError(rule + " (a rank differs)")
    if grad.shape[0] != indices.shape[0]:
        raise ValueError(rule + " (grad's rows differ from len(indices))")
    for k in range(1, len(var.shape)):
        if grad.shape[k] != var.shape[k]:
            raise ValueError(rule + " (a row's shape differs)")


@constexpr
def _check_half_or_float(who, var, accum, grad):
    """MindSpore's kernels of the sparse Adagrads take float16 and float32 only (the dtypes)."""
    for name, t in (("var", var), ("accum", accum), ("grad", grad)):
        if t not in (float16, float32):
            raise TypeError(f"{who}: '{name}' must be float16 or float32, got {t}")
    return True


def _dense(who, var, grad, indices):
    """(grad scattered to var's shape, bool mask of the rows indices names, var's shape)."""
    _check_sparse(who, var, grad, indices)
    idx = _ops.reshape(_ops.cast(indices, int64), (-1, 1))
    g = _ops.tensor_scatter_add(_ops.zeros(var.shape, grad.dtype), idx, grad)
    hits = _ops.tensor_scatter_add(_ops.zeros((var.shape[0],), var.dtype), idx,
                                   _ops.ones_like(_ops.cast(indices, var.dtype)))
    mask = _ops.reshape(_ops.greater(hits, 0.0), (var.shape[0],) + (1,) * (var.ndim - 1))
    return g, _ops.broadcast_to(mask, var.shape)


def _rows(mask, new, old):
    return _ops.select(mask, new, old)


def _adagrad_v2(var, accum, lr, grad, epsilon, update_slots):
    acc = accum + grad * grad if update_slots else accum
    return var - lr * grad / (_ops.sqrt(acc) + epsilon), acc


def _proximal_adagrad(var, accum, lr, l1, l2, grad):
    acc = accum + grad * grad
    lr_t = lr / _ops.sqrt(acc)
    v = var - lr_t * grad
    return _ops.sign(v) * _ops.relu(_ops.abs(v) - lr_t * l1) / (1.0 + lr_t * l2), acc


def _ftrl(var, accum, linear, grad, lr, l1, l2, lr_power, l2_shrinkage=0.0):
    """FTRL-proximal (TensorFlow's ApplyFtrlV2 with l2_shrinkage; V1 when it is 0)."""
    g_shrunk = grad + 2.0 * l2_shrinkage * var if l2_shrinkage else grad
    a_new = accum + grad * grad
    pw_new = _ops.pow(a_new, -lr_power)
    lin = linear + g_shrunk - (pw_new - _ops.pow(accum, -lr_power)) / lr * var
    quadratic = pw_new / lr + 2.0 * l2
    out = _ops.select(_ops.greater(_ops.abs(lin), l1), (_ops.sign(lin) * l1 - lin) / quadratic,
                      _ops.zeros_like(var))
    return out, a_new, lin


def _adam(m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, nesterov):
    """(the step to subtract from var, new m, new v)."""
    m_new = beta1 * m + (1.0 - beta1) * grad
    v_new = beta2 * v + (1.0 - beta2) * grad * grad
    lr_t = lr * _ops.sqrt(1.0 - beta2_power) / (1.0 - beta1_power)
    num = beta1 * m_new + (1.0 - beta1) * grad if nesterov else m_new
    return lr_t * num / (_ops.sqrt(v_new) + epsilon), m_new, v_new


class AdamNoUpdateParam(_Composite):
    """Adam's m and v updated in place; returns the change to add to the parameter:
    -lr sqrt(1 - beta2_power) / (1 - beta1_power) m / (sqrt(v) + epsilon)."""

    def __init__(self, use_locking=False, use_nesterov=False):
        super().__init__(use_nesterov=bool(use_nesterov))

    def _call(self, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, gradient):
        step, m_new, v_new = _adam(m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, gradient,
                                   self.use_nesterov)
        _assign(m, m_new)
        _assign(v, v_new)
        return -step


class ApplyAdagradDA(_Composite):
    """Adagrad dual averaging: grad_accum += g; grad_squared_accum += g^2;
    var = -lr tmp / (l2 global_step lr + sqrt(grad_squared_accum)), tmp = grad_accum shrunk by
    l1 global_step toward 0 (when l1 > 0)."""

    def __init__(self, use_locking=False):
        super().__init__()

    def _call(self, var, gradient_accumulator, gradient_squared_accumulator, grad, lr, l1, l2, global_step):
        acc = gradient_accumulator + grad
        sq = gradient_squared_accumulator + grad * grad
        step = _ops.cast(global_step, var.dtype) if hasattr(global_step, "dtype") else float(global_step)
        tmp = _ops.sign(acc) * _ops.relu(_ops.abs(acc) - l1 * step)
        tmp = _ops.select(_ops.broadcast_to(_ops.greater(l1 * _ops.ones((), var.dtype), 0.0), acc.shape), tmp, acc)
        _assign(gradient_accumulator, acc)
        _assign(gradient_squared_accumulator, sq)
        return _assign(var, -lr * tmp / (l2 * step * lr + _ops.sqrt(sq)))


class SparseApplyAdagrad(_Composite):
    """Rows `indices`: accum += grad^2 (update_slots); var -= lr grad / sqrt(accum)."""

    def __init__(self, lr, update_slots=True, use_locking=False):
        super().__init__(lr=float(lr), update_slots=bool(update_slots))

    def _call(self, var, accum, grad, indices):
        _check_half_or_float(self.name, var.dtype, accum.dtype, grad.dtype)
        g, mask = _dense(self.name, var, grad, indices)
        new_var, acc = _adagrad_v2(var, accum, self.lr, g, 0.0, self.update_slots)
        _assign(accum, _rows(mask, acc, accum))
        return _assign(var, _rows(mask, new_var, var)), accum


class SparseApplyAdagradV2(_Composite):
    """Rows `indices`: accum += grad^2 (update_slots); var -= lr grad / (sqrt(accum) + epsilon)."""

    def __init__(self, lr, epsilon, use_locking=False, update_slots=True):
        super().__init__(lr=float(lr), epsilon=float(epsilon), update_slots=bool(update_slots))

    def _call(self, var, accum, grad, indices):
        _check_half_or_float(self.name, var.dtype, accum.dtype, grad.dtype)
        g, mask = _dense(self.name, var, grad, indices)
        new_var, acc = _adagrad_v2(var, accum, self.lr, g, self.epsilon, self.update_slots)
        _assign(accum, _rows(mask, acc, accum))
        return _assign(var, _rows(mask, new_var, var)), accum


class SparseApplyProximalAdagrad(_Composite):
    """Rows `indices`: ApplyProximalAdagrad's update."""

    def __init__(self, use_locking=False):
        super().__init__()

    def _call(self, var, accum, lr, l1, l2, grad, indices):
        g, mask = _dense(self.name, var, grad, indices)
        new_var, acc = _proximal_adagrad(var, accum, lr, l1, l2, g)
        _assign(accum, _rows(mask, acc, accum))
        return _assign(var, _rows(mask, new_var, var)), accum


class FusedSparseProximalAdagrad(SparseApplyProximalAdagrad):
    """SparseApplyProximalAdagrad with repeated indices merged (summed) first."""


class SparseApplyFtrl(_Composite):
    """Rows `indices`: ApplyFtrl's update with the attributes lr, l1, l2, lr_power."""

    def __init__(self, lr, l1, l2, lr_power, use_locking=False):
        if not lr > 0 or l1 < 0 or l2 < 0 or lr_power > 0:
            raise ValueError(f"{type(self).__name__}: needs lr > 0, l1 >= 0, l2 >= 0 and lr_power <= 0, "
                             f"got lr={lr}, l1={l1}, l2={l2}, lr_power={lr_power}")
        super().__init__(lr=float(lr), l1=float(l1), l2=float(l2), lr_power=float(lr_power))

    def _shrinkage(self):
        return 0.0

    def _call(self, var, accum, linear, grad, indices):
        g, mask = _dense(self.name, var, grad, indices)
        new_var, acc, lin = _ftrl(var, accum, linear, g, self.lr, self.l1, self.l2, self.lr_power,
                                  self._shrinkage())
        _assign(accum, _rows(mask, acc, accum))
        _assign(linear, _rows(mask, lin, linear))
        return _assign(var, _rows(mask, new_var, var)), accum, linear


class FusedSparseFtrl(SparseApplyFtrl):
    """SparseApplyFtrl with repeated indices merged (summed) first."""


class SparseApplyFtrlV2(SparseApplyFtrl):
    """SparseApplyFtrl with l2_shrinkage: the linear term sees grad + 2 l2_shrinkage var."""

    def __init__(self, lr, l1, l2, l2_shrinkage, lr_power, use_locking=False):
        super().__init__(lr, l1, l2, lr_power)
        self.l2_shrinkage = float(l2_shrinkage)
        self.add_prim_attr("l2_shrinkage", self.l2_shrinkage)

    def _shrinkage(self):
        return self.l2_shrinkage


class FusedSparseAdam(_Composite):
    """Adam with the sparse gradient scattered (repeats summed) into a dense one: m and v decay
    on every row, so every row of var moves."""

    def __init__(self, use_locking=False, use_nesterov=False):
        super().__init__(use_nesterov=bool(use_nesterov))

    def _call(self, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, gradient, indices):
        g, _ = _dense(self.name, var, gradient, indices)
        step, m_new, v_new = _adam(m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, g, self.use_nesterov)
        _assign(m, m_new)
        _assign(v, v_new)
        return _assign(var, var - step), m, v


class FusedSparseLazyAdam(FusedSparseAdam):
    """Adam on the rows `indices` only (repeats summed); the other rows of var, m, v stay."""

    def _call(self, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, gradient, indices):
        g, mask = _dense(self.name, var, gradient, indices)
        step, m_new, v_new = _adam(m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, g, self.use_nesterov)
        _assign(m, _rows(mask, m_new, m))
        _assign(v, _rows(mask, v_new, v))
        return _assign(var, _rows(mask, var - step, var)), m, v


COMPOSITES = [n for n, v in dict(globals()).items()
              if isinstance(v, type) and issubclass(v, _Composite) and v is not _Composite]
