"""Profiler (MindSpore's mindspore.Profiler): times every kernel launch, in compiled steps (the
Program executor's hook) and in eager dispatch, while it runs; analyse() writes a Chrome-trace
timeline (chrome://tracing, Perfetto) and a per-op table. Off, a launch pays one branch."""
import csv
import io
import json
import os

from mycel import _mycel

_insight = _mycel.insight


def _write_atomic(path, text):
    # A complete artifact: readers see the old file or the whole new one.
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


class Profiler:
    """Profiler(output_path="./data"): starts timing at once (start_profile=True); stop() pauses;
    analyse() stops and writes <output_path>/profiler/timeline.json and op_table.csv."""

    def __init__(self, output_path="./data", start_profile=True, **kwargs):
        if not isinstance(output_path, str) or not output_path:
            raise TypeError(f"Profiler: 'output_path' must be a non-empty str, got {output_path!r}")
        if not isinstance(start_profile, bool):
            raise TypeError(f"Profiler: 'start_profile' must be a bool, got {start_profile!r}")
        self._output_path = output_path
        self._events = []
        self._running = False
        if start_profile:
            self.start()

    @property
    def output_dir(self):
        """Where analyse() writes: <output_path>/profiler."""
        return os.path.join(self._output_path, "profiler")

    def start(self):
        """Starts (or resumes) timing kernel launches."""
        if self._running:
            return
        _insight.profiler_start()  # one profiler at a time: this clears the C++ buffer only
        self._running = True

    def stop(self):
        """Stops timing; what was recorded is kept for analyse()."""
        if not self._running:
            return
        _insight.profiler_stop()
        self._events.extend(_insight.profiler_take())
        self._running = False

    def events(self):
        """[(op, start_ns, end_ns, output_bytes, thread)] recorded so far (stops the profiler)."""
        self.stop()
        return list(self._events)

    def op_table(self):
        """Per op name: count, total/avg/min/max time (us), share of all op time, output bytes;
        sorted by total time, largest first."""
        rows = {}
        for name, t0, t1, nbytes, _ in self.events():
            us = (t1 - t0) / 1e3
            r = rows.setdefault(name, {"op": name, "count": 0, "total_us": 0.0, "min_us": us,
                                       "max_us": us, "bytes": 0})
            r["count"] += 1
            r["total_us"] += us
            r["min_us"] = min(r["min_us"], us)
            r["max_us"] = max(r["max_us"], us)
            r["bytes"] += nbytes
        total = sum(r["total_us"] for r in rows.values()) or 1.0
        for r in rows.values():
            r["avg_us"] = r["total_us"] / r["count"]
            r["percent"] = 100.0 * r["total_us"] / total
        return sorted(rows.values(), key=lambda r: -r["total_us"])

    def analyse(self):
        """Stops profiling and writes timeline.json (Chrome trace: one complete event per launch,
        microseconds) and op_table.csv; returns the directory."""
        events = self.events()
        os.makedirs(self.output_dir, exist_ok=True)
        origin = min((e[1] for e in events), default=0)
        pid = os.getpid()
        trace = [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": "Mycel"}}]
        for name, t0, t1, nbytes, tid in events:
            trace.append({"name": name, "cat": "op", "ph": "X", "pid": pid, "tid": tid,
                          "ts": (t0 - origin) / 1e3, "dur": (t1 - t0) / 1e3,
                          "args": {"bytes": nbytes}})
        _write_atomic(os.path.join(self.output_dir, "timeline.json"),
                      json.dumps({"traceEvents": trace, "displayTimeUnit": "ms"}))
        out = io.StringIO()
        fields = ["op", "count", "total_us", "avg_us", "min_us", "max_us", "percent", "bytes"]
        w = csv.DictWriter(out, fieldnames=fields)
        w.writeheader()
        for r in self.op_table():
            w.writerow({k: (f"{r[k]:.3f}" if isinstance(r[k], float) else r[k]) for k in fields})
        _write_atomic(os.path.join(self.output_dir, "op_table.csv"), out.getvalue())
        return self.output_dir
