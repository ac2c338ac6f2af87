"""MindSpore's optimizer primitives (ops.ApplyMomentum, ops.Adam, ...) update their Parameters in
place as their documented formulas say: numpy references over two steps, eager and graph mode."""
import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops

RNG = np.random.default_rng(0)
W = RNG.normal(size=(3, 2)).astype(np.float32)
G = RNG.normal(size=(3, 2)).astype(np.float32)


def P(a, name):
    return ms.Parameter(ms.Tensor(np.array(a, np.float32)), name=name)


def T(a):
    return ms.Tensor(np.array(a, np.float32))


def test_momentum_sgd_and_gradient_descent():
    var, acc = P(W, "v"), P(np.zeros_like(W), "a")
    for _ in range(2):
        ops.ApplyMomentum(use_nesterov=True)(var, acc, 0.1, T(G), 0.9)
    a1 = G
    a2 = 0.9 * a1 + G
    want = W - 0.1 * (G + 0.9 * a1) - 0.1 * (G + 0.9 * a2)
    np.testing.assert_allclose(var.asnumpy(), want, rtol=1e-6)
    p, accum, stat = P(W, "p"), P(np.zeros_like(W), "acc"), P([1.0], "stat")
    for _ in range(2):
        ops.SGD(dampening=0.1, weight_decay=0.01)(p, T(G), T(0.1), accum, T(0.9), stat)
    g1 = G + 0.01 * W
    w1 = W - 0.1 * g1
    g2 = G + 0.01 * w1
    acc2 = 0.9 * g1 + 0.9 * g2
    np.testing.assert_allclose(p.asnumpy(), w1 - 0.1 * acc2, rtol=1e-5)
    d = P(W, "d")
    ops.ApplyGradientDescent()(d, T(0.5), T(G))
    np.testing.assert_allclose(d.asnumpy(), W - 0.5 * G, rtol=1e-6)


def test_adaptive_primitives():
    var, accum = P(W, "v"), P(np.full_like(W, 0.1), "a")
    ops.ApplyAdagradV2(1e-6)(var, accum, T(0.01), T(G))
    h = 0.1 + G * G
    np.testing.assert_allclose(var.asnumpy(), W - 0.01 * G / (np.sqrt(h) + 1e-6), rtol=1e-6)
    var, ms_, mom = P(W, "v2"), P(np.ones_like(W), "ms"), P(np.zeros_like(W), "mom")
    ops.ApplyRMSProp()(var, ms_, mom, T(0.01), T(G), 0.9, 0.5, 1e-10)
    s = 0.9 + 0.1 * G * G
    np.testing.assert_allclose(var.asnumpy(), W - 0.01 * G / np.sqrt(s + 1e-10), rtol=1e-6)
    var, m, v = P(W, "v3"), P(np.zeros_like(W), "m"), P(np.zeros_like(W), "vv")
    ops.Adam()(var, m, v, T(0.9), T(0.999), T(0.01), T(0.9), T(0.999), T(1e-8), T(G))
    lr_t = 0.01 * np.sqrt(1 - 0.999) / (1 - 0.9)
    want = W - lr_t * (0.1 * G) / (np.sqrt(0.001 * G * G) + 1e-8)
    np.testing.assert_allclose(var.asnumpy(), want, rtol=1e-5, atol=1e-7)
    var, lin, acc = P(W, "v4"), P(np.zeros_like(W), "lin"), P(np.full_like(W, 0.1), "acc2")
    ops.ApplyFtrl()(var, acc, lin, T(G), 0.1, 0.01, 0.02, -0.5)
    a_new = 0.1 + G * G
    l_ = G - (np.sqrt(a_new) - np.sqrt(0.1)) / 0.1 * W
    want = np.where(np.abs(l_) > 0.01, (np.sign(l_) * 0.01 - l_) / (np.sqrt(a_new) / 0.1 + 0.04), 0)
    np.testing.assert_allclose(var.asnumpy(), want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_custom_optimizer_on_apply_momentum_trains(mode):
    class MyMomentum(nn.Optimizer):
        def __init__(self, params, lr, momentum):
            super().__init__(lr, params)
            self.momentum = momentum
            self.moments = self._clone_state("moments")
            self.opt = ops.ApplyMomentum()

        def construct(self, gradients):
            lr = self.get_lr()
            for p, g, acc in zip(self.parameters, gradients, self.moments):
                self.opt(p, acc, lr, g, self.momentum)
            return True

    x = RNG.normal(size=(32, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    ms.set_context(mode=mode)
    try:
        ms.set_seed(0)
        net = nn.Dense(3, 1)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), MyMomentum(net.trainable_params(), 0.05, 0.9))
        first = float(step(ms.Tensor(x), ms.Tensor(y)).asnumpy())
        for _ in range(40):
            last = float(step(ms.Tensor(x), ms.Tensor(y)).asnumpy())
        assert last < 0.05 * first
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
