"""Segmentation surface metrics (MindSpore's HausdorffDistance, MeanSurfaceDistance,
RootMeanSquareDistance): update(y_pred, y, label_idx) takes the voxels equal to label_idx in
each image, their surfaces (the voxels a one-step cross erosion removes) and, for every surface
voxel of one image, the distance to the nearest surface voxel of the other, under the Euclidean,
chessboard (Chebyshev) or taxicab (Manhattan) metric."""
import numpy as np

from mycel.train.metrics.metric import Metric, to_numpy

_METRICS = ("euclidean", "chessboard", "taxicab")


def _surface(mask):
    """Voxels of mask with a face neighbour outside it (the image border counts as outside)."""
    inner = mask.copy()
    for axis in range(mask.ndim):
        for step in (1, -1):
            shifted = np.zeros_like(mask)
            src = [slice(None)] * mask.ndim
            dst = [slice(None)] * mask.ndim
            src[axis] = slice(max(step, 0), mask.shape[axis] + min(step, 0))
            dst[axis] = slice(max(-step, 0), mask.shape[axis] + min(-step, 0))
            shifted[tuple(dst)] = mask[tuple(src)]
            inner &= shifted
    return mask & ~inner


def _nearest(src, dst, metric):
    """For each point of src (K, d) the distance to the nearest point of dst (L, d)."""
    out = np.empty(len(src))
    step = max(1, 2 ** 22 // max(1, len(dst)))  # bounded memory for the pairwise block
    for lo in range(0, len(src), step):
        diff = np.abs(src[lo:lo + step, None, :] - dst[None, :, :])
        if metric == "euclidean":
            d = np.sqrt((diff ** 2).sum(-1))
        elif metric == "chessboard":
            d = diff.max(-1)
        else:
            d = diff.sum(-1)
        out[lo:lo + step] = d.min(1)
    return out


class _SurfaceMetric(Metric):
    def __init__(self, distance_metric="euclidean"):
        if distance_metric not in _METRICS:
            raise ValueError(f"{type(self).__name__}: distance_metric must be one of {_METRICS}, "
                             f"got {distance_metric!r}")
        self.distance_metric = distance_metric
        super().__init__()

    def clear(self):
        self._edges = None

    def update(self, *inputs):
        who = type(self).__name__
        self._check_inputs(inputs, 3)
        p = to_numpy(inputs[0], who, "y_pred")
        y = to_numpy(inputs[1], who, "y")
        label = inputs[2]
        if not isinstance(label, (int, np.integer, float)) or isinstance(label, bool):
            raise TypeError(f"{who}.update: label_idx must be a number, got {type(label).__name__}")
        if p.shape != y.shape or p.ndim < 1:
            raise ValueError(f"{who}.update: y_pred {p.shape} and y {y.shape} must be images of the same shape")
        self._edges = (_surface(p == label), _surface(y == label))

    def _distances(self, a, b):
        """Surface distances from the edge voxels of a to those of b (inf when b has none)."""
        pa, pb = np.argwhere(a).astype(np.float64), np.argwhere(b).astype(np.float64)
        if len(pa) == 0:
            return np.empty(0)
        if len(pb) == 0:
            return np.full(len(pa), np.inf)
        return _nearest(pa, pb, self.distance_metric)

    def _both(self):
        if self._edges is None:
            raise RuntimeError(f"{type(self).__name__}.eval: call update first")
        pred, gt = self._edges
        return self._distances(pred, gt), self._distances(gt, pred)


class HausdorffDistance(_SurfaceMetric):
    """max over y_pred's surface of the distance to y's surface (directed), or the larger of the
    two directions; percentile (0..100) replaces the max by that percentile. crop is accepted
    (cropping to the union's bounding box does not change the surfaces)."""

    def __init__(self, distance_metric="euclidean", percentile=None, directed=False, crop=True):
        if percentile is not None and not 0 <= percentile <= 100:
            raise ValueError(f"HausdorffDistance: percentile must be in [0, 100], got {percentile!r}")
        self.percentile, self.directed, self.crop = percentile, bool(directed), bool(crop)
        super().__init__(distance_metric)

    def _reduce(self, d):
        if d.size == 0:
            return np.inf
        return float(d.max() if self.percentile is None else np.percentile(d, self.percentile))

    def eval(self):
        ab, ba = self._both()
        return self._reduce(ab) if self.directed else max(self._reduce(ab), self._reduce(ba))


class MeanSurfaceDistance(_SurfaceMetric):
    """The mean distance from y_pred's surface to y's; symmetric: the mean over both surfaces
    together (sum of both directions over |S(y_pred)| + |S(y)|)."""

    def __init__(self, symmetric=False, distance_metric="euclidean"):
        self.symmetric = bool(symmetric)
        super().__init__(distance_metric)

    def eval(self):
        ab, ba = self._both()
        d = np.concatenate([ab, ba]) if self.symmetric else ab
        return float(d.mean()) if d.size else np.inf


class RootMeanSquareDistance(_SurfaceMetric):
    """The root mean square distance from y_pred's surface to y's; symmetric: over both surfaces
    together."""

    def __init__(self, symmetric=False, distance_metric="euclidean"):
        self.symmetric = bool(symmetric)
        super().__init__(distance_metric)

    def eval(self):
        ab, ba = self._both()
        d = np.concatenate([ab, ba]) if self.symmetric else ab
        return float(np.sqrt((d ** 2).mean())) if d.size else np.inf
