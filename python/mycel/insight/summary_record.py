"""SummaryRecord (MindSpore's mindspore.train.summary.SummaryRecord): values added by add_value and
by the summary ops (ops.ScalarSummary, ...) become one TensorBoard Event per record(step), written
by a C++ thread, so a training step never waits for the disk."""
import os
import socket
import time

import numpy as np

from mycel import _mycel
from mycel.common.tensor import Tensor

_PLUGINS = ("scalar", "image", "histogram", "tensor", "graph")
_insight = _mycel.insight


def _event_file_name(log_dir, prefix, suffix):
    """(path, head, tail, seconds): path = head + seconds + tail, the first free name."""
    # "tfevents" in the name is how TensorBoard finds event files in a directory.
    host = socket.gethostname()
    head = os.path.join(log_dir, f"{prefix}.out.tfevents.summary.")
    tail = f".{host}{suffix}"
    t = int(time.time())
    while os.path.exists(f"{head}{t}{tail}"):
        t += 1  # two records opened in one second: the next free name
    return f"{head}{t}{tail}", head, tail, t


def _check_str(who, name, value):
    if not isinstance(value, str):
        raise TypeError(f"{who}: '{name}' must be a str, got {type(value).__name__}")


def _as_tensor(who, plugin, name, value):
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, int, float, np.ndarray, np.generic)):
        return Tensor(np.asarray(value))
    raise TypeError(f"{who}: value of {plugin} '{name}' must be a Tensor, a numpy array or a "
                    f"number, got {type(value).__name__}")


class SummaryRecord:
    """Writes summaries to an event file in `log_dir` that TensorBoard reads.

    add_value(plugin, name, value) keeps a value for the next record(step); record(step) writes
    those and whatever the summary ops recorded since the last record as one Event; flush()
    returns when everything is on disk; close() (or leaving a `with` block) ends the file."""

    def __init__(self, log_dir, file_prefix="events", file_suffix="_MS", num_process=32,
                 max_file_size=None, raise_exception=False, export_options=None):
        who = "SummaryRecord"
        _check_str(who, "log_dir", log_dir)
        _check_str(who, "file_prefix", file_prefix)
        _check_str(who, "file_suffix", file_suffix)
        if max_file_size is not None and (isinstance(max_file_size, bool) or
                                          not isinstance(max_file_size, int) or max_file_size < 1):
            raise ValueError(f"{who}: max_file_size must be None or an int >= 1 (bytes), "
                             f"got {max_file_size!r}")
        os.makedirs(log_dir, exist_ok=True)
        self._log_dir = log_dir
        self._raise = bool(raise_exception)
        self._mode = "train"
        self._pending = []
        path, head, tail, t = _event_file_name(log_dir, file_prefix, file_suffix)
        # max_file_size: the writer thread starts a new file (next free seconds in the name)
        # before a record would take the current one past it (MindSpore's rotation)
        self._writer = _insight.EventWriter(path, 256, max_file_size or 0, head, tail, t)
        _insight.attach_summaries()  # from now on summary ops keep their values for record()
        self._closed = False

    @property
    def log_dir(self):
        """The directory of the event file."""
        return self._log_dir

    @property
    def event_file_name(self):
        """The path of the event file being written (after a rotation: the newest)."""
        return self._writer.path

    @property
    def event_file_names(self):
        """Every event file this record wrote, oldest first (several after rotations)."""
        return list(self._writer.paths)

    def set_mode(self, mode):
        """'train' or 'eval' (recorded for SummaryCollector; values are written the same way)."""
        if mode not in ("train", "eval"):
            raise ValueError(f"SummaryRecord.set_mode: mode must be 'train' or 'eval', "
                             f"got {mode!r}")
        self._mode = mode

    def add_value(self, plugin, name, value):
        """Keeps `value` as `name` for the next record(): plugin 'scalar' (one element), 'image'
        (NCHW batch), 'histogram' or 'tensor'; or 'graph' with a computation graph's nodes
        [(name, op, [input names], {attr: value})] (mycel.insight.graph_summary.graph_nodes),
        written as the GraphDef TensorBoard shows."""
        who = "SummaryRecord.add_value"
        self._check_open(who)
        _check_str(who, "plugin", plugin)
        _check_str(who, "name", name)
        if plugin not in _PLUGINS:
            raise ValueError(f"{who}: plugin must be one of {', '.join(map(repr, _PLUGINS))}, "
                             f"got {plugin!r}")
        if plugin == "graph":
            if not isinstance(value, (list, tuple)):
                raise TypeError(f"{who}: graph '{name}' must be a list of (name, op, inputs, "
                                f"attrs) nodes, got {type(value).__name__}")
            self._pending.append((plugin, name, list(value)))
            return
        _insight.summary_tag(plugin, name)  # a MindSpore suffix ("loss[:Scalar]") must fit
        t = _as_tensor(who, plugin, name, value)
        if plugin == "scalar" and t.size != 1:
            raise ValueError(f"{who}: scalar '{name}' must have one element, "
                             f"got shape {tuple(t.shape)}")
        if plugin == "image" and (t.ndim != 4 or t.shape[1] not in (1, 3, 4)):
            raise ValueError(f"{who}: image '{name}' must be 4-D NCHW with 1, 3 or 4 channels, "
                             f"got shape {tuple(t.shape)}")
        self._pending.append((plugin, name, t))

    def record(self, step, train_network=None, plugin_filter=None):
        """Queues the pending values and the summary ops' latest values as the Event of `step`
        (written by the writer thread; flush() waits for it). Returns True."""
        who = "SummaryRecord.record"
        self._check_open(who)
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise ValueError(f"{who}: step must be an int >= 0, got {step!r}")
        values, self._pending = self._pending, []
        if plugin_filter is not None:
            values = [v for v in values if plugin_filter(v[0])]
        now = time.time()
        for _, _, nodes in (v for v in values if v[0] == "graph"):  # an Event of its own
            self._writer.write_graph(int(step), now, nodes)
        values = [v for v in values if v[0] != "graph"]
        self._writer.write(int(step), now, values, take_queued=True)
        return True

    def flush(self):
        """Returns when every recorded Event is in the file."""
        self._writer.flush()

    def close(self):
        """Writes what is queued and closes the file; later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        _insight.detach_summaries()
        self._writer.close()

    def _check_open(self, who):
        if self._closed:
            raise ValueError(f"{who}: the SummaryRecord for {self._log_dir!r} is closed")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001  (interpreter shutdown)
            pass
