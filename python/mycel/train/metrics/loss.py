"""Loss: the running mean of a loss value."""
import numpy as np

from mycel.train.metrics.metric import Metric, to_numpy


class Loss(Metric):
    """Average of the scalar losses given to update."""

    def clear(self):
        self._sum, self._count = 0.0, 0

    def update(self, *inputs):
        self._check_inputs(inputs, 1)
        value = to_numpy(inputs[0], "Loss", "loss")
        if value.size != 1:
            raise ValueError(f"Loss.update: loss must be a scalar or have one element, got shape {value.shape}")
        self._sum += float(np.asarray(value).reshape(()))
        self._count += 1

    def eval(self):
        if self._count == 0:
            raise RuntimeError("Loss.eval: no losses; call update first")
        return self._sum / self._count
