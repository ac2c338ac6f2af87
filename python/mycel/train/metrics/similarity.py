"""Dice, cosine similarity and perplexity (MindSpore's metrics.Dice, CosineSimilarity and
Perplexity), computed as MindSpore defines them."""
import math

import numpy as np

from mycel.train.metrics.metric import Metric, to_numpy


class Dice(Metric):
    """Each update adds 2 |p . y| / (|p|^2 + |y|^2 + smooth) of its batch (flattened); eval()
    divides the sum by the number of samples seen (MindSpore's definition)."""

    def __init__(self, smooth=1e-5):
        if not isinstance(smooth, (int, float)) or isinstance(smooth, bool) or smooth <= 0:
            raise ValueError(f"Dice: smooth must be a positive number, got {smooth!r}")
        self.smooth = float(smooth)
        super().__init__()

    def clear(self):
        self._sum, self._samples = 0.0, 0

    def update(self, *inputs):
        self._check_inputs(inputs, 2)
        p = np.asarray(to_numpy(inputs[0], "Dice", "y_pred"), np.float64)
        y = np.asarray(to_numpy(inputs[1], "Dice", "y"), np.float64)
        if p.shape != y.shape:
            raise ValueError(f"Dice.update: y_pred {p.shape} and y {y.shape} must have the same shape")
        self._samples += y.shape[0] if y.ndim else 1
        p, y = p.reshape(-1), y.reshape(-1)
        self._sum += 2 * float(p @ y) / float(p @ p + y @ y + self.smooth)

    def eval(self):
        if self._samples == 0:
            raise RuntimeError("Dice.eval: no samples; call update first")
        return self._sum / self._samples


class CosineSimilarity(Metric):
    """update(x) with x (N, D): the (N, N) similarity of its rows, 'cosine' (rows normalized) or
    'dot'; eval() zeroes the diagonal (zero_diagonal) and reduces each row ('none', 'mean', 'sum')."""

    def __init__(self, similarity="cosine", reduction="none", zero_diagonal=True):
        if similarity not in ("cosine", "dot"):
            raise ValueError(f"CosineSimilarity: similarity must be 'cosine' or 'dot', got {similarity!r}")
        if reduction not in ("none", "mean", "sum"):
            raise ValueError(f"CosineSimilarity: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
        self.similarity, self.reduction, self.zero_diagonal = similarity, reduction, bool(zero_diagonal)
        super().__init__()

    def clear(self):
        self._mtx = None

    def update(self, *inputs):
        self._check_inputs(inputs, 1)
        x = np.asarray(to_numpy(inputs[0], "CosineSimilarity", "inputs"), np.float64)
        if x.ndim != 2:
            raise ValueError(f"CosineSimilarity.update: inputs must be (N, D), got shape {x.shape}")
        if self.similarity == "cosine":
            x = x / np.linalg.norm(x, axis=1, keepdims=True)
        self._mtx = x @ x.T

    def eval(self):
        if self._mtx is None:
            raise RuntimeError("CosineSimilarity.eval: no samples; call update first")
        m = self._mtx.copy()
        if self.zero_diagonal:
            np.fill_diagonal(m, 0)
        if self.reduction == "mean":
            return m.mean(axis=-1)
        if self.reduction == "sum":
            return m.sum(axis=-1)
        return m


class Perplexity(Metric):
    """exp of the mean negative log-probability of the labels: preds (..., C) probabilities,
    labels (...) class indices; labels equal to ignore_label do not count."""

    def __init__(self, ignore_label=None):
        if ignore_label is not None and (not isinstance(ignore_label, int) or isinstance(ignore_label, bool)):
            raise ValueError(f"Perplexity: ignore_label must be an int or None, got {ignore_label!r}")
        self.ignore_label = ignore_label
        super().__init__()

    def clear(self):
        self._loss, self._count = 0.0, 0

    def update(self, *inputs):
        self._check_inputs(inputs, 2)
        p = np.asarray(to_numpy(inputs[0], "Perplexity", "preds"), np.float64)
        labels = to_numpy(inputs[1], "Perplexity", "labels").reshape(-1)
        p = p.reshape(-1, p.shape[-1])
        if labels.size != p.shape[0]:
            raise ValueError(f"Perplexity.update: {labels.size} labels for {p.shape[0]} prediction rows")
        keep = np.ones(labels.size, bool) if self.ignore_label is None else labels != self.ignore_label
        picked = p[np.arange(labels.size)[keep], labels[keep].astype(np.int64)]
        self._loss -= float(np.log(np.maximum(1e-10, picked)).sum())
        self._count += int(keep.sum())

    def eval(self):
        if self._count == 0:
            raise RuntimeError("Perplexity.eval: no samples; call update first")
        return math.exp(self._loss / self._count)
