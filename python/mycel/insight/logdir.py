"""What the dashboard shows, read from a log directory: runs (directories holding event files),
and per run the scalars, histograms and images of every event file, read by the C++ reader and
cached until a file changes (size or mtime), so a page reload during training reads only news."""
import os

from mycel import _mycel


def _is_event_file(name):
    return "tfevents" in name


class LogDir:
    """A log directory: runs are `logdir` itself (run ".") and its subdirectories, at any depth,
    that hold event files."""

    def __init__(self, path):
        if not os.path.isdir(path):
            raise ValueError(f"mycel-insight: log directory {path!r} does not exist")
        self.path = os.path.abspath(path)
        self._cache = {}  # file path -> ((size, mtime), events)

    def runs(self):
        out = []
        for root, dirs, files in os.walk(self.path):
            dirs.sort()
            if any(_is_event_file(f) for f in files):
                out.append(os.path.relpath(root, self.path))
        return out

    def _run_dir(self, run):
        d = os.path.realpath(os.path.join(self.path, run))
        if d != self.path and not d.startswith(self.path + os.sep):
            raise KeyError(run)  # outside the log directory: never served
        if run not in self.runs():
            raise KeyError(run)
        return d

    def _events(self, run):
        d = self._run_dir(run)
        events = []
        for name in sorted(os.listdir(d)):
            if not _is_event_file(name):
                continue
            p = os.path.join(d, name)
            st = os.stat(p)
            key = (st.st_size, st.st_mtime_ns)
            hit = self._cache.get(p)
            if hit is None or hit[0] != key:
                hit = (key, _mycel.insight.read_event_file(p)[0])
                self._cache[p] = hit
            events.extend(hit[1])
        return events

    def values(self, run, plugin):
        """{tag: [(step, wall_time, value dict)]} of one plugin, in file order."""
        out = {}
        for step, wall, values in self._events(run):
            for v in values:
                if v["plugin"] == plugin:
                    out.setdefault(v["tag"], []).append((step, wall, v))
        return out

    def scalars(self, run):
        """{tag: [[step, wall_time, value]]}."""
        return {tag: [[s, w, v["value"]] for s, w, v in items]
                for tag, items in self.values(run, "scalar").items()}
