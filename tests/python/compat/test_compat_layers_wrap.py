"""BiDense, EmbeddingLookup, TimeDistributed, ForwardValueAndGrad, adaptive max pooling,
AdaptiveAvgPool3d, MultiClassDiceLoss and MultilabelMarginLoss against numpy."""
import numpy as np
import pytest

import mycel as ms
from mycel import nn

RNG = np.random.default_rng(0)


def T(a):
    return ms.Tensor(np.asarray(a))


def _adaptive_ref(x, out, reduce):
    """Adaptive pooling of x's last len(out) dims with PyTorch's windows."""
    for k, o in enumerate(out):
        axis = x.ndim - len(out) + k
        n = x.shape[axis]
        parts = [reduce(np.take(x, range(i * n // o, -(-(i + 1) * n // o)), axis), axis) for i in range(o)]
        x = np.stack(parts, axis)
    return x


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_layers_against_numpy(mode):
    x1, x2 = RNG.normal(size=(4, 3)).astype(np.float32), RNG.normal(size=(4, 5)).astype(np.float32)
    img = RNG.normal(size=(2, 3, 7, 9)).astype(np.float32)
    vol = RNG.normal(size=(1, 2, 5, 6, 7)).astype(np.float32)
    seq = RNG.normal(size=(2, 6, 3)).astype(np.float32)
    ms.set_context(mode=mode)
    try:
        bd = nn.BiDense(3, 5, 2)
        want = np.einsum("bi,oij,bj->bo", x1, bd.weight.asnumpy(), x2) + bd.bias.asnumpy()
        np.testing.assert_allclose(bd(T(x1), T(x2)).asnumpy(), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(nn.AdaptiveMaxPool2d((3, 4))(T(img)).asnumpy(),
                                   _adaptive_ref(img, (3, 4), np.max), rtol=1e-6)
        np.testing.assert_allclose(nn.AdaptiveMaxPool1d(4)(T(seq)).asnumpy(), _adaptive_ref(seq, (4,), np.max))
        np.testing.assert_allclose(nn.AdaptiveAvgPool3d((2, 3, 4))(T(vol)).asnumpy(),
                                   _adaptive_ref(vol, (2, 3, 4), np.mean), rtol=1e-5, atol=1e-6)
        dense = nn.Dense(3, 2)
        td = nn.TimeDistributed(dense, time_axis=1)
        w, b = dense.weight.asnumpy(), dense.bias.asnumpy()
        np.testing.assert_allclose(td(T(seq)).asnumpy(), seq @ w.T + b, rtol=1e-5, atol=1e-6)
        emb = nn.EmbeddingLookup(10, 4, max_norm=0.5)
        ids = np.array([[1, 9], [3, 1]], np.int32)
        rows = emb.embedding_table.asnumpy()[ids]
        norms = np.linalg.norm(rows, axis=-1, keepdims=True)
        np.testing.assert_allclose(emb(T(ids)).asnumpy(), rows * np.minimum(0.5 / norms, 1), rtol=1e-5)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_forward_value_and_grad():
    net = nn.Dense(3, 1)
    x = T(RNG.normal(size=(4, 3)).astype(np.float32))
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    y = T(np.zeros((4, 1), np.float32))
    value, grads = nn.ForwardValueAndGrad(loss_net, weights=net.trainable_params(), get_by_list=True)(x, y)
    pred = x.asnumpy() @ net.weight.asnumpy().T + net.bias.asnumpy()
    np.testing.assert_allclose(value.asnumpy(), (pred ** 2).mean(), rtol=1e-5)
    np.testing.assert_allclose(grads[0].asnumpy(), (2 * pred / 4).T @ x.asnumpy(), rtol=1e-4, atol=1e-6)
    value, gx = nn.ForwardValueAndGrad(net)(x)
    np.testing.assert_allclose(gx.asnumpy(), np.broadcast_to(net.weight.asnumpy(), (4, 3)), rtol=1e-6)


def test_losses():
    logits = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    label = np.eye(4, dtype=np.float32)[RNG.integers(0, 4, size=(3, 5))].transpose(0, 2, 1)
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    dice = [1 - 2 * (p[:, i] * label[:, i]).sum() / ((p[:, i] ** 2).sum() + (label[:, i] ** 2).sum() + 1e-5) for i in range(4)]
    np.testing.assert_allclose(nn.MultiClassDiceLoss()(T(logits), T(label)).asnumpy(), np.mean(dice), rtol=1e-5)
    x = RNG.normal(size=(2, 4)).astype(np.float32)
    tgt = np.array([[3, 0, -1, 1], [1, -1, 2, 2]], np.int64)
    want = []
    for xi, ti in zip(x, tgt):
        js = list(ti[:list(ti).index(-1)])
        others = [i for i in range(4) if i not in js]
        want.append(sum(max(0, 1 - (xi[j] - xi[i])) for j in js for i in others) / 4)
    np.testing.assert_allclose(nn.MultilabelMarginLoss("none")(T(x), T(tgt)).asnumpy(), want, rtol=1e-5)
    np.testing.assert_allclose(nn.MultilabelMarginLoss()(T(x), T(tgt)).asnumpy(), np.mean(want), rtol=1e-5)
