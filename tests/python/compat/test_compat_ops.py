"""MindSpore ops added for compatibility, against numpy, in both modes where graph mode can
compile them: Invert, Softsign, Inv, LinSpace, dot, TensorScatterUpdate/ScatterNdUpdate, Unique,
MaskedSelect, cross_entropy and NLL over unbatched and spatial inputs."""
import numpy as np
import pytest

import mycel
from mycel import Parameter, Tensor, nn, ops
from mycel.ops import operations as P

MODES = pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
R = np.random.default_rng(9)


@pytest.fixture(autouse=True)
def _reset():
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def _run(mode, fn, *args):
    mycel.set_context(mode=mode)
    return mycel.jit(fn)(*args) if mode == mycel.GRAPH_MODE else fn(*args)


def _invert_softsign(a, b):
    return ops.invert(a), P.Softsign()(b), P.Inv()(b)


@MODES
def test_elementwise_ops_vs_numpy(mode):
    a = R.integers(-50, 50, size=(3, 4)).astype(np.int32)
    b = R.normal(size=(3, 4))
    inv, soft, rec = _run(mode, _invert_softsign, Tensor(a), Tensor(b))
    np.testing.assert_array_equal(inv.asnumpy(), np.invert(a))
    np.testing.assert_allclose(soft.asnumpy(), b / (1 + np.abs(b)), rtol=1e-12)
    np.testing.assert_allclose(rec.asnumpy(), 1 / b, rtol=1e-12)
    np.testing.assert_array_equal(ops.invert(Tensor(np.array([True, False]))).asnumpy(), [False, True])
    g = mycel.grad(lambda x: ops.softsign(x).sum())(Tensor(b)).asnumpy()
    np.testing.assert_allclose(g, 1 / (1 + np.abs(b)) ** 2, rtol=1e-12)
    with pytest.raises(TypeError, match="invert"):
        ops.invert(Tensor(b))


def _scatter(x, idx, upd):
    return ops.tensor_scatter_update(x, idx, upd), P.TensorScatterUpdate()(x, idx, upd)


@MODES
def test_tensor_scatter_update_vs_numpy(mode):
    x = R.normal(size=(4, 3, 2))
    idx = np.array([[1, 2], [3, 0]])
    upd = R.normal(size=(2, 2))
    want = x.copy()
    want[1, 2], want[3, 0] = upd[0], upd[1]
    out, out2 = _run(mode, _scatter, Tensor(x), Tensor(idx), Tensor(upd))
    np.testing.assert_allclose(out.asnumpy(), want)
    np.testing.assert_allclose(out2.asnumpy(), want)
    rows = np.array([[0], [2]])
    upd_rows = R.normal(size=(2, 3, 2))
    want_rows = x.copy()
    want_rows[[0, 2]] = upd_rows
    np.testing.assert_allclose(ops.tensor_scatter_update(Tensor(x), Tensor(rows), Tensor(upd_rows)).asnumpy(), want_rows)


def test_scatter_nd_update_writes_the_parameter():
    p = Parameter(Tensor(np.zeros((3, 2), np.float32)), name="p")
    out = P.ScatterNdUpdate()(p, Tensor(np.array([[2]])), Tensor(np.ones((1, 2), np.float32)))
    np.testing.assert_array_equal(p.asnumpy(), [[0, 0], [0, 0], [1, 1]])
    assert out is p


def _lin(a, b):
    return P.LinSpace()(a, b, 5), ops.dot(a * ops.ones((2, 3), mycel.float32), ops.ones((3, 4), mycel.float32))


@MODES
def test_linspace_and_dot(mode):
    lin, d = _run(mode, _lin, Tensor(np.float32(1.0)), Tensor(np.float32(3.0)))
    np.testing.assert_allclose(lin.asnumpy(), np.linspace(1, 3, 5), rtol=1e-6)
    np.testing.assert_allclose(d.asnumpy(), np.full((2, 4), 3.0))
    a, b = R.normal(size=(2, 3)), R.normal(size=(4, 3, 5))
    np.testing.assert_allclose(ops.dot(Tensor(a), Tensor(b)).asnumpy(), np.dot(a, b), rtol=1e-12)



def _unique_first_ref(x):
    """MindSpore's Unique (CPU): the distinct values in order of first appearance, each element's
    index into them, from np.unique's first indices."""
    flat = np.asarray(x).ravel()
    _, first, inv = np.unique(flat, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return flat[np.sort(first)], rank[inv.ravel()].reshape(np.shape(x))

def _unique_in_graph(x):
    return ops.unique(x)


def test_unique_and_masked_select_eager_and_graph():
    x = np.array([[3, 1], [3, 7]], np.int32)
    values, inverse = P.Unique()(Tensor(x))
    want_v, want_i = _unique_first_ref(x)
    np.testing.assert_array_equal(values.asnumpy(), want_v)
    np.testing.assert_array_equal(inverse.asnumpy(), want_i)
    m = np.array([[True, False], [False, True]])
    np.testing.assert_array_equal(ops.masked_select(Tensor(x), Tensor(m)).asnumpy(), x[m])
    np.testing.assert_array_equal(ops.masked_select(Tensor(x), Tensor(np.array([True, False]))).asnumpy(), x[:, 0])
    # graph mode compiles them too (docs/dynamic_shape.md; more in test_dynamic_shape.py)
    gv, gi = mycel.jit(_unique_in_graph)(Tensor(x))
    np.testing.assert_array_equal(gv.asnumpy(), want_v)
    np.testing.assert_array_equal(gi.asnumpy(), want_i)


def _ce_ref(logits, target, axis, weight=None, reduction="mean"):
    logp = logits - np.log(np.exp(logits).sum(axis, keepdims=True))
    picked = np.take_along_axis(logp, np.expand_dims(target, axis), axis).squeeze(axis)
    w = np.ones(logits.shape[axis]) if weight is None else weight
    wt = w[target]
    per = -wt * picked
    if reduction == "none":
        return per
    return per.sum() / wt.sum() if reduction == "mean" else per.sum()


class _Losses(nn.Cell):
    def __init__(self, w):
        super().__init__()
        self.nll = nn.NLLLoss(w, reduction="sum")
        self.w = w

    def construct(self, x, t):
        return (ops.cross_entropy(x, t), ops.cross_entropy(x, t, self.w, reduction="none"),
                self.nll(ops.log_softmax(x, 1 if x.ndim > 1 else 0), t))


@MODES
@pytest.mark.parametrize("shape", [(5,), (4, 5), (2, 5, 3, 2)], ids=["unbatched", "batched", "spatial"])
def test_cross_entropy_and_nll_layouts_vs_numpy(mode, shape):
    x = R.normal(size=shape)
    axis = 0 if len(shape) == 1 else 1
    t_shape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = R.integers(0, 5, size=t_shape)
    w = R.uniform(0.5, 2.0, size=5)
    mycel.set_context(mode=mode)
    mean, none, nll_sum = _Losses(Tensor(w))(Tensor(x), Tensor(t.astype(np.int32)))
    np.testing.assert_allclose(mean.asnumpy(), _ce_ref(x, t, axis), rtol=1e-10)
    assert none.shape == t_shape
    np.testing.assert_allclose(none.asnumpy(), _ce_ref(x, t, axis, w, "none"), rtol=1e-10)
    np.testing.assert_allclose(nll_sum.asnumpy(), _ce_ref(x, t, axis, w, "sum"), rtol=1e-10)


def _take(x, i):
    return ops.take_along_dim(x, i, 1), ops.take_along_dim(x, i)


@MODES
def test_take_along_dim_broadcasts_vs_numpy(mode):
    x = R.normal(size=(3, 4))
    idx = R.integers(0, 4, size=(1, 2))  # broadcast over dim 0
    along, flat = _run(mode, _take, Tensor(x), Tensor(idx))
    np.testing.assert_allclose(along.asnumpy(), np.take_along_axis(x, np.broadcast_to(idx, (3, 2)), 1))
    np.testing.assert_allclose(flat.asnumpy(), np.take_along_axis(x.ravel(), idx.ravel(), 0))
    with pytest.raises(ValueError, match="do not broadcast on dim 0"):
        ops.take_along_dim(Tensor(x), Tensor(R.integers(0, 4, size=(2, 2))), 1)
