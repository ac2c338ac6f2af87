"""Debugger (MindInsight's watchpoints, in-process): while on, the executor hands every kernel
launch — instructions of compiled steps and eager ops — to the watchpoints after it ran: NaN,
infinity, overflow, tensors too large or too small, weights that stopped changing, gradients that
vanish or explode. A hit names the node (Cell scope and op), the user's source line, and
summarizes the launch's inputs and outputs; the run then raises, records and goes on, or pauses
at that op until the user continues it. Chosen nodes' tensors can be dumped to .npy files.
Off, kernel launches pay the same single branch as with the Profiler off."""
import fnmatch
import json
import linecache
import os
import queue
import sys
import threading

import numpy as np

from mycel import _mycel, context
from mycel.common import insight_scope as _scope
from mycel.insight import profile_analysis as _analysis

_insight = _mycel.insight
CONDITIONS = ("nan", "inf", "overflow", "tensor_too_large", "tensor_too_small",
              "weight_not_changing", "gradient_vanishing", "gradient_exploding")
_STATS = ("max_abs", "max", "min", "mean", "mean_abs")
_FLOAT16_MAX = 65504.0
_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class Watchpoint:
    """Watchpoint(condition, threshold=None, nodes="*", stat="max_abs", rtol=1e-7, name=None)

    condition, and what hits:
      "nan", "inf"            an output element is NaN / ±inf
      "overflow"              a floating output has |x| > threshold (default: float16's max,
                              65504: the value would overflow in float16) or ±inf
      "tensor_too_large"      an output's `stat` > threshold (stat: max_abs, max, min, mean, mean_abs)
      "tensor_too_small"      an output's `stat` < threshold
      "weight_not_changing"   a weight (Parameter) equals its value at the previous step end
                              within rtol (numpy allclose, atol 0)
      "gradient_vanishing"    a gradient's L2 norm < threshold
      "gradient_exploding"    a gradient's L2 norm > threshold
    nodes: glob pattern(s) matched against the op name and against "<Cell scope>/<op>"
    ("conv*", "*fc1*"); for weight_not_changing, against the Parameter's name."""

    def __init__(self, condition, threshold=None, nodes="*", stat="max_abs", rtol=1e-7, name=None):
        if condition not in CONDITIONS:
            raise ValueError(f"Watchpoint: condition must be one of {CONDITIONS}, got {condition!r}")
        needs = ("tensor_too_large", "tensor_too_small", "gradient_vanishing",
                 "gradient_exploding")
        if threshold is None and condition in needs:
            raise ValueError(f"Watchpoint({condition!r}): needs a threshold")
        if threshold is not None and (isinstance(threshold, bool) or
                                      not isinstance(threshold, (int, float))):
            raise TypeError(f"Watchpoint({condition!r}): threshold must be a number, "
                            f"got {threshold!r}")
        if stat not in _STATS:
            raise ValueError(f"Watchpoint({condition!r}): stat must be one of {_STATS}, "
                             f"got {stat!r}")
        if not isinstance(rtol, (int, float)) or rtol < 0:
            raise ValueError(f"Watchpoint({condition!r}): rtol must be a number >= 0, got {rtol!r}")
        nodes = (nodes,) if isinstance(nodes, str) else tuple(nodes)
        if not nodes or not all(isinstance(n, str) for n in nodes):
            raise TypeError(f"Watchpoint({condition!r}): nodes must be a str or a list of str, "
                            f"got {nodes!r}")
        self.condition = condition
        self.threshold = None if threshold is None else float(threshold)
        if condition == "overflow" and threshold is None:
            self.threshold = _FLOAT16_MAX
        self.nodes = nodes
        self.stat = stat
        self.rtol = float(rtol)
        self.name = name or condition

    def matches(self, *names):
        return any(fnmatch.fnmatchcase(n, p) for p in self.nodes for n in names)

    def __repr__(self):
        return (f"Watchpoint({self.condition!r}, threshold={self.threshold}, nodes={self.nodes}, "
                f"name={self.name!r})")


def _summary(a):
    """Shape, dtype and statistics of one tensor (finite elements only for min/max/mean)."""
    s = {"shape": tuple(a.shape), "dtype": str(a.dtype), "size": int(a.size)}
    if a.dtype.kind in "fc" and a.size:
        fin = a[np.isfinite(a)]
        s.update(nan=int(np.isnan(a).sum()), inf=int(np.isinf(a).sum()))
    else:
        fin = a.reshape(-1)
    if fin.size and a.dtype.kind in "biuf":
        f = fin.astype(np.float64)
        s.update(min=float(f.min()), max=float(f.max()), mean=float(f.mean()),
                 mean_abs=float(np.abs(f).mean()), max_abs=float(np.abs(f).max()))
    return s


def _stat(a, stat):
    f = np.abs(a) if stat in ("max_abs", "mean_abs") else a
    f = f.astype(np.float64)
    return float(f.max() if stat in ("max_abs", "max") else f.min() if stat == "min" else f.mean())


class Hit:
    """One watchpoint hit: watchpoint, condition, node ("<scope>/<op>"), op, where ("file:line:col:
    source"), step, launch (index in the session), output (or input/parameter index), count of
    elements hit of numel, value (the statistic or norm that hit, where there is one), inputs and
    outputs (summaries), arrays ({"inputs": [...], "outputs": [...]} with keep_arrays=True).
    Paused hits: resume() continues the run, abort() makes the paused op raise. Also readable
    as a dict: hit["op"]."""

    def __init__(self, **fields):
        self.__dict__.update(fields)
        self._continue = threading.Event()
        self._abort = False

    def __getitem__(self, key):
        return self.__dict__[key]

    def __repr__(self):
        return f"Hit({self.watchpoint!r} at {self.node}, step {self.step}, {self.where})"

    def resume(self):
        """Continues the paused run."""
        self._continue.set()

    def abort(self):
        """Makes the paused op raise RuntimeError (the step stops there)."""
        self._abort = True
        self._continue.set()

    def message(self):
        what = {"nan": "has NaN", "inf": "has inf"}.get(self.condition, f"hit {self.watchpoint!r}")
        val = "" if self.value is None else f", value {self.value:.6g}"
        loc = f" at {self.where}" if self.where else ""
        return (f"[debugger] {self.op} {self.kind} {self.output} {what} ({self.count} of "
                f"{self.numel} elements{val}), node {self.node}, step {self.step}{loc}")


def _user_line():
    """The innermost frame outside the mycel package: the user's line of an eager op."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PKG):
        f = f.f_back
    if f is None:
        return ""
    text = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f"{f.f_code.co_filename}:{f.f_lineno}: {text}"


def _write_npy(path, a):
    tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}.npy"
    np.save(tmp, a)
    os.replace(tmp, path)


class Debugger:
    """Debugger(watchpoints=[Watchpoint("nan"), Watchpoint("inf")], on_hit="raise", callback=None,
    pause_timeout=None, keep_arrays=False, dump_dir=None, dump_nodes=(), dump_steps=None,
    network=None)

    on_hit: "raise" (the op that hit raises RuntimeError naming node and source line), "record"
    (hits() lists them, the run goes on) or "pause" (the run blocks at that op: callback(hit) is
    called on the run's thread and the run continues when it returns, unless it called
    hit.abort(); without a callback, wait_for_hit() on another thread returns the Hit, and
    hit.resume() / hit.abort() continue it; after pause_timeout seconds the paused op raises).
    dump_dir/dump_nodes/dump_steps: the inputs and outputs of launches whose op or scope/op
    matches a dump_nodes pattern, at steps in dump_steps (None: all), as .npy files. network:
    the Cell whose weights weight_not_changing watches (default: the Cells called while on).
    The former Debugger(watch=("nan", "inf"), max_abs=None, raise_on_hit=True) is accepted."""

    def __init__(self, watchpoints=None, on_hit="raise", callback=None, pause_timeout=None,
                 keep_arrays=False, dump_dir=None, dump_nodes=(), dump_steps=None, network=None,
                 watch=None, max_abs=None, raise_on_hit=None):
        if watch is not None or max_abs is not None:
            watch = (watch,) if isinstance(watch, str) else tuple(watch or ("nan", "inf"))
            unknown = [w for w in watch if w not in ("nan", "inf")]
            if unknown:
                raise ValueError(f"Debugger: watch conditions must be among ('nan', 'inf'), "
                                 f"got {unknown}")
            number = isinstance(max_abs, (int, float)) and not isinstance(max_abs, bool)
            if max_abs is not None and (not number or max_abs <= 0):
                raise ValueError(f"Debugger: 'max_abs' must be a number > 0 or None, "
                                 f"got {max_abs!r}")
            watchpoints = [Watchpoint(w) for w in watch]
            if max_abs is not None:
                watchpoints.append(Watchpoint("tensor_too_large", threshold=max_abs,
                                              name=f"|x| > {max_abs:g}"))
        if raise_on_hit is not None:
            on_hit = "raise" if raise_on_hit else "record"
        if watchpoints is None:
            watchpoints = [Watchpoint("nan"), Watchpoint("inf")]
        watchpoints = list(watchpoints)
        if not all(isinstance(w, Watchpoint) for w in watchpoints):
            raise TypeError(f"Debugger: watchpoints must be Watchpoint objects, got {watchpoints!r}")
        if on_hit not in ("raise", "record", "pause"):
            raise ValueError(f"Debugger: on_hit must be 'raise', 'record' or 'pause', "
                             f"got {on_hit!r}")
        if callback is not None and not callable(callback):
            raise TypeError(f"Debugger: callback must be callable, got {callback!r}")
        if pause_timeout is not None and (not isinstance(pause_timeout, (int, float))
                                          or pause_timeout <= 0):
            raise ValueError(f"Debugger: pause_timeout must be a number > 0 or None, "
                             f"got {pause_timeout!r}")
        dump_nodes = (dump_nodes,) if isinstance(dump_nodes, str) else tuple(dump_nodes)
        if dump_nodes and not dump_dir:
            raise ValueError("Debugger: dump_nodes needs a dump_dir")
        self.watchpoints = watchpoints
        self.on_hit = on_hit
        self._callback = callback
        self._pause_timeout = pause_timeout
        self._keep = bool(keep_arrays)
        self._dump_dir = dump_dir
        self._dump_nodes = dump_nodes
        self._dump_steps = None if dump_steps is None else set(int(s) for s in dump_steps)
        self._network = network
        self._hits = []
        self._dumps = []
        self._paused = queue.Queue()
        self._lock = threading.Lock()
        self._running = False
        self._step = 0
        self._launch = 0
        self._weights = {}   # parameter name -> its value at the last step end
        self._produced = {}  # data pointer -> phase of the launch that wrote it (this step)
        self._previous_scope = {}
        self._index = None
        self._by_cond = {}
        for w in watchpoints:
            self._by_cond.setdefault(w.condition, []).append(w)

    # -- control ------------------------------------------------------------------------------
    def start(self):
        if self._running:
            return
        _scope.acquire()
        self._running = True
        if "weight_not_changing" in self._by_cond:
            self._snapshot_weights(compare=False)
        _scope.step_listeners.append(self._on_step_end)
        _scope.gradient_listeners.append(self._on_gradients)
        _insight.debugger_start(self._on_launch, self._on_program_end)

    def stop(self):
        if not self._running:
            return
        _insight.debugger_stop()
        _scope.step_listeners.remove(self._on_step_end)
        _scope.gradient_listeners.remove(self._on_gradients)
        _scope.release()
        self._running = False
        if self._dump_dir and self._dumps:
            self._write_manifest()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    @property
    def step(self):
        """Steps ended since start (outermost compiled runs, Model.train steps, step_end())."""
        return self._step

    def step_end(self):
        """Marks the end of a step for a custom eager loop (compiled runs and Model.train mark
        their own): weight_not_changing compares the weights, dumps go on to the next step."""
        self._on_step_end()

    def hits(self):
        """The hits so far, in launch order."""
        with self._lock:
            return list(self._hits)

    def dumps(self):
        """[(path, node, step, "input"|"output", index)] of the .npy files written."""
        with self._lock:
            return list(self._dumps)

    def wait_for_hit(self, timeout=None):
        """The next paused hit (on_hit="pause", no callback), waiting up to timeout seconds;
        None if none came."""
        try:
            return self._paused.get(timeout=timeout)
        except queue.Empty:
            return None

    # -- the executor's callbacks -------------------------------------------------------------
    @staticmethod
    def _site(op, site):
        if site is None:
            return (op, "", "", (), (), False, False, "")
        return site

    def _scope_of(self, site):
        op, where, source, weights, _, _, graph, cell = site
        if not graph:
            return _scope.current() or ""
        tops = tuple(sorted(_scope.tops.keys()))
        if self._index is None or self._index[0] != tops:  # Cells called since: index again
            self._index = (tops, _analysis._ScopeIndex(_scope.cell_paths()))
        tid = threading.get_ident()
        scope = self._index[1].scope(weights, where, self._previous_scope.get(tid, ""), cell,
                                     _scope.current())
        self._previous_scope[tid] = scope
        return scope

    def _on_launch(self, op, site, inputs, outputs, input_ptrs):
        try:
            return self._check(op, site, inputs, outputs, input_ptrs)
        except Exception as e:  # a bug here must not look like the user's op failing silently
            return f"[debugger] internal error while checking {op}: {type(e).__name__}: {e}"

    def _check(self, op, site, inputs, outputs, input_ptrs):
        site = self._site(op, site)
        self._launch += 1
        scope = self._scope_of(site)
        node = f"{scope}/{op}" if scope else op
        phase = _analysis._phase(site, scope, site[1])
        where = f"{site[1]}: {site[2]}" if site[1] else _user_line()
        arrays = {}

        def arr(kind, k):
            key = (kind, k)
            if key not in arrays:
                t = (inputs if kind == "input" else outputs)[k]
                arrays[key] = None if t is None else t.asnumpy()
            return arrays[key]

        found = []  # (watchpoint, kind, index, count, numel, value)
        for cond in ("nan", "inf", "overflow", "tensor_too_large", "tensor_too_small"):
            for w in self._by_cond.get(cond, ()):
                if not w.matches(op, node):
                    continue
                for k in range(len(outputs)):
                    a = arr("output", k)
                    if a is None or a.size == 0:
                        continue
                    hit = self._condition(w, a)
                    if hit:
                        found.append((w, "output", k) + hit)
        grads = ("gradient_vanishing", "gradient_exploding")
        if site[6] and phase == "optimizer" and any(c in self._by_cond for c in grads):
            # compiled: a gradient is an optimizer input that a forward/backward launch of this
            # step wrote (eager optimizers hand theirs over in _on_gradients)
            for k, t in enumerate(inputs):
                if t is None or self._produced.get(input_ptrs[k]) != "forward_backward":
                    continue
                a = arr("input", k)
                norm = float(np.linalg.norm(a.astype(np.float64).reshape(-1)))
                for w in self._by_cond.get("gradient_vanishing", ()):
                    if w.matches(op, node) and norm < w.threshold:
                        found.append((w, "input", k, a.size, a.size, norm))
                for w in self._by_cond.get("gradient_exploding", ()):
                    if w.matches(op, node) and norm > w.threshold:
                        found.append((w, "input", k, a.size, a.size, norm))
        for t in outputs:
            if t is not None:
                self._produced[t.data_ptr()] = phase
        if self._dump_nodes and (self._dump_steps is None or self._step in self._dump_steps) \
                and any(fnmatch.fnmatchcase(n, p) for p in self._dump_nodes for n in (op, node)):
            self._dump(node, inputs, outputs, arr)
        if not found:
            return None
        ins = [None if t is None else _summary(arr("input", k)) for k, t in enumerate(inputs)]
        outs = [None if t is None else _summary(arr("output", k)) for k, t in enumerate(outputs)]
        message = None
        for w, kind, k, count, numel, value in found:
            h = Hit(watchpoint=w.name, condition=w.condition, node=node, op=op, scope=scope,
                    where=where, step=self._step, launch=self._launch, kind=kind, output=k,
                    count=int(count), numel=int(numel), value=value, inputs=ins, outputs=outs,
                    arrays=None)
            if self._keep:
                h.arrays = {"inputs": [None if t is None else arr("input", j).copy()
                                       for j, t in enumerate(inputs)],
                            "outputs": [None if t is None else arr("output", j).copy()
                                        for j, t in enumerate(outputs)]}
            with self._lock:
                self._hits.append(h)
            if message is None:
                message = self._act(h)
        return message

    @staticmethod
    def _condition(w, a):
        """(count, numel, value) when watchpoint w hits output array a, else None."""
        c = w.condition
        floating = a.dtype.kind in "fc"
        if c == "nan":
            n = int(np.isnan(a).sum()) if floating else 0
            return (n, a.size, None) if n else None
        if c == "inf":
            n = int(np.isinf(a).sum()) if floating else 0
            return (n, a.size, None) if n else None
        if c == "overflow":
            if not floating:
                return None
            with np.errstate(invalid="ignore"):
                n = int((np.abs(a.astype(np.float64)) > w.threshold).sum())
            return (n, a.size, None) if n else None
        if a.dtype.kind not in "biuf":
            return None
        fin = a[np.isfinite(a)] if floating else a
        if fin.size == 0:
            return None
        v = _stat(fin, w.stat)
        if c == "tensor_too_large" and v > w.threshold:
            elems = np.abs(fin) if w.stat in ("max_abs", "mean_abs") else fin
            n = int((elems > w.threshold).sum()) if w.stat in ("max_abs", "max") else fin.size
            return (n, a.size, v)
        if c == "tensor_too_small" and v < w.threshold:
            elems = np.abs(fin) if w.stat in ("max_abs", "mean_abs") else fin
            n = int((elems < w.threshold).sum()) if w.stat == "min" else fin.size
            return (n, a.size, v)
        return None

    def _act(self, h):
        """What the run does at a hit: the message that makes the op raise, or None."""
        if self.on_hit == "raise":
            return h.message()
        if self.on_hit == "record":
            return None
        if self._callback is not None:
            self._callback(h)
        else:
            self._paused.put(h)
            if not h._continue.wait(self._pause_timeout):
                return (f"{h.message()}: paused, and not resumed within {self._pause_timeout} s "
                        f"(call hit.resume() or hit.abort())")
        return f"{h.message()}: aborted while paused" if h._abort else None

    def _on_program_end(self):
        # GRAPH_MODE: an outermost compiled run is a step. PYNATIVE: the user's loop is (a jit
        # function it calls is part of the step; Model.train and step_end() mark the ends).
        if context.get_context("mode") == context.GRAPH_MODE:
            self._on_step_end()

    def _on_gradients(self, optimizer, grads):
        """An eager optimizer's gradients, one per parameter: the gradient watchpoints, with the
        parameter's name as the node."""
        if not any(c in self._by_cond for c in ("gradient_vanishing", "gradient_exploding")):
            return
        for p, g in zip(optimizer.parameters, grads):
            a = g.asnumpy()
            norm = float(np.linalg.norm(a.astype(np.float64).reshape(-1)))
            node = f"gradient/{p.name}"
            for cond, bad in (("gradient_vanishing", norm.__lt__),
                              ("gradient_exploding", norm.__gt__)):
                for w in self._by_cond.get(cond, ()):
                    if w.matches(p.name, node) and bad(w.threshold):
                        h = Hit(watchpoint=w.name, condition=cond, node=node, op="", scope="",
                                where=_user_line(), step=self._step, launch=self._launch,
                                kind="gradient", output=0, count=int(a.size), numel=int(a.size),
                                value=norm, inputs=[], outputs=[_summary(a)],
                                arrays={"outputs": [a.copy()]} if self._keep else None)
                        with self._lock:
                            self._hits.append(h)
                        if self.on_hit == "raise":
                            raise RuntimeError(h.message())
                        self._act(h)

    def _on_step_end(self):
        try:
            if "weight_not_changing" in self._by_cond:
                self._snapshot_weights(compare=True)
        finally:
            self._step += 1
            self._produced.clear()

    def _parameters(self):
        cells = [self._network] if self._network is not None else list(_scope.tops.values())
        seen = {}
        for c in cells:
            for p in c.get_parameters():
                seen.setdefault(p.name, p)
        return seen

    def _snapshot_weights(self, compare):
        watch = self._by_cond["weight_not_changing"]
        for name, p in self._parameters().items():
            ws = [w for w in watch if w.matches(name)]
            if not ws:
                continue
            a = p.asnumpy()
            old = self._weights.get(name)
            self._weights[name] = a.copy()
            if not compare or old is None or old.shape != a.shape:
                continue
            for w in ws:
                if np.allclose(a, old, rtol=w.rtol, atol=0.0, equal_nan=True):
                    diff = float(np.abs(a.astype(np.float64) - old).max()) if a.size else 0.0
                    h = Hit(watchpoint=w.name, condition=w.condition, node=name, op="", scope="",
                            where="", step=self._step, launch=self._launch, kind="parameter",
                            output=0, count=int(a.size), numel=int(a.size), value=diff,
                            inputs=[], outputs=[_summary(a)],
                            arrays={"outputs": [a.copy()]} if self._keep else None)
                    with self._lock:
                        self._hits.append(h)
                    if self.on_hit == "raise":  # from the step's end: the step call raises
                        raise RuntimeError(h.message())
                    if self.on_hit == "pause":
                        self._act(h)

    # -- dumps ----------------------------------------------------------------------------------
    def _dump(self, node, inputs, outputs, arr):
        d = os.path.join(self._dump_dir, f"step{self._step}")
        os.makedirs(d, exist_ok=True)
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in node)[-120:]
        for kind, ts in (("input", inputs), ("output", outputs)):
            for k, t in enumerate(ts):
                if t is None:
                    continue
                path = os.path.join(d, f"{self._launch:06d}_{safe}.{kind}{k}.npy")
                _write_npy(path, arr(kind, k))
                with self._lock:
                    self._dumps.append((path, node, self._step, kind, k))

    def _write_manifest(self):
        path = os.path.join(self._dump_dir, "manifest.json")
        rows = [{"path": os.path.relpath(p, self._dump_dir), "node": n, "step": s, "kind": kd,
                 "index": k} for p, n, s, kd, k in self.dumps()]
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(tmp, path)
