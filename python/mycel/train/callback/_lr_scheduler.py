"""LearningRateScheduler: set the optimizer's learning rate after every step."""
import math

import numpy as np

from mycel import ops
from mycel.common.tensor import Tensor
from mycel.train.callback._callback import Callback


class LearningRateScheduler(Callback):
    """After each step calls learning_rate_function(lr, cur_step_num) and writes the result into
    `optimizer.learning_rate` (a Parameter holding a float32 scalar) when it changed."""

    def __init__(self, learning_rate_function):
        super().__init__()
        if not callable(learning_rate_function):
            raise TypeError(f"LearningRateScheduler: learning_rate_function must be callable, "
                            f"got {type(learning_rate_function).__name__}")
        self.learning_rate_function = learning_rate_function

    def on_train_step_end(self, run_context):
        cb = run_context.original_args()
        lr_param = getattr(cb.get("optimizer"), "learning_rate", None)
        if not isinstance(lr_param, Tensor):
            raise TypeError("LearningRateScheduler: the optimizer must have a 'learning_rate' Parameter, "
                            f"got {type(lr_param).__name__}")
        lr = float(np.asarray(lr_param.asnumpy()).reshape(-1)[0])
        new_lr = float(self.learning_rate_function(lr, cb.cur_step_num))
        if not math.isclose(lr, new_lr, rel_tol=1e-10):
            ops.assign(lr_param, Tensor(np.full(lr_param.shape, new_lr, np.float32), dtype=lr_param.dtype))
