"""Profiler (MindSpore's mindspore.Profiler): times every kernel launch, in compiled steps (the
Program executor's hook) and in eager dispatch, with its output bytes and Cell scope; marks steps
(each outermost compiled-program run, or each step of Model.train in PYNATIVE mode), the data
waits before them and the dataset pipeline's per-stage counters. analyse() writes a Chrome-trace
timeline, the op tables, the step trace and the pipeline's table (formats: docs/insight.md).
Off, a launch pays one branch."""
import csv
import io
import json
import os
import threading

from mycel import _mycel
from mycel.common import insight_scope as _scope
from mycel.insight import profile_analysis as _analysis

_insight = _mycel.insight
_SAMPLE_S = 0.02  # the data pipeline's counters are sampled every 20 ms while profiling


def _write_atomic(path, text):
    # A complete artifact: readers see the old file or the whole new one.
    tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
    with open(tmp, "w", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def _csv(rows, fields):
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=fields, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: (f"{r[k]:.3f}" if isinstance(r[k], float) else r[k]) for k in fields})
    return out.getvalue()


class Profiler:
    """Profiler(output_path="./data", start_profile=True): starts at once unless start_profile is
    False; stop() pauses (start() resumes); analyse() stops and writes <output_path>/profiler/."""

    def __init__(self, output_path="./data", start_profile=True, **kwargs):
        if not isinstance(output_path, str) or not output_path:
            raise TypeError(f"Profiler: 'output_path' must be a non-empty str, got {output_path!r}")
        if not isinstance(start_profile, bool):
            raise TypeError(f"Profiler: 'start_profile' must be a bool, got {start_profile!r}")
        self._output_path = output_path
        self._events = []    # analysis records of op launches, resolved at each stop()
        self._spans = []     # (track, name, start_ns, end_ns, value, thread)
        self._samples = []   # (t_ns, [pipeline stats tuples])
        self._running = False
        self._t_start = None  # when counting began (the pipeline's rates are over time since)
        self._sampler = None
        self._stop_sampling = threading.Event()
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
        _insight.pipeline_stats()  # drop the final counters of pipelines that ended before
        _scope.acquire()
        _insight.profiler_start()  # one profiler at a time: this clears the C++ buffers only
        if self._t_start is None:
            self._t_start = _insight.profiler_now_ns()
        self._running = True
        self._stop_sampling.clear()
        self._sampler = threading.Thread(target=self._sample_loop, name="mycel-profiler-data",
                                         daemon=True)
        self._sampler.start()

    def _sample_loop(self):
        while not self._stop_sampling.wait(_SAMPLE_S):
            self._sample()

    def _sample(self):
        stats = _insight.pipeline_stats()
        if stats:
            self._samples.append((_insight.profiler_now_ns(), stats))

    def stop(self):
        """Stops timing; what was recorded is kept for analyse()."""
        if not self._running:
            return
        self._stop_sampling.set()
        self._sampler.join()
        self._sample()  # the last counters, pipelines that ended included
        _insight.profiler_stop()
        _scope.release()
        raw = _insight.profiler_take()
        sites = _insight.profiler_sites()
        scopes = _insight.profiler_scopes()
        self._events.extend(_analysis.resolve(raw, sites, scopes, _scope.cell_paths()))
        self._spans.extend(_insight.profiler_take_spans())
        self._running = False

    def events(self):
        """[(op, start_ns, end_ns, output_bytes, thread, scope, where)] recorded so far, in launch
        order (stops the profiler)."""
        self.stop()
        return [(e["op"], e["start"], e["end"], e["bytes"], e["thread"], e["scope"], e["where"])
                for e in self._events]

    def op_table(self):
        """Per op name: count, total/avg/min/max time (us), share of all op time, output bytes
        (total and per launch); sorted by total time, largest first."""
        self.stop()
        return _analysis.op_table(self._events, key=("op",))

    def op_detail_table(self):
        """Per (scope, op, source line): the same columns as op_table."""
        self.stop()
        return _analysis.op_table(self._events, key=("scope", "op", "where"))

    def step_trace(self):
        """Per step: start/duration, data wait before it, forward+backward, optimizer update and
        communication time (their ops' sum), the rest, output bytes and the executor's arena."""
        self.stop()
        return _analysis.step_trace(self._events, self._spans)

    def pipeline_table(self):
        """Per dataset pipeline stage: rows, rows/s, time its consumer waited, queue depths."""
        self.stop()
        return _analysis.pipeline_table(self._samples, self._t_start or 0)

    def analyse(self):
        """Stops profiling and writes, atomically, into output_dir: timeline.json (Chrome trace),
        op_table.csv, op_detail.csv, step_trace.csv, minddata_pipeline.csv/.json and
        summary.json; returns the directory."""
        self.stop()
        os.makedirs(self.output_dir, exist_ok=True)
        steps = _analysis.step_trace(self._events, self._spans)
        pipeline = _analysis.pipeline_table(self._samples, self._t_start or 0)
        trace = _analysis.chrome_trace(self._events, self._spans, steps, self._samples,
                                       os.getpid(), self._t_start)
        d = self.output_dir
        _write_atomic(os.path.join(d, "timeline.json"), json.dumps(trace))
        _write_atomic(os.path.join(d, "op_table.csv"),
                      _csv(_analysis.op_table(self._events, key=("op",)), _analysis.OP_FIELDS))
        _write_atomic(os.path.join(d, "op_detail.csv"),
                      _csv(_analysis.op_table(self._events, key=("scope", "op", "where")),
                           ["scope", "where"] + _analysis.OP_FIELDS))
        _write_atomic(os.path.join(d, "step_trace.csv"), _csv(steps, _analysis.STEP_FIELDS))
        _write_atomic(os.path.join(d, "minddata_pipeline.csv"),
                      _csv(pipeline, _analysis.PIPELINE_FIELDS))
        _write_atomic(os.path.join(d, "minddata_pipeline.json"), json.dumps(
            {"stages": pipeline, "samples": _analysis.pipeline_samples(self._samples)}))
        _write_atomic(os.path.join(d, "summary.json"), json.dumps(
            _analysis.summary(self._events, steps), indent=1))
        return d
