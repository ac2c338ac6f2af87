"""LearningRateScheduler: set the optimizer's learning rate after every step."""
import math

import numpy as np

from mycel.train.callback._callback import Callback
from mycel.train.callback._reduce_lr import lr_parameter, set_lr


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
        lr_param = lr_parameter("LearningRateScheduler", cb)
        lr = float(np.asarray(lr_param.asnumpy()).reshape(-1)[0])
        new_lr = float(self.learning_rate_function(lr, cb.cur_step_num))
        if not math.isclose(lr, new_lr, rel_tol=1e-10):
            set_lr(lr_param, new_lr)
