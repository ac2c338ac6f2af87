"""Gradient rows for the indexing ops: slices and pads (and their backward ops, whose rules give
second derivatives), gathers, scatters and embedding. Index inputs are not differentiated."""
import numpy as np

from . import GradCase


def _ints(shape_x, index_shape, lo, hi, extra=None):
    """params (normal), integer indices in [lo, hi) and optionally updates of shape `extra`."""
    def gen(rng):
        arrays = [rng.standard_normal(shape_x), rng.integers(lo, hi, size=index_shape)]
        if extra is not None:
            arrays.append(rng.standard_normal(extra))
        return arrays
    return gen


def _along(shape_x, index_shape, axis, extra=False, distinct=False):
    """input, indices into `axis` (a permutation prefix per line when distinct) [, updates]."""
    def gen(rng):
        n = shape_x[axis]
        if distinct:
            perm = np.argsort(rng.random(shape_x), axis=axis)
            idx = np.take(perm, np.arange(index_shape[axis]), axis=axis)
        else:
            idx = rng.integers(-n, n, size=index_shape)
        arrays = [rng.standard_normal(shape_x), idx]
        if extra:
            arrays.append(rng.standard_normal(index_shape))
        return arrays
    return gen


def _grad_of(shape_dy, shape_like):
    return lambda rng: [rng.standard_normal(shape_dy), rng.standard_normal(shape_like)]


SS = dict(begin=(7, 1, 9), end=(2, 7, 9), strides=(1, 1, -2), begin_mask=0b101, end_mask=0b110)

CASES = [
    GradCase("shift", [(3, 5), ()], dict(periods=2, axis=1)),
    GradCase("shift", [(4, 3), ()], dict(periods=-1, axis=0), id="back"),
    GradCase("slice", [(4, 5)], dict(begin=(1, 2), size=(2, -1))),
    GradCase("slice", [(3, 4, 2)], dict(begin=(0, 1, 1), size=(2, 2, 1)), id="3d"),
    GradCase("strided_slice", [(4, 5)], dict(begin=(0, 3), end=(3, 0), strides=(2, -1))),
    GradCase("strided_slice", [(4, 5, 6)], SS, id="masks"),
    GradCase("strided_slice", [(4, 5, 6)],
             dict(begin=(0, 0, 1, 0), end=(1, 0, 2, 1), strides=(1, 1, 1, 1), ellipsis_mask=0b10,
                  new_axis_mask=0b1001, shrink_axis_mask=0b100), id="ellipsis_newaxis"),
    GradCase("strided_slice", [(4, 5)], dict(begin=(-1, -4), end=(0, -1), strides=(1, 1),
                                             shrink_axis_mask=1), id="shrink"),
    GradCase("strided_slice_grad", _grad_of((2, 4, 3), (4, 5, 6)), SS, wrt=[0]),
    GradCase("pad", [(2, 3)], dict(paddings=(1, 2, 0, 1), value=1.5)),
    GradCase("pad", [(3, 4)], dict(paddings=(2, 1, 3, 3), mode="reflect"), id="reflect"),
    GradCase("pad", [(3, 4)], dict(paddings=(2, 1, 0, 5), mode="edge"), id="edge"),
    GradCase("pad", [(4, 5)], dict(paddings=(-1, 2, 1, -3)), id="crop"),
    GradCase("pad_grad", _grad_of((6, 10), (3, 4)), dict(paddings=(2, 1, 3, 3), mode="reflect"),
             wrt=[0]),
    GradCase("pad_grad", _grad_of((5, 3), (4, 5)), dict(paddings=(-1, 2, 1, -3), value=2.0), wrt=[0],
             id="crop"),
    GradCase("gather", _ints((5, 3), (4,), -5, 5)),
    GradCase("gather", _ints((4, 5), (2, 3), -5, 5), dict(axis=1), id="axis1"),
    GradCase("gather", _ints((2, 4, 3), (3, 2), 0, 4), dict(axis=-2), id="middle"),
    GradCase("gather", _ints((4,), (), 0, 4), id="0d_index"),
    GradCase("gather_nd", _ints((4, 5, 6), (3, 2), -4, 4)),
    GradCase("gather_nd", _ints((4, 5), (2, 2, 2), 0, 4), id="full"),
    GradCase("tensor_scatter_add", _ints((4, 5), (6, 1), -4, 4, extra=(6, 5))),
    GradCase("tensor_scatter_add", _ints((3, 4), (5, 2), 0, 3, extra=(5,)), id="elements"),
    GradCase("scatter_add", _ints((5, 3), (4,), -5, 5, extra=(4, 3))),
    GradCase("scatter_add", _ints((5,), (2, 3), 0, 5, extra=(2, 3)), id="2d_index"),
    GradCase("gather_elements", _along((3, 4), (3, 6), 1), dict(dim=1)),
    GradCase("gather_elements", _along((4, 3, 2), (2, 3, 2), 0), dict(dim=0), id="dim0"),
    GradCase("tensor_scatter_elements", _along((3, 5), (3, 4), 1, extra=True), dict(axis=1, reduction="add")),
    GradCase("tensor_scatter_elements", _along((4, 3), (3, 3), 0, extra=True, distinct=True),
             dict(axis=0), id="none"),
    GradCase("embedding", lambda rng: [rng.integers(0, 5, size=(2, 3)), rng.standard_normal((5, 4))]),
    # The padding row gets no gradient by convention (test_grad_index.py checks it), so these
    # rows look it up nowhere and check that the masking leaves the other rows intact.
    GradCase("embedding", lambda rng: [np.array([3, 2, 3, 4, 1]), rng.standard_normal((5, 3))],
             dict(padding_idx=0), id="padding_idx"),
    GradCase("embedding", lambda rng: [np.array([[0, 3], [1, 0]]), rng.standard_normal((5, 3))],
             dict(padding_idx=-1), id="padding_neg"),
]
