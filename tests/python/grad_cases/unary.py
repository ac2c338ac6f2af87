"""Gradient rows for the unary elementwise ops (domains keep clear of kinks and poles)."""
import numpy as np

from . import GradCase


def _avoid(*kinks, shape=(3, 4), gap=0.1):
    """Normal inputs nudged at least `gap` away from each kink."""
    def gen(rng):
        x = rng.standard_normal(shape) * 2
        for k in kinks:
            near = np.abs(x - k) < gap
            x[near] = k + gap * np.where(x[near] >= k, 1.5, -1.5)
        return [x]
    return gen


CASES = [
    GradCase("neg", [(2, 3)]),
    GradCase("abs", [(2, 3)], domain="away0"),
    GradCase("real", [(2, 3)]),  # of real inputs: identity, 0, identity
    GradCase("imag", [(2, 3)]),
    GradCase("conj", [(2, 3)]),
    GradCase("square", [(2, 3)]),
    GradCase("square", [()], id="0d"),
    GradCase("reciprocal", [(2, 3)], domain="away0"),
    GradCase("sqrt", [(2, 3)], domain="positive"),
    GradCase("rsqrt", [(2, 3)], domain="positive"),
    GradCase("exp", [(2, 3)]),
    GradCase("expm1", [(4,)]),
    GradCase("log", [(2, 3)], domain="positive"),
    GradCase("log1p", [(2, 3)], domain="unit"),
    GradCase("sin", [(2, 3)]),
    GradCase("cos", [(2, 3)]),
    GradCase("tan", [(2, 3)], domain="unit"),
    GradCase("tanh", [(2, 3)]),
    GradCase("erf", [(2, 3)]),
    GradCase("sigmoid", [(2, 3)]),
    GradCase("silu", [(2, 3)]),
    GradCase("softsign", [(2, 3)]),
    GradCase("relu", _avoid(0)),
    GradCase("relu6", _avoid(0, 6, shape=(4, 5)), id="kinks",),
    GradCase("relu6", lambda rng: [rng.uniform(-3, 9, size=(30,))], id="wide"),
    GradCase("leaky_relu", _avoid(0)),
    GradCase("leaky_relu", _avoid(0), dict(alpha=0.05), id="alpha"),
    GradCase("elu", _avoid(0)),
    GradCase("elu", _avoid(0), dict(alpha=0.5), id="alpha"),
    GradCase("gelu", [(2, 3)]),
    GradCase("gelu", [(2, 3)], dict(approximate="tanh"), id="tanh"),
    GradCase("softplus", [(2, 3)]),
    GradCase("softplus", lambda rng: [np.array([-3.0, -0.5, 0.2, 1.0, 4.0, 8.0])],
             dict(beta=2.0, threshold=5.0), id="threshold"),
]
