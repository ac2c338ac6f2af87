"""MindSpore-compatible training surface: metric names, nll_loss with class weights, and
MnistDataset without `usage` on a folder holding only one of the sets; against numpy."""
import gzip
import shutil

import numpy as np
import pytest

import mycel
from mycel import Tensor, ops
from mycel.dataset import MnistDataset
from mycel.train import get_metric_fn, MAE, MSE

FASHION = "/usr/share/datasets/fashion-mnist"


def test_mae_mse_metrics_vs_numpy():
    rng = np.random.default_rng(0)
    pred, y = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    for name, cls, ref in (("mae", MAE, np.abs(pred - y).sum() / 6), ("mse", MSE, ((pred - y) ** 2).sum() / 6)):
        m = get_metric_fn(name)
        assert isinstance(m, cls)
        m.clear()
        m.update(Tensor(pred[:4].astype(np.float32)), Tensor(y[:4].astype(np.float32)))
        m.update(pred[4:], y[4:])
        assert m.eval() == pytest.approx(ref, rel=1e-5)
    with pytest.raises(KeyError, match="unknown metric name 'maee'"):
        get_metric_fn("maee")


def test_model_accepts_mindspore_metric_names():
    net = mycel.nn.Dense(3, 3)
    model = mycel.Model(net, mycel.nn.MSELoss(), metrics={"mae", "mse", "accuracy"})
    assert model is not None


def _nll_ref(logp, target, weight, reduction):
    w = weight[target]
    per = -w * logp[np.arange(len(target)), target]
    if reduction == "mean":
        return per.sum() / w.sum()
    return per.sum() if reduction == "sum" else per


@pytest.mark.parametrize("weight", [[-1.0, 0.5, 0.25], [1.0, 2.0, 3.0], [-2.0, -1.0, 0.5]])
def test_nll_loss_mean_divides_by_total_weight_even_negative(weight):
    # The selected weights sum to a negative number for the first and last weights: the mean is
    # still the weighted sum over that total (a negative divisor once meant "divide by n").
    rng = np.random.default_rng(1)
    logp = np.log(rng.dirichlet(np.ones(3), size=5))
    target = np.array([0, 0, 1, 0, 2])
    w = np.array(weight)
    for reduction in ("mean", "sum", "none"):
        loss, total = ops.nll_loss(Tensor(logp), Tensor(target.astype(np.int32)), Tensor(w), reduction=reduction)
        np.testing.assert_allclose(loss.asnumpy(), _nll_ref(logp, target, w, reduction), rtol=1e-10)
        assert float(total) == pytest.approx(w[target].sum())
    # gradient of the mean against central finite differences (float64)
    x = Tensor(logp)
    g = mycel.grad(lambda x: ops.nll_loss(x, Tensor(target.astype(np.int32)), Tensor(w))[0])(x).asnumpy()
    eps, fd = 1e-6, np.zeros_like(logp)
    for idx in np.ndindex(*logp.shape):
        p, m = logp.copy(), logp.copy()
        p[idx] += eps
        m[idx] -= eps
        fd[idx] = (_nll_ref(p, target, w, "mean") - _nll_ref(m, target, w, "mean")) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def _copy(names, tmp_path):
    for n in names:
        shutil.copy(f"{FASHION}/{n}", tmp_path / n)


def _idx_count(path):
    with gzip.open(path, "rb") as f:
        return int.from_bytes(f.read(8)[4:8], "big")


@pytest.mark.skipif(not __import__("os").path.isdir(FASHION), reason="dataset-fashion-mnist not installed")
def test_mnist_without_usage_reads_the_sets_present(tmp_path):
    _copy(["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"], tmp_path)
    ds = MnistDataset(str(tmp_path))
    assert ds.get_dataset_size() == _idx_count(f"{FASHION}/t10k-labels-idx1-ubyte.gz")
    with pytest.raises(ValueError, match="cannot find 'train-images"):
        MnistDataset(str(tmp_path), usage="train").get_dataset_size()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="holds neither the train"):
        MnistDataset(str(empty)).get_dataset_size()
