"""Accuracy and top-k categorical accuracy."""
import numpy as np

from mycel.train.metrics.metric import Metric, predicted_classes, to_numpy


class Accuracy(Metric):
    """Fraction of correct predictions. eval_type "classification": y_pred (N, C) scores,
    y (N,) indices or (N, C) one-hot; "multilabel": y_pred and y (N, C) in {0, 1}, a sample
    counts as correct when every label matches."""

    def __init__(self, eval_type="classification"):
        if eval_type not in ("classification", "multilabel"):
            raise ValueError(f"Accuracy: eval_type must be 'classification' or 'multilabel', got {eval_type!r}")
        self.eval_type = eval_type
        super().__init__()

    def clear(self):
        self._correct, self._total = 0, 0

    def update(self, *inputs):
        self._check_inputs(inputs, 2)
        if self.eval_type == "classification":
            pred, y = predicted_classes(inputs[0], inputs[1], "Accuracy")
            correct = pred == y
        else:
            p, y = to_numpy(inputs[0], "Accuracy", "y_pred"), to_numpy(inputs[1], "Accuracy", "y")
            if p.shape != y.shape:
                raise ValueError(f"Accuracy.update: y_pred {p.shape} and y {y.shape} must match for multilabel")
            correct = np.all(np.round(p) == y, axis=tuple(range(1, p.ndim)))
        self._correct += int(correct.sum())
        self._total += correct.shape[0]

    def eval(self):
        if self._total == 0:
            raise RuntimeError("Accuracy.eval: no samples; call update first")
        return self._correct / self._total


class TopKCategoricalAccuracy(Metric):
    """Fraction of samples whose true class is among the k highest scores."""

    def __init__(self, k):
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"TopKCategoricalAccuracy: k must be an int >= 1, got {k!r}")
        self.k = k
        super().__init__()

    def clear(self):
        self._correct, self._total = 0, 0

    def update(self, *inputs):
        self._check_inputs(inputs, 2)
        who = type(self).__name__
        scores = to_numpy(inputs[0], who, "y_pred")
        _, y = predicted_classes(scores, inputs[1], who)
        # Ties count against the sample: its score must beat all but k-1 others strictly.
        true_score = scores[np.arange(len(y)), y]
        rank = (scores > true_score[:, None]).sum(axis=1)
        self._correct += int((rank < self.k).sum())
        self._total += len(y)

    def eval(self):
        if self._total == 0:
            raise RuntimeError(f"{type(self).__name__}.eval: no samples; call update first")
        return self._correct / self._total


class Top1CategoricalAccuracy(TopKCategoricalAccuracy):
    """Top-k accuracy with k = 1."""

    def __init__(self):
        super().__init__(1)


class Top5CategoricalAccuracy(TopKCategoricalAccuracy):
    """Top-k accuracy with k = 5."""

    def __init__(self):
        super().__init__(5)
