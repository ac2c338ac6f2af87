"""Gradient rows for select and clip_by_value (values kept away from the clip bounds)."""
import numpy as np

from . import GradCase


def _select(cond_shape, x_shape, y_shape):
    def gen(rng):
        return [rng.random(cond_shape) < 0.5, rng.standard_normal(x_shape), rng.standard_normal(y_shape)]
    return gen


def _clip(x_shape, lo_shape, hi_shape, lo=-0.5, hi=0.5):
    """x away from the bounds lo +- 0.2 and hi +- 0.2 (None: the bound is absent)."""
    def gen(rng):
        x = rng.uniform(-2, 2, size=x_shape)
        for b in (lo, hi):
            near = np.abs(x - b) < 0.1
            x[near] += 0.25
        lo_a = None if lo_shape is None else np.full(lo_shape, lo) + rng.uniform(-0.05, 0.05, lo_shape)
        hi_a = None if hi_shape is None else np.full(hi_shape, hi) + rng.uniform(-0.05, 0.05, hi_shape)
        return [x, lo_a, hi_a]
    return gen


CASES = [
    GradCase("select", _select((2, 3), (2, 3), (2, 3))),
    GradCase("select", _select((2, 3), (3,), ()), id="broadcast"),
    GradCase("clip_by_value", _clip((4, 5), (), ())),
    GradCase("clip_by_value", _clip((4, 5), (5,), (4, 1)), id="broadcast"),
    GradCase("clip_by_value", _clip((3, 4), None, ()), id="max_only"),
    GradCase("clip_by_value", _clip((3, 4), (), None), id="min_only"),
    GradCase("clip_by_value", _clip((3, 4), (), (), lo=0.5, hi=-0.5), id="crossed"),
]
