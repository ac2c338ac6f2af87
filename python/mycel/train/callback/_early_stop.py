"""EarlyStopping: stop training when a monitored value stops improving."""

import numpy as np

from mycel.train.callback._callback import Callback, monitored_value


class EarlyStopping(Callback):
    """Watches `monitor` after every epoch: "loss" (the last training loss) or a key of the
    epoch's eval results (Model.fit: "acc", "eval_loss", ...). An improvement is a change of more
    than min_delta in the direction of `mode` ("min", "max", or "auto": max for accuracy-like
    names, else min). After `patience` epochs in a row without one, training stops; with
    restore_best_weights the network's Parameters go back to the best epoch's values."""

    def __init__(self, monitor="eval_loss", min_delta=0.0, patience=0, verbose=False, mode="auto",
                 baseline=None, restore_best_weights=False):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"EarlyStopping: mode must be 'auto', 'min' or 'max', got {mode!r}")
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 0:
            raise ValueError(f"EarlyStopping: patience must be an int >= 0, got {patience!r}")
        if min_delta < 0:
            raise ValueError(f"EarlyStopping: min_delta must be >= 0, got {min_delta!r}")
        self.monitor = monitor
        self.min_delta = float(min_delta)
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        if mode == "auto":
            mode = "max" if ("acc" in monitor or monitor.startswith("fmeasure")) else "min"
        self.mode = mode
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None

    def _improved(self, current, reference):
        if self.mode == "max":
            return current - self.min_delta > reference
        return current + self.min_delta < reference

    def on_train_begin(self, run_context):
        self.wait, self.stopped_epoch, self.best_weights = 0, 0, None
        self.best = self.baseline if self.baseline is not None else \
            (-np.inf if self.mode == "max" else np.inf)

    def _current(self, cb):
        return monitored_value("EarlyStopping", self.monitor, cb)

    def on_train_epoch_end(self, run_context):
        cb = run_context.original_args()
        current = self._current(cb)
        if current is None:
            return
        if self._improved(current, self.best):
            self.best, self.wait = current, 0
            if self.restore_best_weights:
                self.best_weights = [(p, p.asnumpy().copy()) for p in cb.train_network.get_parameters()]
            return
        self.wait += 1
        if self.wait >= max(self.patience, 1):
            self.stopped_epoch = cb.cur_epoch_num
            run_context.request_stop()
            if self.restore_best_weights and self.best_weights is not None:
                for p, value in self.best_weights:
                    p.set_data(value)

    def on_train_end(self, run_context):
        if self.stopped_epoch and self.verbose:
            print(f"Epoch {self.stopped_epoch}: early stopping (best {self.monitor} = {self.best})")
