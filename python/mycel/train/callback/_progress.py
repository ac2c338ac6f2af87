"""ProgressBar: one line per epoch, redrawn in place with '\\r': steps done, loss, throughput and
time left. Model.train adds one by default when stdout is a terminal; elsewhere it stays quiet."""
import sys
import time

from mycel.train.callback._callback import Callback, loss_value, step_in_epoch

_active = {}  # stream id -> the ProgressBar whose line is on it, so other printers can clear it


def clear_line(stream=None):
    """Erases a half-drawn progress line on `stream` (stdout by default) before printing text,
    so LossMonitor's lines do not run into the bar. The bar redraws on the next step."""
    stream = sys.stdout if stream is None else stream
    bar = _active.pop(id(stream), None)
    if bar is not None:
        stream.write("\r\x1b[K")
        stream.flush()


def _duration(seconds):
    seconds = int(max(seconds, 0))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class ProgressBar(Callback):
    """Draws `epoch e/E [=====>    ] step/steps  loss L  N img/s  ETA m:ss` on one line.
    file: where to draw (stdout); force: True draws even when file is not a terminal, False never
    draws, None draws only on a terminal; min_interval: seconds between redraws."""

    def __init__(self, file=None, force=None, width=30, min_interval=0.1):
        super().__init__()
        self.file = file
        self.force = force
        self.width = int(width)
        self.min_interval = float(min_interval)
        self.enabled = False
        self.lines_drawn = 0

    def _stream(self):
        return sys.stdout if self.file is None else self.file

    def on_train_begin(self, run_context):
        stream = self._stream()
        if self.force is None:
            isatty = getattr(stream, "isatty", None)
            self.enabled = bool(isatty and isatty())
        else:
            self.enabled = bool(self.force)

    def on_train_epoch_begin(self, run_context):
        self._epoch_start = time.perf_counter()
        self._last_draw = 0.0

    def on_train_step_end(self, run_context):
        if not self.enabled:
            return
        cb = run_context.original_args()
        step, steps = step_in_epoch(cb), cb.batch_num
        now = time.perf_counter()
        if step < steps and now - self._last_draw < self.min_interval:
            return
        self._last_draw = now
        elapsed = now - self._epoch_start
        rate = step / elapsed if elapsed > 0 else 0.0
        batch = cb.get("batch_size")
        speed = f"{rate * batch:.1f} img/s" if batch else f"{rate:.2f} steps/s"
        eta = _duration((steps - step) / rate) if rate > 0 else "?"
        done = int(self.width * step / max(steps, 1))
        bar = "=" * done + (">" if done < self.width else "") + " " * (self.width - done - 1)
        line = (f"epoch {cb.cur_epoch_num}/{cb.epoch_num} [{bar[:self.width]}] {step}/{steps}  "
                f"loss {loss_value(cb.net_outputs):.4f}  {speed}  ETA {eta}")
        stream = self._stream()
        stream.write("\r\x1b[K" + line)
        stream.flush()
        _active[id(stream)] = self
        self.lines_drawn += 1

    def on_train_epoch_end(self, run_context):
        if not self.enabled:
            return
        stream = self._stream()
        if _active.pop(id(stream), None) is not None:
            stream.write(f"  ({_duration(time.perf_counter() - self._epoch_start)})\n")
            stream.flush()
