"""Gradient rows for complex(real, imag) and angle (of real input: piecewise constant, so 0).
Complex inputs are checked in test_complex_grad.py (finite differences on real losses)."""
from . import GradCase

CASES = [
    GradCase("complex", [(3, 4), (3, 4)]),
    GradCase("angle", [(3, 4)], domain="away0"),
]
