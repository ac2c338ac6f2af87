"""Salt-and-pepper noise attack (query-only): for densities rising from 1 / max_iter to 1, each
not-yet-fooled sample gets that fraction of its features set to the lower or upper bound (half
each, at random from numpy's global generator, or an own one when seed is given), in one batched
query per density; a sample's result is its first success, so it carries the smallest density
tried that fooled the model."""
import numpy as np

from mycel.armour._checks import check_bounds, check_number
from mycel.armour.adv_robustness.attacks.black.black_model import BlackModel
from mycel.armour.adv_robustness.attacks.black._common import Queries, as_batch, make_rng, sparse_labels, success


class SaltAndPepperNoiseAttack:
    """generate(inputs, labels) -> (is_adv (N,), adv_data, query_times (N,))."""

    def __init__(self, model, bounds=(0.0, 1.0), max_iter=100, is_targeted=False, sparse=True, *, seed=None):
        if not isinstance(model, BlackModel):
            raise TypeError(f"SaltAndPepperNoiseAttack: model must be a BlackModel, got {type(model).__name__}")
        self._model = model
        self._bounds = check_bounds("SaltAndPepperNoiseAttack", bounds, allow_none=False)
        self._max_iter = check_number("SaltAndPepperNoiseAttack", "max_iter", max_iter, lo=1, integer=True)
        for flag, v in (("is_targeted", is_targeted), ("sparse", sparse)):
            if not isinstance(v, bool):
                raise TypeError(f"SaltAndPepperNoiseAttack: {flag} must be a bool, got {type(v).__name__}")
        self._targeted, self._sparse = is_targeted, sparse
        self._rng = make_rng("SaltAndPepperNoiseAttack", seed)

    def generate(self, inputs, labels):
        o = "SaltAndPepperNoiseAttack"
        x = as_batch(o, inputs)
        n = x.shape[0]
        label = sparse_labels(o, labels, n, self._sparse)
        q = Queries(o, self._model, n, label)
        adv = x.copy()
        done = np.zeros(n, bool)
        lo, hi = self._bounds
        for i in range(1, self._max_iter + 1):
            rows = np.nonzero(~done)[0]
            if rows.size == 0:
                break
            density = i / self._max_iter
            trial = x[rows].copy()
            u = self._rng.uniform(size=trial.shape)
            trial[u < density / 2] = lo
            trial[(u >= density / 2) & (u < density)] = hi
            hit = success(q(rows, trial), label[rows], self._targeted)
            adv[rows[hit]] = trial[hit]
            done[rows[hit]] = True
        return done, adv, q.count
