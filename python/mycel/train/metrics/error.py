"""MAE and MSE: mean absolute and mean squared error over all elements seen (MindSpore's)."""
import numpy as np

from mycel.train.metrics.metric import Metric, to_numpy


class _MeanError(Metric):
    _name = ""

    def clear(self):
        self._sum, self._count = 0.0, 0

    def update(self, *inputs):
        self._check_inputs(inputs, 2)
        y_pred = np.asarray(to_numpy(inputs[0], self._name, "y_pred"), dtype=np.float64)
        y = np.asarray(to_numpy(inputs[1], self._name, "y"), dtype=np.float64)
        if y.size != y_pred.size:
            raise ValueError(f"{self._name}.update: y_pred has {y_pred.size} elements and y has {y.size}; "
                             "they must match")
        diff = y_pred.reshape(y.shape) - y
        self._sum += float(self._error(diff).sum())
        self._count += y.shape[0] if y.ndim else 1

    def eval(self):
        if self._count == 0:
            raise RuntimeError(f"{self._name}.eval: no samples; call update first")
        return self._sum / self._count


class MAE(_MeanError):
    """Mean absolute error: sum |y_pred - y| over all elements / number of samples (as MindSpore)."""
    _name = "MAE"

    @staticmethod
    def _error(diff):
        return np.abs(diff)


class MSE(_MeanError):
    """Mean squared error: sum (y_pred - y)^2 over all elements / number of samples (as MindSpore)."""
    _name = "MSE"

    @staticmethod
    def _error(diff):
        return diff * diff
