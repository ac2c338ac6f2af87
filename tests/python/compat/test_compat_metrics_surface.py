"""MindSpore's HausdorffDistance, MeanSurfaceDistance, RootMeanSquareDistance and
OcclusionSensitivity: MindSpore's documented examples, and random 2-d/3-d masks against scipy's
binary erosion and pairwise distances (an independent reference), the occlusion map against a
direct loop over windows."""
import numpy as np
import pytest
from scipy import ndimage
from scipy.spatial.distance import cdist

import mycel
from mycel import Tensor, nn
from mycel.train import (HausdorffDistance, MeanSurfaceDistance, OcclusionSensitivity, RootMeanSquareDistance,
                         get_metric_fn)

X = np.array([[3, 0, 1], [1, 3, 0], [1, 0, 2]])
Y = np.array([[0, 2, 1], [1, 2, 1], [0, 0, 1]])
SCIPY_METRIC = {"euclidean": "euclidean", "chessboard": "chebyshev", "taxicab": "cityblock"}


def _ref_distances(p, y, label, metric):
    def edges(m):
        return m & ~ndimage.binary_erosion(m)
    a, b = np.argwhere(edges(p == label)), np.argwhere(edges(y == label))
    d = cdist(a, b, SCIPY_METRIC[metric])
    return d.min(1), d.min(0)


def test_mindspore_documented_examples():
    m = HausdorffDistance()
    m.clear()
    m.update(Tensor(X), Tensor(Y), 0)
    assert m.eval() == pytest.approx(1.4142135623730951)
    m = MeanSurfaceDistance(symmetric=False, distance_metric="euclidean")
    m.update(Tensor(X), Tensor(Y), 0)
    assert m.eval() == pytest.approx(0.8047378541243649)
    m = RootMeanSquareDistance(symmetric=False, distance_metric="euclidean")
    m.update(Tensor(X), Tensor(Y), 0)
    assert m.eval() == pytest.approx(1.0)

    class DenseNet(nn.Cell):
        def __init__(self):
            super().__init__()
            w = np.array([[0.1, 0.8, 0.1, 0.1], [1, 1, 1, 1]]).astype(np.float32)
            b = np.array([0.3, 0.6]).astype(np.float32)
            self.dense = nn.Dense(4, 2, weight_init=Tensor(w), bias_init=Tensor(b))

        def construct(self, x):
            return self.dense(x)

    o = OcclusionSensitivity()
    o.update(DenseNet(), np.array([[0.1, 0.2, 0.3, 0.4]], np.float32), np.array(1, np.int32))
    np.testing.assert_allclose(o.eval(), [0.3, 0.6, 1.0, 0.9], rtol=1e-5)


@pytest.mark.parametrize("metric", ["euclidean", "chessboard", "taxicab"])
@pytest.mark.parametrize("shape", [(12, 15), (6, 7, 5)], ids=["2d", "3d"])
def test_surface_metrics_vs_scipy(metric, shape):
    rng = np.random.default_rng(len(shape) * 10 + len(metric))
    p = ndimage.binary_dilation(rng.random(shape) < 0.08, iterations=2).astype(np.int32) * 2
    y = ndimage.binary_dilation(rng.random(shape) < 0.08, iterations=2).astype(np.int32) * 2
    ab, ba = _ref_distances(p, y, 2, metric)
    for directed in (False, True):
        for pct in (None, 90):
            h = HausdorffDistance(distance_metric=metric, percentile=pct, directed=directed)
            h.update(Tensor(p), Tensor(y), 2)
            red = (lambda d: d.max()) if pct is None else (lambda d: np.percentile(d, pct))
            want = red(ab) if directed else max(red(ab), red(ba))
            assert h.eval() == pytest.approx(want)
    for symmetric in (False, True):
        both = np.concatenate([ab, ba]) if symmetric else ab
        m = MeanSurfaceDistance(symmetric=symmetric, distance_metric=metric)
        m.update(p, y, 2)
        assert m.eval() == pytest.approx(both.mean())
        r = RootMeanSquareDistance(symmetric=symmetric, distance_metric=metric)
        r.update(p, y, 2)
        assert r.eval() == pytest.approx(np.sqrt((both ** 2).mean()))


def test_occlusion_map_vs_direct_loop_and_bounding_box():
    rng = np.random.default_rng(4)
    net = nn.Dense(20, 3)
    image = rng.standard_normal((1, 4, 5)).astype(np.float32)

    class Flat(nn.Cell):
        def __init__(self):
            super().__init__()
            self.net = net

        def construct(self, x):
            return self.net(x.reshape((x.shape[0], -1)))

    model = Flat()
    base = model(Tensor(image)).asnumpy()[0, 2]
    want = np.zeros((4, 5))
    for i in range(4):
        for j in range(5):
            occ = image.copy()
            occ[0, max(0, i - 1):min(4, i + 1), max(0, j - 1):min(5, j + 1)] = -1.0
            want[i, j] = base - model(Tensor(occ)).asnumpy()[0, 2]
    o = OcclusionSensitivity(pad_val=-1.0, margin=1, n_batch=7)
    o.update(model, image, Tensor(np.array([2])))
    np.testing.assert_allclose(o.eval(), want, rtol=1e-4, atol=1e-5)
    boxed = OcclusionSensitivity(pad_val=-1.0, margin=1, b_box=[1, 2, 0, 3])
    boxed.update(model, image, 2)
    np.testing.assert_allclose(boxed.eval(), want[1:3, 0:4], rtol=1e-4, atol=1e-5)


def test_metric_names_and_errors():
    assert isinstance(get_metric_fn("hausdorff_distance"), HausdorffDistance)
    assert isinstance(get_metric_fn("occlusion_sensitivity"), OcclusionSensitivity)
    assert mycel.nn.MeanSurfaceDistance is MeanSurfaceDistance  # MindSpore 1.x path
    with pytest.raises(ValueError, match="distance_metric"):
        HausdorffDistance(distance_metric="cosine")
    with pytest.raises(RuntimeError, match="call update first"):
        MeanSurfaceDistance().eval()
    with pytest.raises(ValueError, match="same shape"):
        RootMeanSquareDistance().update(X, Y[:2], 0)
    with pytest.raises(RuntimeError, match="one image"):
        OcclusionSensitivity().update(nn.Dense(2, 2), np.ones((2, 2), np.float32), 0)
    h = HausdorffDistance()
    h.update(X, Y, 7)  # no voxel has the label: no surface to measure
    assert h.eval() == np.inf
