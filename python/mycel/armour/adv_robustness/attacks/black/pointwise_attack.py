"""PointWiseAttack (Schott et al. 2019), decision-based, minimizing L0: from an adversarial
starting point (init_attack, by default salt-and-pepper noise) it resets features to their
original values in random order as long as the example stays adversarial, then, for the
features that must stay changed, binary-searches (search_iter steps) the value closest to the
original that keeps it adversarial. Passes repeat until one changes nothing or max_iter passes
are done. All samples try their next feature in one batched query."""
import numpy as np

from mycel.armour._checks import check_number
from mycel.armour.adv_robustness.attacks.black._common import (Queries, as_batch, check_bool, check_model,
                                                               make_rng, sparse_labels, success)
from mycel.armour.adv_robustness.attacks.black.salt_and_pepper_attack import SaltAndPepperNoiseAttack


class PointWiseAttack:
    """generate(inputs, labels) -> (is_adv, adv_data, query_times); labels are targets when
    is_targeted, else true labels. query_times include the init attack's queries."""

    def __init__(self, model, max_iter=1000, search_iter=10, is_targeted=False, init_attack=None, sparse=True,
                 *, seed=None):
        o = "PointWiseAttack"
        self._model = check_model(o, model)
        self._max_iter = check_number(o, "max_iter", max_iter, lo=1, integer=True)
        self._search_iter = check_number(o, "search_iter", search_iter, lo=1, integer=True)
        self._targeted = check_bool(o, "is_targeted", is_targeted)
        self._sparse = check_bool(o, "sparse", sparse)
        if init_attack is None:
            init_attack = SaltAndPepperNoiseAttack(model, is_targeted=is_targeted, sparse=sparse, seed=seed)
        elif not callable(getattr(init_attack, "generate", None)):
            raise TypeError(f"{o}: init_attack must be an attack with generate(inputs, labels) -> (is_adv, adv, "
                            f"queries), got {type(init_attack).__name__}")
        self._init_attack = init_attack
        self._rng = make_rng(o, seed)

    def generate(self, inputs, labels):
        o = "PointWiseAttack"
        x = as_batch(o, inputs)
        n, shape = x.shape[0], x.shape[1:]
        y = sparse_labels(o, labels, n, self._sparse)
        ok, start, init_count = self._init_attack.generate(x, labels)
        ok = np.asarray(ok, bool).copy()
        q = Queries(o, self._model, n, y)
        orig = x.reshape(n, -1).astype(np.float64)
        adv = np.asarray(start, np.float64).reshape(n, -1).copy()
        rows = np.nonzero(ok)[0]
        if rows.size:
            self._recover(q, rows, orig, adv, y, shape)
            self._search(q, rows, orig, adv, y, shape)
        adv[~ok] = np.asarray(start, np.float64).reshape(n, -1)[~ok]
        return ok, adv.reshape(x.shape).astype(np.float32), q.count + np.asarray(init_count, np.int64)

    def _try(self, q, ids, trial, y, shape):
        return success(q(ids, trial.reshape((-1,) + shape)), y[ids], self._targeted)

    def _recover(self, q, rows, orig, adv, y, shape):
        """Passes resetting single features to the original while the example stays adversarial."""
        d = orig.shape[1]
        for _ in range(self._max_iter):
            order = np.argsort(self._rng.random_sample((rows.size, d)), axis=1)
            changed = False
            for j in range(d):
                f = order[:, j]
                live = adv[rows, f] != orig[rows, f]
                ids, f = rows[live], f[live]
                if ids.size == 0:
                    continue
                trial = adv[ids].copy()
                trial[np.arange(ids.size), f] = orig[ids, f]
                hit = self._try(q, ids, trial, y, shape)
                adv[ids[hit], f[hit]] = orig[ids[hit], f[hit]]
                changed |= bool(hit.any())
            if not changed:
                return

    def _search(self, q, rows, orig, adv, y, shape):
        """Passes binary-searching each still-changed feature towards its original value, until a
        pass shortens the total L2 distance by less than 0.1%."""
        d = orig.shape[1]
        for _ in range(self._max_iter):
            order = np.argsort(self._rng.random_sample((rows.size, d)), axis=1)
            before = np.linalg.norm(adv[rows] - orig[rows])
            for j in range(d):
                f = order[:, j]
                live = adv[rows, f] != orig[rows, f]
                ids, f = rows[live], f[live]
                if ids.size == 0:
                    continue
                good, bad = adv[ids, f].copy(), orig[ids, f].copy()  # adversarial / not adversarial ends
                for _ in range(self._search_iter):
                    mid = (good + bad) / 2
                    trial = adv[ids].copy()
                    trial[np.arange(ids.size), f] = mid
                    hit = self._try(q, ids, trial, y, shape)
                    good, bad = np.where(hit, mid, good), np.where(hit, bad, mid)
                adv[ids, f] = good
            if np.linalg.norm(adv[rows] - orig[rows]) > 0.999 * before:  # a pass that gains < 0.1% ends it
                return
