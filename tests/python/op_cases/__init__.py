"""The op test table: one OpCase per (op, shapes, attributes) row, one file per op family.

Every registered op must have at least one row (test_registry.py checks it). A row is run for
each of its dtypes against its numpy reference by test_op_table.py.
"""
import dataclasses
import importlib
import pkgutil
from typing import Any, Callable, Optional

import numpy as np


@dataclasses.dataclass
class OpCase:
    op: str                              # registry name, e.g. "add"
    ref: Callable                        # numpy reference: ref(*arrays, **attrs) -> array or tuple
    shapes: Any                          # list of input shapes, or gen(rng, dtype) -> list of arrays
    attrs: dict = dataclasses.field(default_factory=dict)
    dtypes: tuple = ("float32", "float64")
    domain: str = "normal"               # normal | positive | unit (-1,1) | nonzero | int | bool
    rtol: Optional[float] = None
    atol: Optional[float] = None
    id: str = ""
    nondeterministic: bool = False       # random ops: compare statistics in their own tests instead
    needs_peer: bool = False             # point-to-point collectives: run under mpirun instead
                                         # (test_parallel_collectives.py); the row claims dtypes
    # The help example (scripts/gen_op_examples.py) of an op whose attribute is a handle to
    # run-time state (custom_call's host function id): doctest lines that create that state, and
    # the text standing for the attribute in the call, so the example depends on nothing else.
    example_setup: tuple = ()
    example_attrs: dict = dataclasses.field(default_factory=dict)
    # Inputs that stay float32 in test_op_table's bfloat16 run (saved float32 statistics, such as
    # flash_attention_grad's logsumexp).
    keep_f32: tuple = ()

    def name(self):
        return f"{self.op}[{self.id}]" if self.id else self.op


def make_input(rng, shape, dtype, domain="normal"):
    """A random numpy array for one input."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_ or domain == "bool":
        return rng.random(shape) < 0.5 if dtype == np.bool_ else (rng.random(shape) < 0.5).astype(dtype)
    if dtype.kind in "iu":
        lo, hi = (1, 6) if domain in ("positive", "nonzero") else (0 if dtype.kind == "u" else -5, 6)
        a = rng.integers(lo, hi, size=shape).astype(dtype)
        if domain == "nonzero":
            a[a == 0] = 1
        return a
    if domain == "positive":
        a = rng.uniform(0.1, 3.0, size=shape)
    elif domain == "unit":
        a = rng.uniform(-0.95, 0.95, size=shape)
    elif domain == "nonzero":
        a = rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    else:
        a = rng.standard_normal(shape)
    return np.asarray(a, dtype=dtype)


def default_tol(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return 2e-3, 2e-3
    if dtype == np.float32:
        return 1e-5, 1e-5
    if dtype == np.float64:
        return 1e-10, 1e-12
    return 0, 0


def all_cases():
    """Every OpCase from every module in this package."""
    cases = []
    for info in pkgutil.iter_modules(__path__):
        mod = importlib.import_module(f"{__name__}.{info.name}")
        cases.extend(getattr(mod, "CASES", []))
    return cases
