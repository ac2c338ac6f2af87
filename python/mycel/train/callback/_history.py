"""History: the loss and eval results of every epoch, kept in memory."""
from mycel.train.callback._callback import Callback, loss_value


class History(Callback):
    """history["net_output"] holds each epoch's last training loss; every eval result of Model.fit
    gets its own list (history["acc"], ...); epoch lists the epoch numbers."""

    def __init__(self):
        super().__init__()
        self.epoch = []
        self.history = {}

    def on_train_begin(self, run_context):
        self.epoch = []
        self.history = {}

    def on_train_epoch_end(self, run_context):
        cb = run_context.original_args()
        self.epoch.append(cb.cur_epoch_num)
        self.history.setdefault("net_output", []).append(loss_value(cb.net_outputs))
        if cb.get("eval_epoch") == cb.cur_epoch_num:
            for name, value in (cb.get("eval_results") or {}).items():
                self.history.setdefault(name, []).append(value)
