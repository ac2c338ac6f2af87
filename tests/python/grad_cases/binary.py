from . import GradCase

CASES = [
    GradCase("add", [(2, 3), (2, 3)]),
    GradCase("add", [(4, 1, 3), (2, 1)], id="broadcast"),
    GradCase("sub", [(3,), (2, 3)], id="broadcast"),
    GradCase("mul", [(2, 3), (2, 3)]),
    GradCase("mul", [(2, 3), ()], id="scalar"),
]
