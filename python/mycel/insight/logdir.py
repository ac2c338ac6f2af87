"""What the dashboard shows, read from a log directory: runs (directories holding event files, a
lineage record or a profiler output), and per run the scalars, histograms, images and graph of its
event files (read by the C++ reader, cached until a file's size or mtime changes), its dataset
graph and lineage (JSON beside the events) and profiler output (timeline.json, op_table.csv).

Every path a request names is checked here: a run is one of the directories found by walking the
log directory (symlinked directories are not followed), and a file is read only when its real
path lies inside the log directory, so `..`, absolute paths and symlinks out never reach a file.
A file that cannot be read or parsed becomes an error message for the page, not an exception."""
import csv
import io
import json
import os
import threading

from mycel import _mycel
from mycel.insight.lineage import DATASET_GRAPH_FILE, LINEAGE_FILE

PROFILER_FILES = ("timeline.json", "op_table.csv")
MAX_JSON_BYTES = 64 << 20  # a JSON file larger than this is refused (a page would not draw it)


def _is_event_file(name):
    return "tfevents" in name


class LogDir:
    """A log directory: runs are `logdir` itself (run ".") and its subdirectories, at any depth,
    that hold event files, lineage.json, dataset_graph.json or a profiler's output."""

    def __init__(self, path):
        if not os.path.isdir(path):
            raise ValueError(f"mycel-insight: log directory {path!r} does not exist")
        self.path = os.path.realpath(path)
        self._cache = {}  # file path -> ((size, mtime), (events, error))
        self._lock = threading.Lock()  # the server answers requests from several threads

    # ---- finding runs and files, inside the log directory only
    def _walk(self):
        for root, dirs, files in os.walk(self.path):  # followlinks=False: no way out
            dirs.sort()
            yield os.path.relpath(root, self.path), files

    def runs(self):
        """Runs with summaries: directories holding event files, lineage or a dataset graph."""
        keep = (LINEAGE_FILE, DATASET_GRAPH_FILE)
        return [r for r, files in self._walk()
                if any(_is_event_file(f) or f in keep for f in files)]

    def profiler_runs(self):
        """Directories holding a Profiler's analyse() output."""
        return [r for r, files in self._walk() if any(f in PROFILER_FILES for f in files)]

    def _inside(self, p):
        real = os.path.realpath(p)
        return real == self.path or real.startswith(self.path + os.sep)

    def _run_dir(self, run, known):
        """The directory of `run` (one of `known`); KeyError for anything else."""
        if not isinstance(run, str) or run not in known:
            raise KeyError(run)
        d = os.path.join(self.path, run)
        if not self._inside(d):
            raise KeyError(run)
        return d

    def _file(self, run, name, known):
        """A file of a run, when it exists and its real path lies inside the log directory."""
        p = os.path.join(self._run_dir(run, known), name)
        if not os.path.isfile(p) or not self._inside(p):
            return None
        return p

    # ---- event files
    def _read(self, p):
        st = os.stat(p)
        key = (st.st_size, st.st_mtime_ns)
        with self._lock:
            hit = self._cache.get(p)
        if hit is not None and hit[0] == key:
            return hit[1]
        name = os.path.basename(p)
        try:
            events, complete = _mycel.insight.read_event_file(p)
            error = None if complete else (
                f"{name}: a corrupt or torn record after {len(events)} complete records "
                "(those records are shown)")
        except (ValueError, RuntimeError) as e:
            events, error = [], f"{name}: {e}"
        with self._lock:
            self._cache[p] = (key, (events, error))
        return events, error

    def events(self, run):
        """(events of every event file of a run in file order, [error messages])."""
        d = self._run_dir(run, self.runs())
        events, errors = [], []
        for name in sorted(os.listdir(d)):
            if not _is_event_file(name):
                continue
            p = os.path.join(d, name)
            if not os.path.isfile(p) or not self._inside(p):
                errors.append(f"{name}: not read (it is not a file inside the log directory)")
                continue
            ev, err = self._read(p)
            events.extend(ev)
            if err:
                errors.append(err)
        return events, errors

    def values(self, run, plugin):
        """({tag: [(step, wall_time, value dict)]} of one plugin in file order, errors)."""
        out = {}
        events, errors = self.events(run)
        for step, wall, values in events:
            for v in values:
                if v["plugin"] == plugin:
                    out.setdefault(v["tag"], []).append((step, wall, v))
        return out, errors

    def scalars(self, run):
        """{tag: [[step, wall_time, value]]}."""
        return {tag: [[s, w, v["value"]] for s, w, v in items]
                for tag, items in self.values(run, "scalar")[0].items()}

    def graph(self, run):
        """(the run's latest computation graph as [{name, op, inputs, attrs}] or None, errors)."""
        items, errors = self.values(run, "graph")
        if not items:
            return None, errors
        step, _, v = items["graph"][-1]
        try:
            nodes = _mycel.insight.decode_graph_def(v["graph_def"])
        except ValueError as e:
            return None, errors + [str(e)]
        return {"step": step, "nodes": [{"name": n, "op": op, "inputs": list(ins), "attrs": attrs}
                                        for n, op, ins, attrs in nodes]}, errors

    # ---- JSON and CSV files beside the events
    def _json(self, run, name, known):
        p = self._file(run, name, known)
        if p is None:
            return None, None
        try:
            if os.path.getsize(p) > MAX_JSON_BYTES:
                return None, f"{name}: larger than {MAX_JSON_BYTES >> 20} MiB, not read"
            with open(p) as f:
                return json.load(f), None
        except (OSError, ValueError) as e:
            return None, f"{name}: {e}"

    def dataset_graph(self, run):
        """(dataset_graph.json of a run or None, error or None)."""
        return self._json(run, DATASET_GRAPH_FILE, self.runs())

    def lineage(self):
        """([{"run": run, **lineage.json}] of every run that has one, [errors])."""
        rows, errors = [], []
        for run in self.runs():
            rec, err = self._json(run, LINEAGE_FILE, [run])
            if err:
                errors.append(f"{run}: {err}")
            elif isinstance(rec, dict):
                rows.append({"run": run, **rec})
        return rows, errors

    def profile(self, run):
        """A profiler output: its op table rows, timeline events, step trace and data-pipeline
        stage rows, and errors."""
        known = self.profiler_runs()
        errors = []
        table = self._csv_rows(run, "op_table.csv", known, errors)
        trace, err = self._json(run, "timeline.json", known)
        if err:
            errors.append(err)
        events = []
        if isinstance(trace, dict):
            events = [e for e in trace.get("traceEvents", []) if isinstance(e, dict)
                      and e.get("ph") == "X"]
        elif trace is not None:
            errors.append("timeline.json: no traceEvents object")
        steps = self._csv_rows(run, "step_trace.csv", known, errors)
        stages = self._csv_rows(run, "minddata_pipeline.csv", known, errors)
        return {"op_table": table, "events": events, "step_trace": steps, "pipeline": stages}, errors

    def _csv_rows(self, run, name, known, errors):
        """The rows of an optional CSV of a profiler output ([] when absent; a bad file is an
        error shown on the page)."""
        p = self._file(run, name, known)
        if p is None:
            return []
        try:
            with open(p, newline="") as f:
                return list(csv.DictReader(io.StringIO(f.read())))
        except (OSError, csv.Error, UnicodeDecodeError) as e:
            errors.append(f"{name}: {e}")
            return []
