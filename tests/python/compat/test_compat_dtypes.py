"""uint16/uint32/uint64 and complex64/complex128 as a MindSpore user meets them: creation from
numpy and lists, asnumpy, casts both ways, printing, numpy's promotion, elementwise add, sub,
mul, div, neg and (in)equality in both modes against numpy; other ops refuse them naming the op
and the dtype."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, ops

MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
NEW = [("uint16", np.uint16), ("uint32", np.uint32), ("uint64", np.uint64),
       ("complex64", np.complex64), ("complex128", np.complex128)]
R = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _sample(np_t, shape=(2, 3)):
    if np.issubdtype(np_t, np.complexfloating):
        return (R.normal(size=shape) + 1j * R.normal(size=shape)).astype(np_t)
    info = np.iinfo(np_t)
    return R.integers(1, min(info.max, 2**40), size=shape, dtype=np.uint64).astype(np_t)


@pytest.mark.parametrize("name,np_t", NEW)
def test_create_asnumpy_cast_and_print(name, np_t):
    a = _sample(np_t)
    t = Tensor(a)
    assert t.dtype == getattr(ms, name) and str(t.dtype) == {"uint16": "UInt16", "uint32": "UInt32",
                                                             "uint64": "UInt64", "complex64": "Complex64",
                                                             "complex128": "Complex128"}[name]
    np.testing.assert_array_equal(t.asnumpy(), a)
    assert t.asnumpy().dtype == np_t
    for other in (np.float64, np.int64, np.bool_, np.complex128, np.uint32):
        with np.errstate(all="ignore"):
            want = a.astype(other) if not (np.iscomplexobj(a) and not np.issubdtype(other, np.complexfloating)) \
                else (a != 0 if other is np.bool_ else a.real.astype(other))
        got = ops.cast(t, other)
        np.testing.assert_array_equal(got.asnumpy(), want)
    back = Tensor(a.astype(np.float64)).astype(getattr(ms, name))
    np.testing.assert_array_equal(back.asnumpy(), a.astype(np.float64).astype(np_t))
    assert str(t) == str(Tensor(a)) and len(repr(t)) > 0
    if name.startswith("complex"):
        assert "j" in str(t)
    else:
        assert str(int(a.max())) in str(t)


@pytest.mark.parametrize("a,b", [("uint16", "int16"), ("uint32", "int32"), ("uint64", "int64"),
                                 ("uint64", "uint8"), ("uint16", "float16"), ("complex64", "float64"),
                                 ("complex64", "int32"), ("complex64", "complex128"), ("uint32", "complex64")])
def test_promotion_matches_numpy(a, b):
    want = np.promote_types(a, b).name
    assert ms.promote_types(getattr(ms, a), getattr(ms, b)).name == want


def _arith(x, y):
    return x + y, x - y, x * y, x / y, x == y, x != y


@MODES
@pytest.mark.parametrize("name,np_t", NEW)
def test_elementwise_vs_numpy(mode, name, np_t):
    ms.set_context(mode=mode)
    a, b = _sample(np_t), _sample(np_t, (3,))
    b[0] = a[0, 0]  # one equal pair
    fn = ms.jit(_arith) if mode == ms.GRAPH_MODE else _arith
    got = fn(Tensor(a), Tensor(b))
    with np.errstate(all="ignore"):
        want = (a + b, a - b, a * b, a / b, a == b, a != b)
    for g, w in zip(got, want):
        assert g.asnumpy().dtype == w.dtype, (g.dtype, w.dtype)
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-6)
        else:
            np.testing.assert_array_equal(g.asnumpy(), w)


def test_neg_mixed_and_errors():
    c = _sample(np.complex64)
    np.testing.assert_array_equal((-Tensor(c)).asnumpy(), -c)
    u = _sample(np.uint32)
    mixed = Tensor(u) + Tensor(np.int32(5))  # uint32 with int32 promotes to int64 (numpy)
    assert mixed.dtype == ms.int64
    np.testing.assert_array_equal(mixed.asnumpy(), u.astype(np.int64) + 5)
    cmix = Tensor(c) * Tensor(np.float64(2.0))
    assert cmix.dtype == ms.complex128
    np.testing.assert_allclose(cmix.asnumpy(), c.astype(np.complex128) * 2.0, rtol=1e-6)
    with pytest.raises(TypeError, match=r"\[exp\] input 'x' has unsupported dtype complex64"):
        ops.exp(Tensor(c))
    with pytest.raises(TypeError, match=r"\[matmul\].*unsupported dtype uint32"):
        ops.matmul(Tensor(u), Tensor(u.T.copy()))
    with pytest.raises(TypeError, match=r"\[less\].*unsupported dtype complex128"):
        ops.less(Tensor(c.astype(np.complex128)), Tensor(c.astype(np.complex128)))
