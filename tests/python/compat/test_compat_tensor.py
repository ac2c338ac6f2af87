"""MindSpore's Tensor surface: method names (eager and inside graphs) against numpy, str of
dtypes, strides/from_numpy, CSRTensor/COOTensor against dense numpy."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn

RNG = np.random.default_rng(5)
X = RNG.uniform(-0.9, 0.9, size=(4, 6)).astype(np.float32)
POS = RNG.uniform(1.1, 3.0, size=(4, 6)).astype(np.float32)

UNARY = [
    ("acos", np.arccos, X), ("arcsin", np.arcsin, X), ("atan", np.arctan, X), ("sinh", np.sinh, X),
    ("cosh", np.cosh, X), ("asinh", np.arcsinh, X * 5), ("acosh", np.arccosh, POS),
    ("atanh", np.arctanh, X), ("log2", np.log2, POS), ("log10", np.log10, POS),
    ("trunc", np.trunc, X * 5), ("ravel", np.ravel, X), ("t", np.transpose, X),
    ("absolute", np.abs, X), ("negative", np.negative, X),
]


@pytest.mark.parametrize("name,ref,x", UNARY, ids=[u[0] for u in UNARY])
def test_unary_methods_vs_numpy(name, ref, x):
    np.testing.assert_allclose(getattr(Tensor(x), name)().asnumpy(), ref(x), rtol=2e-5, atol=2e-6)


def test_split_family_vs_numpy():
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    for got, want in zip(Tensor(x).tensor_split(2, axis=2), np.array_split(x, 2, axis=2)):
        np.testing.assert_array_equal(got.asnumpy(), want)
    for got, want in zip(Tensor(x).tensor_split([1, 3], axis=1), np.array_split(x, [1, 3], axis=1)):
        np.testing.assert_array_equal(got.asnumpy(), want)
    for got, want in zip(Tensor(x).hsplit(2), np.hsplit(x, 2)):
        np.testing.assert_array_equal(got.asnumpy(), want)
    for got, want in zip(Tensor(x).vsplit([1]), np.vsplit(x, [1])):
        np.testing.assert_array_equal(got.asnumpy(), want)
    for got, want in zip(Tensor(x).dsplit(5), np.dsplit(x, 5)):
        np.testing.assert_array_equal(got.asnumpy(), want)
    np.testing.assert_array_equal(Tensor(x).repeat(2, axis=1).asnumpy(), np.repeat(x, 2, axis=1))
    np.testing.assert_array_equal(Tensor(x).flip((0, 2)).asnumpy(), np.flip(x, (0, 2)))
    np.testing.assert_array_equal(Tensor(x).swapaxes(0, 2).asnumpy(), np.swapaxes(x, 0, 2))
    assert [p.shape for p in Tensor(x).unbind(1)] == [(3, 5)] * 4
    with pytest.raises(ValueError, match="vsplit: expects a tensor of at least 2 dims"):
        Tensor(x[0, 0]).vsplit(2)


def test_comparison_and_arith_method_names():
    a, b = Tensor(X), Tensor(X[::-1].copy())
    for name, ref in (("ge", np.greater_equal), ("greater", np.greater), ("lt", np.less),
                      ("le", np.less_equal), ("eq", np.equal), ("ne", np.not_equal)):
        np.testing.assert_array_equal(getattr(a, name)(b).asnumpy(), ref(X, X[::-1]))
    np.testing.assert_allclose(a.multiply(b).asnumpy(), X * X[::-1])
    np.testing.assert_allclose(a.clamp(-0.1, 0.2).asnumpy(), np.clip(X, -0.1, 0.2))
    np.testing.assert_allclose(a.xlogy(Tensor(POS)).asnumpy(), X * np.log(POS), rtol=1e-5)
    np.testing.assert_allclose(a.norm().asnumpy(), np.linalg.norm(X), rtol=1e-5)
    np.testing.assert_allclose(a.norm(1, dim=1).asnumpy(), np.abs(X).sum(1), rtol=1e-5)


class _MethodNet(nn.Cell):
    def construct(self, x):
        a, b = x.hsplit(2)
        return a.acos() + b.arcsin().flip(1), x.tensor_split([1, 3], 1)[1].sinh().sum(), x.ge(0.0)


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_methods_in_both_modes_and_gradients(mode):
    mycel.set_context(mode=mode)
    try:
        x64 = X.astype(np.float64)
        out, s, ge = _MethodNet()(Tensor(x64))
        np.testing.assert_allclose(out.asnumpy(), np.arccos(x64[:, :3]) + np.arcsin(x64[:, 3:])[:, ::-1], rtol=1e-12)
        assert s.asnumpy() == pytest.approx(np.sinh(x64[:, 1:3]).sum())
        np.testing.assert_array_equal(ge.asnumpy(), x64 >= 0)
        # d/dx of sum(acos(a)) + sum(asin(b)) + sinh part, against central differences
        net = _MethodNet()
        g = mycel.grad(lambda x: net(x)[0].sum() + net(x)[1])(Tensor(x64)).asnumpy()

        def f(v):
            return (np.arccos(v[:, :3]).sum() + np.arcsin(v[:, 3:]).sum() + np.sinh(v[:, 1:3]).sum())
        fd = np.zeros_like(x64)
        for idx in np.ndindex(*x64.shape):
            p, m = x64.copy(), x64.copy()
            p[idx] += 1e-6
            m[idx] -= 1e-6
            fd[idx] = (f(p) - f(m)) / 2e-6
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_dtype_str_strides_from_numpy():
    # str/repr/print as MindSpore's; format() keeps numpy's spelling, as the core's messages do
    assert str(mycel.float32) == "Float32" and repr(mycel.uint8) == "UInt8" and mycel.float32.name == "float32"
    assert f"{mycel.int64}" == "int64"
    x = Tensor(np.zeros((2, 3, 4), np.float32))
    assert x.strides == np.zeros((2, 3, 4), np.float32).strides
    n = np.ones(5)
    t = Tensor.from_numpy(n)
    np.add(n, 1, out=n)
    np.testing.assert_array_equal(t.asnumpy(), n)  # shares memory, as MindSpore's


def test_sparse_tensors_vs_dense():
    csr = mycel.CSRTensor(Tensor([0, 1, 3]), Tensor([1, 0, 3]), Tensor([1.0, 2.0, 3.0], dtype=mycel.float32), (2, 4))
    want = np.array([[0, 1, 0, 0], [2, 0, 0, 3]], np.float32)
    np.testing.assert_array_equal(csr.to_dense().asnumpy(), want)
    np.testing.assert_array_equal(csr.to_coo().to_dense().asnumpy(), want)
    assert str(csr.astype(mycel.float64).dtype) == "Float64"
    coo = mycel.COOTensor(Tensor([[0, 1], [1, 2]], dtype=mycel.int32), Tensor([1, 2], dtype=mycel.float32), (3, 4))
    dense = np.zeros((3, 4), np.float32)
    dense[0, 1], dense[1, 2] = 1, 2
    np.testing.assert_array_equal(coo.to_dense().asnumpy(), dense)
    with pytest.raises(ValueError, match="indptr must be non-decreasing"):
        mycel.CSRTensor(Tensor([0, 2, 1]), Tensor([0]), Tensor([1.0]), (2, 2))
    with pytest.raises(ValueError, match="indices out of range"):
        mycel.COOTensor(Tensor([[0, 4]]), Tensor([1.0]), (3, 4))


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_swapaxes_with_negative_axes_in_both_modes(mode):
    x = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    mycel.set_context(mode=mode)
    try:
        f = mycel.jit(lambda t: t.swapaxes(-1, -3)) if mode == mycel.GRAPH_MODE else (lambda t: t.swapaxes(-1, -3))
        np.testing.assert_array_equal(f(Tensor(x)).asnumpy(), np.swapaxes(x, -1, -3))
        bad = mycel.jit(lambda t: t.swapaxes(0, 3)) if mode == mycel.GRAPH_MODE else (lambda t: t.swapaxes(0, 3))
        with pytest.raises(ValueError, match=r"axes \(0, 3\) out of range for a 3-d tensor"):
            bad(Tensor(x))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
