"""Gradient rows for the reductions and cumsum (max/min rows have distinct values or exact ties)."""
import numpy as np

from . import GradCase


def _ties(rng):
    """Rows with a tied maximum and a tied minimum: the gradient is split evenly between them."""
    x = rng.standard_normal((3, 4))
    x[:, 1] = x.max(axis=1) + 0.5
    x[:, 3] = x[:, 1]
    x[:, 0] = x.min(axis=1) - 0.5
    x[:, 2] = x[:, 0]
    return [x]


def _with_zeros(rng):
    """prod rows with no zero, one zero and two zeros."""
    x = rng.uniform(0.5, 1.5, size=(3, 4)) * rng.choice([-1.0, 1.0], size=(3, 4))
    x[1, 2] = 0.0
    x[2, 0] = x[2, 3] = 0.0
    return [x]


CASES = [
    GradCase("sum", [(2, 3, 4)]),
    GradCase("sum", [(2, 3, 4)], dict(axis=(0, 2)), id="axes"),
    GradCase("sum", [(2, 3, 4)], dict(axis=(-1,), keep_dims=True), id="keep_dims"),
    GradCase("sum", [()], id="0d"),
    GradCase("mean", [(2, 3, 4)]),
    GradCase("mean", [(2, 3, 4)], dict(axis=(1,)), id="axis"),
    GradCase("mean", [(2, 3, 4)], dict(axis=(0, 2), keep_dims=True), id="keep_dims"),
    GradCase("prod", [(2, 3)], domain="away0"),
    GradCase("prod", [(2, 3, 4)], dict(axis=(1,)), domain="away0", id="axis"),
    GradCase("prod", _with_zeros, dict(axis=(1,), keep_dims=True), id="zeros"),
    GradCase("max", [(3, 4)]),
    GradCase("max", [(2, 3, 4)], dict(axis=(0, 2)), id="axes"),
    GradCase("max", _ties, dict(axis=(1,)), id="ties"),
    GradCase("min", [(3, 4)], dict(axis=(0,), keep_dims=True), id="keep_dims"),
    GradCase("min", _ties, dict(axis=(1,)), id="ties"),
    GradCase("logsumexp", [(3, 4)]),
    GradCase("logsumexp", [(2, 3, 4)], dict(axis=(1,), keep_dims=True), id="axis"),
    GradCase("var", [(3, 4)]),
    GradCase("var", [(3, 4)], dict(axis=(1,), ddof=1), id="ddof"),
    GradCase("var", [(2, 3, 4)], dict(axis=(0, 2), keep_dims=True), id="keep_dims"),
    GradCase("std", [(3, 4)]),
    GradCase("std", [(3, 4)], dict(axis=(0,), ddof=1, keep_dims=True), id="ddof"),
    GradCase("cumsum", [(3, 4)], dict(axis=1)),
    GradCase("cumsum", [(3, 4)], dict(axis=0, exclusive=True), id="exclusive"),
    GradCase("cumsum", [(3, 4)], dict(axis=-1, reverse=True), id="reverse"),
    GradCase("cumsum", [(3, 4)], dict(axis=1, exclusive=True, reverse=True), id="exclusive_reverse"),
]



def _scan_zeros(rng):
    """cumprod rows with one zero, two zeros, and a zero at each end: the gradient has no division."""
    x = rng.uniform(0.5, 1.5, size=(4, 5)) * rng.choice([-1.0, 1.0], size=(4, 5))
    x[0, 2] = 0.0
    x[1, 1] = x[1, 3] = 0.0
    x[2, 0] = x[3, 4] = 0.0
    return [x]


CASES += [
    GradCase("cumprod", [(3, 4)], dict(axis=1)),
    GradCase("cumprod", [(3, 4)], dict(axis=0, exclusive=True), id="exclusive"),
    GradCase("cumprod", [(3, 4)], dict(axis=-1, reverse=True), id="reverse"),
    GradCase("cumprod", [(2, 3, 4)], dict(axis=1, exclusive=True, reverse=True), id="exclusive_reverse"),
    *[GradCase("cumprod", _scan_zeros, a, id=f"zeros{i}")
      for i, a in enumerate((dict(axis=1), dict(axis=1, exclusive=True), dict(axis=1, reverse=True)))],
]
