"""LAMB (You et al., "Large batch optimization for deep learning"; MindSpore's nn.Lamb)."""
import math

from mycel import ops
from mycel.common import dtype as mstype
from mycel.nn.cell import Cell, CellList
from mycel.nn.optim._checks import check_float
from mycel.nn.optim.optimizer import Optimizer


class Lamb(Optimizer):
    """Adam's bias-corrected direction r = m_hat / (sqrt(v_hat) + eps) plus decoupled wd * p,
    scaled per parameter by the trust ratio ||p|| / ||r|| (1 when either norm is 0):
    p -= lr * ratio * r. The step t is global_step + 1."""

    def __init__(self, params, learning_rate, beta1=0.9, beta2=0.999, eps=1e-6, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay)
        who = "Lamb"
        self.beta1 = check_float(who, "beta1", beta1, 0.0, 1.0, False, False)
        self.beta2 = check_float(who, "beta2", beta2, 0.0, 1.0, False, False)
        self.eps = check_float(who, "eps", eps, low=0.0, low_inclusive=False)
        self.moments1 = self._clone_state("lamb_m")
        self.moments2 = self._clone_state("lamb_v")
        # Sum of squares per parameter: local, unless the parameter is stored as a slice (the
        # parallel optimizer or slice_parameters replace the entry, SquareSum's docstring).
        self.square_sums = CellList([SquareSum() for _ in self.parameters])

    def construct(self, gradients):
        step = self._next_step()
        t = ops.cast(step, mstype.float32).reshape(()) + 1.0
        c1 = 1.0 - ops.exp(t * math.log(self.beta1))
        c2 = 1.0 - ops.exp(t * math.log(self.beta2))
        for p, g, m, v, wd, lr_cell, sq in zip(self.parameters, gradients, self.moments1, self.moments2,
                                               self._param_wd, self._param_lr_cells, self.square_sums):
            m_new = self.beta1 * m + (1.0 - self.beta1) * g
            v_new = self.beta2 * v + (1.0 - self.beta2) * g * g
            ops.assign(m, m_new)
            ops.assign(v, v_new)
            r = self._decoupled((m_new / c1) / (ops.sqrt(v_new / c2) + self.eps), p, wd)
            w_norm = ops.sqrt(sq(p))
            r_norm = ops.sqrt(sq(r))
            usable = ops.logical_and(ops.greater(w_norm, 0.0), ops.greater(r_norm, 0.0))
            ratio = ops.select(usable, w_norm / ops.maximum(r_norm, 1e-30), ops.ones_like(w_norm))
            ops.assign(p, self._in_dtype_of(p, p - self._lr(lr_cell, step) * ratio * r))
        return True


class SquareSum(Cell):
    """sum(x * x) of a parameter (or of an update shaped like it). For a parameter stored as a
    slice, `mirror` is how many ranks hold each slice: the AllReduce(sum) over all ranks of the
    local sums counts every slice `mirror` times, so the whole parameter's sum of squares is that
    divided by `mirror` (a norm-taking optimizer then sees the whole parameter's norm). `group`:
    the ranks the parameter is spread over (default all)."""

    def __init__(self, mirror=None, group=None):
        super().__init__(auto_prefix=False)
        kw = {} if group is None else {"group": group}
        self._allreduce = None if mirror is None else ops.AllReduce(op="sum", **kw)
        self._scale = 1.0 if mirror is None else 1.0 / mirror

    def construct(self, x):
        s = ops.sum(x * x)
        if self._allreduce is not None:
            s = self._allreduce(s) * self._scale
        return s
