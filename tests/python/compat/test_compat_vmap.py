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
