"""Gradient rows for tensor_scatter_mul/div/max/min: distinct index rows (MindSpore's rules are
exact there), updates away from zero for div."""
import numpy as np

from . import GradCase


def _distinct(shape_x, n, depth, extra, away0=False):
    def gen(rng):
        flat = rng.permutation(int(np.prod(shape_x[:depth])))[:n]
        idx = np.stack(np.unravel_index(flat, shape_x[:depth]), -1)
        u = rng.standard_normal(extra)
        if away0:
            u = np.sign(u) * (np.abs(u) + 0.5)
        return [rng.standard_normal(shape_x), idx, u]
    return gen


CASES = []
for _name in ("tensor_scatter_mul", "tensor_scatter_div", "tensor_scatter_max", "tensor_scatter_min"):
    div = _name == "tensor_scatter_div"
    CASES += [GradCase(_name, _distinct((4, 5), 3, 1, (3, 5), div)),
              GradCase(_name, _distinct((3, 4), 5, 2, (5,), div), id="elements")]
