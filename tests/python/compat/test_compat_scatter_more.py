"""MindSpore's scatter families (ops/scatter_reduce.cc, ops/function_more/scatter_more.py):
tensor_scatter_mul/div/max/min, scatter_nd_*, scatter_* on Parameters, the primitives,
inplace_index_add, diagonal_scatter, index_put, fill_diagonal, against numpy loops in both
modes, with gradients by finite differences."""
import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops
from mycel.ops import operations as P

RNG = np.random.default_rng(7)


def T(a):
    return ms.Tensor(np.asarray(a))


def close(got, want, tol=1e-6):
    got = got.asnumpy() if hasattr(got, "asnumpy") else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def graph(fn, *args):
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        return fn(*args)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


NP = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
      "min": np.minimum}


def nd_ref(kind, x, idx, upd):
    out = x.copy()
    k = idx.shape[-1]
    rows = idx.reshape(-1, k)
    upd = upd.reshape((rows.shape[0],) + x.shape[k:])
    for r, row in enumerate(rows):
        key = tuple(row)
        out[key] = NP[kind](out[key], upd[r])
    return out


def test_tensor_scatter_reductions_eager_and_graph():
    x = RNG.normal(size=(5, 3))
    idx = np.array([[1], [4], [1], [0]])
    upd = RNG.normal(size=(4, 3)) + 2.0

    class Net(nn.Cell):
        def construct(self, x, i, u):
            return (ops.tensor_scatter_mul(x, i, u), ops.tensor_scatter_div(x, i, u),
                    ops.tensor_scatter_max(x, i, u), ops.tensor_scatter_min(x, i, u))

    want = [nd_ref(k, x, idx, upd) for k in ("mul", "div", "max", "min")]
    for outs in (Net()(T(x), T(idx), T(upd)), graph(Net(), T(x), T(idx), T(upd))):
        for got, w in zip(outs, want):
            close(got, w, 1e-12)
    close(P.TensorScatterMax()(T(x), T(idx), T(upd)), want[2], 1e-12)
    ints = np.array([[7, -7], [9, 3]], np.int32)
    got = ops.tensor_scatter_div(T(ints), T(np.array([[0, 0], [0, 1], [1, 1]])), T(np.array([2, -2, 0], np.int32)))
    assert got.asnumpy().tolist() == [[3, 3], [9, 0]]  # C division truncates; / 0 gives 0


def test_parameter_scatters_update_in_place_in_both_modes():
    base = RNG.normal(size=(4, 3)).astype(np.float32)
    idx_rows = np.array([2, 0, 2], np.int32)
    upd_rows = RNG.uniform(1, 2, (3, 3)).astype(np.float32)
    idx_nd = np.array([[0, 1], [3, 2], [0, 1]], np.int32)
    upd_nd = RNG.uniform(1, 2, 3).astype(np.float32)
    cases = [("sub", ops.scatter_sub, P.ScatterSub), ("mul", ops.scatter_mul, P.ScatterMul),
             ("div", ops.scatter_div, P.ScatterDiv), ("max", ops.scatter_max, P.ScatterMax),
             ("min", ops.scatter_min, P.ScatterMin)]
    for kind, fn, prim in cases:
        want = nd_ref(kind, base, idx_rows[:, None], upd_rows)
        p = ms.Parameter(T(base.copy()), name="p")
        out = fn(p, T(idx_rows), T(upd_rows))
        close(p, want)
        close(out, want)
        p2 = ms.Parameter(T(base.copy()), name="p2")
        prim(use_locking=False)(p2, T(idx_rows), T(upd_rows))
        close(p2, want)
    for kind in ("add", "sub", "mul", "div", "max", "min"):
        want = nd_ref(kind, base, idx_nd, upd_nd)
        p = ms.Parameter(T(base.copy()), name="q")
        getattr(ops, f"scatter_nd_{kind}")(p, T(idx_nd), T(upd_nd))
        close(p, want)
        prim = getattr(P, f"ScatterNd{kind.capitalize()}")()

        class Net(nn.Cell):
            def __init__(self):
                super().__init__()
                self.w = ms.Parameter(T(base.copy()), name="w")
                self.op = prim

            def construct(self, i, u):
                return self.op(self.w, i, u) * 1.0

        net = Net()
        close(graph(net, T(idx_nd), T(upd_nd)), want)
        close(net.w, want)
    p = ms.Parameter(T(base.copy()), name="r")
    P.ScatterNonAliasingAdd()(p, T(idx_nd), T(upd_nd))
    close(p, nd_ref("add", base, idx_nd, upd_nd))
    with pytest.raises(TypeError, match="use_locking"):
        P.ScatterMul(use_locking=1)


def test_segment_primitives_inplace_index_add_and_tensor_methods():
    x = RNG.normal(size=(6, 2))
    ids = np.array([0, 2, 0, 1, 2, 2])
    for prim, red, empty in ((P.UnsortedSegmentMax, np.max, None), (P.UnsortedSegmentMin, np.min, None),
                             (P.UnsortedSegmentProd, np.prod, 1.0)):
        got = prim()(T(x), T(ids), 4).asnumpy()
        for s in range(3):
            close(got[s], red(x[ids == s], 0))
        if empty is not None:
            close(got[3], [empty, empty])
    v = ms.Parameter(T(np.zeros((3, 4))), name="v")
    ops.inplace_index_add(v, T(np.array([1, 3], np.int32)), T(np.ones((3, 2))), 1)
    want = np.zeros((3, 4))
    want[:, [1, 3]] += 1
    close(v, want)
    a, i, u = RNG.normal(size=(4, 3)), np.array([[2], [0]]), RNG.uniform(1, 2, (2, 3))
    close(T(a).scatter_mul(T(i), T(u)), nd_ref("mul", a, i, u))
    close(T(a).scatter_div(T(i), T(u)), nd_ref("div", a, i, u))
    close(T(a).scatter_max(T(i), T(u)), nd_ref("max", a, i, u))
    close(T(a).scatter_min(T(i), T(u)), nd_ref("min", a, i, u))
    close(T(a).scatter_sub(T(i), T(u)), nd_ref("sub", a, i, u))
    t = T(np.zeros((2, 2), np.float32))
    assert t.fill_(3.5) is t and (t.asnumpy() == 3.5).all()


def test_diagonal_scatter_index_put_fill_diagonal():
    x = RNG.normal(size=(2, 4, 5))
    for offset, d1, d2 in ((0, 1, 2), (1, 1, 2), (-2, 1, 2), (0, 0, 2), (1, 2, 0)):
        diag = np.diagonal(x, offset, d1, d2)
        src = RNG.normal(size=diag.shape)
        want = x.copy()
        view = np.diagonal(want, offset, d1, d2)  # read-only view: write through indices
        n = view.shape[-1]
        r = np.arange(n) + max(0, -offset)
        c = r + offset
        moved = np.moveaxis(want, (d1, d2), (-2, -1))
        moved[..., r, c] = src
        close(ops.diagonal_scatter(T(x), T(src), offset, d1, d2), want, 1e-12)
    close(graph(lambda a, s: ops.diagonal_scatter(a, s, 1, 1, 2), T(x), T(np.ones((2, 4)))),
          np.where(np.eye(4, 5, 1, dtype=bool)[None], 1.0, x), 1e-12)
    g = ms.grad(lambda a, s: (ops.diagonal_scatter(a, s, 0, 1, 2) * T(x)).sum(), grad_position=(0, 1))(
        T(x), T(np.ones((2, 4))))
    close(g[0], np.where(np.eye(4, 5, dtype=bool)[None], 0.0, x), 1e-12)
    close(g[1], np.diagonal(x, 0, 1, 2), 1e-12)
    with pytest.raises(ValueError, match="diagonal_scatter: src shape"):
        ops.diagonal_scatter(T(x), T(np.ones((2, 3))), 0, 1, 2)
    m = RNG.normal(size=(4, 5))
    i0, i1 = np.array([0, 3, 0]), np.array([1, 4, 1])
    want = m.copy()
    want[i0, i1] = [7.0, 8.0, 9.0]
    close(T(m).index_put((T(i0[1:]), T(i1[1:])), T(np.array([8.0, 9.0]))), np.where(
        (np.arange(4)[:, None] == 3) & (np.arange(5)[None] == 4), 8.0,
        np.where((np.arange(4)[:, None] == 0) & (np.arange(5)[None] == 1), 9.0, m)), 1e-12)
    acc = m.copy()
    np.add.at(acc, (i0, i1), 1.0)
    close(T(m).index_put((T(i0), T(i1)), T(np.array(1.0)), True), acc, 1e-12)
    rows = m.copy()
    rows[[1, 2]] = 5.0
    close(T(m).index_put((T(np.array([1, 2])),), T(np.array(5.0))), rows, 1e-12)
    for shape, wrap in (((4, 4), False), ((7, 3), True), ((7, 3), False), ((3, 3, 3), False)):
        a = RNG.normal(size=shape)
        want = a.copy()
        np.fill_diagonal(want, -1.0, wrap=wrap)
        close(T(a).fill_diagonal(-1.0, wrap), want, 1e-12)


def test_gradients_against_finite_differences():
    x = RNG.normal(size=(4, 3))
    idx = np.array([[3], [0]])
    u = RNG.normal(size=(2, 3)) + 3.0

    def fd(f, v, eps=1e-6):
        g = np.zeros_like(v)
        for k in np.ndindex(v.shape):
            hi, lo = v.copy(), v.copy()
            hi[k] += eps
            lo[k] -= eps
            g[k] = (f(hi) - f(lo)) / (2 * eps)
        return g

    w = RNG.normal(size=(4, 3))
    ti, tw = T(idx), T(w)
    for kind in ("mul", "div", "max", "min"):
        op = getattr(ops, f"tensor_scatter_{kind}")

        class Net(nn.Cell):
            def construct(self, a, b):
                return (op(a, ti, b) * tw).sum()

        class Grad(nn.Cell):
            def __init__(self):
                super().__init__()
                self.net = Net()

            def construct(self, a, b):
                return ops.grad(self.net, (0, 1))(a, b)

        want_x = fd(lambda v: (nd_ref(kind, v, idx, u) * w).sum(), x)
        want_u = fd(lambda v: (nd_ref(kind, x, idx, v) * w).sum(), u)
        for gx, gu in (Grad()(T(x), T(u)), graph(Grad(), T(x), T(u))):
            close(gx, want_x, 1e-6)
            close(gu, want_u, 1e-6)
    # ties: MindSpore shares the sensitivity between the input element and the update
    zero = T(np.array([[0]]))
    tie = ops.grad(lambda a, b: ops.tensor_scatter_max(a, zero, b).sum(), (0, 1))(
        T(np.array([1.0, 2.0])), T(np.array([1.0])))
    close(tie[0], [0.5, 1.0])
    close(tie[1], [0.5])


def test_vmap_and_errors():
    xs = RNG.normal(size=(3, 4, 2))
    us = RNG.uniform(1, 2, (3, 2, 2))
    idx = np.array([[1], [3]])
    ti = T(idx)
    got = ops.vmap(lambda a, b: ops.tensor_scatter_mul(a, ti, b))(T(xs), T(us))
    close(got, np.stack([nd_ref("mul", xs[b], idx, us[b]) for b in range(3)]), 1e-12)
    with pytest.raises(ValueError, match=r"tensor_scatter_max.*index depth"):
        ops.tensor_scatter_max(T(np.zeros((2, 2))), T(np.zeros((1, 3), np.int64)), T(np.zeros(1)))
    with pytest.raises(Exception, match=r"tensor_scatter_div.*updates"):
        ops.tensor_scatter_div(T(np.zeros((2, 2))), T(np.zeros((1, 1), np.int64)), T(np.zeros((3,))))
    with pytest.raises(TypeError, match=r"tensor_scatter_mul.*int32 or int64"):
        ops.tensor_scatter_mul(T(np.zeros((2, 2))), T(np.zeros((1, 1))), T(np.zeros((1, 2))))
    with pytest.raises(Exception, match=r"tensor_scatter_min"):
        ops.tensor_scatter_min(T(np.zeros((2, 2))), T(np.array([[5]])), T(np.zeros((1, 2))))
