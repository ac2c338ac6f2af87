"""Region-based classification (Cao and Gong 2017): a sample's region label is the majority vote of
the model over number_points points drawn uniformly from the L-inf cube of the given radius around
it (clipped to [0, 1]); adversarial examples sit near the boundary, so their region label differs
from their own label. fit() grows the radius by search_step from initial_radius while the region
accuracy on benign data stays within degrade_limit of the plain accuracy, and keeps the last
radius that passed. All samples' cubes go to the model in one batch."""
import numpy as np

from mycel.armour._checks import check_number
from mycel.armour.adv_robustness.attacks.black._common import check_bool, make_rng
from mycel.armour.adv_robustness.detectors.detector import Detector, as_runner, as_samples


class RegionBasedDetector(Detector):
    def __init__(self, model, number_points=10, initial_radius=0.0, max_radius=1.0, search_step=0.01,
                 degrade_limit=0.0, sparse=False, *, seed=None):
        o = "RegionBasedDetector"
        self._model = as_runner(o, "model", model)
        self._number_points = check_number(o, "number_points", number_points, lo=1, integer=True)
        self._initial_radius = float(check_number(o, "initial_radius", initial_radius, lo=0.0))
        self._max_radius = float(check_number(o, "max_radius", max_radius, lo=0.0, lo_open=True))
        if self._initial_radius > self._max_radius:
            raise ValueError(f"{o}: initial_radius must be <= max_radius, got {initial_radius!r} > {max_radius!r}")
        self._search_step = float(check_number(o, "search_step", search_step, lo=0.0, lo_open=True))
        self._degrade_limit = float(check_number(o, "degrade_limit", degrade_limit, lo=0.0))
        self._sparse = check_bool(o, "sparse", sparse)
        self._rng = make_rng(o, seed)
        self._radius = None

    def set_radius(self, radius):
        self._radius = float(check_number("RegionBasedDetector", "radius", radius, lo=self._initial_radius,
                                          hi=self._max_radius))

    def _need_radius(self):
        if self._radius is None:
            raise ValueError("RegionBasedDetector: no radius: call fit(...) or set_radius(...) first")
        return self._radius

    def transform(self, inputs):
        """(N, number_points, ...) points drawn from each sample's cube."""
        x = as_samples("RegionBasedDetector", inputs)
        return self._cubes(x, self._need_radius())

    def _cubes(self, x, radius):
        noise = self._rng.uniform(-radius, radius, (x.shape[0], self._number_points) + x.shape[1:])
        return np.clip(x[:, None] + noise, 0.0, 1.0).astype(np.float32)

    def _region_labels(self, x, radius):
        pts = self._cubes(x, radius)
        pred = self._model(pts.reshape((-1,) + x.shape[1:])).argmax(axis=1).reshape(len(x), -1)
        k = int(pred.max()) + 1
        counts = (pred[:, :, None] == np.arange(k)).sum(axis=1)
        return counts.argmax(axis=1)        # ties go to the smallest label, as np.bincount's argmax

    def fit(self, inputs, labels=None):
        o = "RegionBasedDetector"
        x = as_samples(o, inputs)
        if labels is None:
            raise ValueError(f"{o}: fit needs the inputs' true labels")
        y = np.asarray(labels)
        if not self._sparse:
            if y.ndim != 2:
                raise ValueError(f"{o}: with sparse=False labels must be one-hot (N, classes), got shape {y.shape}")
            y = y.argmax(axis=1)
        if y.shape != (len(x),):
            raise ValueError(f"{o}: labels must have one entry per input ({len(x)}), got shape {y.shape}")
        raw_acc = (self._model(x).argmax(axis=1) == y).mean()
        steps = int(round((self._max_radius - self._initial_radius) / self._search_step))
        radius = self._initial_radius
        for _ in range(steps):
            if (self._region_labels(x, radius) == y).mean() < raw_acc - self._degrade_limit:
                break
            radius += self._search_step
        self._radius = max(self._initial_radius, radius - self._search_step)
        return self._radius

    def detect_diff(self, inputs):
        """(the model's raw outputs, the region labels)."""
        x = as_samples("RegionBasedDetector", inputs)
        return self._model(x), self._region_labels(x, self._need_radius())

    def detect(self, inputs):
        raw, region = self.detect_diff(inputs)
        return (raw.argmax(axis=1) != region).astype(np.int32)
