"""DefenseEvaluate: how a defended model's predictions compare with the raw model's on the same
inputs (MindArmour's metrics), from probabilities (N, classes) and true labels; numpy only."""
import numpy as np

from mycel.armour._checks import as_onehot


class DefenseEvaluate:
    def __init__(self, raw_preds, def_preds, true_labels):
        raw = np.asarray(raw_preds, np.float64)
        dfd = np.asarray(def_preds, np.float64)
        if raw.ndim != 2 or raw.shape != dfd.shape:
            raise ValueError(f"DefenseEvaluate: raw_preds and def_preds must both be (N, classes), got {raw.shape} "
                             f"and {dfd.shape}")
        self._y = as_onehot("DefenseEvaluate", true_labels, raw.shape[0], raw.shape[1], "true_labels").argmax(axis=1)
        self._raw, self._def = raw, dfd
        self._raw_ok = raw.argmax(axis=1) == self._y
        self._def_ok = dfd.argmax(axis=1) == self._y

    def cav(self):
        """Classification accuracy variance: accuracy(defended) - accuracy(raw)."""
        return float(self._def_ok.mean() - self._raw_ok.mean())

    def crr(self):
        """Classification rectify ratio: the fraction the raw model gets wrong and the defended one right."""
        return float((~self._raw_ok & self._def_ok).mean())

    def csr(self):
        """Classification sacrifice ratio: the fraction the raw model gets right and the defended one wrong."""
        return float((self._raw_ok & ~self._def_ok).mean())

    def _both(self):
        return np.nonzero(self._raw_ok & self._def_ok)[0]

    def ccv(self):
        """Classification confidence variance: the mean |p_def(true) - p_raw(true)| over the samples
        both models classify correctly (-1 when there are none)."""
        idx = self._both()
        if idx.size == 0:
            return -1.0
        return float(np.abs(self._def[idx, self._y[idx]] - self._raw[idx, self._y[idx]]).mean())

    def cos(self):
        """Classification output stability: the mean Jensen-Shannon divergence (natural log) between
        the two models' output distributions over the samples both classify correctly (-1 when none)."""
        idx = self._both()
        if idx.size == 0:
            return -1.0
        p, q = self._raw[idx], self._def[idx]
        m = (p + q) / 2

        def kl(a, b):
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(a > 0, a * np.log(a / b), 0.0).sum(axis=1)
        return float((0.5 * kl(p, m) + 0.5 * kl(q, m)).mean())
