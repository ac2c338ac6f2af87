"""Callback, RunContext and CallbackList: how Model.train/eval/fit report progress to user code
(MindSpore's mindspore.train.Callback protocol)."""
import numpy as np

from mycel.common.tensor import Tensor


class CallbackParams(dict):
    """The run's state as a dict whose keys also read as attributes (cb_params.cur_step_num):
    train_network, epoch_num, batch_num, cur_epoch_num, cur_step_num, net_outputs, optimizer,
    loss_fn, mode ("train"/"eval"), dataset_sink_mode, batch_size, eval_results, ..."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"callback parameters have no field {name!r}") from None

    def __setattr__(self, name, value):
        self[name] = value


class RunContext:
    """Handed to every callback: original_args() gives the CallbackParams; request_stop() ends
    training after the current step."""

    def __init__(self, original_args):
        if not isinstance(original_args, dict):
            raise TypeError(f"RunContext: original_args must be a dict, got {type(original_args).__name__}")
        self._original_args = original_args
        self._stop_requested = False

    def original_args(self):
        return self._original_args

    def request_stop(self):
        self._stop_requested = True

    def get_stop_requested(self):
        return self._stop_requested


class Callback:
    """Base class: override the hooks you need. The on_train_* hooks call the older names
    (begin, epoch_begin, step_begin, step_end, epoch_end, end) by default, as in MindSpore."""

    def begin(self, run_context):
        """Before training (legacy name of on_train_begin)."""

    def epoch_begin(self, run_context):
        """Before each training epoch."""

    def step_begin(self, run_context):
        """Before each training step."""

    def step_end(self, run_context):
        """After each training step."""

    def epoch_end(self, run_context):
        """After each training epoch."""

    def end(self, run_context):
        """After training."""

    def on_train_begin(self, run_context):
        self.begin(run_context)

    def on_train_epoch_begin(self, run_context):
        self.epoch_begin(run_context)

    def on_train_step_begin(self, run_context):
        self.step_begin(run_context)

    def on_train_step_end(self, run_context):
        self.step_end(run_context)

    def on_train_epoch_end(self, run_context):
        self.epoch_end(run_context)

    def on_train_end(self, run_context):
        self.end(run_context)

    def on_eval_begin(self, run_context):
        """Before evaluation."""

    def on_eval_epoch_begin(self, run_context):
        """Before the evaluation pass over the dataset."""

    def on_eval_step_begin(self, run_context):
        """Before each evaluation step."""

    def on_eval_step_end(self, run_context):
        """After each evaluation step."""

    def on_eval_epoch_end(self, run_context):
        """After the evaluation pass."""

    def on_eval_end(self, run_context):
        """After evaluation."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_HOOKS = ("on_train_begin", "on_train_epoch_begin", "on_train_step_begin", "on_train_step_end",
          "on_train_epoch_end", "on_train_end", "on_eval_begin", "on_eval_epoch_begin",
          "on_eval_step_begin", "on_eval_step_end", "on_eval_epoch_end", "on_eval_end")


class CallbackList(Callback):
    """Several callbacks called in order for every hook."""

    def __init__(self, callbacks):
        super().__init__()
        if callbacks is None:
            callbacks = []
        elif isinstance(callbacks, Callback):
            callbacks = [callbacks]
        callbacks = list(callbacks)
        for cb in callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"CallbackList: every callback must be a Callback, got {type(cb).__name__}")
        self._callbacks = callbacks

    def __iter__(self):
        return iter(self._callbacks)

    def implementing(self, hook):
        """A CallbackList of the callbacks that do something in `hook` (see implements), so a
        loop can skip a hook nobody implements."""
        return CallbackList([cb for cb in self._callbacks if implements(cb, hook)])

    def __len__(self):
        return len(self._callbacks)


def _dispatch(hook):
    def call(self, run_context):
        for cb in self._callbacks:
            getattr(cb, hook)(run_context)
    call.__name__ = hook
    return call


for _hook in _HOOKS:
    setattr(CallbackList, _hook, _dispatch(_hook))

# The legacy name each on_train_* hook calls by default.
_LEGACY = {"on_train_begin": "begin", "on_train_epoch_begin": "epoch_begin",
           "on_train_step_begin": "step_begin", "on_train_step_end": "step_end",
           "on_train_epoch_end": "epoch_end", "on_train_end": "end"}


def implements(cb, hook):
    """Whether callback cb does something in `hook`: its class (or the instance) overrides the
    hook, or the legacy name the base hook calls. Callback's own hooks do nothing."""
    if isinstance(cb, CallbackList):
        return any(implements(c, hook) for c in cb)
    names = (hook, _LEGACY[hook]) if hook in _LEGACY else (hook,)
    for name in names:
        if name in vars(cb) or getattr(type(cb), name) is not getattr(Callback, name):
            return True
    return False


def loss_value(net_outputs):
    """The loss as a Python float from a training network's outputs: a Tensor (its mean), a
    number, or a tuple/list whose first item is the loss (TrainOneStepWithLossScaleCell)."""
    if isinstance(net_outputs, (tuple, list)):
        if not net_outputs:
            raise ValueError("loss_value: the network returned an empty tuple; expected the loss first")
        net_outputs = net_outputs[0]
    if isinstance(net_outputs, Tensor):
        return float(np.mean(net_outputs.asnumpy()))
    if isinstance(net_outputs, (int, float, np.ndarray, np.generic)):
        return float(np.mean(net_outputs))
    raise TypeError(f"loss_value: cannot read a loss from {type(net_outputs).__name__}")


def step_in_epoch(cb_params):
    """The 1-based step number within the current epoch."""
    return (cb_params.cur_step_num - 1) % max(cb_params.batch_num, 1) + 1


def monitored_value(who, monitor, cb):
    """The value a callback watches after an epoch: "loss" (the last training loss) or a key of
    the epoch's eval results (Model.fit with valid_dataset); None, with a warning, when absent."""
    if monitor == "loss":
        return loss_value(cb.net_outputs)
    results = cb.get("eval_results") or {}
    if monitor not in results:
        import warnings
        warnings.warn(f"{who}: monitor {monitor!r} is not among the eval results {sorted(results)}; "
                      "pass valid_dataset to Model.fit, or monitor 'loss'")
        return None
    return float(results[monitor])
