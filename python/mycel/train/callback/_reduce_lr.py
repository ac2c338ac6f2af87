"""ReduceLROnPlateau: scale the learning rate down when a monitored value stops improving."""

import numpy as np

from mycel import ops
from mycel.common.tensor import Tensor
from mycel.train.callback._callback import Callback, monitored_value


def lr_parameter(who, cb):
    """The optimizer's learning-rate Parameter (a constant or per-step list), or TypeError."""
    lr = getattr(cb.get("optimizer"), "learning_rate", None)
    if not isinstance(lr, Tensor):
        raise TypeError(f"{who}: the optimizer's learning_rate must be a Parameter (a constant or a "
                        f"list of learning rates), got {type(lr).__name__}; a LearningRateSchedule "
                        "sets the rate itself")
    return lr


def set_lr(lr_param, value):
    ops.assign(lr_param, Tensor(np.full(lr_param.shape, value, np.float32), dtype=lr_param.dtype))


class ReduceLROnPlateau(Callback):
    """After every epoch reads `monitor` ("loss": the last training loss, or a key of the epoch's
    eval results under Model.fit, "eval_loss" by default). When it has not improved by more than
    min_delta for `patience` epochs, the learning rate becomes max(lr * factor, min_lr), then
    `cooldown` epochs pass before epochs without improvement count again (MindSpore's and
    Keras's rule)."""

    def __init__(self, monitor="eval_loss", factor=0.1, patience=10, verbose=False, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0.0):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'auto', 'min' or 'max', got {mode!r}")
        if not 0.0 <= factor < 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be in [0, 1), got {factor!r}")
        for name, v in (("patience", patience), ("cooldown", cooldown)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"ReduceLROnPlateau: {name} must be an int >= 0, got {v!r}")
        if min_delta < 0 or min_lr < 0:
            raise ValueError(f"ReduceLROnPlateau: min_delta and min_lr must be >= 0, got {min_delta!r}, {min_lr!r}")
        self.monitor, self.factor, self.patience = monitor, float(factor), patience
        self.verbose, self.min_delta, self.cooldown, self.min_lr = verbose, float(min_delta), cooldown, float(min_lr)
        if mode == "auto":
            mode = "max" if ("acc" in monitor or monitor.startswith("fmeasure")) else "min"
        self.mode = mode
        self.wait, self.cooldown_counter, self.best = 0, 0, None

    def _improved(self, current):
        if self.mode == "max":
            return current > self.best + self.min_delta
        return current < self.best - self.min_delta

    def on_train_begin(self, run_context):
        self.wait, self.cooldown_counter = 0, 0
        self.best = -np.inf if self.mode == "max" else np.inf

    def _current(self, cb):
        return monitored_value("ReduceLROnPlateau", self.monitor, cb)

    def on_train_epoch_end(self, run_context):
        cb = run_context.original_args()
        current = self._current(cb)
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improved(current):
            self.best, self.wait = current, 0
            return
        if self.cooldown_counter > 0:
            return
        self.wait += 1
        if self.wait < self.patience:
            return
        lr_param = lr_parameter("ReduceLROnPlateau", cb)
        old = float(np.asarray(lr_param.asnumpy()).reshape(-1)[0])
        if old > self.min_lr:
            new = max(old * self.factor, self.min_lr)
            set_lr(lr_param, new)
            if self.verbose:
                print(f"Epoch {cb.cur_epoch_num}: ReduceLROnPlateau reducing learning rate to {new}.")
        self.cooldown_counter, self.wait = self.cooldown, 0


class LambdaCallback(Callback):
    """A callback made of functions: each of on_train_begin ... on_eval_end given is called with
    the run context at that point (MindSpore's LambdaCallback)."""

    _HOOKS = ("on_train_begin", "on_train_epoch_begin", "on_train_step_begin", "on_train_step_end",
              "on_train_epoch_end", "on_train_end", "on_eval_begin", "on_eval_epoch_begin",
              "on_eval_step_begin", "on_eval_step_end", "on_eval_epoch_end", "on_eval_end")

    def __init__(self, **hooks):
        super().__init__()
        for name, fn in hooks.items():
            if name not in self._HOOKS:
                raise TypeError(f"LambdaCallback: unknown hook {name!r} (one of {', '.join(self._HOOKS)})")
            if fn is not None and not callable(fn):
                raise TypeError(f"LambdaCallback: {name} must be callable, got {type(fn).__name__}")
            if fn is not None:
                setattr(self, name, fn)
