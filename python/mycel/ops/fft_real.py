"""The real-to-real transforms of scipy.fft: dct/idct and dst/idst, types 1-4, norm None
("backward"), "ortho" or "forward", along one axis, with n to pad or crop, and their n-d forms
dctn/idctn/dstn/idstn (the 1-d transform along each axis in turn: they are separable). Each is the product
with a constant N x L matrix built at compile time (scipy's definitions), so any float input
works, gradients come from matmul, and both modes run it; O(N L) per row rather than an FFT's
O(N log N), which is the right trade for the lengths these are used at (a few hundred)."""
import math

import numpy as _np

from mycel import _mycel
from mycel.common.validator import not_tensor_error
from mycel.ops.primitive import constexpr

_ops = _mycel.ops


def _unnormalized(kind, t, n):
    """scipy's unnormalized ("backward") transform of length n as an n x n float64 matrix."""
    k = _np.arange(n)[:, None].astype(_np.float64)
    j = _np.arange(n)[None, :].astype(_np.float64)
    if kind == "dct":
        if t == 1:
            m = 2 * _np.cos(_np.pi * k * j / (n - 1))
            m[:, 0] = 1
            m[:, -1] = (-1.0) ** _np.arange(n)
        elif t == 2:
            m = 2 * _np.cos(_np.pi * k * (2 * j + 1) / (2 * n))
        elif t == 3:
            m = 2 * _np.cos(_np.pi * (2 * k + 1) * j / (2 * n))
            m[:, 0] = 1
        else:
            m = 2 * _np.cos(_np.pi * (2 * k + 1) * (2 * j + 1) / (4 * n))
    else:
        if t == 1:
            m = 2 * _np.sin(_np.pi * (k + 1) * (j + 1) / (n + 1))
        elif t == 2:
            m = 2 * _np.sin(_np.pi * (k + 1) * (2 * j + 1) / (2 * n))
        elif t == 3:
            m = 2 * _np.sin(_np.pi * (2 * k + 1) * (j + 1) / (2 * n))
            m[:, -1] = (-1.0) ** _np.arange(n)
        else:
            m = 2 * _np.sin(_np.pi * (2 * k + 1) * (2 * j + 1) / (4 * n))
    return m


def _forward(kind, t, n, norm):
    """The forward transform's matrix under norm (scipy's, orthogonalize left at its default)."""
    m = _unnormalized(kind, t, n)
    scale = 2 * (n - 1) if (kind, t) == ("dct", 1) else (2 * (n + 1) if (kind, t) == ("dst", 1) else 2 * n)
    if norm == "forward":
        return m / scale
    if norm != "ortho":
        return m
    if t == 3:  # orthonormal type 3 is the inverse, so the transpose, of orthonormal type 2
        return _forward(kind, 2, n, "ortho").T
    # Orthonormal: the overall 1/sqrt(scale), and for types 1 and 2 the end terms reweighted so
    # that the matrix is orthogonal (scipy's orthogonalize=True).
    m = m / math.sqrt(scale)
    if (kind, t) == ("dct", 1):
        m[:, [0, -1]] *= math.sqrt(2)
        m[[0, -1], :] /= math.sqrt(2)
    elif t == 2:
        m[0 if kind == "dct" else -1, :] /= math.sqrt(2)
    return m


@constexpr
def _matrix(kind, t, n, length, norm, inverse):
    """The N x L matrix applied to rows of length L (crop or zero-pad to N first), float64."""
    if t not in (1, 2, 3, 4):
        raise ValueError("[" + ("i" if inverse else "") + kind + "] type must be 1, 2, 3 or 4, got " + str(t))
    if norm not in (None, "backward", "ortho", "forward"):
        raise ValueError("[" + kind + "] norm must be None, 'backward', 'ortho' or 'forward', got " + str(norm))
    if n < 1 or ((kind, t) == ("dct", 1) and n < 2):
        raise ValueError("[" + kind + "] the transform length must be at least " +
                         ("2 for type 1" if (kind, t) == ("dct", 1) else "1") + ", got " + str(n))
    m = _forward(kind, t, n, norm)
    if inverse:  # scipy's idct(dct(x, norm=m), norm=m) == x
        m = _np.linalg.inv(m)
    out = _np.zeros((n, length))
    w = min(n, length)
    out[:, :w] = m[:, :w]  # columns past n read cropped values (0); missing columns are padding
    return _mycel.Tensor(out)


def _apply(name, kind, x, type, n, axis, norm, inverse):  # noqa: A002 (scipy's argument name)
    if not isinstance(x, _mycel.Tensor):
        raise not_tensor_error(name, "x", x)
    nd = len(x.shape)
    if nd == 0:
        raise ValueError("[" + name + "] x must have at least one dimension")
    ax = axis % nd
    length = x.shape[ax]
    size = length if n is None else n
    m = _ops.cast(_matrix(kind, type, size, length, norm, inverse), x.dtype)
    if ax == nd - 1:
        return _ops.matmul(x, m, transpose_b=True)
    perm = tuple(i for i in range(nd) if i != ax) + (ax,)
    back = tuple(range(ax)) + (nd - 1,) + tuple(range(ax, nd - 1))
    return _ops.transpose(_ops.matmul(_ops.transpose(x, perm), m, transpose_b=True), back)


def dct(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002
    """Discrete cosine transform of type 1-4 along axis (scipy.fft.dct)."""
    return _apply("dct", "dct", x, type, n, axis, norm, False)


def idct(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002
    """Inverse of dct with the same type and norm (scipy.fft.idct)."""
    return _apply("idct", "dct", x, type, n, axis, norm, True)


def dst(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002
    """Discrete sine transform of type 1-4 along axis (scipy.fft.dst)."""
    return _apply("dst", "dst", x, type, n, axis, norm, False)


def idst(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002
    """Inverse of dst with the same type and norm (scipy.fft.idst)."""
    return _apply("idst", "dst", x, type, n, axis, norm, True)


@constexpr
def _axes_and_sizes(name, nd, s, axes):
    """(axis, length) per transformed axis (length None: keep it), checked (scipy's rules)."""
    if axes is None:
        axes = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
    elif isinstance(axes, int):
        axes = (axes,)
    if isinstance(s, int):
        s = (s,)
    if s is not None and len(s) != len(axes):
        raise ValueError("[" + name + "] s and axes must have the same length, got s=" + str(s) +
                         " and axes=" + str(axes))
    for ax in axes:
        if not -nd <= ax < nd:
            raise ValueError("[" + name + "] axis " + str(ax) + " is out of range for rank " + str(nd))
    if len(set(ax % nd for ax in axes)) != len(axes):
        raise ValueError("[" + name + "] axes must be distinct, got " + str(axes))
    return tuple(zip(axes, (None,) * len(axes) if s is None else s))


def _apply_n(name, kind, x, type, s, axes, norm, inverse):  # noqa: A002
    """The 1-d transform along each of axes in turn (separable), with s[i] as axis i's length."""
    if not isinstance(x, _mycel.Tensor):
        raise not_tensor_error(name, "x", x)
    for ax, size in _axes_and_sizes(name, len(x.shape), s, axes):
        x = _apply(name, kind, x, type, size, ax, norm, inverse)
    return x


def dctn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002
    """N-d discrete cosine transform over axes (all by default; scipy.fft.dctn)."""
    return _apply_n("dctn", "dct", x, type, s, axes, norm, False)


def idctn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002
    """Inverse of dctn with the same type and norm (scipy.fft.idctn)."""
    return _apply_n("idctn", "dct", x, type, s, axes, norm, True)


def dstn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002
    """N-d discrete sine transform over axes (scipy.fft.dstn)."""
    return _apply_n("dstn", "dst", x, type, s, axes, norm, False)


def idstn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002
    """Inverse of dstn with the same type and norm (scipy.fft.idstn)."""
    return _apply_n("idstn", "dst", x, type, s, axes, norm, True)
