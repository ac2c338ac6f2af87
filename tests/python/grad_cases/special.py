"""Gradient rows for the special functions (ops/special.cc)."""
import numpy as np

from . import GradCase


def _pos(lo, hi, shape=(2, 4)):
    return lambda rng: [rng.uniform(lo, hi, size=shape)]


CASES = [
    GradCase("bessel_i0", [(2, 3)]),
    GradCase("bessel_i0e", [(2, 3)], domain="away0"),
    GradCase("bessel_i1", [(2, 3)]),
    GradCase("bessel_i1", lambda rng: [np.array([0.0, 1e-3, -2.0])], id="at0"),
    GradCase("bessel_i1e", [(2, 3)], domain="away0"),
    GradCase("bessel_i1e", lambda rng: [np.array([0.0, 40.0, -35.0])], id="at0_large"),
    GradCase("bessel_j0", [(2, 3)]),
    GradCase("bessel_j1", [(2, 3)]),
    GradCase("bessel_j1", lambda rng: [np.array([0.0, 3.0, -8.0])], id="at0"),
    GradCase("bessel_y0", _pos(0.5, 9)),
    GradCase("bessel_y1", _pos(0.5, 9)),
    GradCase("bessel_k0", _pos(0.5, 5)),
    GradCase("bessel_k0e", _pos(0.5, 40)),
    GradCase("bessel_k1", _pos(0.5, 5)),
    GradCase("bessel_k1e", _pos(0.5, 40)),
    GradCase("lgamma", lambda rng: [np.array([0.3, 1.5, 4.0, -0.5, -2.3, 12.0])]),
    GradCase("digamma", lambda rng: [np.array([0.3, 1.5, 4.0, -0.5, -2.3, 12.0])]),
    GradCase("polygamma", lambda rng: [np.array([[1], [2]], np.int64), rng.uniform(0.5, 4, (1, 3))], wrt=(1,)),
    GradCase("igamma", lambda rng: [rng.uniform(0.5, 5, (4,)), rng.uniform(0.3, 6, (4,))], rtol=1e-4, atol=1e-6),
    GradCase("igammac", lambda rng: [rng.uniform(0.5, 5, (3, 1)), rng.uniform(0.3, 6, (3,))], rtol=1e-4, atol=1e-6),
]
