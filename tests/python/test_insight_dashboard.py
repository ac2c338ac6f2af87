"""mycel-insight: the dashboard serves what the log directory holds (its JSON equals what was
written; the page draws every tag; nothing outside the log directory is served)."""
import json
import threading
import urllib.error
import urllib.request

import numpy as np
import pytest

from mycel import Tensor
from mycel.insight.dashboard import serve
from mycel.train.summary import SummaryRecord


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("logdir")
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (1, 3, 4, 5)).astype(np.uint8)
    for run, scale in (("a", 1.0), ("b/inner", 2.0)):
        with SummaryRecord(str(tmp_path / run)) as rec:
            for step in range(4):
                rec.add_value("scalar", "loss", Tensor(np.float32(scale / (step + 1))))
                rec.add_value("histogram", "w", Tensor(np.arange(10.0) * scale))
                rec.add_value("image", "img", Tensor(img))
                rec.record(step * 10)
    srv = serve(str(tmp_path), port=0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", img
    srv.shutdown()
    srv.server_close()


def _get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.headers["Content-Type"], r.read()


def test_api_returns_what_was_written(server):
    base, img = server
    assert json.loads(_get(base + "/api/runs")[2]) == ["a", "b/inner"]
    scalars = json.loads(_get(base + "/api/scalars?run=b/inner")[2])
    want = [(10 * k, np.float32(2.0 / (k + 1))) for k in range(4)]
    assert [(s, v) for s, _, v in scalars["loss"]] == want
    hs = json.loads(_get(base + "/api/histograms?run=a")[2])["w"]
    assert [h["step"] for h in hs] == [0, 10, 20, 30] and sum(hs[0]["bucket"]) == 10
    status, ctype, png = _get(base + "/api/image?run=a&tag=img&index=3")
    assert status == 200 and ctype == "image/png"
    import io
    from PIL import Image
    got = np.asarray(Image.open(io.BytesIO(png)))
    np.testing.assert_array_equal(got, img[0].transpose(1, 2, 0))


def test_page_draws_every_tag(server):
    base, _ = server
    status, ctype, body = _get(base + "/")
    page = body.decode()
    assert status == 200 and ctype.startswith("text/html")
    assert page.count("class='scalar'") == 2 and page.count("class='histogram'") == 2
    assert page.count("/api/image?run=") == 2 and "run b/inner" in page


@pytest.mark.parametrize("path", ["/api/scalars?run=../..", "/api/scalars?run=nope",
                                  "/api/image?run=a&tag=x", "/etc/passwd"])
def test_unknown_or_outside_paths_are_404(server, path):
    base, _ = server
    with pytest.raises(urllib.error.HTTPError) as e:
        _get(base + path)
    assert e.value.code == 404
