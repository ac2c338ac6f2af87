"""Gradient rows for masked_select (scatters back), masked_scatter and masked_scatter_grad,
with a fixed bool mask (its values decide the size, not the gradient), and reshape_dynamic,
slice_dynamic and strided_slice_dynamic with fixed sizes and bounds tensors."""
import numpy as np

from . import GradCase


def _masked(x_shape, mask_shape, source=None):
    def gen(rng):
        out = [rng.standard_normal(x_shape), rng.random(mask_shape) < 0.5]
        if source is not None:
            out.append(rng.standard_normal(source))
        return out
    return gen


def _with_ints(x_shape, *ints):
    """x, then int64 tensors (sizes, begin, ...) that decide the shape, not the gradient."""
    def gen(rng):
        return [rng.standard_normal(x_shape)] + [np.array(v, np.int64) for v in ints]
    return gen


def _dy_like_ints(dy_shape, like_shape, *ints):
    """dy of the slice's shape, the sliced tensor `like`, then the int64 bounds tensors."""
    def gen(rng):
        return [rng.standard_normal(dy_shape), rng.standard_normal(like_shape)] + \
            [np.array(v, np.int64) for v in ints]
    return gen


CASES = [
    GradCase("reshape_dynamic", _with_ints((3, 4), [2, -1]), wrt=[0]),
    GradCase("slice_dynamic", _with_ints((3, 4, 5), [1, 0, 2], [2, -1, 3]), wrt=[0]),
    GradCase("strided_slice_dynamic", _with_ints((4, 6), [1, 5], [4, 0], [2, -2]), wrt=[0]),
    GradCase("slice_dynamic_grad", _dy_like_ints((2, 4, 3), (3, 4, 5), [1, 0, 2], [2, -1, 3]), wrt=[0]),
    GradCase("strided_slice_dynamic_grad", _dy_like_ints((2, 3), (4, 6), [1, 5], [4, 0], [2, -2]), wrt=[0]),
    GradCase("masked_select", _masked((3, 4), (3, 4))),
    GradCase("masked_select", _masked((4, 2, 3), (4,)), id="rows"),
    GradCase("masked_scatter", _masked((3, 4), (3, 4), source=(12,))),
    GradCase("masked_scatter", _masked((4, 3), (4,), source=(4, 3)), id="rows"),
    GradCase("masked_scatter_grad", _masked((3, 4), (3, 4), source=(12,)), wrt=[0]),
]
