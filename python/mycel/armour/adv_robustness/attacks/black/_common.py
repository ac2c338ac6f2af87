"""Helpers shared by the black-box attacks: argument checks, sparse labels, the random source
(an own numpy Generator when seed is given, else numpy's global one, as MindArmour uses) and a
query counter that enforces per-sample budgets."""
import numpy as np

from mycel.armour._checks import check_number
from mycel.armour.adv_robustness.attacks.black.black_model import BlackModel


def check_model(owner, model):
    if not isinstance(model, BlackModel):
        raise TypeError(f"{owner}: model must be a BlackModel, got {type(model).__name__}")
    return model


def check_bool(owner, name, value):
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be a bool, got {type(value).__name__} {value!r}")
    return value


def check_choice(owner, name, value, choices):
    if value not in choices:
        raise ValueError(f"{owner}: {name} must be one of {list(choices)}, got {value!r}")
    return value


def make_rng(owner, seed):
    """seed None: numpy's global generator (np.random.seed reproduces a run); an int: an own one."""
    if seed is None:
        return np.random.mtrand._rand
    check_number(owner, "seed", seed, lo=0, integer=True)
    return np.random.RandomState(seed)


class Queries:
    """Calls model.predict and counts the rows asked for each sample (`count`); the labels' class
    range is checked once the first answer shows how many classes the model has."""

    def __init__(self, owner, model, n, labels=None):
        self.owner, self.model, self.labels = owner, model, labels
        self.count = np.zeros(n, np.int64)
        self.num_classes = None

    def __call__(self, sample_ids, x):
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = np.asarray(self.model.predict(x), dtype=np.float64)
        if out.ndim != 2 or out.shape[0] != x.shape[0]:
            raise ValueError(f"{self.owner}: model.predict must return (batch, classes) scores for {x.shape[0]} "
                             f"inputs, got shape {out.shape}")
        np.add.at(self.count, np.asarray(sample_ids, np.int64), 1)
        if self.num_classes is None:
            self.num_classes = out.shape[1]
            y = self.labels
            if y is not None and y.size and (y.min() < 0 or y.max() >= self.num_classes):
                raise ValueError(f"{self.owner}: labels must lie in [0, {self.num_classes}), got values in "
                                 f"[{y.min()}, {y.max()}]")
        return out


def sparse_labels(owner, labels, n, sparse):
    """(N,) integer labels from sparse (N,) or one-hot (N, classes) labels."""
    y = np.asarray(labels)
    if sparse:
        if y.ndim != 1 or y.dtype.kind not in "iu":
            raise ValueError(f"{owner}: with sparse=True labels must be (N,) integers, got dtype {y.dtype} "
                             f"shape {y.shape}")
    else:
        if y.ndim != 2:
            raise ValueError(f"{owner}: with sparse=False labels must be one-hot (N, classes), got shape {y.shape}")
        y = y.argmax(axis=1)
    if y.shape[0] != n:
        raise ValueError(f"{owner}: labels must have one entry per input ({n}), got {y.shape[0]}")
    return y.astype(np.int64)


def as_batch(owner, inputs):
    x = np.asarray(inputs)
    if x.dtype.kind not in "fiu" or x.ndim < 2 or x.shape[0] == 0:
        raise ValueError(f"{owner}: inputs must be a non-empty numeric (N, ...) array, got dtype {x.dtype} "
                         f"shape {x.shape}")
    return x.astype(np.float32)


def success(pred_scores, label, targeted):
    """Per row: predicted class equals label (targeted) or differs from it (untargeted)."""
    pred = pred_scores.argmax(axis=1)
    return pred == label if targeted else pred != label
