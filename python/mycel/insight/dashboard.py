"""mycel-insight: the training dashboard, a read-only web app over a log directory.

    mycel-insight --logdir DIR [--host 127.0.0.1] [--port 8080]      (or python -m mycel.insight)

The server is the standard library's ThreadingHTTPServer (no dependency: the app is a handful of
JSON endpoints and static files, bound to loopback unless --host says otherwise). Pages are one
static HTML shell and one script (static/) drawing with plotly.js, which is served from the
`plotly` package's own copy (plotly/package_data/plotly.min.js): no page needs the internet.

JSON API (every answer also lists "errors": files that could not be read, shown on the page):
  /api/runs                         {runs, profiler_runs}
  /api/scalars?run=R                {tag: [[step, wall_time, value]]}
  /api/histograms?run=R             {tag: [{step, wall_time, min, max, num, bucket_limit, bucket}]}
  /api/images?run=R                 {tag: [{step, wall_time, index, width, height}]}
  /api/image?run=R&tag=T&index=I    the PNG
  /api/graph?run=R                  {step, nodes: [{name, op, inputs, attrs}]}
  /api/dataset_graph?run=R          {nodes: [{id, op, params, columns, children}]}
  /api/lineage                      {rows: [{run, ...lineage.json}]}
  /api/profiler?run=R               {op_table, summary, timeline, step_trace, pipeline}"""
import argparse
import importlib.util
import json
import math
import os
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mycel.insight.logdir import LogDir

STATIC_DIR = os.path.join(os.path.dirname(os.path.realpath(__file__)), "static")
PAGES = ("scalars", "histograms", "images", "graph", "dataset", "profiler", "lineage")
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".png": "image/png"}
MAX_TIMELINE_EVENTS = 4000  # the timeline chart draws the first ones; the summary counts all
_LOOPBACK_NAMES = {"127.0.0.1", "localhost", "::1"}


def plotly_js_path():
    """plotly.min.js inside the installed `plotly` package, or None when it is not installed."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        return None
    p = os.path.join(list(spec.submodule_search_locations)[0], "package_data", "plotly.min.js")
    return p if os.path.isfile(p) else None


def _finite(x):
    """JSON has no NaN or infinity: such values become null (drawn as gaps)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def _jsonable_attr(v):
    if isinstance(v, (str, bool, int, float)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable_attr(x) for x in v]
    return str(v)  # a dtype


class Api:
    """The JSON answers, one method per endpoint (the handler only routes)."""

    def __init__(self, logdir):
        self.logdir = logdir

    def runs(self, q):
        return {"runs": self.logdir.runs(), "profiler_runs": self.logdir.profiler_runs(),
                "errors": []}

    def scalars(self, q):
        items, errors = self.logdir.values(q["run"], "scalar")
        return {"tags": {t: [[s, w, v["value"]] for s, w, v in xs] for t, xs in items.items()},
                "errors": errors}

    def histograms(self, q):
        items, errors = self.logdir.values(q["run"], "histogram")
        keys = ("min", "max", "num", "sum", "bucket_limit", "bucket")
        return {"tags": {t: [{"step": s, "wall_time": w, **{k: v[k] for k in keys}}
                             for s, w, v in xs] for t, xs in items.items()},
                "errors": errors}

    def images(self, q):
        items, errors = self.logdir.values(q["run"], "image")
        return {"tags": {t: [{"step": s, "wall_time": w, "index": i, "width": v["width"],
                              "height": v["height"]} for i, (s, w, v) in enumerate(xs)]
                         for t, xs in items.items()},
                "errors": errors}

    def graph(self, q):
        g, errors = self.logdir.graph(q["run"])
        if g is not None:
            for n in g["nodes"]:
                n["attrs"] = {k: _jsonable_attr(v) for k, v in n["attrs"].items()}
        return {"graph": g, "errors": errors}

    def dataset_graph(self, q):
        g, err = self.logdir.dataset_graph(q["run"])
        return {"graph": g, "errors": [err] if err else []}

    def lineage(self, q):
        rows, errors = self.logdir.lineage()
        return {"rows": rows, "errors": errors}

    def profiler(self, q):
        prof, errors = self.logdir.profile(q["run"])
        ev = prof["events"]
        t0 = min((e.get("ts", 0) for e in ev), default=0)
        end = max((e.get("ts", 0) + e.get("dur", 0) for e in ev), default=0)
        summary = {"events": len(ev), "span_us": end - t0,
                   "busy_us": sum(e.get("dur", 0) for e in ev),
                   "threads": len({e.get("tid") for e in ev})}
        timeline = [{"name": e.get("name", "?"), "ts": e.get("ts", 0) - t0,
                     "dur": e.get("dur", 0), "tid": e.get("tid", 0)}
                    for e in ev[:MAX_TIMELINE_EVENTS]]
        return {"op_table": prof["op_table"], "summary": summary, "timeline": timeline,
                "step_trace": prof["step_trace"], "pipeline": prof["pipeline"], "errors": errors}


def _host_name(header):
    """The host part of a Host header ("127.0.0.1:8080" -> "127.0.0.1", "[::1]:80" -> "::1")."""
    h = (header or "").strip().lower()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


def make_handler(logdir, loopback_only=True):
    """The request handler. loopback_only: answer only requests whose Host header names this
    machine, so a web page elsewhere cannot read the dashboard through DNS rebinding."""
    api = Api(logdir)
    routes = {"/api/runs": api.runs, "/api/scalars": api.scalars,
              "/api/histograms": api.histograms, "/api/images": api.images,
              "/api/graph": api.graph, "/api/dataset_graph": api.dataset_graph,
              "/api/lineage": api.lineage, "/api/profiler": api.profiler}

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code, body, ctype):
            data = body.encode() if isinstance(body, str) else body
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def _not_found(self):
            self._send(404, "not found", "text/plain; charset=utf-8")

        def _file(self, path):
            ctype = _TYPES.get(os.path.splitext(path)[1])
            if ctype is None or not os.path.isfile(path):
                return self._not_found()
            with open(path, "rb") as f:
                self._send(200, f.read(), ctype)

        def _static(self, name):
            """A file of the static folder only (no sub-folders, no way out of it)."""
            if name == "plotly.min.js":
                p = plotly_js_path()
                return self._file(p) if p else self._send(
                    404, "plotly is not installed: pip install plotly", "text/plain")
            p = os.path.realpath(os.path.join(STATIC_DIR, name))
            if os.path.dirname(p) != STATIC_DIR:
                return self._not_found()
            return self._file(p)

        def do_GET(self):  # noqa: N802 (the http.server name)
            if loopback_only and _host_name(self.headers.get("Host")) not in _LOOPBACK_NAMES:
                return self._send(403, "mycel-insight answers requests for 127.0.0.1 or localhost "
                                  "only (start it with --host to serve other names)",
                                  "text/plain; charset=utf-8")
            url = urllib.parse.urlsplit(self.path)
            path = urllib.parse.unquote(url.path)
            q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
            try:
                if path == "/":
                    self.send_response(302)
                    self.send_header("Location", "/scalars")
                    self.send_header("Content-Length", "0")
                    return self.end_headers()
                if path.strip("/") in PAGES:
                    return self._file(os.path.join(STATIC_DIR, "index.html"))
                if path.startswith("/static/"):
                    return self._static(path[len("/static/"):])
                if path == "/api/image":
                    items, _ = logdir.values(q["run"], "image")
                    return self._send(200, items[q["tag"]][int(q.get("index", -1))][2]["png"],
                                      "image/png")
                if path in routes:
                    body = json.dumps(_finite(routes[path](q)), allow_nan=False)
                    return self._send(200, body, "application/json")
            except (KeyError, IndexError, ValueError):
                return self._not_found()
            return self._not_found()

        def log_message(self, *args):  # quiet: a dashboard polled by a browser
            pass

    return Handler


def serve(logdir, host="127.0.0.1", port=8080):
    """A ThreadingHTTPServer for `logdir` (call serve_forever, or shutdown from another thread)."""
    loopback = host in _LOOPBACK_NAMES or host.startswith("127.")
    server = ThreadingHTTPServer((host, port), make_handler(LogDir(logdir), loopback))
    server.daemon_threads = True
    return server


def main(argv=None):
    ap = argparse.ArgumentParser(prog="mycel-insight",
                                 description="Serve a log directory's summaries as a dashboard.")
    ap.add_argument("--logdir", required=True, help="directory of runs (searched recursively)")
    ap.add_argument("--host", default="127.0.0.1",
                    help="address to bind (default 127.0.0.1: this machine only)")
    ap.add_argument("--port", type=int, default=8080, help="port (0: any free port)")
    args = ap.parse_args(argv)
    try:
        server = serve(args.logdir, args.host, args.port)
    except (ValueError, OSError) as e:
        ap.exit(2, f"mycel-insight: {e}\n")
    if plotly_js_path() is None:
        print("mycel-insight: plotly is not installed, so charts will not draw "
              "(pip install 'mycel[insight]' or pip install plotly)")
    print(f"mycel-insight: serving {args.logdir} at "
          f"http://{args.host}:{server.server_address[1]}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
