"""LossMonitor and TimeMonitor: the loss every few steps and the time per epoch and step."""
import math
import time

from mycel.train.callback._callback import Callback, loss_value, step_in_epoch
from mycel.train.callback._progress import clear_line


class LossMonitor(Callback):
    """Prints `epoch: E step: S, loss is L` every per_print_times steps (0: never) and raises
    ValueError when the loss becomes nan or inf. In Model.fit it also prints the eval results."""

    def __init__(self, per_print_times=1):
        super().__init__()
        if isinstance(per_print_times, bool) or not isinstance(per_print_times, int) or per_print_times < 0:
            raise ValueError(f"LossMonitor: per_print_times must be an int >= 0, got {per_print_times!r}")
        self._per_print_times = per_print_times

    def on_train_step_end(self, run_context):
        cb = run_context.original_args()
        loss = loss_value(cb.net_outputs)
        step = step_in_epoch(cb)
        if math.isnan(loss) or math.isinf(loss):
            raise ValueError(f"epoch: {cb.cur_epoch_num} step: {step}. Invalid loss {loss}, terminating training.")
        if self._per_print_times and cb.cur_step_num % self._per_print_times == 0:
            clear_line()
            print(f"epoch: {cb.cur_epoch_num} step: {step}, loss is {loss}", flush=True)

    def on_train_epoch_end(self, run_context):
        cb = run_context.original_args()
        results = cb.get("eval_results")
        if results and cb.get("eval_epoch") == cb.cur_epoch_num:
            clear_line()
            print(f"Eval result: epoch {cb.cur_epoch_num}, metrics: {results}", flush=True)


class TimeMonitor(Callback):
    """Prints `epoch time: T ms, per step time: t ms` after each epoch; data_size is the number
    of steps per epoch (default: the epoch's batch_num)."""

    def __init__(self, data_size=None):
        super().__init__()
        if data_size is not None and (isinstance(data_size, bool) or not isinstance(data_size, int)
                                      or data_size < 1):
            raise ValueError(f"TimeMonitor: data_size must be None or an int >= 1, got {data_size!r}")
        self.data_size = data_size
        self.epoch_time = None

    def on_train_epoch_begin(self, run_context):
        self.epoch_time = time.perf_counter()

    def on_train_epoch_end(self, run_context):
        cb = run_context.original_args()
        ms = (time.perf_counter() - self.epoch_time) * 1000.0
        steps = self.data_size or cb.batch_num
        clear_line()
        print(f"epoch time: {ms:5.3f} ms, per step time: {ms / max(steps, 1):5.3f} ms", flush=True)
