"""MindSpore's bitwise ops (ops.bitwise_and/or/xor, bitwise_left_shift/right_shift, P.BitwiseAnd,
..., P.LeftShift, P.RightShift, the Tensor methods) in both modes against numpy, on signed,
unsigned (the wider ones included) and bool inputs; floats are refused naming the op."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, ops
from mycel.ops import operations as P

R = np.random.default_rng(9)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _logic(x, y):
    return ops.bitwise_and(x, y), ops.bitwise_or(x, y), ops.bitwise_xor(x, y)


@MODES
@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_])
def test_and_or_xor_vs_numpy(mode, dt):
    ms.set_context(mode=mode)
    if dt is np.bool_:
        a, b = R.random((3, 4)) > 0.5, R.random((4,)) > 0.5
    else:
        lo = 0 if np.dtype(dt).kind == "u" else -100
        a = R.integers(lo, 100, size=(3, 4)).astype(dt)
        b = R.integers(lo, 100, size=(4,)).astype(dt)
    fn = ms.jit(_logic) if mode == ms.GRAPH_MODE else _logic
    for g, w in zip(fn(Tensor(a), Tensor(b)), (a & b, a | b, a ^ b)):
        assert g.asnumpy().dtype == w.dtype
        np.testing.assert_array_equal(g.asnumpy(), w)


@MODES
def test_shifts_vs_numpy(mode):
    ms.set_context(mode=mode)
    x = np.array([-9, -1, 0, 1, 7, 100], np.int32)
    n = np.array([0, 1, 2, 3, 31, 4], np.int32)
    shl = P.LeftShift()
    shr = P.RightShift()

    def f(a, b):
        return shl(a, b), shr(a, b)
    fn = ms.jit(f) if mode == ms.GRAPH_MODE else f
    left, right = fn(Tensor(x), Tensor(n))
    np.testing.assert_array_equal(left.asnumpy(), np.left_shift(x, n))
    np.testing.assert_array_equal(right.asnumpy(), np.right_shift(x, n))  # arithmetic, as numpy
    u = np.array([1, 2**63, 5], np.uint64)
    s = np.array([63, 1, 64], np.uint64)  # 64: past the width, numpy gives 0
    np.testing.assert_array_equal(ops.bitwise_left_shift(Tensor(u), Tensor(s)).asnumpy(),
                                  np.array([2**63, 0, 0], np.uint64))
    np.testing.assert_array_equal(Tensor(u).bitwise_right_shift(Tensor(s)).asnumpy(),
                                  np.array([0, 2**62, 0], np.uint64))


def test_methods_primitives_promotion_and_errors():
    a, b = np.array([12, 10], np.int16), np.array([10, 6], np.int64)
    got = Tensor(a).bitwise_and(Tensor(b))
    assert got.dtype == ms.int64 and got.asnumpy().tolist() == (a & b).tolist()
    assert P.BitwiseXor()(Tensor(a), Tensor(a)).asnumpy().tolist() == [0, 0]
    assert P.BitwiseOr()(Tensor(a), Tensor(np.array([True, False]))).asnumpy().tolist() == [13, 10]
    with pytest.raises(TypeError, match=r"\[bitwise_and\] input 'x' has unsupported dtype float32"):
        ops.bitwise_and(Tensor(np.ones(2, np.float32)), Tensor(np.ones(2, np.float32)))
    with pytest.raises(TypeError, match=r"\[bitwise_left_shift\] input 'x' has unsupported dtype bool"):
        ops.bitwise_left_shift(Tensor(np.array([True])), Tensor(np.array([True])))
