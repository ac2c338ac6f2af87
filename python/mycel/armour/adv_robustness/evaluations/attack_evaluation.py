"""AttackEvaluate: how well an attack did, from the clean inputs, their labels, the adversarial
inputs and the model's predictions (probabilities) on them; numpy only."""
import numpy as np

from mycel.armour._checks import as_onehot


class AttackEvaluate:
    """Metrics over the successful adversarial examples (misclassified, or classified as the
    target when targeted). Perturbation norms are relative to the clean input's norm, as in
    MindArmour; a metric with no successful example is -1."""

    def __init__(self, inputs, labels, adv_inputs, adv_preds, targeted=False, target_label=None):
        x = np.asarray(inputs, np.float64)
        adv = np.asarray(adv_inputs, np.float64)
        preds = np.asarray(adv_preds, np.float64)
        if x.shape != adv.shape or x.ndim < 1:
            raise ValueError(f"AttackEvaluate: inputs and adv_inputs must have the same shape, got {x.shape} "
                             f"and {adv.shape}")
        if preds.ndim != 2 or preds.shape[0] != x.shape[0]:
            raise ValueError(f"AttackEvaluate: adv_preds must be (N, classes) with N = {x.shape[0]}, got "
                             f"{preds.shape}")
        if not isinstance(targeted, bool):
            raise TypeError(f"AttackEvaluate: targeted must be a bool, got {type(targeted).__name__}")
        k = preds.shape[1]
        self._true = as_onehot("AttackEvaluate", labels, x.shape[0], k).argmax(axis=1)
        if targeted:
            if target_label is None:
                raise ValueError("AttackEvaluate: targeted=True needs target_label")
            self._target = as_onehot("AttackEvaluate", target_label, x.shape[0], k, "target_label").argmax(axis=1)
        self._x, self._adv, self._preds, self._targeted = x, adv, preds, targeted
        pred_label = preds.argmax(axis=1)
        self._success = pred_label == self._target if targeted else pred_label != self._true

    def mis_classification_rate(self):
        """The fraction of adversarial examples that succeed."""
        return float(self._success.mean())

    def avg_conf_adv_class(self):
        """The mean predicted probability of the adversarial class over successful examples."""
        if not self._success.any():
            return -1.0
        return float(self._preds[self._success].max(axis=1).mean())

    def avg_conf_true_class(self):
        """The mean predicted probability of the true class over successful examples."""
        if not self._success.any():
            return -1.0
        idx = np.nonzero(self._success)[0]
        return float(self._preds[idx, self._true[idx]].mean())

    def avg_lp_distance(self):
        """(L0, L2, L-inf) of the perturbations relative to the clean inputs, averaged over the
        successful examples; (-1, -1, -1) when there are none."""
        if not self._success.any():
            return -1.0, -1.0, -1.0
        d = (self._adv - self._x)[self._success].reshape(self._success.sum(), -1)
        x = self._x[self._success].reshape(d.shape)

        def rel(a, b):
            return np.where(b > 0, a / np.where(b > 0, b, 1.0), 0.0)

        l0 = rel((np.abs(d) > 0).sum(axis=1), (np.abs(x) > 0).sum(axis=1))
        l2 = rel(np.sqrt((d * d).sum(axis=1)), np.sqrt((x * x).sum(axis=1)))
        linf = rel(np.abs(d).max(axis=1), np.abs(x).max(axis=1))
        return float(l0.mean()), float(l2.mean()), float(linf.mean())

    def nte(self):
        """Noise tolerance estimation: the mean margin between the top and the second probability
        of the successful examples."""
        if not self._success.any():
            return -1.0
        p = np.sort(self._preds[self._success], axis=1)
        return float((p[:, -1] - p[:, -2]).mean())
