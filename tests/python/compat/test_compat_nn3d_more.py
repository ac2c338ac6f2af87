"""MaxPool3d with dilation and return_indices, float16 3-d convolution and pooling, and CTCLoss
with 1-d concatenated targets (issue 14), in both modes, against numpy brute force."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops
from compat.test_compat_ctc import brute_nll

R = np.random.default_rng(1403)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _pool_ref(x, k, s, d, pads, out):
    """Max and first-argmax flat index over dilated windows, by looping over every output."""
    lead, (n_d, n_h, n_w) = x.shape[:-3], x.shape[-3:]
    vals = np.full(lead + tuple(out), -np.inf)
    idx = np.zeros(lead + tuple(out), np.int64)
    for o in np.ndindex(*out):
        best = np.full(lead, -np.inf)
        where = np.zeros(lead, np.int64)
        for t in np.ndindex(*k):
            p = [o[i] * s[i] - pads[i] + t[i] * d[i] for i in range(3)]
            if not all(0 <= p[i] < (n_d, n_h, n_w)[i] for i in range(3)):
                continue
            v = x[..., p[0], p[1], p[2]]
            take = v > best
            best = np.where(take, v, best)
            where = np.where(take, (p[0] * n_h + p[1]) * n_w + p[2], where)
        vals[(...,) + o] = best
        idx[(...,) + o] = where
    return vals, idx


CASES = [  # kernel, stride, dilation, pad_mode, padding, ceil_mode, input shape
    ((2, 2, 2), (1, 1, 1), (2, 2, 2), "valid", 0, False, (2, 3, 6, 7, 6)),
    ((3, 2, 3), (2, 1, 2), (1, 2, 2), "pad", (1, 1, 0, 1, 1, 1), False, (1, 2, 7, 6, 7)),
    ((2, 3, 2), (2, 2, 2), (2, 1, 1), "valid", 0, True, (2, 7, 7, 8)),
    ((3, 3, 3), (2, 2, 2), (1, 1, 1), "same", 0, False, (1, 2, 5, 6, 5)),
]


@MODES
@pytest.mark.parametrize("case", range(len(CASES)))
def test_maxpool3d_dilation_and_indices(mode, case):
    ms.set_context(mode=mode)
    k, s, d, pad_mode, padding, ceil, shape = CASES[case]
    x = R.permutation(int(np.prod(shape))).reshape(shape).astype(np.float32)  # no ties
    pool = nn.MaxPool3d(k, s, pad_mode, padding, dilation=d, return_indices=True, ceil_mode=ceil)
    out, idx = pool(Tensor(x))
    # The geometry, worked out independently: output sizes and padding before each dim.
    pads, sizes = [], []
    for i in range(3):
        n, ke = shape[-3 + i], d[i] * (k[i] - 1) + 1
        if pad_mode == "same":
            o = -(-n // s[i])
            pads.append(max((o - 1) * s[i] + ke - n, 0) // 2)
        else:
            lo, hi = (padding[2 * i], padding[2 * i + 1]) if pad_mode == "pad" else (0, 0)
            span = n + lo + hi - ke
            o = (-(-span // s[i]) if ceil else span // s[i]) + 1
            if ceil and (o - 1) * s[i] >= n + lo:
                o -= 1
            pads.append(lo)
        sizes.append(o)
    want, want_idx = _pool_ref(x.astype(np.float64), k, s, d, pads, sizes)
    np.testing.assert_array_equal(out.asnumpy(), want.astype(np.float32))
    assert idx.dtype == ms.int64
    np.testing.assert_array_equal(idx.asnumpy(), want_idx)
    # Without return_indices: the values alone; with dilation 1 they equal ops.max_pool3d's.
    alone = nn.MaxPool3d(k, s, pad_mode, padding, dilation=d, ceil_mode=ceil)(Tensor(x))
    np.testing.assert_array_equal(alone.asnumpy(), out.asnumpy())


def test_maxpool3d_indices_gradient():
    """The gradient flows to each window's maximum (distinct values: one per window)."""
    x = R.permutation(2 * 6 * 6 * 6).reshape(1, 2, 6, 6, 6).astype(np.float64)
    pool = nn.MaxPool3d(2, 2, dilation=2, return_indices=True)

    def f(t):
        out, _ = pool(t)
        return out.sum()

    g = ops.grad(f)(Tensor(x)).asnumpy()
    _, idx = pool(Tensor(x))
    want = np.zeros((1, 2, 216))
    for c in range(2):
        np.add.at(want[0, c], idx.asnumpy()[0, c].ravel(), 1.0)
    np.testing.assert_array_equal(g, want.reshape(x.shape))


def test_maxpool3d_bad_dilation():
    with pytest.raises(ValueError, match="MaxPool3d: 'dilation' must be"):
        nn.MaxPool3d(2, dilation=0)


@MODES
def test_float16_conv3d_and_pooling(mode):
    """float16 layers (computed in float32, rounded once) against the float32 layers."""
    ms.set_context(mode=mode)
    x = R.normal(size=(2, 3, 5, 6, 5)).astype(np.float16)
    conv32 = nn.Conv3d(3, 4, 3, pad_mode="pad", padding=1, has_bias=True, bias_init="normal")
    conv16 = nn.Conv3d(3, 4, 3, pad_mode="pad", padding=1, has_bias=True, dtype=ms.float16)
    conv16.weight.set_data(Tensor(conv32.weight.asnumpy().astype(np.float16)))
    conv16.bias.set_data(Tensor(conv32.bias.asnumpy().astype(np.float16)))
    conv32.weight.set_data(Tensor(conv16.weight.asnumpy().astype(np.float32)))
    conv32.bias.set_data(Tensor(conv16.bias.asnumpy().astype(np.float32)))

    class Net(nn.Cell):
        def __init__(self, conv):
            super().__init__()
            self.conv, self.mp, self.ap = conv, nn.MaxPool3d(2, 2), nn.AvgPool3d(2, 2)

        def construct(self, t):
            y = self.conv(t)
            return self.mp(y), self.ap(y)

    got = [o.asnumpy() for o in Net(conv16)(Tensor(x))]
    want = [o.asnumpy() for o in Net(conv32)(Tensor(x.astype(np.float32)))]
    for g, w in zip(got, want):
        assert g.dtype == np.float16
        np.testing.assert_allclose(g.astype(np.float32), w, rtol=1e-2, atol=1e-2)


def test_float16_conv3d_gradient():
    x = R.normal(size=(1, 2, 4, 4, 4)).astype(np.float16)
    w = (0.3 * R.normal(size=(3, 2, 2, 2, 2))).astype(np.float16)
    f = lambda a, b: ops.conv3d(a, b).sum()  # noqa: E731
    gx, gw = ops.grad(f, grad_position=(0, 1))(Tensor(x), Tensor(w))
    rx, rw = ops.grad(f, grad_position=(0, 1))(Tensor(x.astype(np.float32)), Tensor(w.astype(np.float32)))
    assert gx.dtype == ms.float16 and gw.dtype == ms.float16
    np.testing.assert_allclose(gx.asnumpy().astype(np.float32), rx.asnumpy(), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(gw.asnumpy().astype(np.float32), rw.asnumpy(), rtol=1e-2, atol=2e-2)


@MODES
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_concatenated_targets(mode, reduction):
    """1-d targets (the batch's concatenated) give the losses of the padded 2-d form and of the
    brute-force alignment sum."""
    ms.set_context(mode=mode)
    t_len, n, c = 4, 3, 3
    logits = R.normal(size=(t_len, n, c))
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    lengths = np.array([2, 1, 0], np.int64)
    flat = np.array([1, 2, 2], np.int64)
    padded = np.array([[1, 2], [2, 0], [0, 0]], np.int64)
    in_len = np.array([4, 3, 4], np.int64)
    loss = nn.CTCLoss(reduction=reduction)
    got = loss(Tensor(lp), Tensor(flat), Tensor(in_len), Tensor(lengths)).asnumpy()
    two_d = loss(Tensor(lp), Tensor(padded), Tensor(in_len), Tensor(lengths)).asnumpy()
    np.testing.assert_allclose(got, two_d, rtol=1e-12)
    items = [brute_nll(lp[:in_len[i], i], flat[sum(lengths[:i]):sum(lengths[:i + 1])], 0) for i in range(n)]
    want = {"none": np.array(items), "sum": np.sum(items),
            "mean": np.mean([v / max(l, 1) for v, l in zip(items, lengths)])}[reduction]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_ctc_concatenated_targets_gradient():
    t_len, n, c = 5, 2, 4
    lp = np.log(R.dirichlet(np.ones(c), size=(t_len, n)))
    flat, lengths, in_len = np.array([1, 3, 2, 2, 1]), np.array([3, 2]), np.array([5, 5])
    padded = np.array([[1, 3, 2], [2, 1, 0]])
    loss = nn.CTCLoss()
    g1 = ops.grad(lambda a: loss(a, Tensor(flat), Tensor(in_len), Tensor(lengths)))(Tensor(lp)).asnumpy()
    g2 = ops.grad(lambda a: loss(a, Tensor(padded), Tensor(in_len), Tensor(lengths)))(Tensor(lp)).asnumpy()
    np.testing.assert_allclose(g1, g2, rtol=1e-12)
