"""mycel-insight's server: its JSON equals what was written, nothing outside the log directory or
the static folder is ever served (.., %2e%2e, absolute paths, symlinks out), a corrupt event file
is an error message in the answer (not a failed page), and the command line starts and stops."""
import io
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import numpy as np
import pytest

from mycel import Tensor
from mycel.insight.dashboard import plotly_js_path, serve
from mycel.train.summary import SummaryRecord

from insight_browser import live_server

SECRET = b"outside the log directory"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    top = tmp_path_factory.mktemp("site")
    logdir = top / "logs"
    (top / "secret.txt").write_bytes(SECRET)
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (1, 3, 4, 5)).astype(np.uint8)
    for run, scale in (("a", 1.0), ("b/inner", 2.0)):
        with SummaryRecord(str(logdir / run)) as rec:
            for step in range(4):
                rec.add_value("scalar", "loss", Tensor(np.float32(scale / (step + 1))))
                rec.add_value("histogram", "w", Tensor(np.arange(10.0) * scale))
                rec.add_value("image", "img", Tensor(img))
                rec.record(step * 10)
    # a run whose second event file is torn halfway through its last record
    with SummaryRecord(str(logdir / "torn")) as rec:
        for step in range(3):
            rec.add_value("scalar", "loss", Tensor(np.float32(step)))
            rec.record(step)
    f = next(p for p in (logdir / "torn").iterdir() if "tfevents" in p.name)
    data = f.read_bytes()
    f.write_bytes(data[:-7])
    (logdir / "garbage").mkdir()
    (logdir / "garbage" / "events.out.tfevents.1.x").write_bytes(b"\x00\x01not an event file" * 9)
    # symlinks pointing out of the log directory: a file in a run, and a whole directory
    os.symlink(top / "secret.txt", logdir / "a" / "events.out.tfevents.0.link")
    os.symlink(top, logdir / "escape")
    (logdir / "a" / "lineage.json").write_text(json.dumps({"network": "Net", "learning_rate": 0.1}))
    with live_server(logdir) as base:
        yield base, img


def _get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.headers["Content-Type"], r.read()


def _json(url):
    return json.loads(_get(url)[2])


def test_api_returns_what_was_written(site):
    base, img = site
    runs = _json(base + "/api/runs")["runs"]
    assert runs == ["a", "b/inner", "garbage", "torn"]  # "escape" is a symlink: not followed
    scalars = _json(base + "/api/scalars?run=b/inner")["tags"]
    want = [(10 * k, np.float32(2.0 / (k + 1))) for k in range(4)]
    assert [(s, v) for s, _, v in scalars["loss"]] == want
    hs = _json(base + "/api/histograms?run=a")["tags"]["w"]
    assert [h["step"] for h in hs] == [0, 10, 20, 30] and sum(hs[0]["bucket"]) == 10
    counts, _ = np.histogram(np.arange(10.0), bins=30)
    np.testing.assert_array_equal(hs[0]["bucket"], counts)
    images = _json(base + "/api/images?run=a")["tags"]["img"]
    assert [(i["step"], i["index"], i["width"], i["height"]) for i in images] == \
        [(10 * k, k, 5, 4) for k in range(4)]
    status, ctype, png = _get(base + "/api/image?run=a&tag=img&index=3")
    assert status == 200 and ctype == "image/png"
    from PIL import Image
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png))), img[0].transpose(1, 2, 0))
    assert _json(base + "/api/lineage")["rows"] == [{"run": "a", "network": "Net",
                                                     "learning_rate": 0.1}]


def test_pages_and_static_files_are_served(site):
    base, _ = site
    for page in ("scalars", "histograms", "images", "graph", "dataset", "profiler", "lineage"):
        status, ctype, body = _get(f"{base}/{page}")
        assert status == 200 and ctype.startswith("text/html") and b"/static/app.js" in body
    status, ctype, body = _get(base + "/")  # redirected to the scalars page
    assert status == 200 and b"/static/app.js" in body
    status, ctype, js = _get(base + "/static/plotly.min.js")
    with open(plotly_js_path(), "rb") as f:
        assert js == f.read() and ctype.startswith("text/javascript")


def test_corrupt_event_files_are_errors_in_the_answer(site):
    base, _ = site
    torn = _json(base + "/api/scalars?run=torn")
    assert [p[2] for p in torn["tags"]["loss"]] == [0.0, 1.0]  # the complete records
    assert len(torn["errors"]) == 1 and "torn record after 3 complete records" in torn["errors"][0]
    garbage = _json(base + "/api/scalars?run=garbage")
    assert garbage["tags"] == {} and "corrupt or torn" in garbage["errors"][0]


@pytest.mark.parametrize("path", [
    "/api/scalars?run=..", "/api/scalars?run=../..", "/api/scalars?run=%2e%2e",
    "/api/scalars?run=a/../..", "/api/scalars?run=/etc", "/api/scalars?run=escape",
    "/api/scalars?run=escape/logs/a", "/api/scalars?run=nope", "/api/image?run=a&tag=x",
    "/api/image?run=..&tag=img&index=0", "/api/dataset_graph?run=../secret.txt",
    "/api/profiler?run=..", "/etc/passwd", "/static/../dashboard.py", "/static/%2e%2e/dashboard.py",
    "/static/%2e%2e%2f%2e%2e%2fsecret.txt", "/static//etc/passwd", "/static/..%2f..%2flogdir.py",
    "/../secret.txt", "/%2e%2e/secret.txt", "/scalars/../../secret.txt"])
def test_nothing_outside_is_served(site, path):
    base, _ = site
    with pytest.raises(urllib.error.HTTPError) as e:
        _get(base + path)
    assert e.value.code == 404


def test_a_symlinked_event_file_pointing_out_is_not_read(site):
    base, _ = site
    body = _json(base + "/api/scalars?run=a")
    assert any("events.out.tfevents.0.link: not read" in m for m in body["errors"])
    assert [p[2] for p in body["tags"]["loss"]] == [np.float32(1 / (k + 1)) for k in range(4)]


def test_other_host_names_are_refused_on_loopback(site):
    """A page elsewhere that rebinds its DNS name to 127.0.0.1 sends its own name as Host."""
    base, _ = site
    for host, code in (("evil.example", 403), ("evil.example:80", 403), ("localhost", 200),
                       (base.split("//")[1], 200)):
        req = urllib.request.Request(base + "/api/runs", headers={"Host": host})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                got = r.status
        except urllib.error.HTTPError as e:
            got = e.code
        assert got == code, host


def test_binds_loopback_by_default(tmp_path):
    srv = serve(str(tmp_path), port=0)
    try:
        assert srv.server_address[0] == "127.0.0.1"
    finally:
        srv.server_close()


def test_command_line(tmp_path):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    bad = subprocess.run([sys.executable, "-m", "mycel.insight", "--logdir",
                          str(tmp_path / "missing")], capture_output=True, text=True, env=env,
                         timeout=60)
    assert bad.returncode == 2 and "does not exist" in bad.stderr
    p = subprocess.Popen([sys.executable, "-m", "mycel.insight", "--logdir", str(tmp_path),
                          "--port", "0"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = p.stdout.readline()
        assert "serving" in line and "http://127.0.0.1:" in line
        url = line.rsplit(" ", 1)[-1].strip()
        assert json.loads(_get(url + "api/runs")[2])["runs"] == []
    finally:
        p.terminate()
        p.wait(timeout=30)
