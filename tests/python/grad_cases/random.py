"""Gradient rows for dropout: fixed op seeds make each call draw the same mask, so finite
differences see one fixed linear map."""
from . import GradCase

CASES = [
    GradCase("dropout", [(4, 5)], dict(keep_prob=0.5, seed=3, seed2=7)),
    GradCase("dropout", [(2, 3, 4)], dict(keep_prob=0.8, seed=11, seed2=1), id="keep_0.8"),
    GradCase("dropout", [(3,)], dict(keep_prob=1.0, seed=1, seed2=1), id="keep_all"),
]
