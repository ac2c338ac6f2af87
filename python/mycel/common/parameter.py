"""Parameter: a Tensor that a Cell owns and an optimizer updates (MindSpore's mindspore.Parameter)."""
import numpy as np

from mycel.common.tensor import Tensor


class Parameter(Tensor):
    """A named, trainable Tensor. Shares storage with `default_input` when that is a Tensor."""

    def __init__(self, default_input, name=None, requires_grad=True, layerwise_parallel=False,
                 parallel_optimizer=True):
        if isinstance(default_input, (int, float, bool)):
            default_input = np.array(default_input, dtype=np.float32 if isinstance(default_input, float)
                                     else None)
        Tensor.__init__(self, default_input)
        self.name = name
        self.requires_grad = requires_grad
        self.layerwise_parallel = layerwise_parallel
        self.parallel_optimizer = parallel_optimizer

    def __repr__(self):
        return f"Parameter(name={self.name!r}, shape={self.shape}, dtype={self.dtype!r}, " \
               f"requires_grad={self.requires_grad})"

    def set_data(self, data):
        """Replaces the values (same shape and dtype) in place."""
        if not isinstance(data, Tensor):
            data = Tensor(data, dtype=self.dtype)
        self._assign(data)
        return self
