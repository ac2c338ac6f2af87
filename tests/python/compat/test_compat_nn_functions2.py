"""MindSpore's pooling/unpooling, conv1d, bias_add, bidense, group_norm, rrelu, margin losses,
CTC greedy decoding and the primitives over them (ops/function_more/nn2.py,
ops/operations/compat_ops4.py, nn/layer/pooling_more.py), against numpy brute force, with
gradients by central finite differences and graph-mode runs."""
import math

import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops

RNG = np.random.default_rng(14)


def T(a):
    return ms.Tensor(np.asarray(a))


def close(got, want, tol=1e-5):
    got = got.asnumpy() if hasattr(got, "asnumpy") else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def fd_check(f, xs, wrt=0, eps=1e-6, tol=1e-5):
    """grad of sum(f(*xs)) w.r.t. xs[wrt] against central differences (float64)."""
    xs = [np.asarray(x, np.float64) for x in xs]
    got = ms.grad(lambda *ts: f(*ts).sum(), grad_position=wrt)(*[T(x) for x in xs]).asnumpy()
    num = np.zeros_like(xs[wrt])
    for idx in np.ndindex(*xs[wrt].shape):
        hi = [x.copy() for x in xs]
        lo = [x.copy() for x in xs]
        hi[wrt][idx] += eps
        lo[wrt][idx] -= eps
        num[idx] = (float(f(*[T(x) for x in hi]).sum().asnumpy()) - float(f(*[T(x) for x in lo]).sum().asnumpy())) / (2 * eps)
    np.testing.assert_allclose(got, num, rtol=tol, atol=tol)


def in_graph(cell, *args):
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        return cell(*args)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def adaptive_ref(x, out, reduce):
    """numpy brute force over the last len(out) dims, windows floor(i n / o) .. ceil((i+1) n / o)."""
    nd = len(out)
    spatial = x.shape[-nd:]
    res = np.zeros(x.shape[:-nd] + tuple(out), x.dtype)
    arg = np.zeros(x.shape[:-nd] + tuple(out), np.int64)
    for cell in np.ndindex(*out):
        sl = [slice(c * n // o, -(-(c + 1) * n // o)) for c, n, o in zip(cell, spatial, out)]
        win = x[(Ellipsis,) + tuple(sl)]
        flat = win.reshape(win.shape[:-nd] + (-1,))
        res[(Ellipsis,) + cell] = reduce(flat, axis=-1)
        local = np.unravel_index(flat.argmax(-1), win.shape[-nd:])
        pos = tuple(l + s.start for l, s in zip(local, sl))
        arg[(Ellipsis,) + cell] = np.ravel_multi_index(pos, spatial)
    return res, arg


def test_adaptive_pools_against_brute_force():
    x1 = RNG.normal(size=(2, 3, 7)).astype(np.float32)
    close(ops.adaptive_avg_pool1d(T(x1), 3), adaptive_ref(x1, (3,), np.mean)[0])
    close(ops.adaptive_max_pool1d(T(x1), 4), adaptive_ref(x1, (4,), np.max)[0])
    x2 = RNG.normal(size=(2, 3, 5, 7)).astype(np.float32)
    vals, idx = ops.adaptive_max_pool2d(T(x2), (2, 3), return_indices=True)
    want_v, want_i = adaptive_ref(x2, (2, 3), np.max)
    close(vals, want_v)
    np.testing.assert_array_equal(idx.asnumpy(), want_i)
    assert idx.dtype == ms.int64
    close(ops.adaptive_max_pool2d(T(x2[0]), (None, 3)), adaptive_ref(x2[0], (5, 3), np.max)[0])
    x3 = RNG.normal(size=(1, 2, 5, 4, 6)).astype(np.float32)
    close(ops.adaptive_avg_pool3d(T(x3), (2, 3, 4)), adaptive_ref(x3, (2, 3, 4), np.mean)[0])
    v3, i3 = nn.AdaptiveMaxPool3d((3, 2, 4), return_indices=True)(T(x3))
    want_v3, want_i3 = adaptive_ref(x3, (3, 2, 4), np.max)
    close(v3, want_v3)
    np.testing.assert_array_equal(i3.asnumpy(), want_i3)
    close(in_graph(nn.AdaptiveMaxPool3d(2), T(x3)), adaptive_ref(x3, (2, 2, 2), np.max)[0])
    with pytest.raises(ValueError, match="adaptive_avg_pool3d: output_size"):
        ops.adaptive_avg_pool3d(T(x3), (2, 0, 1))
    with pytest.raises(ValueError, match="adaptive_max_pool2d: input must have rank 3 or 4"):
        ops.adaptive_max_pool2d(T(x1[0, 0]), 2)


def avg_pool1d_ref(x, k, s, p, ceil_mode, include_pad):
    n = x.shape[-1]
    span = n + 2 * p - k
    out = -(-span // s) + 1 if ceil_mode else span // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    res = []
    for i in range(out):
        lo, hi = i * s - p, i * s - p + k
        vals = x[..., max(lo, 0):min(hi, n)].sum(-1)
        div = (min(hi, n + p) - max(lo, -p)) if include_pad else (min(hi, n) - max(lo, 0))
        res.append(vals / div)
    return np.stack(res, -1)


@pytest.mark.parametrize("k, s, p, ceil_mode, include_pad", [
    (3, 1, 0, False, True), (3, 2, 1, False, True), (3, 2, 1, False, False), (4, 3, 2, True, True),
    (2, 2, 0, True, False)])
def test_avg_pool1d_against_numpy(k, s, p, ceil_mode, include_pad):
    x = RNG.normal(size=(2, 3, 8)).astype(np.float32)
    close(ops.avg_pool1d(T(x), k, s, p, ceil_mode, include_pad), avg_pool1d_ref(x, k, s, p, ceil_mode, include_pad))


def test_lp_pools():
    x = np.abs(RNG.normal(size=(2, 3, 9))).astype(np.float32) + 0.1
    want = np.stack([np.sum(x[..., i:i + 3] ** 2, -1) ** 0.5 for i in range(0, 7, 2)], -1)
    close(ops.lp_pool1d(T(x), 2, 3, 2), want, 1e-4)
    x2 = np.abs(RNG.normal(size=(1, 2, 5, 6))).astype(np.float32) + 0.1
    want2 = np.zeros((1, 2, 2, 3), np.float32)
    for i in range(2):
        for j in range(3):
            want2[..., i, j] = np.sum(x2[..., 2 * i:2 * i + 2, 2 * j:2 * j + 2] ** 3, (-2, -1)) ** (1 / 3)
    close(ops.lp_pool2d(T(x2), 3, 2), want2, 1e-4)
    # ceil_mode keeps the partial last window (zeros add nothing to the power sum)
    want3 = np.stack([np.sum(x2[..., :, j:j + 4] ** 1, -1) for j in range(0, 6, 4)], -1)
    close(ops.lp_pool2d(T(x2), 1, (1, 4), (1, 4), ceil_mode=True), want3, 1e-4)


def maxpool_argmax_ref(x, k, s):
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    vals = np.zeros((n, c, oh, ow), x.dtype)
    idx = np.zeros((n, c, oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * s:i * s + k, j * s:j * s + k].reshape(n, c, -1)
            a = win.argmax(-1)
            vals[:, :, i, j] = win.max(-1)
            idx[:, :, i, j] = (i * s + a // k) * w + j * s + a % k
    return vals, idx


def test_max_pool_with_argmax_and_unpool_round_trip():
    x = RNG.normal(size=(2, 3, 6, 8)).astype(np.float32)
    vals, idx = ops.MaxPoolWithArgmax(kernel_size=2, strides=2)(T(x))
    want_v, want_i = maxpool_argmax_ref(x, 2, 2)
    close(vals, want_v)
    np.testing.assert_array_equal(idx.asnumpy(), want_i)
    assert idx.dtype == ms.int32
    up = ops.max_unpool2d(vals, idx, 2)
    want = np.zeros_like(x).reshape(2, 3, -1)
    np.put_along_axis(want, want_i.reshape(2, 3, -1), want_v.reshape(2, 3, -1), -1)
    close(up, want.reshape(x.shape))
    close(nn.MaxUnpool2d(2, 2)(vals, idx, (2, 3, 7, 9)).shape, (2, 3, 7, 9))
    close(in_graph(nn.MaxUnpool2d(2), vals, idx), want.reshape(x.shape))
    # 'same' padding (TensorFlow's): output ceil(H / s); windows over padding never pick it
    v_same, i_same = ops.MaxPoolWithArgmax(kernel_size=3, strides=2, pad_mode="same")(T(x))
    xp = np.pad(x, ((0, 0), (0, 0), (0, 1), (0, 1)), constant_values=-np.inf)
    assert v_same.shape == (2, 3, 3, 4)
    close(v_same, maxpool_argmax_ref(xp, 3, 2)[0])
    with pytest.raises(IndexError, match="out of range"):
        ops.max_unpool2d(vals, idx * 0 + 1000, 2)


def test_max_unpool1d_3d_and_gradient():
    x = RNG.normal(size=(2, 2, 4)).astype(np.float64)
    idx = np.array([0, 3, 5, 6], np.int64)[None, None].repeat(2, 0).repeat(2, 1)
    out = nn.MaxUnpool1d(2)(T(x), T(idx))
    want = np.zeros((2, 2, 8))
    np.put_along_axis(want, idx, x, -1)
    close(out, want)
    x3 = RNG.normal(size=(1, 1, 2, 2, 2))
    i3 = np.array([0, 5, 10, 15, 40, 45, 50, 63], np.int64).reshape(1, 1, 2, 2, 2)
    want3 = np.zeros(64)
    want3[i3.ravel()] = x3.ravel()
    close(ops.max_unpool3d(T(x3), T(i3), 2), want3.reshape(1, 1, 4, 4, 4))
    fd_check(lambda v: ops.max_unpool1d(v, T(idx), 2) * T(np.arange(32.0).reshape(2, 2, 8) * 0.1 + 1), [x])


def fractional_ref(x, k, out, samples):
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    vals = np.zeros((n, c) + out)
    idx = np.zeros((n, c) + out, np.int64)
    for b in range(n):
        for ch in range(c):
            starts = []
            for d in range(3):
                u, size, o, kk = samples[b, ch, d], sizes[d], out[d], k[d]
                alpha = (size - kk) / (o - 1)
                seq = [int(math.floor((i + u) * alpha) - math.floor(u * alpha)) for i in range(o - 1)] + [size - kk]
                starts.append(seq)
            for cell in np.ndindex(*out):
                sl = tuple(slice(starts[d][cell[d]], starts[d][cell[d]] + k[d]) for d in range(3))
                win = x[b, ch][sl]
                a = np.unravel_index(win.argmax(), win.shape)
                vals[(b, ch) + cell] = win.max()
                idx[(b, ch) + cell] = np.ravel_multi_index(tuple(a[d] + sl[d].start for d in range(3)), sizes)
    return vals, idx


def test_fractional_max_pool3d_against_brute_force():
    x = RNG.normal(size=(2, 2, 7, 6, 8))
    samples = RNG.uniform(size=(2, 2, 3))
    vals, idx = ops.fractional_max_pool3d(T(x), (2, 2, 3), (4, 3, 5), return_indices=True,
                                          _random_samples=T(samples.astype(np.float32)))
    want_v, want_i = fractional_ref(x, (2, 2, 3), (4, 3, 5), samples)
    close(vals, want_v)
    np.testing.assert_array_equal(idx.asnumpy(), want_i)
    layer = nn.FractionalMaxPool3d(2, output_ratio=0.5, _random_samples=T(samples.astype(np.float32)))
    close(layer(T(x)), fractional_ref(x, (2, 2, 2), (3, 3, 4), samples)[0])
    close(in_graph(layer, T(x)), fractional_ref(x, (2, 2, 2), (3, 3, 4), samples)[0])
    assert ops.fractional_max_pool3d(T(x[0]), 2, (3, 3, 3)).shape == (2, 3, 3, 3)  # drawn boxes, unbatched
    fd_check(lambda v: ops.fractional_max_pool3d(v, 2, (2, 2, 2), _random_samples=T(samples[:1, :1].astype(np.float32))),
             [RNG.normal(size=(1, 1, 4, 3, 4))])
    with pytest.raises(ValueError, match="does not fit"):
        ops.fractional_max_pool3d(T(x), 3, (7, 3, 3))


def test_conv1d_bias_add_bidense_against_numpy():
    x = RNG.normal(size=(2, 4, 9))
    w = RNG.normal(size=(6, 2, 3))
    b = RNG.normal(size=(6,))
    out = ops.conv1d(T(x), T(w), T(b), stride=2, pad_mode="pad", padding=1, dilation=1, groups=2)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1)))
    want = np.zeros((2, 6, 5))
    for o in range(6):
        g = o // 3
        for t in range(5):
            want[:, o, t] = np.sum(xp[:, 2 * g:2 * g + 2, 2 * t:2 * t + 3] * w[o], (1, 2)) + b[o]
    close(out, want)
    fd_check(lambda ww: ops.conv1d(T(x[:1, :2, :5]), ww), [w[:2, :2]])
    xb = RNG.normal(size=(2, 3, 4, 5))
    bb = RNG.normal(size=(3,))
    close(ops.bias_add(T(xb), T(bb)), xb + bb[:, None, None])
    with pytest.raises(ValueError, match="bias_add: bias has 4 values"):
        ops.bias_add(T(xb), T(np.zeros(4)))
    x1, x2 = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 3, 5))
    wb, bias = RNG.normal(size=(6, 4, 5)), RNG.normal(size=(6,))
    close(ops.bidense(T(x1), T(x2), T(wb), T(bias)), np.einsum("...i,oij,...j->...o", x1, wb, x2) + bias)
    fd_check(lambda a, bw: ops.bidense(a, T(x2[0]), bw), [x1[0], wb], wrt=1)


def test_group_norm_and_rrelu():
    x = RNG.normal(size=(2, 6, 3, 2))
    gamma, beta = RNG.normal(size=6), RNG.normal(size=6)
    g = x.reshape(2, 3, -1)
    want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    want = want * gamma[:, None, None] + beta[:, None, None]
    close(ops.group_norm(T(x), 3, T(gamma), T(beta)), want)
    fd_check(lambda v: ops.group_norm(v, 2) * T(np.arange(24.0).reshape(1, 6, 2, 2)), [RNG.normal(size=(1, 6, 2, 2))])
    with pytest.raises(ValueError, match="group_norm: num_groups must be a positive int dividing"):
        ops.group_norm(T(x), 4)
    xr = RNG.normal(size=(1000,)).astype(np.float32)
    y = ops.rrelu(T(xr), 0.1, 0.3).asnumpy()
    np.testing.assert_array_equal(y[xr >= 0], xr[xr >= 0])
    slope = y[xr < 0] / xr[xr < 0]
    assert slope.min() >= 0.1 - 1e-6 and slope.max() <= 0.3 + 1e-6 and slope.std() > 0.03


def test_margin_losses_against_numpy():
    x = RNG.normal(size=(4, 5))
    y = np.array([0, 3, 4, 1])
    w = np.abs(RNG.normal(size=5))
    for p in (1, 2):
        ref = np.zeros(4)
        for n in range(4):
            for i in range(5):
                if i != y[n]:
                    ref[n] += w[y[n]] * max(0.0, 0.7 - x[n, y[n]] + x[n, i]) ** p / 5
        close(ops.multi_margin_loss(T(x), T(y), p, 0.7, T(w), "none"), ref)
        close(ops.multi_margin_loss(T(x), T(y), p, 0.7, T(w)), ref.mean())
    fd_check(lambda v: ops.multi_margin_loss(v, T(y), 2, 1.5), [x])
    t = np.array([[3, 0, -1, 1, 2], [1, -1, 4, 4, 4], [-1, 0, 0, 0, 0], [4, 3, 2, 1, 0]])
    ref = np.zeros(4)
    for n in range(4):
        targets = []
        for v in t[n]:
            if v == -1:
                break
            targets.append(v)
        for j in targets:
            for i in range(5):
                if i not in targets:
                    ref[n] += max(0.0, 1 - (x[n, j] - x[n, i])) / 5
    close(ops.multilabel_margin_loss(T(x), T(t.astype(np.int32)), "none"), ref)
    close(ops.multilabel_margin_loss(T(x), T(t.astype(np.int32)), "sum"), ref.sum())
    fd_check(lambda v: ops.multilabel_margin_loss(v, T(t.astype(np.int32))), [x])


def ctc_greedy_ref(logits, lengths, merge):
    t, b, c = logits.shape
    idx, vals, logp, longest = [], [], [], 0
    for k in range(b):
        seq, prev = [], -1
        for s in range(lengths[k]):
            best = logits[s, k].argmax()
            if best != c - 1 and not (merge and best == prev):
                seq.append(best)
            prev = best
        idx += [[k, j] for j in range(len(seq))]
        vals += seq
        longest = max(longest, len(seq))
        logp.append(-sum(logits[s, k].max() for s in range(lengths[k])))
    return np.array(idx, np.int64).reshape(-1, 2), np.array(vals, np.int64), np.array([b, longest]), np.array(logp)[:, None]


@pytest.mark.parametrize("merge", [True, False])
def test_ctc_greedy_decoder_against_brute_force(merge):
    logits = RNG.normal(size=(8, 3, 4)).astype(np.float32)
    logits[2:4, 0, 1] = 5.0  # a repeat to merge
    lengths = np.array([8, 5, 0], np.int32)
    got = ops.ctc_greedy_decoder(T(logits), T(lengths), merge)
    want = ctc_greedy_ref(logits, lengths, merge)
    for g, wnt in zip(got[:3], want[:3]):
        np.testing.assert_array_equal(g.asnumpy(), wnt)
    close(got[3], want[3])
    prim = ops.CTCGreedyDecoder(merge_repeated=merge)
    np.testing.assert_array_equal(prim(T(logits), T(lengths))[1].asnumpy(), want[1])
    with pytest.raises(ValueError, match="sequence_length values must lie in"):
        ops.ctc_greedy_decoder(T(logits), T(np.array([9, 1, 1], np.int32)))


def test_primitives_conv_transpose_depthwise_dropout():
    x = RNG.normal(size=(2, 3, 5, 6))
    w = RNG.normal(size=(2, 3, 3, 3))  # channel_multiplier 2
    out = ops.DepthwiseConv2dNative(2, 3)(T(x), T(w))
    want = np.zeros((2, 6, 3, 4))
    for c in range(3):
        for q in range(2):
            for i in range(3):
                for j in range(4):
                    want[:, c * 2 + q, i, j] = np.sum(x[:, c, i:i + 3, j:j + 3] * w[q, c], (1, 2))
    close(out, want)
    # Conv2DTranspose is conv2d's input gradient: <conv2d(x, w), dy> = <x, conv2d_transpose(dy, w)>
    wt = RNG.normal(size=(4, 3, 3, 3))
    dy = RNG.normal(size=(2, 4, 2, 2))
    xs = RNG.normal(size=(2, 3, 5, 5))
    y = ops.conv2d(T(xs), T(wt), None, stride=(2, 2)).asnumpy()
    dx = ops.Conv2DTranspose(3, 3, stride=2)(T(dy), T(wt), (2, 3, 5, 5)).asnumpy()
    assert np.isclose(np.sum(y * dy), np.sum(xs * dx))
    w3 = RNG.normal(size=(2, 3, 2, 2, 2))  # (C_in, C_out, k...)
    d3 = RNG.normal(size=(1, 2, 2, 3, 2))
    out3 = ops.Conv3DTranspose(2, 3, 2, stride=2)(T(d3), T(w3)).asnumpy()
    want3 = np.zeros((1, 3, 4, 6, 4))
    for ci in range(2):
        for co in range(3):
            for p in np.ndindex(2, 3, 2):
                want3[0, co, 2 * p[0]:2 * p[0] + 2, 2 * p[1]:2 * p[1] + 2, 2 * p[2]:2 * p[2] + 2] += d3[0, ci][p] * w3[ci, co]
    close(out3, want3)
    xd = np.ones((4, 50, 2, 2), np.float32)
    yd, mask = ops.Dropout2D(keep_prob=0.6)(T(xd))
    m = mask.asnumpy()
    assert m.dtype == np.bool_ and (m == m[:, :, :1, :1]).all()
    close(yd, m / 0.6)
    assert 0.4 < m.mean() < 0.8
    y3, m3 = ops.Dropout3D(0.5)(T(np.ones((2, 40, 1, 2, 2), np.float32)))
    assert (m3.asnumpy() == m3.asnumpy()[:, :, :1, :1, :1]).all()
    with pytest.raises(ValueError, match="Dropout2D: keep_prob must be a float in"):
        ops.Dropout2D(1.5)


def test_functions_in_graph_mode():
    class Net(nn.Cell):
        def construct(self, x, w, b):
            return (ops.adaptive_avg_pool1d(x, 2).sum() + ops.avg_pool1d(x, 3, 2, 1).sum()
                    + ops.conv1d(x, w, b).sum() + ops.group_norm(x, 2).sum() * 0.0
                    + ops.multi_margin_loss(x[:, :, 0], ops.zeros((2,), ms.int32)))

    x = RNG.normal(size=(2, 4, 6)).astype(np.float32)
    w = RNG.normal(size=(3, 4, 2)).astype(np.float32)
    b = RNG.normal(size=(3,)).astype(np.float32)
    eager = Net()(T(x), T(w), T(b)).asnumpy()
    close(in_graph(Net(), T(x), T(w), T(b)), eager, 1e-4)


def test_primitives_and_ctc_in_graph_mode():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.pool = ops.MaxPoolWithArgmax(kernel_size=2, strides=2)
            self.depthwise = ops.DepthwiseConv2dNative(1, 2)

        def construct(self, x, w):
            v, i = self.pool(x)
            return ops.max_unpool2d(v, i, 2) + 0.0 * ops.sum(self.depthwise(x, w))

    x = RNG.normal(size=(1, 2, 4, 4)).astype(np.float32)
    w = RNG.normal(size=(1, 2, 2, 2)).astype(np.float32)
    close(in_graph(Net(), T(x), T(w)), Net()(T(x), T(w)).asnumpy())

    class Decode(nn.Cell):
        def construct(self, logits, lengths):
            return ops.ctc_greedy_decoder(logits, lengths)

    logits = RNG.normal(size=(6, 2, 3)).astype(np.float32)
    lengths = np.array([6, 3], np.int32)
    got = in_graph(Decode(), T(logits), T(lengths))
    want = ctc_greedy_ref(logits, lengths, True)
    for g, wnt in zip(got, want):
        close(g, wnt)


def test_more_functions_and_primitives_in_graph_mode():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.drop = ops.Dropout2D(1.0)
            self.transpose2d = ops.Conv2DTranspose(3, 3, stride=2)
            self.transpose3d = ops.Conv3DTranspose(2, 3, 2, stride=2)
            self.unpool = nn.MaxUnpool1d(2)

        def construct(self, x4, x3, b, x1, i1, w3, d3, dy, wt, t):
            v, i = ops.adaptive_max_pool2d(x4, (2, 3), True)
            out = v.sum() + ops.cast(i, ms.float32).sum() + ops.lp_pool1d(x3 * x3, 2, 2).sum()
            out = out + ops.lp_pool2d(x4 * x4, 2, 2, ceil_mode=True).sum() + self.unpool(x1, i1).sum()
            out = out + ops.bias_add(x4, b).sum() + ops.bidense(x3, x3, w3).sum()
            out = out + ops.multilabel_margin_loss(x3[0], t) + self.drop(x4)[0].sum() + ops.rrelu(x4, 0.2, 0.2).sum()
            return out + self.transpose2d(dy, wt, (2, 3, 5, 5)).sum() + self.transpose3d(d3, ops.ones((2, 3, 2, 2, 2),
                                                                                                    ms.float32)).sum()

    def f(*s):
        return T(RNG.normal(size=s).astype(np.float32))
    args = [f(2, 3, 5, 7), f(2, 3, 4), f(3), f(2, 2, 4), T(np.array([0, 3, 5, 6])[None, None].repeat(2, 0).repeat(2, 1)),
            f(5, 4, 4), f(1, 2, 2, 3, 2), f(2, 4, 2, 2), f(4, 3, 3, 3), T(np.int32([[3, 0, -1, 1], [1, -1, 2, 2], [0, 1, 2, 3]]))]
    close(in_graph(Net(), *args), Net()(*args).asnumpy(), 1e-4)
    x = RNG.normal(size=(50,)).astype(np.float32)
    close(ops.rrelu(T(x), 0.25, 0.25), np.where(x >= 0, x, 0.25 * x))


def lstm_ref(x, h0, c0, layers, hid, dirs, wts):
    """numpy LSTM; wts[(layer, d)] = (w_ih (4H, in), w_hh (4H, H), b (4H,)), gates i, f, g, o."""
    def sig(v):
        return 1 / (1 + np.exp(-v))
    hn, cn = [], []
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            wi, wh, b = wts[(layer, d)]
            h, c = h0[layer * dirs + d], c0[layer * dirs + d]
            seq = np.zeros((x.shape[0], x.shape[1], hid))
            order = range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])
            for t in order:
                z = x[t] @ wi.T + h @ wh.T + b
                i, f, g, o = np.split(z, 4, axis=1)
                c = sig(f) * c + sig(i) * np.tanh(g)
                h = sig(o) * np.tanh(c)
                seq[t] = h
            outs.append(seq)
            hn.append(h)
            cn.append(c)
        x = np.concatenate(outs, 2)
    return x, np.stack(hn), np.stack(cn)


@pytest.mark.parametrize("layers, bidirectional, has_bias", [(1, False, True), (2, True, True), (2, False, False)])
def test_lstm_primitive_against_numpy(layers, bidirectional, has_bias):
    t, n, inp, hid = 4, 2, 3, 5
    dirs = 2 if bidirectional else 1
    wts, flat_w, flat_u, flat_b = {}, [], [], []
    for layer in range(layers):
        for d in range(dirs):
            in_l = inp if layer == 0 else hid * dirs
            wi, wh = RNG.normal(size=(4 * hid, in_l)) * 0.5, RNG.normal(size=(4 * hid, hid)) * 0.5
            b = RNG.normal(size=4 * hid) if has_bias else np.zeros(4 * hid)
            wts[(layer, d)] = (wi, wh, b)
            flat_w.append(wi.ravel())
            flat_u.append(wh.ravel())
            flat_b.append(b)
    w = np.concatenate(flat_w + flat_u + (flat_b if has_bias else []))
    x = RNG.normal(size=(t, n, inp))
    h0, c0 = RNG.normal(size=(layers * dirs, n, hid)), RNG.normal(size=(layers * dirs, n, hid))
    prim = ops.LSTM(inp, hid, layers, has_bias, bidirectional, 0.0)
    out, hn, cn, _, _ = prim(T(x), T(h0), T(c0), T(w.reshape(-1, 1, 1)))
    want = lstm_ref(x, h0, c0, layers, hid, dirs, wts)
    for g, wnt in zip((out, hn, cn), want):
        close(g, wnt, 1e-9)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.lstm = prim

        def construct(self, a, b, cc, ww):
            return self.lstm(a, b, cc, ww)[0]
    close(in_graph(Net(), *[T(v.astype(np.float32)) for v in (x, h0, c0, w)]), want[0], 1e-4)
    g = ms.grad(lambda ww: prim(T(x), T(h0), T(c0), ww)[0].sum())(T(w))
    assert g.shape == w.shape and np.isfinite(g.asnumpy()).all()
    with pytest.raises(ValueError, match="LSTM: w must hold"):
        prim(T(x), T(h0), T(c0), T(w[:-1]))
