"""JSMA (Papernot et al. 2016), targeted: each iteration picks the pair of input features whose
joint saliency most raises the target logit while lowering the others (from the gradients of the
target logit and of the sum of the other logits: two compiled batch gradients), and moves both by
theta. The pair search is exact over all feature pairs, vectorized over chunks of samples."""
import numpy as np

from mycel import Tensor
from mycel.armour._checks import check_number
from mycel.armour.adv_robustness.attacks.attack import Attack, _WeightedLogitGrad

_PAIR_BUDGET = 1 << 24  # entries of the (samples, D, D) score block per chunk


def best_pairs(alpha, beta, domain, increase):
    """Per row: the pair (p, q), p != q, both in the domain, maximizing the saliency
    (a > 0, b < 0 -> a |b| when increasing; a < 0, b > 0 -> |a| b when decreasing), with
    a = alpha_p + alpha_q, b = beta_p + beta_q; (-1, -1) where no pair qualifies."""
    n, d = alpha.shape
    out = np.full((n, 2), -1, np.int64)
    chunk = max(1, _PAIR_BUDGET // (d * d))
    eye = np.eye(d, dtype=bool)
    for s in range(0, n, chunk):
        al, be, dom = alpha[s:s + chunk], beta[s:s + chunk], domain[s:s + chunk]
        a = al[:, :, None] + al[:, None, :]
        b = be[:, :, None] + be[:, None, :]
        ok = (a > 0) & (b < 0) if increase else (a < 0) & (b > 0)
        ok &= dom[:, :, None] & dom[:, None, :] & ~eye
        score = np.where(ok, np.abs(a) * np.abs(b), -1.0).reshape(len(al), -1)
        k = score.argmax(axis=1)
        found = score[np.arange(len(al)), k] > 0
        out[s:s + chunk][found] = np.stack([k // d, k % d], axis=1)[found]
    return out


class JSMAAttack(Attack):
    """generate(inputs, labels) with labels the TARGET classes (sparse (N,) or one-hot)."""

    def __init__(self, network, num_classes, box_min=0.0, box_max=1.0, theta=1.0, max_iteration=1000,
                 max_distortion=0.1, increase=True, sparse=True):
        super().__init__(network)
        name = "JSMAAttack"
        self._num_classes = check_number(name, "num_classes", num_classes, lo=2, integer=True)
        self._lo = float(check_number(name, "box_min", box_min))
        self._hi = float(check_number(name, "box_max", box_max))
        if not self._lo < self._hi:
            raise ValueError(f"{name}: box_min must be < box_max, got {box_min} and {box_max}")
        self._theta = float(check_number(name, "theta", theta, lo=0.0, hi=1.0, lo_open=True))
        self._max_iter = check_number(name, "max_iteration", max_iteration, lo=1, integer=True)
        self._max_dist = float(check_number(name, "max_distortion", max_distortion, lo=0.0, hi=1.0))
        for flag, v in (("increase", increase), ("sparse", sparse)):
            if not isinstance(v, bool):
                raise TypeError(f"{name}: {flag} must be a bool, got {type(v).__name__}")
        self._increase, self._sparse = increase, sparse
        self._jac = _WeightedLogitGrad(network)

    def generate(self, inputs, labels):
        y = np.asarray(labels)
        if self._sparse and y.ndim != 1:
            raise ValueError(f"JSMAAttack: with sparse=True labels must have shape (N,), got {y.shape}")
        x0, onehot, k = self._prepare(inputs, y)
        if k != self._num_classes:
            raise ValueError(f"JSMAAttack: the network has {k} classes, num_classes is {self._num_classes}")
        target = onehot.argmax(axis=1)
        n, shape = x0.shape[0], x0.shape
        x = x0.reshape(n, -1).astype(np.float32).copy()
        d = x.shape[1]
        domain = x < self._hi if self._increase else x > self._lo
        step = self._theta * (self._hi - self._lo) * (1.0 if self._increase else -1.0)
        active = self._logits(x.reshape(shape)).argmax(axis=1) != target
        for _ in range(self._max_iter):
            changed = (x != x0.reshape(n, -1)).sum(axis=1) / d
            active &= changed < self._max_dist
            if not active.any():
                break
            xt = Tensor(x.reshape(shape))
            alpha = self._jac(xt, Tensor(onehot)).asnumpy().reshape(n, -1).astype(np.float64)
            total = self._jac(xt, Tensor(np.ones_like(onehot))).asnumpy().reshape(n, -1).astype(np.float64)
            rows = np.nonzero(active)[0]
            pairs = best_pairs(alpha[rows], total[rows] - alpha[rows], domain[rows], self._increase)
            found = pairs[:, 0] >= 0
            active[rows[~found]] = False
            rows, pairs = rows[found], pairs[found]
            for col in (0, 1):
                x[rows, pairs[:, col]] = np.clip(x[rows, pairs[:, col]] + step, self._lo, self._hi)
                domain[rows, pairs[:, col]] = False
            active[rows] &= self._logits(x[rows].reshape((len(rows),) + shape[1:])).argmax(axis=1) != target[rows]
        return x.reshape(shape)
