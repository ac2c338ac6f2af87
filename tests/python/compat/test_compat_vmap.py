"""ops.vmap over a CellList (MindSpore's model ensembling) and the scatter family under vmap,
against numpy: each cell on its own slice of the inputs (or all on the same input), outputs
stacked, gradients reaching every cell's own Parameters."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops

R = np.random.default_rng(11)


def _ensemble(m=3):
    return nn.CellList([nn.Dense(4, 2) for _ in range(m)])


def _dense_ref(cell, x):
    return x @ cell.weight.asnumpy().T + cell.bias.asnumpy()


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_cell_list_vmap_vs_numpy(mode):
    ms.set_context(mode=mode)
    cells = _ensemble()
    x = R.normal(size=(3, 5, 4)).astype(np.float32)  # one (5, 4) batch per model
    out = ops.vmap(cells, in_axes=0, out_axes=0)(Tensor(x))
    want = np.stack([_dense_ref(c, x[i]) for i, c in enumerate(cells)])
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    shared = R.normal(size=(5, 4)).astype(np.float32)  # every model on the same data
    out = ops.vmap(cells, in_axes=None, out_axes=1)(Tensor(shared))
    np.testing.assert_allclose(out.asnumpy(), np.stack([_dense_ref(c, shared) for c in cells], 1),
                               rtol=1e-5, atol=1e-6)


def test_cell_list_vmap_gradients_reach_each_cell():
    cells = _ensemble(2)
    x = R.normal(size=(2, 5, 4)).astype(np.float32)
    ens = ops.vmap(cells, in_axes=0)
    params = cells.trainable_params()
    grads = ops.grad(lambda t: ens(t).sum(), grad_position=None, weights=params)(Tensor(x))
    # d sum(x W^T + b) / dW = ones(2, 5) @ x: each cell's weight sees only its own slice
    for p, g in zip(params, grads):
        i = int(p.name.split(".")[0]) if p.name.split(".")[0].isdigit() else None
        if i is None:
            continue
        want = np.ones((2, 5)) @ x[i] if p.name.endswith("weight") else np.full(2, 5.0)
        np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-5)


def test_cell_list_vmap_errors():
    with pytest.raises(ValueError, match="CellList holds 3 cells"):
        ops.vmap(_ensemble(), in_axes=0)(Tensor(np.zeros((2, 5, 4), np.float32)))
    with pytest.raises(TypeError, match="of one class"):
        ops.vmap(nn.CellList([nn.Dense(4, 2), nn.ReLU()]))
    with pytest.raises(ValueError, match="same shapes"):
        ops.vmap(nn.CellList([nn.Dense(4, 2), nn.Dense(3, 2)]))


def test_scatter_ops_under_vmap_vs_numpy():
    b, n = 3, 5
    x = R.normal(size=(b, n, 2))
    idx = R.integers(-n, n, size=(b, 4))
    upd = R.normal(size=(b, 4, 2))

    def per_item(xi, ii, ui):
        return ops.scatter_add(xi, ii, ui), ops.gather_nd(xi, ops.expand_dims(ii, -1))
    got_add, got_nd = ops.vmap(per_item)(Tensor(x), Tensor(idx), Tensor(upd))
    want_add = x.copy()
    for k in range(b):
        np.add.at(want_add[k], idx[k] % n, upd[k])  # duplicates accumulate within the item
    np.testing.assert_allclose(got_add.asnumpy(), want_add, rtol=1e-12)
    np.testing.assert_array_equal(got_nd.asnumpy(), np.stack([x[k][idx[k] % n] for k in range(b)]))
    # the rule keeps them one batched op each: no per-item loop in the IR
    from mycel.common import vmap as vmap_module
    base, chain = vmap_module.transform_chain(ops.vmap(per_item), 3)
    text = ms._mycel.graph.transformed(base, chain).ir(Tensor(x), Tensor(idx), Tensor(upd))
    assert text.count("tensor_scatter_add(") == 1 and text.count("gather_nd(") == 1, text


def _bn_train_ref(x, gamma, beta, rm, rv, eps, m):
    """One training step of batch norm over x (N, C, ...) in numpy: y, and the running statistics
    after the update (unbiased variance, as MindSpore/PyTorch)."""
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean, var = x.mean(axes, dtype=np.float64), x.var(axes, dtype=np.float64)
    xhat = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    cnt = x.size // x.shape[1]
    return (xhat * gamma.reshape(shape) + beta.reshape(shape), (1 - m) * rm + m * mean,
            (1 - m) * rv + m * var * cnt / (cnt - 1), xhat, 1 / np.sqrt(var + eps))


def _bn_cell(c):
    bn = nn.BatchNorm2d(c, momentum=0.9, eps=1e-5)  # MindSpore's momentum: the op's is 1 - 0.9
    bn.gamma.set_data(Tensor(R.normal(size=c).astype(np.float32)))
    bn.beta.set_data(Tensor(R.normal(size=c).astype(np.float32)))
    bn.moving_mean.set_data(Tensor(R.normal(size=c).astype(np.float32)))
    bn.moving_variance.set_data(Tensor((R.random(c) + 0.5).astype(np.float32)))
    bn.set_train(True)
    return bn


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
@pytest.mark.parametrize("in_axis", [0, 1])
def test_batch_norm_training_under_vmap_vs_numpy(mode, in_axis):
    """Each item normalized by its own batch statistics; the shared running statistics end as B
    updates in turn would leave them (the per-item loop's result), from one batched call."""
    ms.set_context(mode=mode)
    B, N, C = 3, 4, 2
    bn = _bn_cell(C)
    g, b = bn.gamma.asnumpy(), bn.beta.asnumpy()
    rm, rv = bn.moving_mean.asnumpy().astype(np.float64), bn.moving_variance.asnumpy().astype(np.float64)
    x = (R.normal(size=(B, N, C, 3, 2)) * 2 + 5).astype(np.float32)
    y = ops.vmap(bn, in_axes=in_axis, out_axes=0)(Tensor(np.moveaxis(x, 0, in_axis).copy()))
    for i in range(B):
        want, rm, rv, _, _ = _bn_train_ref(x[i].astype(np.float64), g, b, rm, rv, 1e-5, 0.1)
        np.testing.assert_allclose(y.asnumpy()[i], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), rm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.asnumpy(), rv, rtol=1e-5, atol=1e-6)


def test_batch_norm_training_batched_ir_has_no_per_item_calls():
    from mycel.common import vmap as vmap_module

    def f(x, g, b, m, v):
        return ops.batch_norm(x, g, b, m, v, is_training=True)[0]
    base, chain = vmap_module.transform_chain(ops.vmap(f, in_axes=(0, None, None, None, None)), 5)
    graph = ms._mycel.graph.transformed(base, chain)
    c = np.ones(2, np.float32)
    text_ = graph.ir(Tensor(np.zeros((5, 4, 2, 3), np.float32)), *[Tensor(c) for _ in range(4)])
    # one call over the folded batch, one applying the running-statistics update: not 5
    assert text_.count("= batch_norm[") == 2, text_


def test_per_sample_grads_through_training_batch_norm_vs_numpy():
    """vmap(grad): batch_norm_grad folded the same way; dx of sum(w * bn(x)) per item, numpy's
    closed form dx = gamma * invstd / n * (n dy - sum(dy) - xhat sum(dy xhat))."""
    B, N, C = 4, 3, 2
    bn = _bn_cell(C)
    w = R.normal(size=(N, C, 2, 2)).astype(np.float32)
    x = R.normal(size=(B, N, C, 2, 2)).astype(np.float32)
    per_item = ops.vmap(ops.grad(lambda t: (bn(t) * Tensor(w)).sum()), in_axes=0)
    got = per_item(Tensor(x)).asnumpy()
    g = bn.gamma.asnumpy().reshape(1, -1, 1, 1)
    for i in range(B):
        xi = x[i].astype(np.float64)
        _, _, _, xhat, invstd = _bn_train_ref(xi, g.ravel(), g.ravel(), np.zeros(C), np.ones(C), 1e-5, 0.1)
        n = xi.size // C
        dy = w.astype(np.float64)
        s = dy.sum((0, 2, 3), keepdims=True)
        sx = (dy * xhat).sum((0, 2, 3), keepdims=True)
        want = g * invstd.reshape(1, -1, 1, 1) / n * (n * dy - s - xhat * sx)
        np.testing.assert_allclose(got[i], want, rtol=1e-4, atol=1e-5)
