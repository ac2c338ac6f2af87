"""Debugger (MindInsight's watchpoints, offline): while on, every kernel output — compiled steps
and eager ops — is checked for NaN, infinity and, optionally, values beyond max_abs. The first hit
raises RuntimeError naming the op and, in graph mode, the user's source line (raise_on_hit=False
only records hits). Off, kernel launches pay the same single branch as with the Profiler off."""
from mycel import _mycel

_insight = _mycel.insight
_CONDITIONS = ("nan", "inf")


class Debugger:
    """with Debugger(watch=("nan", "inf"), max_abs=None, raise_on_hit=True) as dbg: ...
    dbg.hits() lists [{op, where, condition, output, count, numel}]."""

    def __init__(self, watch=_CONDITIONS, max_abs=None, raise_on_hit=True):
        watch = (watch,) if isinstance(watch, str) else tuple(watch)
        unknown = [w for w in watch if w not in _CONDITIONS]
        if unknown:
            raise ValueError(f"Debugger: watch conditions must be among {_CONDITIONS}, "
                             f"got {unknown}")
        number = isinstance(max_abs, (int, float)) and not isinstance(max_abs, bool)
        if max_abs is not None and (not number or max_abs <= 0):
            raise ValueError(f"Debugger: 'max_abs' must be a number > 0 or None, got {max_abs!r}")
        self._watch = watch
        self._max_abs = float(max_abs or 0.0)
        self._raise = bool(raise_on_hit)
        self._hits = []
        self._running = False

    def start(self):
        _insight.debugger_start(nan="nan" in self._watch, inf="inf" in self._watch,
                                max_abs=self._max_abs, raise_on_hit=self._raise)
        self._running = True

    def stop(self):
        if self._running:
            _insight.debugger_stop()
            self._running = False
        self._collect()

    def hits(self):
        """The outputs that hit a condition so far, in launch order."""
        self._collect()
        return list(self._hits)

    def _collect(self):
        for op, where, cond, out, count, numel in _insight.debugger_take():
            self._hits.append({"op": op, "where": where, "condition": cond, "output": out,
                               "count": count, "numel": numel})

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False
