"""DeepFool (Moosavi-Dezfooli et al.): linearize the classifier at the current point and step to
the nearest linearized decision boundary, until the label changes. The Jacobian rows come from one
compiled batch gradient per class (a loop over classes, never over samples)."""
import numpy as np

from mycel import Tensor
from mycel.armour._checks import as_onehot, check_bounds, check_norm_level, check_number
from mycel.armour.adv_robustness.attacks.attack import Attack, _WeightedLogitGrad

# Added to each boundary distance, as in the reference algorithm, so a step lands just past the
# linearized boundary rather than on it.
_NUDGE = 1e-4


class DeepFool(Attack):
    """generate(inputs, labels) with sparse (N,) labels (sparse=True) or one-hot rows; the total
    perturbation is scaled by (1 + overshoot). norm_level 2 (L2 steps) or 'inf' (L-inf steps, the
    L1 dual norm for distances)."""

    def __init__(self, network, num_classes, model_type="classification", reserve_ratio=0.3, max_iters=50,
                 overshoot=0.02, norm_level=2, bounds=None, sparse=True):
        super().__init__(network)
        self._num_classes = check_number("DeepFool", "num_classes", num_classes, lo=2, integer=True)
        if model_type != "classification":
            raise ValueError(f"DeepFool: model_type must be 'classification' (detection models are not "
                             f"supported), got {model_type!r}")
        check_number("DeepFool", "reserve_ratio", reserve_ratio, lo=0.0, hi=1.0)
        self._max_iters = check_number("DeepFool", "max_iters", max_iters, lo=1, integer=True)
        self._overshoot = check_number("DeepFool", "overshoot", overshoot, lo=0.0)
        self._norm_level = check_norm_level("DeepFool", norm_level, allowed=(2, "inf"))
        self._bounds = check_bounds("DeepFool", bounds)
        if not isinstance(sparse, bool):
            raise TypeError(f"DeepFool: sparse must be a bool, got {type(sparse).__name__}")
        self._sparse = sparse
        self._jac = _WeightedLogitGrad(network)

    def _jacobian(self, x):
        """(K, N, *x.shape[1:]): gradient of every logit of every sample."""
        n, k = x.shape[0], self._num_classes
        xt = Tensor(np.ascontiguousarray(x, np.float32))
        return np.stack([self._jac(xt, Tensor(np.tile(np.eye(k, dtype=np.float32)[c], (n, 1)))).asnumpy()
                         for c in range(k)])

    def generate(self, inputs, labels):
        x0 = np.asarray(inputs, np.float32)
        y = np.asarray(labels)
        if self._sparse and y.ndim != 1:
            raise ValueError(f"DeepFool: with sparse=True labels must have shape (N,), got {y.shape}")
        if not self._sparse and y.ndim != 2:
            raise ValueError(f"DeepFool: with sparse=False labels must be one-hot (N, classes), got {y.shape}")
        x0, onehot, k = self._prepare(x0, y)
        if k != self._num_classes:
            raise ValueError(f"DeepFool: the network has {k} classes, num_classes is {self._num_classes}")
        label = onehot.argmax(axis=1)
        n, idx = x0.shape[0], np.arange(x0.shape[0])
        r_tot = np.zeros_like(x0, dtype=np.float64)
        adv = x0.copy()
        active = self._logits(adv).argmax(axis=1) == label
        for _ in range(self._max_iters):
            if not active.any():
                break
            logits = self._logits(adv)
            jac = self._jacobian(adv).reshape(k, n, -1).astype(np.float64)
            w = jac - jac[label, idx][None]                                   # (K, N, D)
            f = (logits - logits[idx, label][:, None]).T.astype(np.float64)    # (K, N)
            wn = np.abs(w).sum(axis=2) if self._norm_level == "inf" else np.sqrt((w * w).sum(axis=2))
            with np.errstate(divide="ignore", invalid="ignore"):
                dist = (np.abs(f) + _NUDGE) / wn
            dist[label, idx] = np.inf
            dist[~np.isfinite(dist)] = np.inf
            best = dist.argmin(axis=0)
            wl, fl, nl = w[best, idx], f[best, idx], wn[best, idx]
            ok = active & np.isfinite(dist[best, idx])
            if self._norm_level == "inf":
                r = ((np.abs(fl) + _NUDGE) / np.where(nl > 0, nl, 1.0))[:, None] * np.sign(wl)
            else:
                r = ((np.abs(fl) + _NUDGE) / np.where(nl > 0, nl * nl, 1.0))[:, None] * wl
            r_tot[ok] += r[ok].reshape((-1,) + x0.shape[1:])
            adv = x0 + (1.0 + self._overshoot) * r_tot
            if self._bounds is not None:
                adv = np.clip(adv, self._bounds[0], self._bounds[1])
            adv = adv.astype(np.float32)
            active = ok & (self._logits(adv).argmax(axis=1) == label)
        return adv
