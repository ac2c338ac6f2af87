"""SimilarityDetector (Chen, Carlini and Wagner, "Stateful detection of black-box adversarial
attacks", 2019): query-based attacks send many similar queries, so each query's mean distance
to its k nearest neighbours among the recent queries (encoded by trans_model) is small. fit()
takes, for each k, the fpr-quantile of that mean distance over benign data (each point's k nearest
other points); detect() streams queries through a buffer and records a detection (and clears the
buffer) whenever the mean distance falls below the threshold."""
import numpy as np

from mycel.armour._checks import check_number
from mycel.armour.adv_robustness.attacks.black._common import check_bool
from mycel.armour.adv_robustness.detectors.detector import Detector, as_runner, as_samples


class SimilarityDetector(Detector):
    def __init__(self, trans_model, max_k_neighbor=1000, chunk_size=1000, max_buffer_size=10000, tuning=False,
                 fpr=0.001):
        o = "SimilarityDetector"
        self._encode = as_runner(o, "trans_model", trans_model)
        self._max_k = check_number(o, "max_k_neighbor", max_k_neighbor, lo=1, integer=True)
        self._chunk_size = check_number(o, "chunk_size", chunk_size, lo=1, integer=True)
        self._max_buffer_size = check_number(o, "max_buffer_size", max_buffer_size, lo=1, integer=True)
        self._tuning = check_bool(o, "tuning", tuning)
        self._fpr = float(check_number(o, "fpr", fpr, lo=0.0, hi=1.0))
        self._k = self._threshold = None
        self._buffer = []
        self._num_queries = 0
        self._detected = []

    def _codes(self, inputs):
        x = as_samples("SimilarityDetector", inputs)
        return self._encode(x).reshape(len(x), -1).astype(np.float64)

    def fit(self, inputs, labels=None):
        """-> (list of k, list of thresholds); keeps the last pair (k = max_k_neighbor)."""
        z = self._codes(inputs)
        n = len(z)
        if n <= self._max_k:
            raise ValueError(f"SimilarityDetector: fit needs more than max_k_neighbor={self._max_k} inputs, got {n}")
        sq = (z ** 2).sum(axis=1)
        nearest = []
        for s in range(0, n, self._chunk_size):  # a chunk of rows of the distance matrix at a time
            c = z[s:s + self._chunk_size]
            d = np.sqrt(np.maximum(sq[s:s + len(c), None] + sq[None] - 2 * c @ z.T, 0.0))
            d[np.arange(len(c)), np.arange(s, s + len(c))] = np.inf   # not its own neighbour
            nearest.append(np.sort(np.partition(d, self._max_k - 1, axis=1)[:, :self._max_k], axis=1))
        mean_k = np.cumsum(np.concatenate(nearest), axis=1) / np.arange(1, self._max_k + 1)
        ks = list(range(1 if self._tuning else self._max_k, self._max_k + 1))
        idx = min(int(n * self._fpr), n - 1)
        thresholds = [float(np.sort(mean_k[:, k - 1])[idx]) for k in ks]
        self._k, self._threshold = ks[-1], thresholds[-1]
        return ks, thresholds

    def set_threshold(self, num_of_neighbors, threshold):
        o = "SimilarityDetector"
        self._k = check_number(o, "num_of_neighbors", num_of_neighbors, lo=1, integer=True)
        self._threshold = float(check_number(o, "threshold", threshold, lo=0.0, lo_open=True))

    def detect(self, inputs):
        """Streams the queries; detections are read with get_detected_queries()."""
        if self._threshold is None:
            raise ValueError("SimilarityDetector: no threshold: call fit(...) or set_threshold(...) first")
        for code in self._codes(inputs):
            self._num_queries += 1
            if len(self._buffer) < self._k:
                self._buffer.append(code)
                continue
            d = np.linalg.norm(np.stack(self._buffer) - code, axis=1)
            mean = np.partition(d, self._k - 1)[:self._k].mean()
            self._buffer.append(code)
            if len(self._buffer) >= self._max_buffer_size:
                self.clear_buffer()
            if mean < self._threshold:
                self._detected.append(self._num_queries)
                self.clear_buffer()

    def clear_buffer(self):
        self._buffer = []

    def get_detected_queries(self):
        """The (1-based) numbers of the queries at which an attack was detected."""
        return list(self._detected)

    def get_detection_interval(self):
        """The numbers of queries between successive detections."""
        return list(np.diff(self._detected).tolist())

    def detect_diff(self, inputs):
        raise NotImplementedError("SimilarityDetector.detect_diff is not available (as in MindArmour): use detect")

    def transform(self, inputs):
        raise NotImplementedError("SimilarityDetector.transform is not available (as in MindArmour)")
