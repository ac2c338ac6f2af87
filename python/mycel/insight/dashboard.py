"""mycel-insight: a small web dashboard over a log directory (`mycel-insight --logdir DIR`).
It only reads: scalars as line charts, the latest histogram and image of each tag, per run, drawn
as SVG on the server (no JavaScript library needed), plus a JSON API:
  /api/runs, /api/scalars?run=R, /api/histograms?run=R, /api/image?run=R&tag=T&index=I (PNG)."""
import argparse
import html
import json
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mycel.insight.logdir import LogDir
from mycel.insight.svg import histogram_svg, line_chart_svg


def _page(logdir):
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>Mycel Insight</title>",
             "<style>body{font-family:sans-serif;margin:1.5em} .card{display:inline-block;"
             "vertical-align:top;margin:0 1em 1em 0} h3{font-size:0.95em;margin:0.2em 0}</style>"
             "</head><body><h1>Mycel Insight</h1>", f"<p>{html.escape(logdir.path)}</p>"]
    for run in logdir.runs():
        q = urllib.parse.quote(run)
        parts.append(f"<h2>run {html.escape(run)}</h2>")
        for tag, points in sorted(logdir.scalars(run).items()):
            parts.append(f"<div class='card'><h3>{html.escape(tag)}</h3>"
                         f"{line_chart_svg([(p[0], p[2]) for p in points])}</div>")
        for tag, items in sorted(logdir.values(run, "histogram").items()):
            step, _, h = items[-1]
            parts.append(f"<div class='card'><h3>{html.escape(tag)} (step {step})</h3>"
                         f"{histogram_svg(h)}</div>")
        for tag, items in sorted(logdir.values(run, "image").items()):
            step = items[-1][0]
            src = f"/api/image?run={q}&tag={urllib.parse.quote(tag)}&index={len(items) - 1}"
            parts.append(f"<div class='card'><h3>{html.escape(tag)} (step {step})</h3>"
                         f"<img src='{html.escape(src)}' "
                         "style='image-rendering:pixelated;min-width:128px'></div>")
    parts.append("</body></html>")
    return "".join(parts)


def make_handler(logdir):
    class Handler(BaseHTTPRequestHandler):
        def _send(self, code, body, ctype):
            data = body.encode() if isinstance(body, str) else body
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802 (the http.server name)
            url = urllib.parse.urlparse(self.path)
            q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
            try:
                if url.path == "/":
                    return self._send(200, _page(logdir), "text/html; charset=utf-8")
                if url.path == "/api/runs":
                    return self._send(200, json.dumps(logdir.runs()), "application/json")
                if url.path == "/api/scalars":
                    scalars = logdir.scalars(q.get("run", "."))
                    return self._send(200, json.dumps(scalars), "application/json")
                if url.path == "/api/histograms":
                    keys = ("min", "max", "num", "sum", "bucket_limit", "bucket")
                    hs = {tag: [{"step": s, **{k: v[k] for k in keys}} for s, _, v in items]
                          for tag, items in logdir.values(q.get("run", "."), "histogram").items()}
                    return self._send(200, json.dumps(hs), "application/json")
                if url.path == "/api/image":
                    items = logdir.values(q.get("run", "."), "image")[q["tag"]]
                    return self._send(200, items[int(q.get("index", -1))][2]["png"], "image/png")
            except (KeyError, IndexError, ValueError):
                return self._send(404, "not found", "text/plain")
            return self._send(404, "not found", "text/plain")

        def log_message(self, *args):  # quiet: a dashboard polled by a browser
            pass

    return Handler


def serve(logdir, host="127.0.0.1", port=8080):
    """A ThreadingHTTPServer for `logdir` (call serve_forever, or shutdown from another thread)."""
    return ThreadingHTTPServer((host, port), make_handler(LogDir(logdir)))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="mycel-insight",
                                 description="Serve a log directory's summaries.")
    ap.add_argument("--logdir", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    args = ap.parse_args(argv)
    server = serve(args.logdir, args.host, args.port)
    print(f"mycel-insight: serving {args.logdir} at http://{args.host}:{server.server_address[1]}/")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
