"""Softmin, GLU, PixelShuffle/PixelUnshuffle and Dropout1d/2d/3d as MindSpore programs use them,
in both modes, against numpy (and a finite-difference gradient for GLU)."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops

MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
R = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _pixel_shuffle_ref(x, r):
    *lead, cr, h, w = x.shape
    c = cr // (r * r)
    out = np.zeros((*lead, c, h * r, w * r), x.dtype)
    for ch in range(c):
        for i in range(r):
            for j in range(r):
                out[..., ch, i::r, j::r] = x[..., ch * r * r + i * r + j, :, :]
    return out


@MODES
def test_softmin_glu_pixel_shuffle_vs_numpy(mode):
    ms.set_context(mode=mode)
    x = R.normal(size=(2, 3, 4)).astype(np.float32)
    e = np.exp(-x - (-x).max(axis=1, keepdims=True))
    np.testing.assert_allclose(nn.Softmin(axis=1)(Tensor(x)).asnumpy(), e / e.sum(1, keepdims=True), rtol=1e-5)
    a, b = x[..., :2], x[..., 2:]
    np.testing.assert_allclose(nn.GLU()(Tensor(x)).asnumpy(), a / (1 + np.exp(-b)), rtol=1e-5)
    img = R.normal(size=(2, 8, 3, 5)).astype(np.float32)
    shuffled = nn.PixelShuffle(2)(Tensor(img))
    np.testing.assert_array_equal(shuffled.asnumpy(), _pixel_shuffle_ref(img, 2))
    np.testing.assert_array_equal(nn.PixelUnshuffle(2)(shuffled).asnumpy(), img)
    unbatched = R.normal(size=(9, 2, 2)).astype(np.float32)
    np.testing.assert_array_equal(ops.pixel_shuffle(Tensor(unbatched), 3).asnumpy(), _pixel_shuffle_ref(unbatched, 3))


def test_glu_gradient_vs_finite_differences():
    x = R.normal(size=(3, 4))
    g = ops.grad(lambda t: ops.glu(t, 1).sum())(Tensor(x)).asnumpy()
    eps, num = 1e-6, np.zeros_like(x)
    f = lambda v: (v[:, :2] / (1 + np.exp(-v[:, 2:]))).sum()  # noqa: E731
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        num[idx] = (f(x + d) - f(x - d)) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)


@MODES
@pytest.mark.parametrize("cls,shape", [(nn.Dropout1d, (4, 6, 50)), (nn.Dropout2d, (4, 6, 7, 8)),
                                       (nn.Dropout3d, (2, 6, 3, 4, 5))])
def test_channel_dropout(mode, cls, shape):
    ms.set_context(mode=mode)
    x = np.ones(shape, np.float32)
    layer = cls(p=0.25)
    layer.set_train(True)
    y = layer(Tensor(x)).asnumpy().reshape(shape[0], shape[1], -1)
    per_channel = y[:, :, 0]
    # each channel is dropped or kept whole, kept ones scaled by 1/(1-p)
    assert np.all((y == 0) | np.isclose(y, 1 / 0.75))
    assert np.all(y == per_channel[:, :, None])
    layer.set_train(False)
    np.testing.assert_array_equal(layer(Tensor(x)).asnumpy(), x)


def test_channel_dropout_rate_and_errors():
    y = ops.dropout2d(Tensor(np.ones((400, 50, 2, 2), np.float32)), p=0.3).asnumpy()[:, :, 0, 0]
    assert abs((y == 0).mean() - 0.3) < 0.02  # 20000 channel draws: 4.5 sigma is about 0.015
    with pytest.raises(ValueError, match="glu: the size of axis -1 must be even"):
        ops.glu(Tensor(np.ones((2, 3), np.float32)))
    with pytest.raises(ValueError, match=r"pixel_shuffle: input must be \(\*, C\*r\*r, H, W\)"):
        ops.pixel_shuffle(Tensor(np.ones((1, 3, 2, 2), np.float32)), 2)
    with pytest.raises(ValueError, match="dropout2d: input must have rank 3 or 4"):
        ops.dropout2d(Tensor(np.ones((2, 2), np.float32)))
    with pytest.raises(ValueError, match="p must be in"):
        nn.Dropout2d(p=1.5)


def _nearest_ref(x, oh, ow):
    h, w = x.shape[-2:]
    rows = np.minimum((np.arange(oh) * h // oh), h - 1)
    cols = np.minimum((np.arange(ow) * w // ow), w - 1)
    return x[..., rows[:, None], cols[None, :]]


def _bilinear_ref(x, oh, ow, align_corners):
    h, w = x.shape[-2:]

    def src(n_out, n_in):
        d = np.arange(n_out, dtype=np.float64)
        if align_corners:
            s = d * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
        else:
            s = np.maximum((d + 0.5) * n_in / n_out - 0.5, 0.0)
        i0 = np.minimum(np.floor(s).astype(int), n_in - 1)
        return i0, np.minimum(i0 + 1, n_in - 1), s - i0
    r0, r1, wr = src(oh, h)
    c0, c1, wc = src(ow, w)
    top = x[..., r0, :] * (1 - wr)[:, None] + x[..., r1, :] * wr[:, None]
    return top[..., c0] * (1 - wc) + top[..., c1] * wc


@MODES
@pytest.mark.parametrize("kw,oh,ow", [(dict(scale_factor=2), 8, 10), (dict(size=(7, 3)), 7, 3),
                                      (dict(scale_factor=(1.5, 2.0)), 6, 10)])
def test_upsample_vs_numpy(mode, kw, oh, ow):
    ms.set_context(mode=mode)
    x = R.normal(size=(2, 3, 4, 5)).astype(np.float32)
    np.testing.assert_array_equal(nn.Upsample(mode="nearest", **kw)(Tensor(x)).asnumpy(), _nearest_ref(x, oh, ow))
    for ac in (False, True):
        got = nn.Upsample(mode="bilinear", align_corners=ac, **kw)(Tensor(x)).asnumpy()
        np.testing.assert_allclose(got, _bilinear_ref(x.astype(np.float64), oh, ow, ac), rtol=1e-5, atol=1e-5)


def test_interpolate_errors():
    x = Tensor(np.ones((1, 1, 2, 2), np.float32))
    with pytest.raises(ValueError, match="mode must be 'nearest', 'linear'"):
        ops.interpolate(x, size=3, mode="cubic")
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        ops.interpolate(x)
    with pytest.raises(ValueError, match="needs an \\(N, C, H, W\\) input"):
        ops.interpolate(Tensor(np.ones((2, 2), np.float32)), size=3)
