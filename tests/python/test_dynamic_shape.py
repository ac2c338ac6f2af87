"""Ops whose output size depends on the values (unique, unique_consecutive, masked_select,
x[mask], nonzero/argwhere, masked_scatter) in both modes against numpy: forward, the ops that
follow them (re-inferred at run time in graph mode), gradients against finite differences, a
training step with masked_select in its loss, and the clear errors where a size cannot be
data-dependent (docs/dynamic_shape.md)."""
import numpy as np
import pytest

import mycel as ms
from mycel import Parameter, Tensor, nn, ops
from mycel.ops import operations as P

MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
R = np.random.default_rng(11)


def _in_mode(fn, mode):
    ms.set_context(mode=mode)
    return ms.jit(fn) if mode == ms.GRAPH_MODE else fn


def _consecutive_ref(a):
    """numpy reference of unique_consecutive: values, index of each element's run, run lengths."""
    flat = a.reshape(-1)
    starts = np.r_[True, flat[1:] != flat[:-1]] if flat.size else np.zeros(0, bool)
    run = np.cumsum(starts) - 1
    return flat[starts], run.reshape(a.shape), np.bincount(run, minlength=int(starts.sum()))



def _unique_first_ref(x):
    """MindSpore's Unique (CPU): the distinct values in order of first appearance, each element's
    index into them, from np.unique's first indices."""
    flat = np.asarray(x).ravel()
    _, first, inv = np.unique(flat, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return flat[np.sort(first)], rank[inv.ravel()].reshape(np.shape(x))

@MODES
def test_unique_and_unique_consecutive_match_numpy(mode):
    x = np.array([[3, 1, 3, 3], [2, 2, 7, 1]], np.int32)
    y = np.array([1.5, 1.5, -2.0, -2.0, -2.0, 1.5, 0.0], np.float32)

    def f(x, y):
        v, i = ops.unique(x)
        cv, ci, cc = ops.unique_consecutive(y, return_idx=True, return_counts=True)
        pv, pi = P.Unique()(y)
        return v, i, cv, ci, cc, pv, pi

    v, i, cv, ci, cc, pv, pi = _in_mode(f, mode)(Tensor(x), Tensor(y))
    ref_v, ref_i = _unique_first_ref(x)
    np.testing.assert_array_equal(v.asnumpy(), ref_v)
    np.testing.assert_array_equal(i.asnumpy(), ref_i)
    assert i.dtype == ms.int32 and v.dtype == ms.int32
    rv, ri, rc = _consecutive_ref(y)
    np.testing.assert_array_equal(cv.asnumpy(), rv)
    np.testing.assert_array_equal(ci.asnumpy(), ri)
    np.testing.assert_array_equal(cc.asnumpy(), rc)
    np.testing.assert_array_equal(pv.asnumpy(), _unique_first_ref(y)[0])
    np.testing.assert_array_equal(pv.asnumpy()[pi.asnumpy()], y)


@MODES
def test_masked_select_index_and_nonzero_match_numpy(mode):
    x = R.normal(size=(4, 3)).astype(np.float32)
    rows = np.array([True, False, True, True])
    col = np.array([True, False, True])  # broadcast over the rows by masked_select

    def f(x, rows, col):
        return (ops.masked_select(x, x > 0), x[rows], ops.masked_select(x, col), ops.nonzero(x > 0.5),
                ops.argwhere(rows), ops.nonzero(x > 0, as_tuple=True)[1],
                P.MaskedSelect()(x, col))

    a, b, c, d, e, f1, g = _in_mode(f, mode)(Tensor(x), Tensor(rows), Tensor(col))
    np.testing.assert_array_equal(a.asnumpy(), x[x > 0])
    np.testing.assert_array_equal(b.asnumpy(), x[rows])
    np.testing.assert_array_equal(c.asnumpy(), x[np.broadcast_to(col, x.shape)])
    np.testing.assert_array_equal(d.asnumpy(), np.argwhere(x > 0.5))
    np.testing.assert_array_equal(e.asnumpy(), np.argwhere(rows))
    np.testing.assert_array_equal(f1.asnumpy(), np.nonzero(x > 0)[1])
    np.testing.assert_array_equal(g.asnumpy(), c.asnumpy())
    assert d.dtype == ms.int64


@MODES
def test_ops_after_a_data_dependent_size_and_its_count(mode):
    """Ops downstream of masked_select see the run-time size: reductions, elementwise with a
    broadcast constant, a matmul over the selected rows, reshape, and x.shape[0] as a value."""
    w = R.normal(size=(3, 2)).astype(np.float32)

    def f(x, keep):
        rows = x[keep]
        h = ops.matmul(rows, Tensor(w)) * 2.0 + 1.0
        flat = ops.reshape(ops.masked_select(x, x > 0), (-1, 1))
        n = rows.shape[0]
        return h, h.mean(axis=0), flat.sum() - flat.mean(), ops.square(flat).max(), n * 1.0

    fn = _in_mode(f, mode)
    for seed in range(3):  # one compiled program, several counts (0 included)
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(5, 3)).astype(np.float32)
        keep = rng.random(5) < [0.5, 0.7, 0.0][seed]
        h, m, s, q, n = fn(Tensor(x), Tensor(keep))
        ref = (x[keep] @ w) * 2 + 1
        pos = x[x > 0]
        np.testing.assert_allclose(h.asnumpy(), ref, rtol=1e-5, atol=1e-6)
        if keep.any():
            np.testing.assert_allclose(m.asnumpy(), ref.mean(0), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(float(s.asnumpy()), pos.sum() - pos.mean(), rtol=1e-5)
        np.testing.assert_allclose(float(q.asnumpy()), (pos ** 2).max(), rtol=1e-5)
        assert float(np.asarray(n.asnumpy() if isinstance(n, Tensor) else n)) == keep.sum()


def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[k] = eps
        g[k] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@MODES
def test_masked_select_gradient_scatters_back(mode):
    x = R.normal(size=(4, 3))
    keep = np.array([True, False, True, True])
    mask = x > 0.1

    def loss(x, keep, mask):
        return (ops.masked_select(x, mask) ** 2).sum() + (x[keep] * x[keep]).mean() * 3.0

    grad = _in_mode(lambda *a: ms.grad(loss)(*a), mode)
    got = grad(Tensor(x), Tensor(keep), Tensor(mask)).asnumpy()

    def ref(v):
        return (v[mask] ** 2).sum() + (v[keep] ** 2).mean() * 3.0
    np.testing.assert_allclose(got, _numeric_grad(ref, x), rtol=1e-6, atol=1e-8)


@MODES
def test_masked_scatter_matches_numpy_and_its_gradient(mode):
    x = R.normal(size=(2, 4))
    mask = np.array([[True, False, False, True], [False, True, True, False]])
    src = R.normal(size=(4,))

    def f(x, mask, src):
        return ops.masked_scatter(x, mask, src)

    got = _in_mode(f, mode)(Tensor(x), Tensor(mask), Tensor(src)).asnumpy()
    ref = x.copy()
    ref[mask] = src
    np.testing.assert_array_equal(got, ref)
    w = R.normal(size=(2, 4))

    def loss(x, mask, src):
        return (ops.masked_scatter(x, mask, src) * Tensor(w)).sum()
    grad = _in_mode(lambda *a: ms.grad(loss, grad_position=(0, 2))(*a), mode)
    gx, gs = grad(Tensor(x), Tensor(mask), Tensor(src))
    np.testing.assert_allclose(gx.asnumpy(), np.where(mask, 0, w))
    np.testing.assert_allclose(gs.asnumpy(), w[mask])


class _MaskedRegression(nn.Cell):
    """A linear model whose loss counts only the labelled rows (label >= 0): masked_select in the
    loss, the count known only when the step runs."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([[0.5], [-0.3], [0.2]], np.float32)), name="w")

    def construct(self, x, y):
        pred = ops.matmul(x, self.w).reshape((-1,))
        labelled = y >= 0
        err = ops.masked_select(pred, labelled) - ops.masked_select(y, labelled)
        return (err * err).mean()


def _numpy_training(x, y, w, lr, steps):
    losses = []
    for _ in range(steps):
        keep = y >= 0
        err = (x @ w).reshape(-1)[keep] - y[keep]
        losses.append((err ** 2).mean())
        g = x[keep].T @ (2 * err / keep.sum())
        w = w - lr * g.reshape(w.shape)
    return losses, w


def test_training_step_with_masked_select_in_its_loss_both_modes():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(8, 3)).astype(np.float32)
    y = rng.normal(size=(8,)).astype(np.float32)
    y[[1, 4, 5]] = -1.0  # unlabelled
    ref_losses, ref_w = _numpy_training(x.astype(np.float64), y.astype(np.float64),
                                        np.array([[0.5], [-0.3], [0.2]]), 0.1, 4)
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        net = _MaskedRegression()
        step = nn.TrainOneStepCell(net, nn.SGD(net.trainable_params(), learning_rate=0.1))
        losses = [float(step(Tensor(x), Tensor(y)).asnumpy()) for _ in range(4)]
        np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(net.w.asnumpy(), ref_w, rtol=1e-5, atol=1e-6)


def test_errors_name_the_op_and_the_rule():
    x = Tensor(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match=r"masked_select.*must be bool"):
        ops.masked_select(x, Tensor(np.ones((2, 3), np.float32)))
    with pytest.raises(ValueError, match="masked_select: shapes"):
        ops.masked_select(x, Tensor(np.ones((4,), bool)))
    with pytest.raises(ValueError, match=r"masked_scatter.*selects 6 elements.*has only 2"):
        ops.masked_scatter(x, Tensor(np.ones((2, 3), bool)), Tensor(np.ones(2, np.float32)))
    with pytest.raises(ValueError, match=r"unique_consecutive: axis must be an int in \[-2, 2\), got 2"):
        ops.unique_consecutive(x, axis=2)
    # vmap plans every shape before running: a data-dependent size is refused there, clearly.
    with pytest.raises(Exception, match=r"masked_select.*known only from the values"):
        ms.vmap(lambda v: ops.masked_select(v, v > 0))(x)


def test_graph_mode_refuses_a_data_dependent_value_for_a_parameter():
    ms.set_context(mode=ms.GRAPH_MODE)

    class C(nn.Cell):
        def __init__(self):
            super().__init__()
            self.p = Parameter(Tensor(np.zeros(3, np.float32)), name="p")

        def construct(self, x):
            ops.assign(self.p, ops.masked_select(x, x > 0))
            return self.p

    with pytest.raises(TypeError, match=r"\[assign\].*must match Parameter 'p' \(f32\[3\]\), got f32\[\?\]"):
        C()(Tensor(np.array([1.0, -1.0, 2.0], np.float32)))


class _ConvOnSelected(nn.Cell):
    """A conv net over the images a mask selects: the batch is known only when the step runs."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="same", weight_init="normal")
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(8, 4, 3, pad_mode="same", weight_init="normal")

    def construct(self, images, keep):
        h = self.pool(ops.relu(self.conv(images[keep])))
        return ops.relu(self.conv2(h)).sum(axis=(2, 3))


@pytest.mark.parametrize("layout", ["all", "0"])
def test_conv_net_on_masked_rows_matches_eager(layout, monkeypatch):
    """Convolutions over a data-dependent batch, with oneDNN's blocked layouts forced on (the
    ragged activations then get their padded size) and off."""
    monkeypatch.setenv("MYCEL_LAYOUT", layout)
    rng = np.random.default_rng(9)
    images = Tensor(rng.normal(size=(5, 3, 8, 8)).astype(np.float32))
    net = _ConvOnSelected()
    keeps = [np.array([True, False, True, True, False]), np.array([False] * 4 + [True]),
             np.array([True] * 5)]
    eager = [net(images, Tensor(k)).asnumpy() for k in keeps]
    ms.set_context(mode=ms.GRAPH_MODE)
    for k, want in zip(keeps, eager):
        got = net(images, Tensor(k)).asnumpy()
        assert got.shape == (k.sum(), 4)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
