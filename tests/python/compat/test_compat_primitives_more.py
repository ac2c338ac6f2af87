"""The primitive classes of ops/operations/compat_ops2.py against numpy, eagerly and in graph mode."""
import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops
from mycel.ops import operations as P

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4)).astype(np.float32)
Y = (RNG.normal(size=(3, 4)) + 2.5).astype(np.float32)


def T(a):
    return ms.Tensor(np.asarray(a))


UNARY = [(P.ACos, lambda a: np.arccos(a / 3)), (P.Asin, lambda a: np.arcsin(a / 3)), (P.Atan, np.arctan),
         (P.Asinh, np.arcsinh), (P.Cosh, np.cosh), (P.Sinh, np.sinh), (P.Trunc, np.trunc),
         (P.HSigmoid, lambda a: np.clip(a + 3, 0, 6) / 6), (P.L2Loss, lambda a: (a ** 2).sum() / 2)]
BINARY = [(P.SquaredDifference, lambda a, b: (a - b) ** 2), (P.Mod, np.fmod), (P.TruncateMod, np.fmod),
          (P.TruncateDiv, lambda a, b: np.trunc(a / b)), (P.Xlogy, lambda a, b: a * np.log(b)),
          (P.Xdivy, lambda a, b: a / b)]


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_primitives_against_numpy(mode):
    ms.set_context(mode=mode)
    try:
        for cls, ref in UNARY:
            x = X / 3 if cls in (P.ACos, P.Asin) else X  # inside [-1, 1]; ref divides X by 3 itself
            np.testing.assert_allclose(cls()(T(x)).asnumpy(), ref(X.astype(np.float64)), rtol=1e-5, atol=1e-6,
                                       err_msg=cls.__name__)
        for cls, ref in BINARY:
            np.testing.assert_allclose(cls()(T(X), T(Y)).asnumpy(), ref(X.astype(np.float64), Y), rtol=1e-5, atol=1e-6,
                                       err_msg=cls.__name__)
        w = RNG.normal(size=(4,)).astype(np.float32)
        v = RNG.normal(size=(3,)).astype(np.float32)
        np.testing.assert_allclose(P.Ger()(T(v), T(w)).asnumpy(), np.outer(v, w), rtol=1e-6)
        np.testing.assert_allclose(P.Lerp()(T(X), T(Y), 0.3).asnumpy(), X + 0.3 * (Y - X), rtol=1e-5)
        np.testing.assert_allclose(P.Addcmul()(T(X), T(X), T(Y), T(np.float32(2))).asnumpy(), X + 2 * X * Y, rtol=1e-5)
        np.testing.assert_allclose(P.HShrink(0.3)(T(X)).asnumpy(), np.where(np.abs(X) > 0.3, X, 0))
        np.testing.assert_allclose(P.SmoothL1Loss(0.5)(T(X), T(Y)).asnumpy(),
                                   np.where(np.abs(X - Y) < 0.5, (X - Y) ** 2, np.abs(X - Y) - 0.25), rtol=1e-5)
        np.testing.assert_allclose(P.ReverseV2((0, 1))(T(X)).asnumpy(), X[::-1, ::-1])
        np.testing.assert_allclose(P.UnsortedSegmentSum()(T(X), T(np.array([1, 0, 1], np.int32)), 2).asnumpy(),
                                   np.stack([X[1], X[0] + X[2]]), rtol=1e-6)
        np.testing.assert_allclose(P.Padding(3)(T(X[:, :1])).asnumpy(), np.pad(X[:, :1], ((0, 0), (0, 2))))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_no_nan_divisions_and_mirror_pad():
    x = np.float32([1.0, 0.0, np.inf, 2.0])
    y = np.float32([0.0, 0.0, 0.0, 4.0])
    np.testing.assert_array_equal(P.DivNoNan()(T(x), T(y)).asnumpy(), [0, 0, 0, 0.5])
    np.testing.assert_array_equal(P.MulNoNan()(T(x), T(y)).asnumpy(), [0, 0, 0, 8])
    np.testing.assert_array_equal(P.Xdivy()(T(np.float32([0, 3])), T(np.float32([0, 2]))).asnumpy(), [0, 1.5])
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    pads = np.array([[1, 1], [2, 2]], np.int64)
    np.testing.assert_array_equal(P.MirrorPad("REFLECT")(T(m), T(pads)).asnumpy(), np.pad(m, pads, "reflect"))
    np.testing.assert_array_equal(P.MirrorPad("SYMMETRIC")(T(m), T(pads)).asnumpy(), np.pad(m, pads, "symmetric"))


def test_parameter_and_inplace_primitives():
    p = ms.Parameter(T(np.float32([1, 2])), name="p")
    P.AssignAdd()(p, T(np.float32([1, 1])))
    P.AssignSub()(p, T(np.float32([0.5, 0.5])))
    np.testing.assert_array_equal(p.asnumpy(), [1.5, 2.5])
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    v = np.ones((2, 2), np.float32)
    np.testing.assert_array_equal(P.InplaceUpdate((0, 2))(T(x), T(v)).asnumpy(), [[1, 1], [2, 3], [1, 1]])
    np.testing.assert_array_equal(P.InplaceAdd((1, 2))(T(x), T(v)).asnumpy(), x + [[0, 0], [1, 1], [1, 1]])
    np.testing.assert_array_equal(P.InplaceSub(1)(T(x), T(v[:1])).asnumpy(), x - [[0, 0], [1, 1], [0, 0]])
    g = P.Meshgrid("ij")((T(np.arange(2.0)), T(np.arange(3.0))))
    np.testing.assert_array_equal(g[1].asnumpy(), np.meshgrid(np.arange(2.0), np.arange(3.0), indexing="ij")[1])
    assert len(P.Unstack(1)(T(x))) == 2
    np.testing.assert_array_equal(P.ScatterNd()(T(np.array([[0], [2]], np.int32)), T(np.float32([5, 6])), (3,)).asnumpy(), [5, 0, 6])
    assert P.Eps()(T(np.float32([1.0]))).asnumpy()[0] == np.finfo(np.float32).smallest_subnormal
    with pytest.raises(ValueError, match="MirrorPad: mode must be 'REFLECT' or 'SYMMETRIC'"):
        P.MirrorPad("EDGE")
    assert isinstance(ops.LRN(), P.LRN) and isinstance(nn.LRN(), nn.Cell)
