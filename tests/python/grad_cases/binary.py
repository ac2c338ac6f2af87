"""Gradient rows for the binary elementwise ops (broadcasting rows check the sum back)."""
import numpy as np

from . import GradCase


def _pair(shape_x, shape_y, ties=False):
    def gen(rng):
        x = rng.standard_normal(shape_x)
        if ties:
            return [x, x.copy()]
        y = x + rng.choice([-1.0, 1.0], size=shape_x) * rng.uniform(0.2, 1.0, size=shape_x)
        y = y if np.shape(y) == tuple(shape_y) else rng.standard_normal(shape_y)
        return [x, y]
    return gen


def _mod_inputs(shape_x, shape_y):
    """x / y kept away from integers, where mod jumps (shape_x is the broadcast shape)."""
    def gen(rng):
        y = rng.uniform(0.5, 2.0, size=shape_y) * rng.choice([-1.0, 1.0], size=shape_y)
        q = rng.integers(-3, 4, size=shape_x) + rng.uniform(0.2, 0.8, size=shape_x)
        return [q * y, y]
    return gen


CASES = [
    GradCase("add", [(2, 3), (2, 3)]),
    GradCase("add", [(4, 1, 3), (2, 1)], id="broadcast"),
    GradCase("sub", [(3,), (2, 3)], id="broadcast"),
    GradCase("mul", [(2, 3), (2, 3)]),
    GradCase("mul", [(2, 3), ()], id="scalar"),
    GradCase("div", [(2, 3), (2, 3)], domain="away0"),
    GradCase("div", [(2, 1, 3), (4, 1)], domain="away0", id="broadcast"),
    GradCase("mod", _mod_inputs((2, 3), (2, 3))),
    GradCase("mod", _mod_inputs((2, 3), (3,)), id="broadcast"),
    GradCase("pow", [(2, 3), (2, 3)], domain="positive"),
    GradCase("pow", [(2, 3), ()], domain="positive", id="scalar_exponent"),
    GradCase("pow", lambda rng: [rng.standard_normal((2, 3)), np.array([[2.0, 3.0, 1.0]])],
             wrt=[0], id="negative_base"),
    GradCase("maximum", _pair((2, 3), (2, 3))),
    GradCase("maximum", _pair((2, 3), (3,)), id="broadcast"),
    GradCase("maximum", _pair((2, 3), (2, 3), ties=True), id="ties"),  # half to each side
    GradCase("minimum", _pair((2, 3), (2, 3))),
    GradCase("minimum", _pair((2, 3), (2, 3), ties=True), id="ties"),
    GradCase("minimum", _pair((4, 1), (3,)), id="broadcast"),
    GradCase("atan2", [(2, 3), (2, 3)], domain="away0"),
    GradCase("squared_difference", [(2, 3), (2, 3)]),
    GradCase("squared_difference", [(2, 3), (1, 3)], id="broadcast"),
    GradCase("atan2", [(2, 3), (1, 3)], domain="away0", id="broadcast"),
    # An integer input is promoted in the forward and gets no gradient; the float one still does.
    GradCase("maximum", lambda rng: [rng.integers(-3, 3, size=(2, 3)), rng.standard_normal((3,)) + 0.5],
             id="int_x"),
    GradCase("pow", lambda rng: [rng.integers(1, 4, size=(2, 3)), rng.uniform(0.5, 2.0, size=(2, 3))],
             id="int_base"),
    GradCase("div", lambda rng: [rng.standard_normal((2, 3)), rng.integers(1, 4, size=(3,))],
             id="int_y"),
]
