"""MindSpore's hfft2/hfftn/ihfft2/ihfftn and scipy's DCT/DST (types 1-4, every norm) against
scipy.fft, in both modes, with the real transforms' gradients against finite differences."""
import numpy as np
import pytest
import scipy.fft

import mycel as ms
from mycel import Tensor, nn, ops

MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
R = np.random.default_rng(1406)
NORMS = [None, "backward", "ortho", "forward"]


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _c(shape):
    return R.normal(size=shape) + 1j * R.normal(size=shape)


@MODES
@pytest.mark.parametrize("norm", NORMS)
def test_hermitian_nd_vs_scipy(mode, norm):
    ms.set_context(mode=mode)
    z, x = _c((2, 4, 5)), R.normal(size=(2, 4, 6))

    class Forms(nn.Cell):
        def construct(self, zz, xx):
            return (ops.hfft2(zz, norm=norm), ops.hfftn(zz, s=(3, 8), norm=norm),
                    ops.hfftn(zz, dim=(0, 2), norm=norm), ops.ihfft2(xx, norm=norm),
                    ops.ihfftn(xx, s=(5, 4), dim=(1, 2), norm=norm), ops.ihfftn(xx, norm=norm))

    got = [t.asnumpy() for t in Forms()(Tensor(z), Tensor(x))]
    want = [scipy.fft.hfft2(z, norm=norm), scipy.fft.hfftn(z, s=(3, 8), axes=(-2, -1), norm=norm),
            scipy.fft.hfftn(z, axes=(0, 2), norm=norm), scipy.fft.ihfft2(x, norm=norm),
            scipy.fft.ihfftn(x, s=(5, 4), axes=(1, 2), norm=norm), scipy.fft.ihfftn(x, norm=norm)]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


def test_hermitian_roundtrip_and_single_precision():
    x = R.normal(size=(3, 4, 8)).astype(np.float32)
    back = ops.hfftn(ops.ihfftn(Tensor(x), dim=(1, 2)), s=(4, 8), dim=(1, 2))
    assert back.dtype == ms.float32
    np.testing.assert_allclose(back.asnumpy(), x, atol=1e-5)


@MODES
@pytest.mark.parametrize("kind", ["dct", "dst"])
@pytest.mark.parametrize("type_", [1, 2, 3, 4])
@pytest.mark.parametrize("norm", NORMS)
def test_dct_dst_vs_scipy(mode, kind, type_, norm):
    ms.set_context(mode=mode)
    x = R.normal(size=(3, 6, 5))
    fwd, inv = getattr(ops, kind), getattr(ops, "i" + kind)

    class Forms(nn.Cell):
        def construct(self, t):
            return (fwd(t, type_, norm=norm), fwd(t, type_, n=8, axis=1, norm=norm),
                    fwd(t, type_, n=3, axis=-1, norm=norm),
                    inv(t, type_, norm=norm), inv(t, type_, n=7, axis=1, norm=norm))

    got = [t.asnumpy() for t in Forms()(Tensor(x))]
    sf, si = getattr(scipy.fft, kind), getattr(scipy.fft, "i" + kind)
    want = [sf(x, type_, norm=norm), sf(x, type_, n=8, axis=1, norm=norm), sf(x, type_, n=3, axis=-1, norm=norm),
            si(x, type_, norm=norm), si(x, type_, n=7, axis=1, norm=norm)]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind", ["dct", "dst"])
def test_dct_dst_float32_and_roundtrip(kind):
    x = R.normal(size=(4, 16)).astype(np.float32)
    fwd, inv = getattr(ops, kind), getattr(ops, "i" + kind)
    for t in (1, 2, 3, 4):
        y = fwd(Tensor(x), t, norm="ortho")
        assert y.dtype == ms.float32
        np.testing.assert_allclose(y.asnumpy(), getattr(scipy.fft, kind)(x, t, norm="ortho"), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(inv(y, t, norm="ortho").asnumpy(), x, atol=1e-4)


@MODES
@pytest.mark.parametrize("kind", ["dct", "idct", "dst", "idst"])
@pytest.mark.parametrize("type_", [1, 2, 3, 4])
def test_dct_dst_gradients(mode, kind, type_):
    """d sum(W * T(x)) / dx = T^T W, against central differences of scipy's transform."""
    ms.set_context(mode=mode)
    x, w = R.normal(size=(2, 5)), R.normal(size=(2, 6))
    op = getattr(ops, kind)

    class Loss(nn.Cell):
        def construct(self, t):
            return (op(t, type_, n=6, norm="ortho") * Tensor(w)).sum()

    g = ops.grad(Loss())(Tensor(x)).asnumpy()
    ref = getattr(scipy.fft, kind)
    eps, want = 1e-6, np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        want[idx] = (np.sum(w * ref(x + e, type_, n=6, norm="ortho"))
                     - np.sum(w * ref(x - e, type_, n=6, norm="ortho"))) / (2 * eps)
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)


def test_dct_errors():
    x = Tensor(np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"\[dct\] type must be 1, 2, 3 or 4, got 5"):
        ops.dct(x, 5)
    with pytest.raises(ValueError, match=r"\[dst\] norm must be None, 'backward', 'ortho' or 'forward'"):
        ops.dst(x, norm="bad")
    with pytest.raises(ValueError, match=r"\[dct\] the transform length must be at least 2 for type 1"):
        ops.dct(Tensor(np.ones((2, 1))), 1)
    with pytest.raises(TypeError, match=r"dct"):
        ops.dct(np.ones(3))
