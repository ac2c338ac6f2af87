"""Training callbacks (MindSpore's mindspore.train callbacks): hooks that Model.train, eval and
fit call around every step and epoch."""
from mycel.train.callback._callback import Callback, RunContext, CallbackList, CallbackParams
from mycel.train.callback._loss_monitor import LossMonitor, TimeMonitor
from mycel.train.callback._checkpoint import ModelCheckpoint, CheckpointConfig
from mycel.train.callback._early_stop import EarlyStopping
from mycel.train.callback._lr_scheduler import LearningRateScheduler
from mycel.train.callback._reduce_lr import ReduceLROnPlateau, LambdaCallback
from mycel.train.callback._history import History
from mycel.train.callback._progress import ProgressBar
from mycel.train.callback._backup import BackupAndRestore
from mycel.train.callback._on_request_exit import OnRequestExit

__all__ = ["Callback", "RunContext", "CallbackList", "CallbackParams", "LossMonitor", "TimeMonitor",
           "ModelCheckpoint", "CheckpointConfig", "EarlyStopping", "LearningRateScheduler", "History",
           "ReduceLROnPlateau", "LambdaCallback",
           "ProgressBar", "BackupAndRestore", "OnRequestExit"]


def __getattr__(name):
    # mindspore.train.callback.SummaryCollector; resolved lazily (mycel.insight imports this package).
    if name == "SummaryCollector":
        from mycel.insight.summary_collector import SummaryCollector
        return SummaryCollector
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
