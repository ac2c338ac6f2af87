"""Loss Cells against numpy references, every reduction, in both modes."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn

RNG = np.random.default_rng(5)


class Wrap(nn.Cell):
    def __init__(self, loss):
        super().__init__()
        self.loss = loss

    def construct(self, x, y):
        return self.loss(x, y)


def both(loss, x, y):
    net = Wrap(loss)
    eager = net(Tensor(x), Tensor(y)).asnumpy()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    graph = net(Tensor(x), Tensor(y)).asnumpy()
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    np.testing.assert_allclose(graph, eager, rtol=1e-5, atol=1e-6)
    return eager


def reduce(v, reduction):
    return {"none": v, "mean": v.mean(), "sum": v.sum()}[reduction]


def log_softmax(x, axis=1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


X = RNG.standard_normal((6, 4)).astype(np.float32) * 2
Y = RNG.standard_normal((6, 4)).astype(np.float32)
IDX = np.array([0, 3, 1, 1, 2, 3], np.int32)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_elementwise_losses(reduction):
    d = X.astype(np.float64) - Y
    np.testing.assert_allclose(both(nn.MSELoss(reduction), X, Y), reduce(d ** 2, reduction), rtol=1e-5)
    np.testing.assert_allclose(both(nn.L1Loss(reduction), X, Y), reduce(np.abs(d), reduction), rtol=1e-5)
    sl1 = np.where(np.abs(d) < 0.5, 0.5 * d ** 2 / 0.5, np.abs(d) - 0.25)
    np.testing.assert_allclose(both(nn.SmoothL1Loss(0.5, reduction), X, Y), reduce(sl1, reduction), rtol=1e-5)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_bce_with_logits(reduction):
    labels = (RNG.random((6, 4)) > 0.5).astype(np.float32)
    weight = RNG.random((4,)).astype(np.float32)
    pos_weight = RNG.random((4,)).astype(np.float32) + 0.5
    x = X.astype(np.float64)
    logsig, log1msig = -np.log1p(np.exp(-x)), -np.log1p(np.exp(x))
    ref = -(pos_weight * labels * logsig + (1 - labels) * log1msig) * weight
    loss = nn.BCEWithLogitsLoss(reduction, weight=Tensor(weight), pos_weight=Tensor(pos_weight))
    np.testing.assert_allclose(both(loss, X, labels), reduce(ref, reduction), rtol=1e-5, atol=2e-5)
    with pytest.raises(TypeError, match="weight"):
        nn.BCEWithLogitsLoss(weight=np.ones(4))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_softmax_cross_entropy_with_logits(reduction):
    lp = log_softmax(X.astype(np.float64))
    onehot = np.eye(4, dtype=np.float32)[IDX]
    ref = -lp[np.arange(6), IDX]
    np.testing.assert_allclose(both(nn.SoftmaxCrossEntropyWithLogits(reduction=reduction), X, onehot),
                               reduce(ref, reduction), rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(both(nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction=reduction), X, IDX),
                               reduce(ref, reduction), rtol=1e-5, atol=2e-5)
    assert nn.SoftmaxCrossEntropyWithLogits().reduction == "none"  # MindSpore's default


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_nll_loss_weight_and_ignore_index(reduction):
    lp = log_softmax(X.astype(np.float64))
    w = np.array([1.0, 2.0, 0.5, 1.5], np.float32)
    target = IDX.copy()
    target[2] = -1
    terms = np.where(target >= 0, -lp[np.arange(6), np.maximum(target, 0)] * w[np.maximum(target, 0)], 0)
    counted = np.where(target >= 0, w[np.maximum(target, 0)], 0)
    ref = {"none": terms, "sum": terms.sum(), "mean": terms.sum() / counted.sum()}[reduction]
    loss = nn.NLLLoss(weight=Tensor(w), ignore_index=-1, reduction=reduction)
    np.testing.assert_allclose(both(loss, lp.astype(np.float32), target), ref, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_indices(reduction, smoothing):
    lp = log_softmax(X.astype(np.float64))
    w = np.array([1.0, 2.0, 0.5, 1.5])
    nll = -lp[np.arange(6), IDX] * w[IDX]
    smooth = -(lp * w).sum(1) / 4
    per = (1 - smoothing) * nll + smoothing * smooth
    ref = {"none": per, "sum": per.sum(), "mean": per.sum() / w[IDX].sum()}[reduction]
    loss = nn.CrossEntropyLoss(weight=Tensor(w.astype(np.float32)), reduction=reduction, label_smoothing=smoothing)
    np.testing.assert_allclose(both(loss, X, IDX), ref, rtol=1e-5, atol=2e-5)


def test_cross_entropy_probabilities_and_spatial():
    probs = RNG.random((6, 4)).astype(np.float32)
    probs /= probs.sum(1, keepdims=True)
    lp = log_softmax(X.astype(np.float64))
    np.testing.assert_allclose(both(nn.CrossEntropyLoss(), X, probs), (-(lp * probs).sum(1)).mean(), rtol=1e-5)
    x4 = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    t4 = RNG.integers(0, 3, (2, 4, 5)).astype(np.int32)
    lp4 = log_softmax(x4.astype(np.float64))
    ref = -np.take_along_axis(lp4, t4[:, None].astype(np.int64), 1).mean()
    np.testing.assert_allclose(both(nn.CrossEntropyLoss(), x4, t4), ref, rtol=1e-5)


def test_bad_reduction_and_shapes():
    with pytest.raises(ValueError, match="reduction must be one of"):
        nn.MSELoss("avg")
    with pytest.raises(ValueError, match="beta"):
        nn.SmoothL1Loss(beta=0)
    with pytest.raises(ValueError, match="SoftmaxCrossEntropyWithLogits: input 'logits' must be 2-D"):
        nn.SoftmaxCrossEntropyWithLogits()(Tensor(X[0]), Tensor(Y[0]))
