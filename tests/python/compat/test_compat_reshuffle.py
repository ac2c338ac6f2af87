"""MindSpore's reshuffles and small array/math primitives (ops/function_more/reshuffle.py,
operations/compat_ops3.py) against numpy loops written from the definitions, in both modes."""
import itertools

import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops
from mycel.ops import operations as P

RNG = np.random.default_rng(3)


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


def s2b_ref(x, block, pads):
    """TensorFlow's space_to_batch_nd on NCHW, element by element."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    b0, b1 = block
    oh, ow = xp.shape[2] // b0, xp.shape[3] // b1
    out = np.zeros((n * b0 * b1, c, oh, ow), x.dtype)
    for i0 in range(b0):
        for i1 in range(b1):
            for k in range(n):
                out[(i0 * b1 + i1) * n + k] = xp[k, :, i0::b0, i1::b1]
    return out


def test_space_batch_depth_reshuffles_both_modes_and_gradients():
    x = RNG.normal(size=(2, 3, 4, 6))
    pads, block = ((1, 1), (0, 2)), (3, 2)
    want = s2b_ref(x, block, pads)

    class Net(nn.Cell):
        def construct(self, v):
            y = ops.space_to_batch_nd(v, block, pads)
            return y, ops.batch_to_space_nd(y, block, pads)

    for y, back in (Net()(T(x)), graph(Net(), T(x))):
        close(y, want, 0)
        close(back, x, 0)
    close(P.SpaceToBatch(2, ((0, 0), (0, 0)))(T(x)), s2b_ref(x, (2, 2), ((0, 0), (0, 0))), 0)
    close(P.BatchToSpace(2, ((0, 0), (1, 1)))(T(s2b_ref(x, (2, 2), ((0, 0), (0, 0))))), x[:, :, :, 1:5], 0)
    close(P.SpaceToBatchND((2, 3), ((0, 0), (0, 0)))(T(x)), s2b_ref(x, (2, 3), ((0, 0), (0, 0))), 0)
    d = RNG.normal(size=(2, 8, 3, 2))
    d2s = P.DepthToSpace(2)(T(d)).asnumpy()
    ref = d.reshape(2, 2, 2, 2, 3, 2).transpose(0, 3, 4, 1, 5, 2).reshape(2, 2, 6, 4)
    for k in range(2):  # out[n, c, h*b + i, w*b + j] = in[n, (i*b + j)*C + c, h, w]
        for i, j in itertools.product(range(2), range(2)):
            close(d2s[k, :, i::2, j::2], d[k, (i * 2 + j) * 2:(i * 2 + j) * 2 + 2], 0)
    close(d2s, ref, 0)
    close(P.SpaceToDepth(2)(T(d2s)), d, 0)
    w = RNG.normal(size=want.shape)
    g = ms.grad(lambda v: (ops.space_to_batch_nd(v, block, pads) * T(w)).sum())(T(x))
    close(g, ops.batch_to_space_nd(T(w), block, pads).asnumpy(), 1e-12)  # the adjoint
    with pytest.raises(ValueError, match="not divisible"):
        ops.space_to_batch_nd(T(x), (3, 4), ((0, 0), (0, 0)))


def test_reverse_sequence_combinations_unique_with_pad():
    x = RNG.normal(size=(3, 5, 2))
    lengths = np.array([2, 5, 0])
    want = x.copy()
    for b, n in enumerate(lengths):
        want[b, :n] = x[b, :n][::-1]
    close(ops.reverse_sequence(T(x), T(lengths), 1, 0), want, 0)
    close(graph(P.ReverseSequence(1, 0), T(x), T(lengths)), want, 0)
    xt = np.swapaxes(x, 0, 1)
    close(T(xt).reverse_sequence(T(lengths), 0, 1), np.swapaxes(want, 0, 1), 0)
    v = np.array([3.0, 1.0, 4.0, 1.5])
    for r, rep in ((2, False), (3, False), (2, True)):
        pick = itertools.combinations_with_replacement if rep else itertools.combinations
        close(ops.combinations(T(v), r, rep), np.array([[v[i] for i in c] for c in pick(range(4), r)]), 0)
    a = RNG.integers(0, 5, 12)
    y, idx = P.UniqueWithPad()(T(a), -1)
    order = list(dict.fromkeys(a.tolist()))
    assert y.asnumpy().tolist() == order + [-1] * (12 - len(order))
    assert idx.asnumpy().tolist() == [order.index(v) for v in a]
    yg, ig = graph(lambda t: ops.unique_with_pad(t, 7), T(a))
    assert yg.asnumpy().tolist() == order + [7] * (12 - len(order)) and (ig.asnumpy() == idx.asnumpy()).all()


def test_histogram_invert_permutation_intopk_batch_dot_nanmedian_bincount():
    x = RNG.uniform(-2, 12, 200)
    got = P.HistogramFixedWidth(7)(T(x), T(np.array([0.0, 10.0])))
    bins = np.clip(np.floor((x - 0.0) / 10.0 * 7), 0, 6).astype(int)
    assert got.dtype == ms.int32 and got.asnumpy().tolist() == np.bincount(bins, minlength=7).tolist()
    p = RNG.permutation(9)
    assert ops.invert_permutation(T(p)).asnumpy().tolist() == np.argsort(p).tolist()
    assert P.InvertPermutation()(tuple(p.tolist())) == tuple(np.argsort(p).tolist())
    scores = RNG.normal(size=(6, 5)).astype(np.float32)
    scores[0, 3] = scores[0, 1]  # a tie with the target counts in
    target = np.array([1, 0, 4, 2, 3, 1])
    rank = (scores > scores[np.arange(6), target][:, None]).sum(1)
    for k in (1, 2, 3):
        assert P.InTopK(k)(T(scores), T(target.astype(np.int32))).asnumpy().tolist() == (rank < k).tolist()
    a, b = RNG.normal(size=(4, 2, 3, 5)), RNG.normal(size=(4, 5, 6))
    close(ops.batch_dot(T(a), T(b), (3, 1)), np.einsum("bijk,bkl->bijl", a, b), 1e-12)
    close(graph(lambda u, v: ops.batch_dot(u, v), T(a[:, 0]), T(b)), np.einsum("bjk,bkl->bjl", a[:, 0], b), 1e-12)
    m = RNG.normal(size=(4, 3))
    close(ops.batch_dot(T(m), T(m), (1, 1)), (m * m).sum(1, keepdims=True), 1e-12)
    z = RNG.normal(size=(5, 6))
    z[z > 1.0] = np.nan
    z[3] = np.nan
    vals, idx = ops.nanmedian(T(z), 1)
    for r in range(5):
        keep = np.sort(z[r][~np.isnan(z[r])])
        if keep.size == 0:
            assert np.isnan(vals.asnumpy()[r])
            continue
        med = keep[(keep.size - 1) // 2]
        assert vals.asnumpy()[r] == med and z[r, idx.asnumpy()[r]] == med
    vg, _ = graph(lambda t: ops.nanmedian(t, 0, True), T(z))
    assert vg.shape == (1, 6)
    c = RNG.integers(0, 6, 30)
    wts = RNG.normal(size=30)
    assert ops.bincount(T(c)).asnumpy().tolist() == np.bincount(c).tolist()
    close(T(c).bincount(T(wts), 9), np.bincount(c, wts, 9), 1e-12)


def test_small_math_and_conversion_primitives():
    x, y = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    # MindSpore's SquareSumAll: float16 or float32 tensors of one shape
    s1, s2 = P.SquareSumAll()(T(x.astype(np.float32)), T(y.astype(np.float32)))
    close(s1, (x * x).sum(), 1e-5)
    close(s2, (y * y).sum(), 1e-5)
    assert P.ApproximateEqual(0.5)(T(x), T(x + 0.4)).asnumpy().all()
    assert not P.ApproximateEqual(0.3)(T(x), T(x + 0.4)).asnumpy().any()
    a, b = np.array([1, 2, 3, 4], np.int32), np.array([1, 0, 3, 0], np.int32)
    ec = P.EqualCount()(T(a), T(b))
    assert ec.shape == (1,) and ec.dtype == ms.int32 and ec.asnumpy().tolist() == [2]
    for p in (1, 2, 3):
        close(P.LpNorm((0, 1), p)(T(x)), (np.abs(x) ** p).sum() ** (1 / p), 1e-12)
    close(P.LpNorm(1, 2, True)(T(x)), np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    mask = x > 0
    close(P.MaskedFill()(T(x), T(mask), 9.0), np.where(mask, 9.0, x), 0)
    close(graph(P.MaskedFill(), T(x), T(mask), T(np.array(2.0))), np.where(mask, 2.0, x), 0)
    parts = P.SplitV((1, -1, 2), 1, 3)(T(x))
    assert [q.shape for q in parts] == [(3, 1), (3, 1), (3, 2)]
    close(parts[2], x[:, 2:], 0)
    assert P.TensorShape()(T(x)).asnumpy().tolist() == [3, 4] and P.DynamicShape()(T(x)).dtype == ms.int64
    assert P.ScalarCast()(3.7, ms.int32) == 3 and P.ScalarCast()(2, ms.float32) == 2.0
    t = P.ScalarToTensor()(5, ms.float64)
    assert t.dtype == ms.float64 and float(t.asnumpy()) == 5.0
    arr = P.TupleToArray()((1, 2, 3))
    assert arr.dtype == ms.int64 and arr.asnumpy().tolist() == [1, 2, 3]
    perm = P.Randperm(8, -1)(T(np.array([5], np.int32))).asnumpy()
    assert sorted(perm[:5].tolist()) == list(range(5)) and perm[5:].tolist() == [-1, -1, -1]
    g = P.Gamma(5)((2000,), T(np.array([3.0], np.float32)), T(np.array([2.0], np.float32))).asnumpy()
    assert abs(g.mean() - 6.0) < 0.4 and abs(g.var() - 12.0) < 2.0  # shape 3, scale 2 (ops.gamma's)
    po = P.Poisson(5)((3000,), T(np.array([4.0], np.float32))).asnumpy()
    assert abs(po.mean() - 4.0) < 0.2 and abs(po.var() - 4.0) < 0.5
    with pytest.raises(ValueError, match="SplitV"):
        P.SplitV((1, 2), 1, 3)
    with pytest.raises(ValueError, match="Randperm"):
        P.Randperm(3)(T(np.array([4])))
