"""Detector base class (MindArmour's interface: fit, detect, detect_diff, transform) and the adapter
that runs a mycel Model or Cell on numpy batches."""
import numpy as np

from mycel import Tensor, nn
from mycel.train.model import Model


def as_runner(owner, name, model):
    """A function numpy batch -> numpy output for a mycel Model (predict) or a Cell."""
    if isinstance(model, Model):
        return lambda x: model.predict(Tensor(np.ascontiguousarray(x, dtype=np.float32))).asnumpy()
    if isinstance(model, nn.Cell):
        return lambda x: model(Tensor(np.ascontiguousarray(x, dtype=np.float32))).asnumpy()
    raise TypeError(f"{owner}: {name} must be a mycel Model or Cell, got {type(model).__name__}")


def as_samples(owner, inputs, name="inputs"):
    x = np.asarray(inputs)
    if x.dtype.kind not in "fiu" or x.ndim < 2 or x.shape[0] == 0:
        raise ValueError(f"{owner}: {name} must be a non-empty numeric (N, ...) array, got dtype {x.dtype} "
                         f"shape {x.shape}")
    return x.astype(np.float32)


class Detector:
    """fit(inputs, labels=None) learns a threshold; detect(inputs) -> 0/1 per sample (1: adversarial);
    detect_diff(inputs) -> the score detect thresholds; transform(inputs) -> the detector's view."""

    def fit(self, inputs, labels=None):
        raise NotImplementedError(f"{type(self).__name__}.fit")

    def detect(self, inputs):
        raise NotImplementedError(f"{type(self).__name__}.detect")

    def detect_diff(self, inputs):
        raise NotImplementedError(f"{type(self).__name__}.detect_diff")

    def transform(self, inputs):
        raise NotImplementedError(f"{type(self).__name__}.transform")
