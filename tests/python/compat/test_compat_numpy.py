"""mycel.numpy (MindSpore's mindspore.numpy) against numpy itself, eagerly and inside a graph."""
import numpy as np
import pytest

import mycel
import mycel.numpy as mnp
from mycel import Tensor, nn

RNG = np.random.default_rng(3)
A = RNG.normal(size=(3, 4)).astype(np.float32)
B = RNG.normal(size=(4, 5)).astype(np.float32)
V = RNG.normal(size=(4,)).astype(np.float32)
B3 = RNG.normal(size=(2, 4, 3)).astype(np.float32)


def _np(x):
    return x.asnumpy() if isinstance(x, Tensor) else np.asarray(x)


CASES = [
    ("sum axis", lambda m, a: m.sum(a, axis=1), A),
    ("sum keepdims", lambda m, a: m.sum(a, axis=(0, 1), keepdims=True), A),
    ("mean", lambda m, a: m.mean(a, axis=0), A),
    ("amax", lambda m, a: m.amax(a, axis=1), A),
    ("std ddof", lambda m, a: m.std(a, axis=1, ddof=1), A),
    ("var", lambda m, a: m.var(a), A),
    ("argmax flat", lambda m, a: m.argmax(a), A),
    ("argmin axis", lambda m, a: m.argmin(a, axis=0), A),
    ("prod", lambda m, a: m.prod(a, axis=0), A),
    ("cumsum flat", lambda m, a: m.cumsum(a), A),
    ("exp log", lambda m, a: m.log(m.exp(a) + 1.0), A),
    ("log2 log10", lambda m, a: m.log2(m.abs(a) + 1) + m.log10(m.abs(a) + 1), A),
    ("clip", lambda m, a: m.clip(a, -0.5, 0.5), A),
    ("where", lambda m, a: m.where(a > 0, a, m.zeros_like(a)), A),
    ("isclose", lambda m, a: m.isclose(a, a + 1e-6), A),
    ("transpose", lambda m, a: m.transpose(a), A),
    ("swapaxes", lambda m, a: m.swapaxes(a[None], 0, 2), A),
    ("moveaxis", lambda m, a: m.moveaxis(m.reshape(a, (3, 2, 2)), 0, 2), A),
    ("ravel", lambda m, a: m.ravel(a), A),
    ("concatenate", lambda m, a: m.concatenate((a, a), axis=1), A),
    ("concatenate None", lambda m, a: m.concatenate((a, a), axis=None), A),
    ("stack", lambda m, a: m.stack((a, a), axis=2), A),
    ("vstack hstack", lambda m, a: m.hstack((m.vstack((a[0], a[1])), m.vstack((a[1], a[2])))), A),
    ("tile", lambda m, a: m.tile(a, (2, 1, 2)), A),
    ("repeat", lambda m, a: m.repeat(a, 2, axis=1), A),
    ("repeat flat", lambda m, a: m.repeat(a, 3), A),
    ("flip", lambda m, a: m.flip(a, 1), A),
    ("flip all", lambda m, a: m.flip(a), A),
    ("tril triu", lambda m, a: m.tril(a, -1) + m.triu(a, 1), A),
    ("sort", lambda m, a: m.sort(a, axis=1), A),
    ("argsort", lambda m, a: m.argsort(a, axis=0), A),
    ("expand squeeze", lambda m, a: m.squeeze(m.expand_dims(a, 1)), A),
    ("outer", lambda m, a: m.outer(a[0], a[1]), A),
    ("trace", lambda m, a: m.trace(a[:, :3], 1), A),
    ("maximum", lambda m, a: m.maximum(a, a.T[:3, :4] if False else a * 0.5), A),
]


@pytest.mark.parametrize("name,f,a", CASES, ids=[c[0] for c in CASES])
def test_numpy_functions_match_numpy(name, f, a):
    np.testing.assert_allclose(_np(f(mnp, Tensor(a))), f(np, a), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("x,y", [(A, B), (V, B), (A, V), (V, V), (A, B3), (A, np.float32(2.0))])
def test_dot_matmul_vs_numpy(x, y):
    np.testing.assert_allclose(_np(mnp.dot(Tensor(x), Tensor(np.asarray(y)))), np.dot(x, y), rtol=1e-5, atol=1e-5)
    if np.ndim(y) > 0 and np.ndim(y) < 3:
        np.testing.assert_allclose(_np(mnp.matmul(Tensor(x), Tensor(y))), np.matmul(x, y), rtol=1e-5, atol=1e-5)
    if np.ndim(y) > 0 and np.ndim(y) < 3 and x.shape[-1] == np.shape(y)[-1]:
        np.testing.assert_allclose(_np(mnp.inner(Tensor(x), Tensor(y))), np.inner(x, y), rtol=1e-5, atol=1e-5)


def test_creation_vs_numpy():
    np.testing.assert_allclose(_np(mnp.linspace(0, 1, 7)), np.linspace(0, 1, 7, dtype=np.float32))
    np.testing.assert_allclose(_np(mnp.linspace(2, 3, 5, endpoint=False)), np.linspace(2, 3, 5, endpoint=False), rtol=1e-6)
    np.testing.assert_array_equal(_np(mnp.arange(5)), np.arange(5))
    assert mnp.arange(5).dtype == mycel.int32 and mnp.array([1.5]).dtype == mycel.float32
    np.testing.assert_allclose(_np(mnp.arange(0.0, 1.0, 0.25)), np.arange(0.0, 1.0, 0.25))
    np.testing.assert_array_equal(_np(mnp.eye(3, 4, 1)), np.eye(3, 4, 1))
    np.testing.assert_array_equal(_np(mnp.tri(3, 4, 1)), np.tri(3, 4, 1))
    np.testing.assert_array_equal(_np(mnp.full((2, 3), 7)), np.full((2, 3), 7))
    assert mnp.full((2,), 7).dtype == mycel.int32
    np.testing.assert_array_equal(_np(mnp.array([[1, 2]], ndmin=3)), np.array([[1, 2]], ndmin=3))
    pieces = mnp.split(Tensor(A), [1, 3], axis=1)
    for p, q in zip(pieces, np.split(A, [1, 3], axis=1)):
        np.testing.assert_array_equal(_np(p), q)
    with pytest.raises(ValueError, match="does not divide into 3"):
        mnp.split(Tensor(A), 3, axis=1)


class _NumpyNet(nn.Cell):
    def construct(self, x, y):
        return mnp.sum(mnp.dot(x, y) * 2.0, axis=1) + mnp.mean(mnp.square(x))


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_numpy_inside_a_cell_and_its_gradient(mode):
    mycel.set_context(mode=mode)
    try:
        x, y = Tensor(A), Tensor(B)
        out = _NumpyNet()(x, y)
        np.testing.assert_allclose(out.asnumpy(), (A @ B * 2).sum(1) + (A * A).mean(), rtol=1e-5)
        gx = mycel.grad(_NumpyNet())(x, y).asnumpy()
        ref = np.tile(2 * B.sum(1), (3, 1)) + 3 * 2 * A / A.size  # 3 outputs, each with the mean
        np.testing.assert_allclose(gx, ref, rtol=1e-5, atol=1e-6)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
