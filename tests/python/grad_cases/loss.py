"""Gradient rows for the losses: predictions only (labels, targets and class weights get none)."""
import numpy as np

from . import GradCase


def _probs(n, c):
    def gen(rng):
        x = rng.standard_normal((n, c))
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return [x, e / e.sum(axis=1, keepdims=True)]
    return gen


def _sparse(n, c, dtype=np.int64, ignore=None):
    def gen(rng):
        t = rng.integers(0, c, size=n).astype(dtype)
        if ignore is not None:
            t[::3] = ignore
        return [rng.standard_normal((n, c)), t]
    return gen


def _nll(n, c, weight=False, ignore=None):
    def gen(rng):
        x, t = _sparse(n, c, ignore=ignore)(rng)
        return [x, t, rng.uniform(0.5, 2.0, size=c) if weight else None]
    return gen


def _bce(shape, weight_shape=None):
    def gen(rng):
        return [rng.uniform(0.1, 0.9, size=shape), rng.uniform(0, 1, size=shape),
                None if weight_shape is None else rng.uniform(0.5, 2.0, size=weight_shape)]
    return gen


def _bce_logits(shape, weight_shape=None, pos_weight_shape=None):
    def gen(rng):
        return [rng.standard_normal(shape), rng.uniform(0, 1, size=shape),
                None if weight_shape is None else rng.uniform(0.5, 2.0, size=weight_shape),
                None if pos_weight_shape is None else rng.uniform(0.5, 3.0, size=pos_weight_shape)]
    return gen


CASES = [
    GradCase("softmax_cross_entropy_with_logits", _probs(4, 5), wrt=[0]),
    GradCase("softmax_cross_entropy_with_logits", _probs(1, 3), wrt=[0], id="one_row"),
    GradCase("sparse_softmax_cross_entropy_with_logits", _sparse(4, 5), wrt=[0]),
    GradCase("sparse_softmax_cross_entropy_with_logits", _sparse(3, 4, np.int32), attrs=dict(reduction="sum"),
             wrt=[0], id="sum_int32"),
    GradCase("sparse_softmax_cross_entropy_with_logits", _sparse(3, 4), attrs=dict(reduction="none"), wrt=[0],
             id="none"),
    GradCase("nll_loss", _nll(5, 4), wrt=[0]),
    GradCase("nll_loss", _nll(5, 4, weight=True), wrt=[0], id="weighted"),
    GradCase("nll_loss", _nll(6, 4, weight=True, ignore=-100), wrt=[0], id="ignore_default"),
    GradCase("nll_loss", _nll(6, 4, weight=True, ignore=2), attrs=dict(ignore_index=2), wrt=[0],
             id="ignore_in_range"),
    GradCase("nll_loss", _nll(5, 4, weight=True), attrs=dict(reduction="sum"), wrt=[0], id="sum"),
    GradCase("nll_loss", _nll(5, 4, ignore=1), attrs=dict(reduction="none", ignore_index=1), wrt=[0], id="none"),
    GradCase("binary_cross_entropy", _bce((3, 4)), wrt=[0]),
    GradCase("binary_cross_entropy", _bce((3, 4), (4,)), attrs=dict(reduction="sum"), wrt=[0], id="weight_sum"),
    GradCase("binary_cross_entropy", _bce((2, 3), (2, 3)), attrs=dict(reduction="none"), wrt=[0], id="none"),
    GradCase("binary_cross_entropy_with_logits", _bce_logits((3, 4)), wrt=[0]),
    GradCase("binary_cross_entropy_with_logits", _bce_logits((3, 4), (3, 1)), attrs=dict(reduction="sum"),
             wrt=[0], id="weight"),
    GradCase("binary_cross_entropy_with_logits", _bce_logits((3, 4), (4,), (4,)), wrt=[0], id="pos_weight"),
    GradCase("binary_cross_entropy_with_logits", _bce_logits((2, 5), None, (5,)), attrs=dict(reduction="none"),
             wrt=[0], id="pos_weight_none"),
    GradCase("mse_loss", [(3, 4), (3, 4)]),
    GradCase("mse_loss", [(3, 4), (4,)], attrs=dict(reduction="sum"), id="broadcast_sum"),
    GradCase("mse_loss", [(2, 1, 3), (4, 1)], attrs=dict(reduction="none"), id="broadcast_none"),
]
