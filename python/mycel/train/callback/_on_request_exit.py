"""OnRequestExit: end training cleanly on a signal (MindSpore's train.OnRequestExit)."""
import os
import signal
import threading

from mycel.train.callback._callback import Callback


class OnRequestExit(Callback):
    """On signal `sig` (SIGTERM by default), training stops after the current step; at the end
    of training the network is saved to directory/file_name.ckpt (save_ckpt) and exported to
    directory/file_name.mindir with the last step's inputs (save_mindir). The previous handler
    comes back when training ends."""

    def __init__(self, save_ckpt=True, save_mindir=True, file_name="Net", directory="./", sig=signal.SIGTERM):
        super().__init__()
        for name, value in (("save_ckpt", save_ckpt), ("save_mindir", save_mindir)):
            if not isinstance(value, bool):
                raise ValueError(f"OnRequestExit: {name} must be a bool, got {value!r}")
        for name, value in (("file_name", file_name), ("directory", directory)):
            if not isinstance(value, str):
                raise ValueError(f"OnRequestExit: {name} must be a str, got {value!r}")
        if isinstance(sig, bool) or not isinstance(sig, int) or sig in (signal.SIGKILL, signal.SIGSTOP):
            raise ValueError(f"OnRequestExit: sig must be a signal number that can be caught, got {sig!r}")
        self.save_ckpt, self.save_mindir = save_ckpt, save_mindir
        self.file_name, self.directory, self.sig = file_name, directory, int(sig)
        self.is_exit = False
        self._previous = None

    def _on_signal(self, signum, frame):
        self.is_exit = True

    def on_train_begin(self, run_context):
        self.is_exit = False
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("OnRequestExit: signal handlers can only be installed from the main thread")
        self._previous = signal.signal(self.sig, self._on_signal)

    def _maybe_stop(self, run_context):
        if self.is_exit:
            run_context.request_stop()

    on_train_step_end = _maybe_stop
    on_train_epoch_end = _maybe_stop
    on_eval_step_end = _maybe_stop

    def on_train_end(self, run_context):
        if self._previous is not None:
            signal.signal(self.sig, self._previous)
            self._previous = None
        if not self.is_exit:
            return
        from mycel.train.serialization import export, save_checkpoint  # the package imports us
        cb = run_context.original_args()
        net = cb.get("network") or cb.get("train_network")
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, self.file_name)
        if self.save_ckpt:
            save_checkpoint(net, path + ".ckpt")
        row = cb.get("train_dataset_element")
        if self.save_mindir and row is not None:
            inputs = row[:-1] if isinstance(row, (list, tuple)) and len(row) > 1 else row
            export(net, *(inputs if isinstance(inputs, (list, tuple)) else [inputs]), file_name=path,
                   file_format="MINDIR")
