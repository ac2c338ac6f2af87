"""ConfusionMatrix, Precision, Recall and F1 (all from one per-class count table)."""
import numpy as np

from mycel.train.metrics.metric import Metric, predicted_classes, to_numpy


class ConfusionMatrix(Metric):
    """matrix[i, j] = samples of true class i predicted as j. normalize: "no_norm", "target"
    (rows sum to 1), "prediction" (columns), or "all"."""

    def __init__(self, num_classes, normalize="no_norm", threshold=0.5):
        if normalize not in ("no_norm", "target", "prediction", "all"):
            raise ValueError(f"ConfusionMatrix: normalize must be no_norm/target/prediction/all, got {normalize!r}")
        self.num_classes, self.normalize, self.threshold = int(num_classes), normalize, threshold
        super().__init__()

    def clear(self):
        self._m = np.zeros((self.num_classes, self.num_classes), np.int64)

    def update(self, *inputs):
        self._check_inputs(inputs, 2)
        p, y = to_numpy(inputs[0], "ConfusionMatrix", "y_pred"), to_numpy(inputs[1], "ConfusionMatrix", "y")
        if p.ndim == y.ndim + 1:
            p = p.argmax(axis=1)
        elif np.issubdtype(p.dtype, np.floating):
            p = (p > self.threshold)
        p, y = p.astype(np.int64).ravel(), y.astype(np.int64).ravel()
        if p.shape != y.shape:
            raise ValueError(f"ConfusionMatrix.update: {p.shape[0]} predictions for {y.shape[0]} labels")
        if len(y) and (min(p.min(), y.min()) < 0 or max(p.max(), y.max()) >= self.num_classes):
            raise ValueError(f"ConfusionMatrix.update: classes must be in [0, {self.num_classes})")
        np.add.at(self._m, (y, p), 1)

    def eval(self):
        m = self._m.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.normalize == "target":
                m = m / m.sum(axis=1, keepdims=True)
            elif self.normalize == "prediction":
                m = m / m.sum(axis=0, keepdims=True)
            elif self.normalize == "all":
                m = m / m.sum()
        return np.nan_to_num(m) if self.normalize != "no_norm" else self._m.copy()


class _PerClass(Metric):
    """Counts true positives, predicted and actual positives per class of (N, C) scores
    against (N,) indices or (N, C) one-hot labels."""

    def clear(self):
        self._tp = self._pred = self._act = None

    def update(self, *inputs):
        self._check_inputs(inputs, 2)
        scores = to_numpy(inputs[0], type(self).__name__, "y_pred")
        pred, y = predicted_classes(scores, inputs[1], type(self).__name__)
        c = scores.shape[1]
        if self._tp is None:
            self._tp, self._pred, self._act = (np.zeros(c, np.int64) for _ in range(3))
        elif len(self._tp) != c:
            raise ValueError(f"{type(self).__name__}.update: {c} classes after {len(self._tp)} before")
        self._tp += np.bincount(y[pred == y], minlength=c)
        self._pred += np.bincount(pred, minlength=c)
        self._act += np.bincount(y, minlength=c)

    def _ratio(self, num, den):
        if self._tp is None:
            raise RuntimeError(f"{type(self).__name__}.eval: no samples; call update first")
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.maximum(den, 1), 0.0)


class Precision(_PerClass):
    """tp / predicted positives per class, or their mean with eval(average=True)."""

    def eval(self, average=False):
        r = self._ratio(self._tp, self._pred)
        return float(r.mean()) if average else r


class Recall(_PerClass):
    """tp / actual positives per class, or their mean with eval(average=True)."""

    def eval(self, average=False):
        r = self._ratio(self._tp, self._act)
        return float(r.mean()) if average else r


class Fbeta(_PerClass):
    """(1 + beta**2) * p * r / (beta**2 * p + r) per class."""

    def __init__(self, beta):
        if beta <= 0:
            raise ValueError(f"Fbeta: beta must be > 0, got {beta}")
        self.beta = float(beta)
        super().__init__()

    def eval(self, average=False):
        p, r = self._ratio(self._tp, self._pred), self._ratio(self._tp, self._act)
        b2 = self.beta ** 2
        den = b2 * p + r
        f = np.where(den > 0, (1 + b2) * p * r / np.where(den > 0, den, 1), 0.0)
        return float(f.mean()) if average else f


class F1(Fbeta):
    """Fbeta with beta = 1."""

    def __init__(self):
        super().__init__(1.0)
