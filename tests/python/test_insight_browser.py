"""Every dashboard page driven end to end in a real headless Chromium (Debian's chromium and
chromium-driver, through Selenium) against a live server on loopback: the charts plotly drew
(gd.data) hold the points the event files hold, the smoothing slider gives TensorBoard's debiased
EMA computed here with numpy, graph scopes expand on click, the image slider changes the image,
the lineage table filters. Screenshots of each page go to the test's tmp directory."""
import base64
import csv
import io
import json
import os
import time

import numpy as np
import pytest

from insight_browser import browser_missing, chromium, live_server, open_page, plotly_data
from insight_demo_logdir import EPOCHS, RUNS, STEPS_PER_EPOCH, make_demo_logdir

pytestmark = pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing()))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    logdir = make_demo_logdir(str(tmp_path_factory.mktemp("demo")))
    shots = tmp_path_factory.mktemp("screenshots")
    with live_server(logdir) as base, chromium() as driver:
        yield base, driver, logdir, shots


def _wait(cond, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for the page")


def _shot(driver, shots, name):
    path = os.path.join(shots, f"{name}.png")
    driver.save_screenshot(path)
    assert os.path.getsize(path) > 1000


def _scalars(logdir, run, tag):
    from mycel import _mycel
    out = []
    for f in sorted(os.listdir(os.path.join(logdir, run))):
        if "tfevents" in f:
            for step, wall, vals in _mycel.insight.read_event_file(os.path.join(logdir, run, f))[0]:
                out += [(step, wall, v["value"]) for v in vals if v["tag"] == tag]
    return out


def _ema(ys, w):  # TensorBoard's debiased exponential moving average, the reference
    last, out = 0.0, []
    for n, y in enumerate(ys, 1):
        last = last * w + (1 - w) * y
        out.append(last / (1 - w ** n))
    return np.array(out)


def test_scalars_page(site):
    base, driver, logdir, shots = site
    open_page(driver, f"{base}/scalars")
    _shot(driver, shots, "scalars")
    sel = ".scalar-chart[data-tag='loss/auto']"
    traces = plotly_data(driver, sel)
    assert [t["name"] for t in traces] == list(RUNS)
    for t in traces:  # one point per recorded step, the recorded values
        want = _scalars(logdir, t["name"], "loss/auto")
        assert len(t["x"]) == len(want) == EPOCHS * STEPS_PER_EPOCH
        assert t["x"] == [s for s, _, _ in want]
        np.testing.assert_allclose(t["y"], [v for _, _, v in want], rtol=1e-6)
    driver.execute_script("const s = document.getElementById('smoothing'); s.value = '0.6';"
                          "s.dispatchEvent(new Event('input'));")
    smoothed = plotly_data(driver, sel)[0]
    want = [v for _, _, v in _scalars(logdir, smoothed["name"], "loss/auto")]
    np.testing.assert_allclose(smoothed["y"], _ema(want, 0.6), rtol=1e-9)
    driver.find_element("id", "logscale").click()
    assert driver.execute_script(
        f"return document.querySelector(\"{sel}\").layout.yaxis.type") == "log"
    driver.execute_script("const x = document.getElementById('xaxis'); x.value = 'relative';"
                          "x.dispatchEvent(new Event('change'));")
    t = plotly_data(driver, sel)[0]
    walls = [w for _, w, _ in _scalars(logdir, t["name"], "loss/auto")]
    np.testing.assert_allclose(t["x"], np.array(walls) - walls[0], atol=1e-6)
    driver.find_element("css selector", "input.run-toggle[value='lr_0.2']").click()
    assert [t["name"] for t in plotly_data(driver, sel)] == ["lr_0.05"]


def test_histograms_page(site):
    base, driver, logdir, shots = site
    open_page(driver, f"{base}/histograms")
    _shot(driver, shots, "histograms")
    hs = json.loads(driver.execute_script(
        "return fetch('/api/histograms?run=lr_0.05').then(r => r.text())"))["tags"]
    assert sorted(hs) == ["conv1.weight/auto", "conv2.weight/auto", "fc.bias/auto", "fc.weight/auto"]
    tag = "fc.weight/auto"
    (trace,) = plotly_data(driver, f".histogram-chart[data-tag='{tag}']")
    assert trace["type"] == "heatmap" and trace["y"] == [h["step"] for h in hs[tag]]
    assert len(trace["z"]) == EPOCHS * STEPS_PER_EPOCH
    # re-binned onto one grid, each step keeps its count (every weight in some bucket)
    np.testing.assert_allclose([sum(r) for r in trace["z"]], [h["num"] for h in hs[tag]])
    assert all(h["num"] == 3 * 8 * 6 * 6 for h in hs[tag])
    driver.execute_script("const m = document.getElementById('hist-mode'); m.value = 'ridge';"
                          "m.dispatchEvent(new Event('change'));")
    ridge = _wait(lambda: (lambda d: d if len(d) > 1 else None)(
        plotly_data(driver, f".histogram-chart[data-tag='{tag}']")))
    assert len(ridge) == len(hs[tag])  # one curve per step, its counts in customdata
    np.testing.assert_allclose([sum(t["customdata"]) for t in ridge], [h["num"] for h in hs[tag]])


def test_images_page_slider_changes_the_image(site):
    base, driver, logdir, shots = site
    open_page(driver, f"{base}/images")
    card = driver.find_element("css selector", ".image-card")
    slider = card.find_element("css selector", ".step-slider")
    img = card.find_element("css selector", "img")
    assert slider.get_attribute("max") == str(EPOCHS * STEPS_PER_EPOCH - 1)
    last_src = img.get_attribute("src")
    _wait(lambda: driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img))
    driver.execute_script("arguments[0].value = '0'; arguments[0].dispatchEvent(new Event('input'))",
                          slider)
    first_src = img.get_attribute("src")
    assert first_src != last_src and first_src.endswith("index=0")
    assert card.find_element("css selector", ".step-label").text == "step 1"
    _wait(lambda: driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img))
    _shot(driver, shots, "images")

    def pixels(src):  # what the browser received, decoded here
        from PIL import Image
        b64 = driver.execute_script(
            "return fetch(arguments[0]).then(r => r.arrayBuffer()).then(b => "
            "btoa(String.fromCharCode(...new Uint8Array(b))))", src)
        return np.asarray(Image.open(io.BytesIO(base64.b64decode(b64))))

    a, b = pixels(first_src), pixels(last_src)
    assert a.shape == b.shape and not np.array_equal(a, b)  # step 1's batch is not step 8's


def test_graph_page_groups_expand_and_ops_show_details(site):
    base, driver, logdir, shots = site
    open_page(driver, f"{base}/graph")
    svg = driver.find_element("id", "graph-svg")
    units_before = int(svg.get_attribute("data-units"))
    group = driver.find_element("css selector", ".group[data-scope='Default/network']")
    assert "expanded" not in group.get_attribute("class")
    assert not driver.find_elements("css selector", ".op[data-name*='/conv1/conv2d']")[0].is_displayed()
    group.find_element("css selector", ".group-head").click()
    assert "expanded" in group.get_attribute("class")
    backbone = driver.find_element("css selector", ".group[data-scope='Default/network/_backbone']")
    backbone.find_element("css selector", ".group-head").click()
    conv1 = driver.find_element("css selector", ".group[data-scope='Default/network/_backbone/conv1']")
    conv1.find_element("css selector", ".group-head").click()
    assert int(svg.get_attribute("data-units")) > units_before  # the drawing opened the scopes too
    op = driver.find_element("css selector", ".op[data-name*='/conv1/conv2d']")
    assert op.is_displayed()
    op.click()
    details = driver.find_element("id", "op-details")
    assert details.find_element("css selector", "h3").text == "conv2d"
    assert "ops.conv2d(" in details.text and "Float32[8, 4, 12, 12]" in details.text
    assert "conv.py:" in details.find_element("css selector", ".source").text
    assert "Default/network/_backbone/conv1/weight" in details.text  # an input, with its shape
    assert "Float32[4, 1, 3, 3]" in details.text
    _shot(driver, shots, "graph")


def test_dataset_page(site):
    base, driver, logdir, shots = site
    open_page(driver, f"{base}/dataset")
    _shot(driver, shots, "dataset")
    ops = [e.get_attribute("data-op") for e in driver.find_elements("css selector", ".ds-node")]
    assert ops == ["NumpySlicesDataset", "MapDataset", "BatchDataset"]  # the source first
    nodes = driver.find_elements("css selector", ".ds-node")
    assert "Rescale" in nodes[1].text and "batch_size" in nodes[2].text


def test_profiler_page(site):
    base, driver, logdir, shots = site
    open_page(driver, f"{base}/profiler")
    _shot(driver, shots, "profiler")
    prof = os.path.join(logdir, "profile", "profiler")
    with open(os.path.join(prof, "timeline.json")) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    (timeline,) = plotly_data(driver, "timeline")
    assert len(timeline["x"]) == len(events) > 0
    np.testing.assert_allclose(timeline["x"], [e["dur"] for e in events])
    with open(os.path.join(prof, "op_table.csv")) as f:
        rows = list(csv.DictReader(f))
    table = driver.find_elements("css selector", "#op-table tr")
    assert len(table) == len(rows) + 1
    assert table[1].find_elements("css selector", "td")[0].text == rows[0]["op"]
    (bars,) = plotly_data(driver, "op-bars")
    assert len(bars["x"]) == min(20, len(rows))
    summary = driver.find_element("id", "profile-summary").text
    assert summary.startswith(f"{len(events)} launches")
    # the step trace: one stacked bar per step and phase, the CSV's values
    with open(os.path.join(prof, "step_trace.csv")) as f:
        steps = list(csv.DictReader(f))
    traces = plotly_data(driver, "step-trace")
    assert [t["name"] for t in traces] == ["data wait", "forward+backward", "optimizer", "communication", "other"]
    assert len(steps) > 0 and all(len(t["x"]) == len(steps) for t in traces)
    np.testing.assert_allclose(traces[1]["y"], [float(r["fp_bp_us"]) for r in steps])
    # the data pipeline's stages as a table
    with open(os.path.join(prof, "minddata_pipeline.csv")) as f:
        stages = list(csv.DictReader(f))
    assert len(stages) > 0
    assert len(driver.find_elements("css selector", "#pipeline-table tr")) == len(stages) + 1


def test_lineage_page_filters(site):
    base, driver, logdir, shots = site
    open_page(driver, f"{base}/lineage")
    rows = driver.find_elements("css selector", "tr.lineage-row")
    assert [r.find_elements("css selector", "td")[0].text for r in rows] == list(RUNS)
    (pc,) = plotly_data(driver, "parcoords")
    dims = {d["label"]: d["values"] for d in pc["dimensions"]}
    assert dims["learning_rate"] == pytest.approx(list(RUNS.values()))
    assert "metrics.acc" in dims and "train_loss" in dims
    _shot(driver, shots, "lineage")
    box = driver.find_element("id", "lineage-filter")
    box.send_keys("lr_0.2")
    rows = _wait(lambda: (lambda r: r if len(r) == 1 else None)(
        driver.find_elements("css selector", "tr.lineage-row")))
    assert [r.find_elements("css selector", "td")[0].text for r in rows] == ["lr_0.2"]
    (pc,) = plotly_data(driver, "parcoords")
    assert len(pc["dimensions"][0]["values"]) == 1


def test_a_corrupt_file_is_an_error_on_the_page(site, tmp_path):
    base, driver, logdir, shots = site
    bad = os.path.join(logdir, "zz_corrupt")
    os.makedirs(bad)
    with open(os.path.join(bad, "events.out.tfevents.0.bad"), "wb") as f:
        f.write(b"\xff" * 64)
    try:
        open_page(driver, f"{base}/scalars")
        box = driver.find_element("id", "errors")
        assert box.is_displayed() and "events.out.tfevents.0.bad" in box.text
        assert len(plotly_data(driver, ".scalar-chart[data-tag='loss/auto']")) == len(RUNS)
        _shot(driver, shots, "corrupt")
    finally:
        os.remove(os.path.join(bad, "events.out.tfevents.0.bad"))
        os.rmdir(bad)
