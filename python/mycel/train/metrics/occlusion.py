"""OcclusionSensitivity (MindSpore's metric): how much a model's score for a label drops when a
box around each pixel of one image is filled with pad_val; the boxes are scored in batches."""
import numpy as np

from mycel.common.tensor import Tensor
from mycel.train.metrics.metric import Metric, to_numpy


class OcclusionSensitivity(Metric):
    """update(model, image (1, ...), label) then eval(): baseline score minus the score with the
    box [i - margin, i + margin) (per dim, clipped) occluded, for each position i of the image
    (or of b_box = [min1, max1, min2, max2, ...], inclusive, over the dims after the batch)."""

    def __init__(self, pad_val=0.0, margin=2, n_batch=128, b_box=None):
        if not isinstance(pad_val, (int, float)) or isinstance(pad_val, bool):
            raise TypeError(f"OcclusionSensitivity: pad_val must be a number, got {pad_val!r}")
        if not (isinstance(margin, int) and margin >= 0) and not (
                isinstance(margin, (list, tuple)) and all(isinstance(m, int) and m >= 0 for m in margin)):
            raise TypeError(f"OcclusionSensitivity: margin must be a non-negative int or a list of them, got {margin!r}")
        if not isinstance(n_batch, int) or n_batch < 1:
            raise ValueError(f"OcclusionSensitivity: n_batch must be a positive int, got {n_batch!r}")
        self.pad_val, self.margin, self.n_batch, self.b_box = float(pad_val), margin, n_batch, b_box
        super().__init__()

    def clear(self):
        self._map = None

    def _box(self, dims):
        if self.b_box is None:
            return np.zeros(len(dims), int), np.array(dims) - 1
        if len(self.b_box) != 2 * len(dims):
            raise ValueError(f"OcclusionSensitivity: b_box needs a min and a max for each of the {len(dims)} "
                             f"image dims, got {len(self.b_box)} values")
        lo, hi = np.array(self.b_box[::2]), np.array(self.b_box[1::2])
        lo = np.maximum(lo, 0)
        hi = np.where(hi < 0, np.array(dims) - 1, hi)
        if (hi >= np.array(dims)).any() or (lo > hi).any():
            raise ValueError(f"OcclusionSensitivity: b_box {list(self.b_box)} must have min <= max < size "
                             f"for image dims {tuple(dims)}")
        return lo, hi

    def update(self, *inputs):
        self._check_inputs(inputs, 3)
        model = inputs[0]
        if not callable(model):
            raise TypeError(f"OcclusionSensitivity.update: model must be a Cell, got {type(model).__name__}")
        image = np.asarray(to_numpy(inputs[1], "OcclusionSensitivity", "y_pred"))
        if image.ndim < 2 or image.shape[0] != 1:
            raise RuntimeError(f"OcclusionSensitivity.update: y_pred must be one image (1, ...), got shape {image.shape}")
        label = np.asarray(inputs[2].asnumpy() if isinstance(inputs[2], Tensor) else inputs[2])
        if label.size != 1:
            raise RuntimeError(f"OcclusionSensitivity.update: label must hold one class, got {label.size}")
        label = int(label.reshape(-1)[0])
        dims = image.shape[1:]
        margins = [self.margin] * len(dims) if isinstance(self.margin, int) else list(self.margin)
        if len(margins) != len(dims):
            raise ValueError(f"OcclusionSensitivity: margin has {len(margins)} entries for {len(dims)} image dims")
        lo, hi = self._box(dims)
        baseline = float(model(Tensor(image)).asnumpy()[0, label])
        positions = list(np.ndindex(*(hi - lo + 1)))
        scores = []
        for start in range(0, len(positions), self.n_batch):
            batch = []
            for pos in positions[start:start + self.n_batch]:
                centre = np.array(pos) + lo
                occluded = image.copy()
                box = tuple(slice(max(0, c - m), min(n, c + m)) for c, m, n in zip(centre, margins, dims))
                occluded[(slice(None),) + box] = self.pad_val
                batch.append(occluded)
            out = model(Tensor(np.concatenate(batch))).asnumpy()
            scores.append(out[:, label])
        self._map = baseline - np.concatenate(scores).reshape(tuple(hi - lo + 1))

    def eval(self):
        if self._map is None:
            raise RuntimeError("OcclusionSensitivity.eval: call update first")
        return np.squeeze(self._map)
