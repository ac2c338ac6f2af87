"""MindSpore's older nn Cells (nn.Range, Norm, OneHot, ReduceLogSumExp, LGamma, DiGamma, IGamma,
LBeta, MatMul, Moments, MatInverse, MatDet, ClipByNorm, MatrixDiag, MatrixDiagPart,
MatrixSetDiag) and nn.Linear / nn.DropoutExt, in both modes against numpy and scipy."""
import numpy as np
import pytest
from scipy import special

import mycel as ms
from mycel import Tensor, nn

R = np.random.default_rng(5)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _back_to_pynative():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _run(mode, cell, *args):
    ms.set_context(mode=mode)
    out = cell(*[Tensor(a) for a in args])
    return tuple(o.asnumpy() for o in out) if isinstance(out, tuple) else out.asnumpy()


@MODES
def test_range_is_arange_with_mindspore_dtypes(mode):
    ms.set_context(mode=mode)
    ints, floats = nn.Range(0, 100, 10)(), nn.Range(10., 100., 20.)()
    np.testing.assert_array_equal(ints.asnumpy(), np.arange(0, 100, 10))
    assert ints.dtype == ms.int32 and floats.dtype == ms.float32
    np.testing.assert_allclose(floats.asnumpy(), np.arange(10., 100., 20.))
    with pytest.raises(ValueError, match="delta"):
        nn.Range(0, 4, 0)


@MODES
@pytest.mark.parametrize("axis,keep", [((), False), (0, False), (1, True), ((0, 2), False)])
def test_norm(mode, axis, keep):
    x = R.standard_normal((3, 4, 5)).astype(np.float32)
    want = np.sqrt((x * x).sum(axis=None if axis == () else axis, keepdims=keep))
    np.testing.assert_allclose(_run(mode, nn.Norm(axis, keep), x), want, rtol=1e-5)


@MODES
def test_one_hot(mode):
    idx = np.array([[0, 2], [1, 3]], np.int32)
    got = _run(mode, nn.OneHot(axis=-1, depth=4, on_value=5.0, off_value=-1.0), idx)
    want = np.where(np.eye(4)[idx] > 0, 5.0, -1.0)
    np.testing.assert_array_equal(got, want)
    got0 = _run(mode, nn.OneHot(axis=0, depth=4), idx)
    np.testing.assert_array_equal(got0, np.moveaxis(np.eye(4)[idx], -1, 0))


@MODES
def test_reduce_log_sum_exp(mode):
    x = (R.standard_normal((2, 3, 4)) * 30).astype(np.float32)
    np.testing.assert_allclose(_run(mode, nn.ReduceLogSumExp(1), x), special.logsumexp(x, 1), rtol=1e-5)
    np.testing.assert_allclose(_run(mode, nn.ReduceLogSumExp((0, 2), True), x),
                               special.logsumexp(x, (0, 2), keepdims=True), rtol=1e-5)


@MODES
def test_gamma_family(mode):
    x = np.array([0.3, 1.0, 2.5, 7.2, -1.5], np.float32)
    np.testing.assert_allclose(_run(mode, nn.LGamma(), x), special.gammaln(x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_run(mode, nn.DiGamma(), x), special.digamma(x), rtol=1e-4, atol=1e-5)
    a = np.array([0.5, 2.0, 4.0], np.float32)
    z = np.array([0.2, 1.5, 6.0], np.float32)
    np.testing.assert_allclose(_run(mode, nn.IGamma(), a, z), special.gammainc(a, z), rtol=1e-4, atol=1e-6)
    y = np.array([[1.5], [9.0]], np.float32)
    want = special.betaln(np.abs(x[:4]), y)
    np.testing.assert_allclose(_run(mode, nn.LBeta(), np.abs(x[:4]), y), want, rtol=1e-4, atol=1e-5)


def test_gamma_family_rejects_integer_input():
    with pytest.raises(TypeError, match="LGamma.*float16 or float32"):
        nn.LGamma()(Tensor(np.array([1, 2], np.int32)))


@MODES
@pytest.mark.parametrize("sa,sb,ta,tb", [((3, 4), (4, 5), False, False), ((2, 4, 3), (5, 4), True, True),
                                         ((4,), (3, 4, 2), False, False), ((2, 3, 4), (4,), False, False)])
def test_matmul_cell(mode, sa, sb, ta, tb):
    a, b = R.standard_normal(sa).astype(np.float32), R.standard_normal(sb).astype(np.float32)
    na = np.swapaxes(a, -1, -2) if ta and a.ndim >= 2 else a
    nb = np.swapaxes(b, -1, -2) if tb and b.ndim >= 2 else b
    np.testing.assert_allclose(_run(mode, nn.MatMul(ta, tb), a, b), na @ nb, rtol=1e-5, atol=1e-5)


@MODES
@pytest.mark.parametrize("axis,keep", [(None, False), (0, True), ((1, 2), False)])
def test_moments(mode, axis, keep):
    x = R.standard_normal((3, 4, 5)).astype(np.float32)
    ax = None if axis is None else axis
    mean, var = _run(mode, nn.Moments(axis, keep), x)
    np.testing.assert_allclose(mean, x.mean(ax, keepdims=keep), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, x.var(ax, keepdims=keep), rtol=1e-5, atol=1e-6)


@MODES
def test_mat_inverse_and_det(mode):
    m = R.standard_normal((2, 4, 4)).astype(np.float32)
    spd = (m @ np.swapaxes(m, -1, -2) + 4 * np.eye(4)).astype(np.float32)
    np.testing.assert_allclose(_run(mode, nn.MatInverse(), spd), np.linalg.inv(spd), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_run(mode, nn.MatDet(), spd), np.linalg.det(spd), rtol=1e-4)


@MODES
@pytest.mark.parametrize("axis", [None, 1])
def test_clip_by_norm(mode, axis):
    x = (R.standard_normal((3, 4)) * 3).astype(np.float32)
    clip = np.float32(2.0)
    norm = np.sqrt((x * x).sum(axis=axis, keepdims=True))
    np.testing.assert_allclose(_run(mode, nn.ClipByNorm(axis), x, clip), x * clip / np.maximum(norm, clip),
                               rtol=1e-5)


@MODES
def test_matrix_diag_family(mode):
    d = R.standard_normal((2, 3)).astype(np.float32)
    want = np.stack([np.diag(r) for r in d])
    np.testing.assert_array_equal(_run(mode, nn.MatrixDiag(), d), want)
    x = R.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(_run(mode, nn.MatrixDiagPart(), x), np.diagonal(x, 0, -2, -1))
    y = x.copy()
    for i in range(3):
        y[:, i, i] = d[:, i]
    np.testing.assert_array_equal(_run(mode, nn.MatrixSetDiag(), x, d), y)


@MODES
def test_linear_and_dropout_ext(mode):
    ms.set_context(mode=mode)
    lin = nn.Linear(4, 3)
    assert tuple(lin.weight.shape) == (3, 4) and lin.in_features == 4 and lin.out_features == 3
    x = R.standard_normal((2, 4)).astype(np.float32)
    want = x @ lin.weight.asnumpy().T + lin.bias.asnumpy()
    np.testing.assert_allclose(lin(Tensor(x)).asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert nn.Linear(4, 3, bias=False).bias is None
    drop = nn.DropoutExt(p=0.5)
    drop.set_train(True)
    ones = np.ones((64, 64), np.float32)
    y = drop(Tensor(ones)).asnumpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.35 < (y == 0).mean() < 0.65
    drop.set_train(False)
    np.testing.assert_array_equal(drop(Tensor(ones)).asnumpy(), ones)
