"""AttackEvaluate: how well an attack did, from the clean inputs, their labels, the adversarial
inputs and the model's predictions (probabilities) on them; numpy only."""
import numpy as np

from mycel.armour._checks import as_onehot


_SSIM_WIN = 7


def _window_means(img):
    """Means of every full 7 x 7 window over the last two axes, by 2-D cumulative sums."""
    k = _SSIM_WIN
    c = np.cumsum(np.cumsum(img, axis=-1), axis=-2)
    c = np.pad(c, [(0, 0)] * (img.ndim - 2) + [(1, 0), (1, 0)])
    s = c[..., k:, k:] - c[..., :-k, k:] - c[..., k:, :-k] + c[..., :-k, :-k]
    return s / (k * k)


def _ssim(a, b, span):
    c1, c2 = (0.01 * span) ** 2, (0.03 * span) ** 2
    n = _SSIM_WIN * _SSIM_WIN
    ma, mb = _window_means(a), _window_means(b)
    # unbiased window (co)variances, as in the reference implementation of the paper
    va = (_window_means(a * a) - ma * ma) * n / (n - 1)
    vb = (_window_means(b * b) - mb * mb) * n / (n - 1)
    cov = (_window_means(a * b) - ma * mb) * n / (n - 1)
    ssim = ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2))
    return ssim.mean()


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

    def avg_ssim(self):
        """Mean structural similarity (Wang et al. 2004) between the clean and adversarial images of
        the successful examples: 7 x 7 uniform windows over the last two axes (every channel, every
        full window), constants (0.01 L)^2 and (0.03 L)^2 with L the clean inputs' value range.
        Needs images: inputs of shape (N, H, W) or (N, C, H, W) with H, W >= 7; -1 without success."""
        if self._x.ndim not in (3, 4) or min(self._x.shape[-2:]) < _SSIM_WIN:
            raise ValueError(f"AttackEvaluate.avg_ssim: inputs must be images (N, H, W) or (N, C, H, W) with "
                             f"H, W >= {_SSIM_WIN}, got shape {self._x.shape}")
        if not self._success.any():
            return -1.0
        span = float(self._x.max() - self._x.min()) or 1.0
        return float(np.mean([_ssim(a, b, span) for a, b in zip(self._x[self._success], self._adv[self._success])]))

    def nte(self):
        """Noise tolerance estimation: the mean margin between the top and the second probability
        of the successful examples."""
        if not self._success.any():
            return -1.0
        p = np.sort(self._preds[self._success], axis=1)
        return float((p[:, -1] - p[:, -2]).mean())
