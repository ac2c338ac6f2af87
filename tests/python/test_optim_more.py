"""Adadelta, AdaMax, Rprop, ProximalAdagrad, FTRL, ASGD and LazyAdam against numpy
implementations of the same update rules, over several steps of a quadratic loss."""
import numpy as np
import pytest

import mycel as ms
from mycel import nn

TARGET = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]], np.float32)
W0 = np.array([[0.3, 0.1, -0.2], [0.4, -0.5, 0.2]], np.float32)


def _grad(w):
    return 2.0 * (w - TARGET)  # of sum((w - target)^2)


def _run_mycel(make, steps):
    w = ms.Parameter(ms.Tensor(W0.copy()), name="w")
    opt = make([w])
    for _ in range(steps):
        opt((ms.Tensor(_grad(w.asnumpy())),))
    return w.asnumpy()


def _adadelta(steps, lr=1.0, rho=0.9, eps=1e-6):
    w, a, u = W0.astype(np.float64), 0, 0
    for _ in range(steps):
        g = _grad(w)
        a = rho * a + (1 - rho) * g * g
        upd = np.sqrt(u + eps) / np.sqrt(a + eps) * g
        u = rho * u + (1 - rho) * upd * upd
        w = w - lr * upd
    return w


def _adamax(steps, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    w, m, v = W0.astype(np.float64), 0, 0
    for t in range(1, steps + 1):
        g = _grad(w)
        m = b1 * m + (1 - b1) * g
        v = np.maximum(b2 * v, np.abs(g))
        w = w - lr / (1 - b1 ** t) * m / (v + eps)
    return w


def _rprop(steps, lr=0.1, etas=(0.5, 1.2), sizes=(1e-6, 50.0)):
    w, prev, step = W0.astype(np.float64), np.zeros_like(W0, np.float64), np.full(W0.shape, lr)
    for _ in range(steps):
        g = _grad(w)
        s = g * prev
        step = np.clip(np.where(s > 0, step * etas[1], np.where(s < 0, step * etas[0], step)), *sizes)
        g = np.where(s < 0, 0, g)
        w = w - np.sign(g) * step
        prev = g
    return w


def _proximal_adagrad(steps, lr=0.1, accum=0.1, l1=0.05, l2=0.1):
    w, h = W0.astype(np.float64), np.full(W0.shape, accum)
    for _ in range(steps):
        g = _grad(w)
        h = h + g * g
        lr_t = lr / np.sqrt(h)
        v = w - lr_t * g
        w = np.sign(v) * np.maximum(np.abs(v) - lr_t * l1, 0) / (1 + lr_t * l2)
    return w


def _ftrl(steps, lr=0.1, accum=0.1, power=-0.5, l1=0.01, l2=0.02):
    w, a, lin = W0.astype(np.float64), np.full(W0.shape, accum), np.zeros(W0.shape)
    for _ in range(steps):
        g = _grad(w)
        a_new = a + g * g
        lin = lin + g - (a_new ** -power - a ** -power) / lr * w
        quad = a_new ** -power / lr + 2 * l2
        w = np.where(np.abs(lin) > l1, (np.sign(lin) * l1 - lin) / quad, 0)
        a = a_new
    return w


def _asgd(steps, lr=0.1, lambd=1e-2, alpha=0.75):
    w, eta = W0.astype(np.float64), lr
    for t in range(1, steps + 1):
        g = _grad(w)
        w = w * (1 - lambd * eta) - eta * g
        eta = lr / (1 + lambd * lr * t) ** alpha
    return w


CASES = [
    (lambda p: nn.Adadelta(p), _adadelta),
    (lambda p: nn.AdaMax(p, learning_rate=0.01), _adamax),
    (lambda p: nn.Rprop(p), _rprop),
    (lambda p: nn.ProximalAdagrad(p, learning_rate=0.1, l1=0.05, l2=0.1), _proximal_adagrad),
    (lambda p: nn.FTRL(p, learning_rate=0.1, l1=0.01, l2=0.02), _ftrl),
    (lambda p: nn.ASGD(p, learning_rate=0.1, lambd=1e-2), _asgd),
]


@pytest.mark.parametrize("make, ref", CASES, ids=["Adadelta", "AdaMax", "Rprop", "ProximalAdagrad", "FTRL", "ASGD"])
def test_updates_follow_the_rule(make, ref):
    np.testing.assert_allclose(_run_mycel(make, 7), ref(7), rtol=2e-5, atol=2e-6)


def test_lazy_adam_is_adam_for_dense_gradients_and_bad_arguments():
    np.testing.assert_array_equal(_run_mycel(lambda p: nn.LazyAdam(p, 0.05), 5),
                                  _run_mycel(lambda p: nn.Adam(p, 0.05), 5))
    w = ms.Parameter(ms.Tensor(W0.copy()), name="w")
    with pytest.raises(ValueError, match="Rprop: etas must be"):
        nn.Rprop([w], etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="FTRL: lr_power must be <= 0"):
        nn.FTRL([w], lr_power=0.5)


@pytest.mark.parametrize("make, _", CASES, ids=["Adadelta", "AdaMax", "Rprop", "ProximalAdagrad", "FTRL", "ASGD"])
def test_graph_mode_training_step_equals_eager(make, _):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-1.0], [2.0]], np.float32)).astype(np.float32)
    weights = []
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        try:
            ms.set_seed(0)
            net = nn.Dense(3, 1)
            step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), make(net.trainable_params()))
            losses = [float(step(ms.Tensor(x), ms.Tensor(y)).asnumpy()) for _ in range(5)]
            weights.append(net.weight.asnumpy())
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
        assert losses[-1] < losses[0]
    np.testing.assert_allclose(weights[0], weights[1], rtol=1e-5, atol=1e-6)
