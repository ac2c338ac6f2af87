"""MindSpore 2.x FFT ops (ops.fft, ifft, rfft, irfft, fft2, ifft2, fftn, ifftn, rfft2, irfft2,
rfftn, irfftn with n/s, dim and norm; fftshift, ifftshift): values against numpy.fft in both modes
on real and complex inputs of any length (primes included), vector-Jacobian products against
finite differences, and the errors bad arguments raise."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, _mycel, nn, ops
from mycel.ops import operations as P

MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
R = np.random.default_rng(41)


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _rand(shape, dtype):
    x = R.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * R.normal(size=shape)
    return x.astype(dtype)


# (name, kwargs for mycel, the same call in numpy's spelling, real input only)
CASES = [
    ("fft", {}, lambda x: np.fft.fft(x), False),
    ("fft", {"n": 7, "dim": 1, "norm": "ortho"}, lambda x: np.fft.fft(x, n=7, axis=1, norm="ortho"), False),
    ("fft", {"n": 3, "dim": 0, "norm": "forward"}, lambda x: np.fft.fft(x, n=3, axis=0, norm="forward"), False),
    ("ifft", {"n": 13}, lambda x: np.fft.ifft(x, n=13), False),
    ("ifft", {"norm": "forward"}, lambda x: np.fft.ifft(x, norm="forward"), False),
    ("fft2", {}, lambda x: np.fft.fft2(x), False),
    ("fft2", {"s": (3, 8), "dim": (0, 2)}, lambda x: np.fft.fft2(x, s=(3, 8), axes=(0, 2)), False),
    ("ifft2", {"norm": "ortho"}, lambda x: np.fft.ifft2(x, norm="ortho"), False),
    ("fftn", {}, lambda x: np.fft.fftn(x), False),
    ("fftn", {"s": (5, 4)}, lambda x: np.fft.fftn(x, s=(5, 4), axes=(1, 2)), False),
    ("ifftn", {"dim": (0, 1), "norm": "forward"}, lambda x: np.fft.ifftn(x, axes=(0, 1), norm="forward"), False),
    ("rfft", {}, lambda x: np.fft.rfft(x), True),
    ("rfft", {"n": 9, "dim": 0}, lambda x: np.fft.rfft(x, n=9, axis=0), True),
    ("irfft", {}, lambda x: np.fft.irfft(x), False),
    ("irfft", {"n": 11, "norm": "ortho"}, lambda x: np.fft.irfft(x, n=11, norm="ortho"), False),
    ("irfft", {"n": 4, "dim": 1}, lambda x: np.fft.irfft(x, n=4, axis=1), False),
    ("rfft2", {"norm": "forward"}, lambda x: np.fft.rfft2(x, norm="forward"), True),
    ("irfft2", {"s": (4, 7)}, lambda x: np.fft.irfft2(x, s=(4, 7)), False),
    ("rfftn", {}, lambda x: np.fft.rfftn(x), True),
    ("irfftn", {"dim": (0, 2)}, lambda x: np.fft.irfftn(x, axes=(0, 2)), False),
]
IDS = [f"{c[0]}-{'-'.join(f'{k}{v}' for k, v in c[1].items())}" for c in CASES]


@MODES
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_values_vs_numpy(mode, dtype):
    ms.set_context(mode=mode)
    x = _rand((4, 6, 5), dtype)
    cases = [c for c in CASES if not (c[3] and np.dtype(dtype).kind == "c")]

    def run(t):
        return tuple(getattr(ops, name)(t, **kw) for name, kw, _, _ in cases)
    fn = ms.jit(run) if mode == ms.GRAPH_MODE else run
    single = np.dtype(dtype) in (np.float32, np.complex64)
    for (name, kw, ref, _), got in zip(cases, fn(Tensor(x))):
        want = ref(x.astype(np.complex128) if np.dtype(dtype).kind == "c" else x.astype(np.float64))
        assert got.shape == want.shape, (name, kw)
        kind = "f" if name.startswith("irfft") else "c"
        assert got.asnumpy().dtype == np.dtype(f"{kind}{(4 if kind == 'f' else 8) if single else (8 if kind == 'f' else 16)}")
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4 if single else 1e-10,
                                   atol=1e-4 if single else 1e-10, err_msg=f"{name} {kw}")


def test_primitive_classes_lengths_and_shift():
    x = _rand((2, 97), np.complex128)  # a prime length
    np.testing.assert_allclose(P.FFT(n=101)(Tensor(x)).asnumpy(), np.fft.fft(x, n=101), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(P.IRFFT(n=8, dim=0)(Tensor(x[:, :5].T)).asnumpy(), np.fft.irfft(x[:, :5].T, n=8, axis=0),
                               atol=1e-12)
    np.testing.assert_allclose(ops.ifft(ops.fft(Tensor(x))).asnumpy(), x, atol=1e-12)
    r = _rand((3, 16), np.float64)
    np.testing.assert_allclose(ops.irfft(ops.rfft(Tensor(r)), n=16).asnumpy(), r, atol=1e-12)
    for dim in (None, 0, (1,), (-1, 0)):
        for fn, ref in ((ops.fftshift, np.fft.fftshift), (ops.ifftshift, np.fft.ifftshift)):
            y = _rand((5, 4), np.complex64)
            np.testing.assert_array_equal(fn(Tensor(y), dim).asnumpy(), ref(y, axes=dim))
    one = _rand((1, 1, 3), np.float64)  # length-1 axes transform as the identity
    np.testing.assert_allclose(ops.fftn(Tensor(one)).asnumpy(), np.fft.fftn(one), atol=1e-12)
    np.testing.assert_allclose(ops.irfft(Tensor(one), n=1, dim=0).asnumpy(), np.fft.irfft(one, n=1, axis=0), atol=1e-12)
    assert ops.fft(Tensor(np.arange(4, dtype=np.int32))).dtype == ms.complex64  # ints transform too
    np.testing.assert_allclose(ops.fft(Tensor(np.arange(4, dtype=np.int32))).asnumpy(), np.fft.fft(np.arange(4)), atol=1e-6)


def _vjp_fd(f, x, v, eps=1e-6):
    """v^H J by central differences: <v, J e> = Re(sum(conj(v) * df)), along e and, for complex x,
    i e too (the gradient convention of MindSpore's complex ops: dL/dRe + i dL/dIm)."""
    def pair(d):
        return np.real(np.sum(np.conj(v) * (f(x + eps * d) - f(x - eps * d)) / (2 * eps)))
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = 1
        g[idx] = pair(e) + (1j * pair(1j * e) if np.iscomplexobj(x) else 0)
    return g


@pytest.mark.parametrize("case", range(len(CASES)), ids=IDS)
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_backward_rules_vs_finite_differences(case, kind):
    """Each op's backward rule, run alone on complex cotangents (graph-level autodiff carries
    float tensors only, so a rule is reached from float code through fftshift-like real ops)."""
    name, kw, _, real_only = CASES[case]
    if real_only and kind == "complex":
        pytest.skip("rfft takes real input")
    x = _rand((4, 6, 5), np.float64 if kind == "real" else np.complex128)
    op = getattr(ops, name)
    out = op(Tensor(x), **kw)
    v = _rand(out.shape, out.asnumpy().dtype)
    (got,) = _mycel.ad.vjp(name, [Tensor(x)], Tensor(v), **kw)
    want = _vjp_fd(lambda a: op(Tensor(a), **kw).asnumpy(), x, v)
    assert got.asnumpy().dtype == x.dtype
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6, atol=1e-7, err_msg=f"{name} {kw}")


@MODES
def test_shift_gradients(mode):
    ms.set_context(mode=mode)
    x = R.normal(size=(4, 5))
    w = R.normal(size=(4, 5))

    class Shifted(nn.Cell):
        def construct(self, t):
            return (ops.fftshift(t, (0, 1)) * Tensor(w)).sum() + (ops.ifftshift(t) * Tensor(w)).sum()
    g = ops.grad(Shifted())(Tensor(x)).asnumpy()
    np.testing.assert_allclose(g, np.fft.ifftshift(w) + np.fft.fftshift(w))


def test_bad_arguments_name_the_op():
    x = Tensor(_rand((3, 4), np.complex64))
    with pytest.raises(ValueError, match=r"\[fft\] norm must be 'backward', 'forward', 'ortho' or None, got 'bad'"):
        ops.fft(x, norm="bad")
    with pytest.raises(ValueError, match=r"\[fft\] the transform length along axis 1 must be >= 1, got 0"):
        ops.fft(x, n=0)
    with pytest.raises(ValueError, match=r"\[fft2\] s has 1 sizes but dim names 2 axes"):
        ops.fft2(x, s=(3,))
    with pytest.raises(ValueError, match=r"\[ifftn\] dim repeats axis 1"):
        ops.ifftn(x, dim=(1, -1))
    with pytest.raises(TypeError, match=r"\[rfft\] input 'input' has unsupported dtype complex64; supported: int32, int64, float32, float64"):
        ops.rfft(x)
    with pytest.raises(ValueError, match=r"\[irfft\] the transform length along axis 0 must be >= 1, got 0 \(from the input's shape; pass n or s\)"):
        ops.irfft(Tensor(np.ones(1, np.complex64)))
    with pytest.raises((ValueError, IndexError), match=r"fft"):
        ops.fft(x, dim=2)
    with pytest.raises(ValueError, match=r"\[fft\] input 'input' must have rank >= 1"):
        ops.fft(Tensor(np.complex64(1)))


def test_vmap_keeps_the_batch_out_of_the_transform():
    x = _rand((3, 5, 4), np.complex128)  # the batch at axis 1
    got = ops.vmap(lambda t: ops.fftn(t), in_axes=1)(Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, np.fft.fftn(np.moveaxis(x, 1, 0), axes=(1, 2)), atol=1e-10)
    got = ops.vmap(lambda t: ops.rfft(ops.real(t), dim=0), in_axes=1)(Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, np.fft.rfft(np.moveaxis(x.real, 1, 0), axis=1), atol=1e-10)
    got = ops.vmap(ops.fftshift, in_axes=2)(Tensor(x)).asnumpy()
    np.testing.assert_array_equal(got, np.fft.fftshift(np.moveaxis(x, 2, 0), axes=(1, 2)))


@MODES
def test_hfft_ihfft_vs_numpy(mode):
    ms.set_context(mode=mode)
    x = _rand((3, 5), np.complex128)
    r = R.normal(size=(3, 8))

    def run(x, r):
        return (ops.hfft(x), ops.hfft(x, n=7, norm="ortho"), ops.hfft(x, dim=0, norm="forward"), ops.ihfft(r),
                ops.ihfft(r, n=5, dim=0, norm="ortho"))
    fn = ms.jit(run) if mode == ms.GRAPH_MODE else run
    want = (np.fft.hfft(x), np.fft.hfft(x, n=7, norm="ortho"), np.fft.hfft(x, axis=0, norm="forward"), np.fft.ihfft(r),
            np.fft.ihfft(r, n=5, axis=0, norm="ortho"))
    for g, w in zip(fn(Tensor(x), Tensor(r)), want):
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-10, atol=1e-12)
