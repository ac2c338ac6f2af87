"""ROC curves and the area under a curve (MindSpore's metrics.ROC and train.auc)."""
import numpy as np

from mycel.train.metrics.metric import Metric, to_numpy


def _binary_curve(scores, labels, pos_label):
    """(fpr, tpr, thresholds) of one class: thresholds are the distinct scores, highest first,
    after one threshold above them all (the highest + 1) where nothing is predicted positive."""
    order = np.argsort(-scores, kind="mergesort")
    scores, hits = scores[order], (labels[order] == pos_label).astype(np.float64)
    last = np.r_[np.nonzero(np.diff(scores))[0], scores.size - 1]  # last index of each distinct score
    tps = np.cumsum(hits)[last]
    fps = (last + 1) - tps
    tps, fps = np.r_[0.0, tps], np.r_[0.0, fps]
    thresholds = np.r_[scores[0] + 1, scores[last]]
    with np.errstate(invalid="ignore", divide="ignore"):  # no negatives (or positives): nan, as MindSpore
        return fps / fps[-1], tps / tps[-1], thresholds


class ROC(Metric):
    """Receiver operating characteristic: eval() gives (fpr, tpr, thresholds) over every batch
    seen; binary scores (N,) with labels (N,), or per class (N, C) scores against (N,) class
    indices or (N, C) one-hot labels, giving one curve per class (lists)."""

    def __init__(self, class_num=None, pos_label=None):
        self.class_num, self.pos_label = class_num, pos_label
        super().__init__()

    def clear(self):
        self._preds, self._labels = [], []

    def update(self, *inputs):
        self._check_inputs(inputs, 2)
        y_pred = np.asarray(to_numpy(inputs[0], "ROC", "y_pred"), np.float64)
        y = to_numpy(inputs[1], "ROC", "y")
        if y_pred.ndim == 2 and y_pred.shape[1] > 1:
            if y.ndim == 1:
                y = np.eye(y_pred.shape[1])[y.astype(np.int64)]
            if y.shape != y_pred.shape:
                raise ValueError(f"ROC.update: y must be (N,) indices or one-hot {y_pred.shape}, got {y.shape}")
        elif y_pred.reshape(-1).shape != y.reshape(-1).shape:
            raise ValueError(f"ROC.update: y_pred {y_pred.shape} and y {y.shape} must hold one score per label")
        else:
            y_pred, y = y_pred.reshape(-1), y.reshape(-1)
        self._preds.append(y_pred)
        self._labels.append(y)

    def eval(self):
        if not self._preds:
            raise RuntimeError("ROC.eval: no samples; call update first")
        preds, labels = np.concatenate(self._preds), np.concatenate(self._labels)
        if preds.ndim == 1:
            return _binary_curve(preds, labels, 1 if self.pos_label is None else self.pos_label)
        curves = [_binary_curve(preds[:, c], labels[:, c], 1) for c in range(preds.shape[1])]
        return [c[0] for c in curves], [c[1] for c in curves], [c[2] for c in curves]


def auc(x, y, reorder=False):
    """Area under the curve through points (x, y) by the trapezoidal rule; x must be monotonic
    unless reorder sorts it first (MindSpore's train.auc)."""
    x, y = np.asarray(x, np.float64).reshape(-1), np.asarray(y, np.float64).reshape(-1)
    if x.shape != y.shape or x.size < 2:
        raise ValueError(f"auc: x and y must hold the same number (>= 2) of points, got {x.size} and {y.size}")
    if reorder:
        order = np.lexsort((y, x))
        x, y = x[order], y[order]
    d = np.diff(x)
    sign = 1.0
    if np.any(d < 0):
        if not np.all(d <= 0):
            raise ValueError("auc: x is neither increasing nor decreasing; pass reorder=True")
        sign = -1.0
    return float(sign * np.sum(d * (y[1:] + y[:-1]) / 2))
