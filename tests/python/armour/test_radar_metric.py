"""RadarMetric writes a PNG (read back with Pillow) whose filled curve has the area of a regular
polygon: for equal values r on every axis the area grows as r^2."""
import os

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("matplotlib")
from mycel.armour import RadarMetric  # noqa: E402

FILL = np.array([232, 241, 247])   # matplotlib's first colour (31, 119, 180) at alpha 0.1 over white


def filled_pixels(path):
    im = np.asarray(Image.open(path).convert("RGB")).astype(int)
    return int((np.abs(im - FILL).max(axis=2) <= 6).sum()), im.shape


def test_radar_png_and_polygon_area(tmp_path):
    names = ["accuracy", "robustness", "L2", "L-inf", "SSIM", "time"]
    areas = {}
    for r in (0.8, 0.4):
        path = str(tmp_path / f"radar{r}.png")
        radar = RadarMetric(names, [[r] * 6], ["model"], "title", scale="norm")
        assert radar.save(path, figsize=(5, 5), dpi=100) == path
        areas[r], shape = filled_pixels(path)
        assert shape == (500, 500, 3)
    assert 3.6 < areas[0.8] / areas[0.4] < 4.4          # area of a regular hexagon ~ r^2
    assert [p for p in os.listdir(tmp_path) if p.startswith(".radar-")] == []   # no temporary left


def test_radar_several_curves_and_show(tmp_path):
    data = np.array([[0.9, 0.5, 0.7, 0.3], [0.4, 0.8, 0.2, 0.6]])
    radar = RadarMetric(["a", "b", "c", "d"], data, ["before", "after"], "defence", scale="dense")
    path = radar.show(str(tmp_path / "r.png"))
    im = np.asarray(Image.open(path).convert("RGB")).astype(int)
    for colour in ((31, 119, 180), (255, 127, 14)):    # both curves' line colours are drawn
        assert (np.abs(im - colour).max(axis=2) <= 10).sum() > 100


def test_radar_bad_arguments():
    with pytest.raises(ValueError, match=r"RadarMetric: metrics_data must have shape \(len\(labels\), "
                                         r"len\(metrics_name\)\)"):
        RadarMetric(["a", "b", "c"], [[0.1, 0.2]], ["m"], "t")
    with pytest.raises(ValueError, match="scale must be one of"):
        RadarMetric(["a", "b", "c"], [[0.1, 0.2, 0.3]], ["m"], "t", scale="log")
    with pytest.raises(ValueError, match="at least 3"):
        RadarMetric(["a"], [[0.1]], ["m"], "t")
