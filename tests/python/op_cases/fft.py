"""Rows for the FFT ops against numpy.fft, for every dtype they take (integers transform as
complex64, as MindSpore's do), and fftshift/ifftshift for every dtype."""
import numpy as np

from op_cases import OpCase

FFT_DTYPES = ("int32", "int64", "float32", "float64", "complex64", "complex128")
REAL_DTYPES = ("int32", "int64", "float32", "float64")


def _draw(*shape):
    def gen(rng, dt):
        if np.dtype(dt).kind in "iu":
            return [rng.integers(-5, 6, size=shape).astype(dt)]
        x = rng.normal(size=shape)
        if np.dtype(dt).kind == "c":
            x = x + 1j * rng.normal(size=shape)
        return [x.astype(dt)]
    return gen


def _wide(x):
    return x.dtype in (np.float64, np.complex128)


def _c(f):
    """numpy's transform, in the complex dtype Mycel gives (complex128 only from 64-bit floats)."""
    return lambda x, **kw: f(x, **kw).astype(np.complex128 if _wide(x) else np.complex64)


def _r(f):
    return lambda x, **kw: f(x, **kw).astype(np.float64 if _wide(x) else np.float32)


def _1d(f, wrap):
    return wrap(lambda x, n=None, dim=-1, norm=None: f(x, n=n, axis=dim, norm=norm))


def _nd(f, wrap, default_dims=None):
    def ref(x, s=None, dim=default_dims, norm=None):
        if dim is None and s is not None:
            dim = tuple(range(x.ndim - len(s), x.ndim))
        return f(x, s=s, axes=dim, norm=norm)
    return wrap(ref)


TOL = dict(rtol=1e-4, atol=1e-4)  # single-precision rows transform in float32
CASES = [
    OpCase("fft", _1d(np.fft.fft, _c), _draw(3, 8), dtypes=FFT_DTYPES, **TOL),
    OpCase("fft", _1d(np.fft.fft, _c), _draw(3, 5), dict(n=7, dim=0, norm="ortho"), dtypes=FFT_DTYPES, id="n_dim", **TOL),
    OpCase("ifft", _1d(np.fft.ifft, _c), _draw(4, 6), dict(n=4, norm="forward"), dtypes=FFT_DTYPES, **TOL),
    OpCase("fft2", _nd(np.fft.fft2, _c, (-2, -1)), _draw(2, 3, 5), dtypes=FFT_DTYPES, **TOL),
    OpCase("ifft2", _nd(np.fft.ifft2, _c, (-2, -1)), _draw(2, 3, 5), dict(s=(4, 4), dim=(0, 2)),
           dtypes=FFT_DTYPES, **TOL),
    OpCase("fftn", _nd(np.fft.fftn, _c), _draw(2, 3, 5), dtypes=FFT_DTYPES, **TOL),
    OpCase("ifftn", _nd(np.fft.ifftn, _c), _draw(2, 3, 5), dict(s=(2, 7), norm="ortho"), dtypes=FFT_DTYPES, **TOL),
    OpCase("rfft", _1d(np.fft.rfft, _c), _draw(3, 9), dtypes=REAL_DTYPES, **TOL),
    OpCase("irfft", _1d(np.fft.irfft, _r), _draw(3, 5), dict(n=9), dtypes=FFT_DTYPES, **TOL),
    OpCase("rfft2", _nd(np.fft.rfft2, _c, (-2, -1)), _draw(2, 4, 6), dtypes=REAL_DTYPES, **TOL),
    OpCase("irfft2", _nd(np.fft.irfft2, _r, (-2, -1)), _draw(2, 4, 4), dtypes=FFT_DTYPES, **TOL),
    OpCase("rfftn", _nd(np.fft.rfftn, _c), _draw(2, 3, 6), dict(norm="forward"), dtypes=REAL_DTYPES, **TOL),
    OpCase("irfftn", _nd(np.fft.irfftn, _r), _draw(2, 3, 4), dict(s=(3, 5)), dtypes=FFT_DTYPES, **TOL),
]
ALL = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64",
       "uint16", "uint32", "uint64", "complex64", "complex128")
CASES += [OpCase("fftshift", lambda x, dim=None: np.fft.fftshift(x, axes=dim), [(3, 4)], dtypes=ALL),
          OpCase("fftshift", lambda x, dim: np.fft.fftshift(x, axes=dim), [(3, 5, 2)], dict(dim=(1,)), id="dim"),
          OpCase("ifftshift", lambda x, dim=None: np.fft.ifftshift(x, axes=dim), [(5, 3)], dtypes=ALL),
          OpCase("ifftshift", lambda x, dim: np.fft.ifftshift(x, axes=dim), [(3, 5, 2)], dict(dim=(-2, 0)), id="dim")]
