"""The gradient test table: one GradCase per (op, inputs, attributes) row, one file per op family.

Every op whose gradient policy is "bprop" must have at least one row (test_grad_table.py checks
it). Each row's backward rule is checked against central finite differences in float64: once on
the op's rule alone (`_mycel.ad.vjp`), and once through `mycel.grad` in both PyNative and graph
mode (the same J transform users get).
"""
import dataclasses
import importlib
import pkgutil
from typing import Any, Callable, Optional, Sequence

import numpy as np


@dataclasses.dataclass
class GradCase:
    op: str                         # registry name, e.g. "mul"
    inputs: Any                     # list of input shapes, or gen(rng) -> list of float64 arrays
                                    # (ints/bools where the op needs them; None for an absent input)
    attrs: dict = dataclasses.field(default_factory=dict)
    wrt: Optional[Sequence[int]] = None  # inputs to differentiate (default: every float input)
    domain: str = "normal"          # normal | positive | unit (-1, 1) | away0 (|x| in [0.5, 2])
    rtol: float = 1e-5
    atol: float = 1e-6
    eps: float = 1e-6               # finite-difference step
    id: str = ""
    outputs: Optional[Sequence[int]] = None  # outputs that get a cotangent (default: every float
                                             # one); others are intermediates the rule ignores, as
                                             # ctc_loss's log_alpha (MindSpore's CTCLossV2 too)

    def name(self):
        return f"{self.op}[{self.id}]" if self.id else self.op


def make_input(rng, shape, domain="normal"):
    if domain == "positive":
        return rng.uniform(0.5, 2.0, size=shape)
    if domain == "unit":
        return rng.uniform(-0.9, 0.9, size=shape)
    if domain == "away0":
        return rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return rng.standard_normal(size=shape)


def case_inputs(case, seed=0):
    """The float64 (or integer) numpy inputs of a case."""
    rng = np.random.default_rng(seed)
    if callable(case.inputs):
        return list(case.inputs(rng))
    return [None if s is None else make_input(rng, s, case.domain) for s in case.inputs]


def wrt_indices(case, arrays):
    if case.wrt is not None:
        return list(case.wrt)
    return [i for i, a in enumerate(arrays)
            if a is not None and not isinstance(a, (list, tuple)) and np.asarray(a).dtype.kind == "f"]


def all_cases():
    cases = []
    for mod in pkgutil.iter_modules(__path__):
        cases += importlib.import_module(f"{__name__}.{mod.name}").CASES
    return cases
