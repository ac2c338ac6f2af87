"""MagNet's detectors (Meng and Chen, CCS 2017). ErrorBasedDetector scores a sample by the mean
squared error of its auto-encoder reconstruction; DivergenceBasedDetector by the Jensen-Shannon
divergence between the target model's softmax (at temperature t) on the sample and on its
reconstruction. fit() sets the threshold that flags a false_positive_rate of the (benign) inputs."""
import numpy as np

from mycel.armour._checks import check_bounds, check_number
from mycel.armour.adv_robustness.detectors.detector import Detector, as_runner, as_samples


class ErrorBasedDetector(Detector):
    def __init__(self, auto_encoder, false_positive_rate=0.01, bounds=(0.0, 1.0)):
        o = type(self).__name__
        self._auto_encoder = as_runner(o, "auto_encoder", auto_encoder)
        self._false_positive_rate = float(check_number(o, "false_positive_rate", false_positive_rate, lo=0.0, hi=1.0))
        self._bounds = check_bounds(o, bounds)
        self._threshold = 0.0

    def _reconstruct(self, x):
        out = self._auto_encoder(x)
        if out.shape != x.shape:
            raise ValueError(f"{type(self).__name__}: the auto encoder must return its input's shape {x.shape}, "
                             f"got {out.shape}")
        return out

    def fit(self, inputs, labels=None):
        """The threshold above which a false_positive_rate of these benign inputs' scores lie."""
        marks = np.sort(self.detect_diff(inputs))
        num = int(len(marks) * self._false_positive_rate)
        if num > 0:
            self._threshold = float(marks[-num])
        else:  # no false positive allowed: just above the largest benign score
            self._threshold = float(np.nextafter(marks[-1], np.inf))
        return self._threshold

    def detect(self, inputs):
        """1 where the score is at least the threshold (a false_positive_rate of fit's inputs), else 0."""
        return (self.detect_diff(inputs) >= self._threshold).astype(np.int32)

    def detect_diff(self, inputs):
        x = as_samples(type(self).__name__, inputs).astype(np.float64)
        diff = x - self._reconstruct(x)
        return (diff ** 2).reshape(len(x), -1).mean(axis=1)

    def transform(self, inputs):
        """The reconstructions, clipped to bounds."""
        x = as_samples(type(self).__name__, inputs)
        out = self._reconstruct(x)
        return out if self._bounds is None else np.clip(out, *self._bounds)

    def set_threshold(self, threshold):
        self._threshold = float(check_number(type(self).__name__, "threshold", threshold, lo=0.0))


def _softmax(z):
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def _jsd(p, q):
    """Jensen-Shannon divergence (natural log) between rows of p and q, each normalized to sum 1."""
    p = p / (p.sum(axis=1, keepdims=True) + 1e-12)
    q = q / (q.sum(axis=1, keepdims=True) + 1e-12)
    m = 0.5 * (p + q)

    def kl(a, b):
        return np.where(a > 0, a * np.log(np.where(a > 0, a, 1.0) / np.where(b > 0, b, 1.0)), 0.0).sum(axis=1)
    return 0.5 * (kl(p, m) + kl(q, m))


class DivergenceBasedDetector(ErrorBasedDetector):
    def __init__(self, auto_encoder, model, option="jsd", t=1, bounds=(0.0, 1.0), false_positive_rate=0.01):
        super().__init__(auto_encoder, false_positive_rate, bounds)
        o = "DivergenceBasedDetector"
        self._model = as_runner(o, "model", model)
        if option != "jsd":
            raise ValueError(f"{o}: option must be 'jsd', got {option!r}")
        self._t = float(check_number(o, "t", t, lo=0.0, lo_open=True))

    def detect_diff(self, inputs):
        x = as_samples("DivergenceBasedDetector", inputs)
        p = _softmax(self._model(x).astype(np.float64) / self._t)
        q = _softmax(self._model(self._reconstruct(x)).astype(np.float64) / self._t)
        return _jsd(p, q)
