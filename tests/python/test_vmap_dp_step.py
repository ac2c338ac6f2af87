"""A DP-SGD step in one compiled Cell (DESIGN.md section 9): per-sample gradients by vmap of grad,
each clipped to a norm bound, averaged and applied with ops.assign, all inside construct. The
reference clips the per-sample gradients of a Python loop of grad and updates numpy copies."""
import numpy as np
import pytest

import mycel
from mycel import ParameterTuple, Tensor, context, nn, ops


class DPStep(nn.Cell):
    def __init__(self, net, loss, lr, bound):
        super().__init__()
        self.net, self.loss = net, loss
        self.weights = ParameterTuple(net.trainable_params())
        self.lr, self.bound = lr, bound

    def sample_loss(self, x, y):
        return self.loss(self.net(ops.expand_dims(x, 0)), ops.expand_dims(y, 0))

    def construct(self, x, y):
        grads = ops.vmap(ops.grad(self.sample_loss, None, self.weights))(x, y)
        sq = 0.0
        for g in grads:
            sq = sq + ops.reshape(g * g, (g.shape[0], -1)).sum(axis=1)
        norm = ops.sqrt(sq)
        scale = ops.minimum(norm * 0.0 + 1.0, self.bound / (norm + 1e-6))
        for w, g in zip(self.weights, grads):
            s = ops.reshape(scale, (g.shape[0],) + (1,) * (len(g.shape) - 1))
            ops.assign(w, w - self.lr * (g * s).mean(axis=0))
        return norm


@pytest.mark.parametrize("mode", [context.GRAPH_MODE, context.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_dp_sgd_step_in_one_cell_matches_the_loop(mode):
    old = context.get_context("mode")
    context.set_context(mode=mode)
    try:
        mycel.set_seed(0)
        net = nn.SequentialCell([nn.Dense(5, 8), nn.ReLU(), nn.Dense(8, 3)])
        ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        rng = np.random.default_rng(0)
        x = rng.standard_normal((6, 5)).astype(np.float32)
        y = rng.integers(0, 3, 6).astype(np.int32)
        lr, bound = 0.1, 0.5
        before = [p.asnumpy().copy() for p in net.trainable_params()]

        def sample_loss(a, b):
            return ce(net(ops.expand_dims(a, 0)), ops.expand_dims(b, 0))
        grad_fn = ops.grad(sample_loss, None, net.trainable_params())
        per = [[g.asnumpy() for g in grad_fn(Tensor(x[i]), Tensor(y[i]))] for i in range(6)]
        norms = np.array([np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in gs)) for gs in per])
        scales = np.minimum(1.0, bound / (norms + 1e-6))
        want = [w - lr * np.mean([per[i][k] * scales[i] for i in range(6)], axis=0) for k, w in enumerate(before)]

        got_norms = DPStep(net, ce, lr, bound)(Tensor(x), Tensor(y)).asnumpy()
        np.testing.assert_allclose(got_norms, norms, rtol=1e-4)
        assert (norms > bound).any()  # clipping is exercised
        for p, w in zip(net.trainable_params(), want):
            np.testing.assert_allclose(p.asnumpy(), w, rtol=1e-4, atol=1e-6, err_msg=p.name)
    finally:
        context.set_context(mode=old)
