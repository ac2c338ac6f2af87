"""The profiler's analysis: names each launch's Cell scope and step phase, and builds the op
tables, the step trace, the data pipeline's table and the Chrome trace from the raw buffers."""
import bisect
import os
import statistics

OP_FIELDS = ["op", "count", "total_us", "avg_us", "min_us", "max_us", "percent", "bytes",
             "avg_bytes"]
STEP_FIELDS = ["step", "start_us", "duration_us", "data_wait_us", "fp_bp_us", "optimizer_us",
               "communication_us", "other_us", "ops", "output_bytes", "arena_bytes"]
PIPELINE_FIELDS = ["pipeline", "op_id", "parent", "stage", "rows", "rows_per_s", "wait_ms",
                   "queue_avg", "queue_max", "queue_capacity", "samples"]
PHASES = ("forward_backward", "optimizer", "communication")
STEP_TID, DATA_TID = 100000, 100001  # the step trace's and data waits' tracks in the timeline

_construct_lines = {}  # Cell class -> (file, first line, last line) of its construct


def _lines_of(cls):
    if cls not in _construct_lines:
        fn = getattr(cls, "construct", None)
        code = getattr(fn, "__code__", None)
        if code is None:
            _construct_lines[cls] = None
        else:
            last = max((ln for _, _, ln in code.co_lines() if ln), default=code.co_firstlineno)
            _construct_lines[cls] = (os.path.realpath(code.co_filename), code.co_firstlineno, last)
    return _construct_lines[cls]


def _split_where(where):
    parts = where.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None, 0
    return os.path.realpath(parts[0]), int(parts[1])


class _ScopeIndex:
    """Names compiled instructions' scopes from the Cells the profiled code called. Exactly, from
    the label of the Cell the instruction was inlined from (its path under the compiled Cell,
    whose call pushed the scope the launch ran in); else by guess: the owner of a weight the
    instruction reads, else the Cell whose construct holds its source line (several instances of
    one class: the one the preceding launch was in)."""

    def __init__(self, cell_paths):
        self.owner = {}   # parameter name -> scope of the Cell holding it
        self.ranges = {}  # file -> [(first, last, scope)]
        self.cell_at = {}  # scope -> Cell
        self.under = {}   # compiled Cell's scope -> {attribute path: scope} (scopes_under)
        for scope, cell in cell_paths:
            self.cell_at.setdefault(scope, cell)
            for p in cell.__dict__.get("_params", {}).values():
                if p is not None:
                    self.owner.setdefault(p.name, scope)
            lines = _lines_of(type(cell))
            if lines:
                self.ranges.setdefault(lines[0], []).append((lines[1], lines[2], scope))

    def exact(self, base, label):
        """The scope of the Cell labelled `label` inside the compiled Cell whose scope is `base`,
        or None when the label has no path or `base` is not a Cell called while active."""
        from mycel.common import insight_scope
        from mycel.common.error_frames import label_path
        path = label_path(label)
        if path is None or base not in self.cell_at:
            return None
        if base not in self.under:
            self.under[base] = insight_scope.scopes_under(self.cell_at[base], base)
        return self.under[base].get(path)

    def scope(self, weights, where, previous, cell=None, base=None):
        if cell is not None and base:
            exact = self.exact(base, cell)
            if exact is not None:
                return exact
        for w in weights:
            if w in self.owner:
                return self.owner[w]
        path, line = _split_where(where)
        cands = [s for a, b, s in self.ranges.get(path, ()) if a <= line <= b]
        if len(cands) == 1:
            return cands[0]
        if cands:  # instances of one class: the one the preceding launch ran in, else the first
            if previous in cands or any(previous.startswith(c + "/") for c in cands):
                return next(c for c in cands if previous == c or previous.startswith(c + "/"))
            return cands[0]
        return previous or "Default"


def _phase(site, scope, where):
    from mycel.common import insight_scope
    from mycel.nn.optim.optimizer import Optimizer
    if site[5]:
        return "communication"
    s = scope
    while s:
        cls = insight_scope.classes.get(s)
        if cls is not None and issubclass(cls, Optimizer):
            return "optimizer"
        s = s.rpartition("/")[0]
    if os.sep + os.path.join("nn", "optim") + os.sep in where:
        return "optimizer"
    return "forward_backward"


def resolve(raw, sites, scopes, cell_paths):
    """Raw launches [(site, scope, start, end, bytes, thread)] -> dicts with op, scope, where,
    phase, and depth (0: not inside another launch of its thread)."""
    index = _ScopeIndex(cell_paths)
    previous = {}
    out = []
    memo = {}  # a step's launches repeat: (site, eager scope, previous scope) -> (scope, phase)
    for site_id, scope_id, t0, t1, nbytes, tid in raw:
        site = sites[site_id] if 0 <= site_id < len(sites) else ("?", "", "", [], [], False, False,
                                                                 "")
        op, where, source, weights, _, _, graph, cell = site
        key = (site_id, scope_id, previous.get(tid, "") if graph else None)
        if key not in memo:
            if graph:  # the Cell's call that ran the program pushed only its own scope
                base = scopes[scope_id] if scope_id >= 0 else None
                scope = index.scope(weights, where, previous.get(tid, ""), cell, base)
            else:
                scope = scopes[scope_id] if scope_id >= 0 else ""
            memo[key] = (scope, _phase(site, scope, where))
        scope, phase = memo[key]
        previous[tid] = scope
        out.append({"op": op, "scope": scope, "where": where, "source": source, "start": t0,
                    "end": t1, "bytes": nbytes, "thread": tid, "phase": phase})
    _mark_depth(out)
    return out


def _mark_depth(events):
    by_thread = {}
    for e in events:
        by_thread.setdefault(e["thread"], []).append(e)
    for evs in by_thread.values():
        stack = []
        for e in sorted(evs, key=lambda e: (e["start"], -e["end"])):
            while stack and stack[-1]["end"] <= e["start"]:
                stack.pop()
            e["depth"] = len(stack)
            stack.append(e)


def op_table(events, key):
    rows = {}
    for e in events:
        us = (e["end"] - e["start"]) / 1e3
        k = tuple(e[f] for f in key)
        r = rows.get(k)
        if r is None:
            r = rows[k] = dict(zip(key, k), count=0, total_us=0.0, min_us=us, max_us=us, bytes=0)
        r["count"] += 1
        r["total_us"] += us
        r["min_us"] = min(r["min_us"], us)
        r["max_us"] = max(r["max_us"], us)
        r["bytes"] += e["bytes"]
    total = sum(r["total_us"] for r in rows.values()) or 1.0
    for r in rows.values():
        r["avg_us"] = r["total_us"] / r["count"]
        r["percent"] = 100.0 * r["total_us"] / total
        r["avg_bytes"] = r["bytes"] // r["count"]
    return sorted(rows.values(), key=lambda r: -r["total_us"])


def _outer_steps(spans):
    """Step spans, leaving out those inside another (a compiled program run inside an eager
    Model.train step)."""
    steps = sorted((s for s in spans if s[0] == "step"), key=lambda s: (s[2], -s[3]))
    out = []
    for s in steps:
        if out and s[2] >= out[-1][2] and s[3] <= out[-1][3] and s[5] == out[-1][5]:
            continue
        out.append(s)
    return out


def origin(events, spans):
    starts = [e["start"] for e in events] + [s[2] for s in spans]
    return min(starts, default=0)


def step_trace(events, spans):
    t_origin = origin(events, spans)
    steps = _outer_steps(spans)
    waits = sorted((s for s in spans if s[0] == "data_wait"), key=lambda s: s[2])
    top = sorted((e for e in events if e["depth"] == 0), key=lambda e: e["start"])
    rows, w, k, prev_end = [], 0, 0, None
    for n, (_, _, t0, t1, arena, tid) in enumerate(steps, 1):
        wait = 0
        while w < len(waits) and waits[w][2] < t0:
            if waits[w][5] == tid and (prev_end is None or waits[w][2] >= prev_end):
                wait += waits[w][3] - waits[w][2]
            w += 1
        while k < len(top) and top[k]["start"] < t0:
            k += 1
        phase = dict.fromkeys(PHASES, 0)
        ops = nbytes = 0
        j = k
        while j < len(top) and top[j]["start"] < t1:
            e = top[j]
            if e["end"] <= t1 and e["thread"] == tid:
                phase[e["phase"]] += e["end"] - e["start"]
                ops += 1
                nbytes += e["bytes"]
            j += 1
        dur = t1 - t0
        rows.append({"step": n, "start_us": (t0 - t_origin) / 1e3, "duration_us": dur / 1e3,
                     "data_wait_us": wait / 1e3, "fp_bp_us": phase["forward_backward"] / 1e3,
                     "optimizer_us": phase["optimizer"] / 1e3,
                     "communication_us": phase["communication"] / 1e3,
                     "other_us": (dur - sum(phase.values())) / 1e3, "ops": ops,
                     "output_bytes": nbytes, "arena_bytes": max(arena, 0),
                     "_t0": t0, "_t1": t1, "_tid": tid})
        prev_end = t1
    return rows


def pipeline_table(samples, t_start):
    """Per stage: rows produced while profiling, rows/s over the time they took (from t_start, when
    counting began, to the first sample showing the final count), the consumer's wait, and the
    output queue's depth over the samples."""
    stages = {}
    for t, stats in samples:
        for pipe, op_id, parent, name, rows, wait_ns, queued, cap in stats:
            s = stages.setdefault((pipe, op_id), {"pipeline": pipe, "op_id": op_id,
                                                  "parent": parent, "stage": name, "rows": -1,
                                                  "queued": []})
            if rows != s["rows"]:
                s["rows"], s["t_done"] = rows, t
            s["wait_ms"] = wait_ns / 1e6
            s["queued"].append(queued)
            s["queue_capacity"] = cap
    out = []
    for s in stages.values():
        q = s.pop("queued")
        span = (s.pop("t_done") - t_start) / 1e9
        s.update(rows_per_s=s["rows"] / span if span > 0 else 0.0, queue_avg=sum(q) / len(q),
                 queue_max=max(q), samples=len(q))
        out.append(s)
    return sorted(out, key=lambda s: (s["pipeline"], s["op_id"]))


def pipeline_samples(samples):
    return [{"t_ns": t, "stages": [{"pipeline": p, "op_id": i, "stage": n, "rows": r,
                                    "wait_ns": w, "queued": q, "capacity": c}
                                   for p, i, _, n, r, w, q, c in stats]}
            for t, stats in samples]


def _us(ns, t_origin):
    return (ns - t_origin) / 1e3


def chrome_trace(events, spans, steps, samples, pid, t_start=None):
    """The Chrome trace (JSON object format): ops on their threads' tracks, the step trace (steps
    with their phases nested) and data waits on tracks of their own, counters for memory and the
    data pipeline's queues and rows."""
    t0 = origin(events, spans)
    if samples:
        t0 = min(t0, samples[0][0]) if events or spans else samples[0][0]
    meta = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "Mycel"}},
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": STEP_TID,
             "args": {"name": "Step trace"}},
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": DATA_TID,
             "args": {"name": "Data wait"}}]
    for tid in sorted({e["thread"] for e in events}):
        meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                     "args": {"name": f"ops (thread {tid})"}})
    ev = []
    for e in events:
        ev.append({"name": e["op"], "cat": "op", "ph": "X", "pid": pid, "tid": e["thread"],
                   "ts": _us(e["start"], t0), "dur": (e["end"] - e["start"]) / 1e3,
                   "args": {"bytes": e["bytes"], "scope": e["scope"], "where": e["where"],
                            "phase": e["phase"]}})
    top = sorted((e for e in events if e["depth"] == 0), key=lambda e: e["start"])
    top_starts = [e["start"] for e in top]
    for s in steps:
        ev.append({"name": f"step {s['step']}", "cat": "step", "ph": "X", "pid": pid,
                   "tid": STEP_TID, "ts": _us(s["_t0"], t0), "dur": (s["_t1"] - s["_t0"]) / 1e3,
                   "args": {k: s[k] for k in STEP_FIELDS if k not in ("start_us",)}})
        # the phases as runs of consecutive launches of one phase: they never overlap
        run = None
        for e in top[bisect.bisect_left(top_starts, s["_t0"]):]:
            if e["start"] >= s["_t1"]:
                break
            if e["end"] > s["_t1"] or e["thread"] != s["_tid"]:
                continue
            if run and run[0] == e["phase"]:
                run[2] = e["end"]
            else:
                if run:
                    ev.append(_phase_span(run, pid, t0))
                run = [e["phase"], e["start"], e["end"]]
        if run:
            ev.append(_phase_span(run, pid, t0))
        if s["arena_bytes"] or s["output_bytes"]:
            ev.append({"name": "memory", "ph": "C", "pid": pid, "ts": _us(s["_t0"], t0),
                       "args": {"arena_bytes": s["arena_bytes"],
                                "output_bytes": s["output_bytes"]}})
    for track, name, a, b, value, _ in spans:
        if track == "data_wait":
            ev.append({"name": name, "cat": "data", "ph": "X", "pid": pid, "tid": DATA_TID,
                       "ts": _us(a, t0), "dur": (b - a) / 1e3, "args": {"queued": value}})
    prev = {}
    for t, stats in samples:
        for pipe, op_id, _, name, rows, _, queued, cap in stats:
            key = f"{name}#{pipe}.{op_id}"
            ev.append({"name": f"queue {key}", "ph": "C", "pid": pid, "ts": _us(t, t0),
                       "args": {"queued": queued, "capacity": cap}})
            t_prev, rows_prev = prev.get(key, (t_start, 0))  # counting began at t_start
            if t_prev is not None and t > t_prev:
                rate = (rows - rows_prev) / ((t - t_prev) / 1e9)
                ev.append({"name": f"rows/s {key}", "ph": "C", "pid": pid, "ts": _us(t, t0),
                           "args": {"rows_per_s": rate}})
            prev[key] = (t, rows)
    ev.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
    return {"traceEvents": meta + ev, "displayTimeUnit": "ms"}


def _phase_span(run, pid, t0):
    return {"name": run[0], "cat": "phase", "ph": "X", "pid": pid, "tid": STEP_TID,
            "ts": _us(run[1], t0), "dur": (run[2] - run[1]) / 1e3, "args": {}}


def summary(events, steps):
    durs = [s["duration_us"] for s in steps]
    return {"steps": len(steps), "step_us_median": statistics.median(durs) if durs else None,
            "launches": len(events),
            "op_us_total": sum((e["end"] - e["start"]) / 1e3 for e in events if e["depth"] == 0),
            "output_bytes": sum(e["bytes"] for e in events),
            "peak_arena_bytes": max((s["arena_bytes"] for s in steps), default=0),
            "phases_us": {p: sum(s[k] for s in steps) for p, k in
                          (("forward_backward", "fp_bp_us"), ("optimizer", "optimizer_us"),
                           ("communication", "communication_us"))}}
