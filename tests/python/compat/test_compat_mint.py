"""mindspore.mint (PyTorch-style names and arguments) against numpy, eagerly and in graph mode,
plus a small mint.nn model trained with mint.optim.AdamW."""
import numpy as np
import pytest

import mycel as ms
from mycel import mint, nn
from mycel.mint.nn import functional as F

RNG = np.random.default_rng(0)


def T(a):
    return ms.Tensor(np.asarray(a))


def close(got, want, tol=1e-5):
    got = got.asnumpy() if hasattr(got, "asnumpy") else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_reductions_with_dim_and_keepdim():
    x = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    close(mint.sum(T(x)), x.sum())
    close(mint.sum(T(x), (0, 2), True), x.sum((0, 2), keepdims=True))
    close(mint.mean(T(x), 1), x.mean(1))
    close(mint.prod(T(x), 2), x.prod(2), 1e-4)
    values, indices = mint.max(T(x), 1)
    close(values, x.max(1))
    close(indices, x.argmax(1))
    close(mint.min(T(x)), x.min())
    close(mint.argmax(T(x)), x.argmax())
    close(mint.argmin(T(x), 2, keepdim=True), x.argmin(2)[..., None])
    close(mint.all(T(x > -10), 0), (x > -10).all(0))
    close(mint.cumsum(T(x), 1), x.cumsum(1), 1e-5)
    v, i = mint.sort(T(x), dim=1, descending=True)
    close(v, -np.sort(-x, 1))
    tv, ti = mint.topk(T(x), 2, dim=1, largest=False)
    close(tv, np.sort(x, 1)[:, :2])
    close(np.take_along_axis(x, ti.asnumpy(), 1), np.sort(x, 1)[:, :2])


def test_shape_and_creation_functions():
    x = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    close(mint.flatten(T(x), 1), x.reshape(2, 12))
    close(mint.permute(T(x), (2, 0, 1)), x.transpose(2, 0, 1))
    close(mint.cat([T(x), T(x)], dim=2), np.concatenate([x, x], 2))
    close(mint.stack([T(x), T(x)], dim=1), np.stack([x, x], 1))
    parts = mint.split(T(x), [1, 3], dim=2)
    close(parts[1], x[:, :, 1:])
    assert [p.shape[2] for p in mint.split(T(x), 3, dim=2)] == [3, 1]
    close(mint.tile(T(x), (2,)), np.tile(x, 2))
    close(mint.arange(5), np.arange(5))
    close(mint.arange(1, 2, 0.25), np.arange(1, 2, 0.25))
    close(mint.zeros(2, 3), np.zeros((2, 3)))
    close(mint.ones((2,)), np.ones(2))
    idx = np.array([[0, 2], [1, 0]])
    close(mint.gather(T(x[0]), 1, T(idx)), np.take_along_axis(x[0][:2], idx, 1))
    close(mint.index_select(T(x), 1, T(np.array([2, 0], np.int32))), x[:, [2, 0]])
    close(mint.scatter_add(T(np.zeros((2, 3), np.float32)), 1, T(np.array([[0, 0], [2, 1]])), T(np.ones((2, 2), np.float32))),
          [[2, 0, 0], [0, 1, 1]])
    close(mint.add(T(x), T(x), alpha=3), 4 * x)
    close(mint.div(T(np.float32([-7])), T(np.float32([2])), rounding_mode="floor"), [-4])
    close(mint.clamp(T(x), min=-0.5), np.maximum(x, -0.5))
    u, inv, cnt = mint.unique(T(np.array([3, 1, 3, 2])), return_inverse=True, return_counts=True)
    close(u, [1, 2, 3])
    close(inv, [2, 0, 2, 1])
    close(cnt, [1, 1, 2])
    draws = mint.bernoulli(T(np.full((2000,), 0.3, np.float32))).asnumpy()
    assert set(np.unique(draws)) <= {0.0, 1.0} and abs(draws.mean() - 0.3) < 0.05


def test_functional_layers():
    x = RNG.normal(size=(2, 3, 6, 6)).astype(np.float32)
    close(F.pad(T(x), (1, 2)).shape, (2, 3, 6, 9))
    close(F.pad(T(x), (1, 2, 0, 1)), np.pad(x, ((0, 0), (0, 0), (0, 1), (1, 2))))
    close(F.max_pool2d(T(x), 2), x.reshape(2, 3, 3, 2, 3, 2).max((3, 5)))
    close(F.avg_pool2d(T(x), 3, 3), x.reshape(2, 3, 2, 3, 2, 3).mean((3, 5)))
    close(F.adaptive_avg_pool2d(T(x), 1), x.mean((2, 3), keepdims=True))
    w = RNG.normal(size=(5, 6)).astype(np.float32)
    b = RNG.normal(size=(5,)).astype(np.float32)
    close(F.linear(T(x[0, 0]), T(w), T(b)), x[0, 0] @ w.T + b, 1e-4)
    m = x[0, 0]
    close(F.layer_norm(T(m), (6,)), (m - m.mean(1, keepdims=True)) / np.sqrt(m.var(1, keepdims=True) + 1e-5), 1e-4)
    close(F.softmax(T(m), 0), np.exp(m) / np.exp(m).sum(0, keepdims=True))
    close(F.one_hot(T(np.array([0, 2])), 3), np.eye(3)[[0, 2]])
    logits, tgt = m[:4, :3], np.array([0, 2, 1, 1])
    lp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    close(F.cross_entropy(T(logits), T(tgt.astype(np.int32))), -lp[np.arange(4), tgt].mean(), 1e-5)
    close(F.mse_loss(T(m), T(m * 0)), (m ** 2).mean())
    assert np.array_equal(F.dropout(T(m), 0.3, training=False).asnumpy(), m)
    kept = F.dropout(T(np.ones((4000,), np.float32)), 0.25).asnumpy()
    assert np.all(np.isclose(kept, 0) | np.isclose(kept, 1 / 0.75)) and abs((kept > 0).mean() - 0.75) < 0.04


def test_mint_model_trains_with_adamw_in_both_modes():
    x = RNG.normal(size=(64, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)).astype(np.float32)[:, None]

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1 = mint.nn.Linear(4, 16)
            self.act = mint.nn.GELU()
            self.fc2 = mint.nn.Linear(16, 1)

        def construct(self, v):
            return self.fc2(self.act(self.fc1(v)))

    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        try:
            ms.set_seed(0)
            net = Net()
            opt = mint.optim.AdamW(net.trainable_params(), lr=0.05)
            step = nn.TrainOneStepCell(nn.WithLossCell(net, mint.nn.MSELoss()), opt)
            first = float(step(T(x), T(y)).asnumpy())
            for _ in range(60):
                last = float(step(T(x), T(y)).asnumpy())
            assert last < 0.1 * first, (mode, first, last)
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
    with pytest.raises(NotImplementedError, match="amsgrad"):
        mint.optim.AdamW(Net().trainable_params(), amsgrad=True)
