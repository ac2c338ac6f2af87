"""Ops on MindSpore's newer dtypes through the public API, in both modes, against numpy:
reductions of uint16/32/64 and complex64/128 tensors, ordered comparisons of unsigned ones, and
&, |, ^, ~ that are bitwise on integer tensors and logical on bool ones (as MindSpore's)."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops

R = np.random.default_rng(5)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _arr(dt, shape=(3, 4)):
    if np.dtype(dt).kind == "c":
        return (R.normal(size=shape) + 1j * R.normal(size=shape)).astype(dt)
    return R.integers(0, 60000 if dt == "uint16" else 2**40 if dt == "uint64" else 2**31, size=shape).astype(dt)


class _Reduce(nn.Cell):
    def construct(self, x):
        return ops.sum(x, 1), ops.mean(x), ops.prod(x, 0, keep_dims=True), x.sum()


@MODES
@pytest.mark.parametrize("dt", ["uint16", "uint32", "uint64", "complex64", "complex128"])
def test_sum_mean_prod(mode, dt):
    ms.set_context(mode=mode)
    x = _arr(dt)
    s, m, p, total = _Reduce()(Tensor(x))
    for got, want in ((s, np.sum(x, 1)), (m, np.mean(x)), (p, np.prod(x, 0, keepdims=True)), (total, np.sum(x))):
        assert got.asnumpy().dtype == want.dtype, (got.dtype, want.dtype)
        if want.dtype.kind == "c":
            np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5)
        else:
            np.testing.assert_array_equal(got.asnumpy(), want)


class _Order(nn.Cell):
    def construct(self, x, y):
        return ops.max(x, 1), ops.min(x), ops.argmax(x, 1), ops.argmin(x, 0), x < y, x >= y


@MODES
@pytest.mark.parametrize("dt", ["uint16", "uint32", "uint64"])
def test_max_min_arg_and_comparisons_of_unsigned(mode, dt):
    ms.set_context(mode=mode)
    x, y = _arr(dt), _arr(dt)
    y[0] = x[0]  # some ties
    mx, mn, amx, amn, lt, ge = _Order()(Tensor(x), Tensor(y))
    np.testing.assert_array_equal(mx.asnumpy(), np.max(x, 1))
    np.testing.assert_array_equal(mn.asnumpy(), np.min(x))
    np.testing.assert_array_equal(amx.asnumpy(), np.argmax(x, 1))
    np.testing.assert_array_equal(amn.asnumpy(), np.argmin(x, 0))
    np.testing.assert_array_equal(lt.asnumpy(), x < y)
    np.testing.assert_array_equal(ge.asnumpy(), x >= y)
    big = np.array([2**63 + 5, 3], np.uint64)  # above int64: compares as unsigned
    if dt == "uint64":
        np.testing.assert_array_equal((Tensor(big) > Tensor(np.array([1, 4], np.uint64))).asnumpy(), [True, False])


def test_complex_has_no_order():
    z = Tensor(_arr("complex64"))
    with pytest.raises(TypeError, match="max"):
        ops.max(z)
    with pytest.raises(TypeError, match="less"):
        ops.less(z, z)


class _Bits(nn.Cell):
    def construct(self, a, b):
        return a & b, a | b, a ^ b, a & 6, 5 | a


class _Invert(nn.Cell):
    def construct(self, a):
        return ~a


@MODES
@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "int64", "uint16", "uint64"])
def test_bitwise_operators_on_integers(mode, dt):
    ms.set_context(mode=mode)
    info = np.iinfo(dt)
    a = R.integers(info.min, info.max, size=(4, 5), endpoint=True, dtype=dt)
    b = R.integers(info.min, info.max, size=(4, 5), endpoint=True, dtype=dt)
    got = _Bits()(Tensor(a), Tensor(b))
    want = (a & b, a | b, a ^ b, a & np.array(6, dt), np.array(5, dt) | a)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.asnumpy(), w)
    if dt not in ("uint16", "uint64"):  # Invert takes the core integer types
        np.testing.assert_array_equal(_Invert()(Tensor(a)).asnumpy(), ~a)


class _BoolOps(nn.Cell):
    def construct(self, a, b):
        return a & b, a | b, a ^ b, ~a


@MODES
def test_operators_on_bools_stay_logical(mode):
    ms.set_context(mode=mode)
    a, b = R.random((3, 4)) < 0.5, R.random((3, 4)) < 0.5
    got = _BoolOps()(Tensor(a), Tensor(b))
    for g, w in zip(got, (a & b, a | b, a ^ b, ~a)):
        assert g.dtype == ms.bool_
        np.testing.assert_array_equal(g.asnumpy(), w)
    np.testing.assert_array_equal((True & Tensor(a)).asnumpy(), a)


def test_bitwise_on_floats_is_an_error():
    x = Tensor(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="bitwise_and"):
        _ = x & x
