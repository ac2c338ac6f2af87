"""BatchNorm3d, LRN/LocalResponseNorm, AdaptiveAvgPool1d, LPPool1d/2d, Tril/Triu,
ImageGradients, PSNR, CentralCrop, RMSELoss, DiceLoss against numpy, in both modes."""
import numpy as np
import pytest

import mycel as ms
from mycel import nn

RNG = np.random.default_rng(0)


def _window_sum(sq, before, after):
    c = sq.shape[1]
    padded = np.pad(sq, ((0, 0), (before, after)) + ((0, 0),) * (sq.ndim - 2))
    return sum(padded[:, k:k + c] for k in range(before + after + 1))


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_layers_against_numpy(mode):
    x4 = RNG.normal(size=(2, 6, 4, 6)).astype(np.float32)
    x5 = RNG.normal(size=(2, 3, 2, 3, 4)).astype(np.float32)
    x3 = RNG.normal(size=(2, 3, 8)).astype(np.float32)
    pos = np.abs(x4) + 0.1
    ms.set_context(mode=mode)
    try:
        bn = nn.BatchNorm3d(3)
        bn.set_train(True)
        mean, var = x5.mean((0, 2, 3, 4), keepdims=True), x5.var((0, 2, 3, 4), keepdims=True)
        np.testing.assert_allclose(bn(ms.Tensor(x5)).asnumpy(), (x5 - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)
        lrn_ref = x4 / (1.0 + 0.5 * _window_sum(x4 ** 2, 2, 2)) ** 0.75
        np.testing.assert_allclose(nn.LRN(2, 1.0, 0.5, 0.75)(ms.Tensor(x4)).asnumpy(), lrn_ref, rtol=1e-5, atol=1e-6)
        lrn2 = x4 / (2.0 + 1e-2 / 3 * _window_sum(x4 ** 2, 1, 1)) ** 0.75
        np.testing.assert_allclose(nn.LocalResponseNorm(3, 1e-2, 0.75, 2.0)(ms.Tensor(x4)).asnumpy(), lrn2, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(nn.AdaptiveAvgPool1d(4)(ms.Tensor(x3)).asnumpy(), x3.reshape(2, 3, 4, 2).mean(-1), rtol=1e-5, atol=1e-6)
        lp = (pos.reshape(2, 6, 2, 2, 3, 2) ** 3).sum((3, 5)) ** (1 / 3)
        np.testing.assert_allclose(nn.LPPool2d(3, 2)(ms.Tensor(pos)).asnumpy(), lp, rtol=1e-4)
        lp1 = (np.abs(x3).reshape(2, 3, 4, 2) ** 2).sum(-1) ** 0.5
        np.testing.assert_allclose(nn.LPPool1d(2, 2)(ms.Tensor(np.abs(x3))).asnumpy(), lp1, rtol=1e-4)
        dy, dx = nn.ImageGradients()(ms.Tensor(x4))
        want_dy = np.concatenate([np.diff(x4, axis=2), np.zeros((2, 6, 1, 6), np.float32)], 2)
        want_dx = np.concatenate([np.diff(x4, axis=3), np.zeros((2, 6, 4, 1), np.float32)], 3)
        np.testing.assert_allclose(dy.asnumpy(), want_dy, atol=1e-6)
        np.testing.assert_allclose(dx.asnumpy(), want_dx, atol=1e-6)
        y4 = x4 + 0.1 * RNG.normal(size=x4.shape).astype(np.float32)
        psnr = 10 * np.log10(4.0 / ((x4 - y4) ** 2).mean((1, 2, 3)))
        np.testing.assert_allclose(nn.PSNR(2.0)(ms.Tensor(x4), ms.Tensor(y4)).asnumpy(), psnr, rtol=1e-4)
        np.testing.assert_array_equal(nn.CentralCrop(0.5)(ms.Tensor(x4)).asnumpy(), x4[:, :, 1:3, 1:5])
        np.testing.assert_allclose(nn.RMSELoss()(ms.Tensor(x4), ms.Tensor(y4)).asnumpy(), np.sqrt(((x4 - y4) ** 2).mean()), rtol=1e-5)
        dice = 1 - 2 * (pos * y4).sum() / ((pos ** 2).sum() + (y4 ** 2).sum() + 1e-5)
        np.testing.assert_allclose(nn.DiceLoss()(ms.Tensor(pos), ms.Tensor(y4)).asnumpy(), dice, rtol=1e-5)
        m = x4[0, 0]
        np.testing.assert_array_equal(nn.Tril()(ms.Tensor(m), 1).asnumpy(), np.tril(m, 1))
        np.testing.assert_array_equal(nn.Triu()(ms.Tensor(m)).asnumpy(), np.triu(m))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_bad_arguments():
    with pytest.raises(ValueError, match="CentralCrop: central_fraction must be in \\(0, 1\\]"):
        nn.CentralCrop(0.0)
    with pytest.raises(ValueError, match="LRN: norm_region must be 'ACROSS_CHANNELS'"):
        nn.LRN(norm_region="WITHIN")


def _unfold_ref(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, k[0] * k[1], oh, ow), x.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            out[:, :, i * k[1] + j] = xp[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                                         j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]]
    return out.reshape(n, -1, oh * ow)


@pytest.mark.parametrize("k, d, p, s", [((3, 3), (1, 1), (0, 0), (1, 1)), ((2, 3), (2, 1), (1, 0), (2, 1)),
                                        ((2, 2), (1, 1), (1, 1), (2, 2))])
def test_unfold_fold_against_loops_and_adjointness(k, d, p, s):
    from mycel import ops
    x = RNG.normal(size=(2, 3, 7, 6)).astype(np.float32)
    cols = ops.unfold(ms.Tensor(x), k, d, p, s)
    np.testing.assert_array_equal(cols.asnumpy(), _unfold_ref(x, k, d, p, s))
    y = RNG.normal(size=cols.shape).astype(np.float32)
    folded = ops.fold(ms.Tensor(y), (7, 6), k, d, p, s).asnumpy()
    # fold is unfold's adjoint: <unfold(x), y> == <x, fold(y)>
    np.testing.assert_allclose((cols.asnumpy() * y).sum(), (x * folded).sum(), rtol=1e-4)
    np.testing.assert_array_equal(nn.Fold((7, 6), k, d, p, s)(ms.Tensor(y)).asnumpy(), folded)


def test_tensorflow_style_unfold_layer():
    x = RNG.normal(size=(1, 2, 5, 5)).astype(np.float32)
    got = nn.Unfold([1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1], "valid")(ms.Tensor(x)).asnumpy()
    want = np.zeros((1, 8, 2, 2), np.float32)
    for i in range(2):
        for j in range(2):
            for c in range(2):
                want[0, (i * 2 + j) * 2 + c] = x[0, c, i:i + 4:2, j:j + 4:2]
    np.testing.assert_array_equal(got, want)
    assert nn.Unfold([1, 3, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1], "same")(ms.Tensor(x)).shape == (1, 18, 3, 3)
