"""Issue 14 (compat20): MindSpore behaviours its own CPU tests rely on, against numpy: the Dense
primitive (1-d w, integer and complex dtypes, gradients, set_inputs with Tensor(dtype=...) of
unknown rank and a varargs construct, an empty ParameterTuple), pdist with p = 0 and p = inf,
PReLU at x = 0 and on a 0-d x, Tensor.index_add's (dim, index, source) form, ReverseSequence in a
@jit construct, and Gather's out-of-range message in MindSpore's words."""
import numpy as np
import pytest

import mycel
from mycel import Parameter, ParameterTuple, Tensor, nn, ops
from mycel.ops import composite as C
from mycel.ops import operations as P

MODES = pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


class DenseNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = P.Dense()

    def construct(self, x, w, b):
        return self.dense(x, w, b)


class DenseGrad(nn.Cell):
    """MindSpore's test form: *inputs, sens_param, get_by_list over a net without Parameters."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.grad = C.GradOperation(get_all=True, get_by_list=True, sens_param=True)
        self.params = ParameterTuple(net.trainable_params())

    def construct(self, *inputs):
        return self.grad(self.net, self.params)(*inputs)


@MODES
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.int64, np.float16, np.float32,
                                   np.complex64, np.complex128])
def test_dense_every_dtype(mode, dtype):
    mycel.set_context(mode=mode)
    x = np.arange(6).reshape(2, 3).astype(dtype)
    w = np.arange(12).reshape(4, 3).astype(dtype)
    b = np.arange(4).astype(dtype)
    out = DenseNet()(Tensor(x), Tensor(w), Tensor(b)).asnumpy()
    assert out.dtype == dtype
    np.testing.assert_allclose(out, x @ w.T + b, rtol=1e-3)


@MODES
def test_dense_one_dimensional_w(mode):
    mycel.set_context(mode=mode)
    x, w, b = np.array([[1.0, 2, 3], [4, 5, 6]]), np.array([4.0, 5, 6]), np.array(7.0)
    out = DenseNet()(Tensor(x), Tensor(w), Tensor(b)).asnumpy()
    np.testing.assert_allclose(out, x @ w + b)


@MODES
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_dense_gradients_with_sens(mode, dtype):
    mycel.set_context(mode=mode)
    rng = np.random.default_rng(0)

    def draw(*shape):
        a = rng.standard_normal(shape)
        return (a + 1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else a).astype(dtype)

    x, w, b, dout = draw(2, 3), draw(4, 3), draw(4), draw(2, 4)
    (dx, dw, db), weights = DenseGrad(DenseNet())(Tensor(x), Tensor(w), Tensor(b), Tensor(dout))
    assert weights == ()
    # y = x w^T + b; the gradient convention of docs/autodiff.md (conjugated for complex)
    np.testing.assert_allclose(dx.asnumpy(), dout @ np.conj(w), rtol=1e-5)
    np.testing.assert_allclose(dw.asnumpy(), dout.T @ np.conj(x), rtol=1e-5)
    np.testing.assert_allclose(db.asnumpy(), dout.sum(0), rtol=1e-5)


def test_set_inputs_of_unknown_rank_compiles_per_call():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    net = DenseNet()
    b = Tensor(np.ones(4, np.float32))
    net.set_inputs(Tensor(dtype=mycel.float32), Tensor(dtype=mycel.float32), b)
    for shape in [(2, 3), (1, 2, 3)]:
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        w = np.ones((4, 3), np.float32)
        np.testing.assert_allclose(net(Tensor(x), Tensor(w), b).asnumpy(), x @ w.T + 1, rtol=1e-5)
    with pytest.raises(TypeError, match="input 0 has dtype float64, set_inputs declared float32"):
        net(Tensor(np.ones((2, 3))), Tensor(np.ones((4, 3), np.float32)), b)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.5, float("inf")])
def test_pdist_every_p(p):
    x = np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 0.0], [3.0, 1.0, 0.5], [1.0, 1.0, 0.0]])
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    d = [x[i] - x[j] for i, j in pairs]
    if p == 0:
        want = [np.count_nonzero(v) for v in d]
    elif np.isinf(p):
        want = [np.abs(v).max() for v in d]
    else:
        want = [np.sum(np.abs(v) ** p) ** (1 / p) for v in d]
    np.testing.assert_allclose(ops.pdist(Tensor(x), p=p).asnumpy(), want, rtol=1e-12)
    with pytest.raises(ValueError, match="pdist: 'p' must be >= 0, got -1.0"):
        ops.pdist(Tensor(x), p=-1.0)


class PReLUGrad(nn.Cell):
    def __init__(self):
        super().__init__()
        self.prelu = P.PReLU()
        self.grad = C.GradOperation(get_all=True)

    def construct(self, x, w):
        return self.grad(self.prelu)(x, w)


@MODES
def test_prelu_at_zero_and_on_a_scalar(mode):
    mycel.set_context(mode=mode)
    x = np.array([[-1.5, 0.0, 2.0], [0.5, -0.25, 0.0]], np.float32).reshape(2, 3, 1)
    w = np.array([0.1, 0.2, 0.3], np.float32)
    wb = w.reshape(1, 3, 1)
    np.testing.assert_allclose(P.PReLU()(Tensor(x), Tensor(w)).asnumpy(), np.where(x > 0, x, wb * x))
    dx, dw = PReLUGrad()(Tensor(x), Tensor(w))
    np.testing.assert_allclose(dx.asnumpy(), np.where(x > 0, 1.0, np.broadcast_to(wb, x.shape)))
    np.testing.assert_allclose(dw.asnumpy(), np.where(x > 0, 0.0, x).sum(axis=(0, 2)))
    out = P.PReLU()(Tensor(np.array(-0.8, np.float32)), Tensor(np.array([0.6], np.float32)))
    assert out.shape == () and np.isclose(out.asnumpy(), -0.48)


def test_index_add_method_both_forms():
    x = np.arange(9.0).reshape(3, 3)
    idx = np.array([0, 2], np.int32)
    src = np.array([[0.5, 1.0], [1.0, 1.5], [2.0, 2.5]])
    want = x.copy()
    np.add.at(want, (slice(None), idx), 2.0 * src)
    out = Tensor(x).index_add(1, Tensor(idx), Tensor(src), alpha=2.0)
    np.testing.assert_allclose(out.asnumpy(), want)
    p = Parameter(Tensor(x), name="p")
    p.index_add(Tensor(idx), Tensor(src.T), 0)  # (indices, y, axis): the Parameter is updated
    want0 = x.copy()
    np.add.at(want0, idx, src.T)
    np.testing.assert_allclose(p.asnumpy(), want0)


class ReverseSequenceNet(nn.Cell):
    def __init__(self, seq_dim, batch_dim):
        super().__init__()
        self.op = P.ReverseSequence(seq_dim=seq_dim, batch_dim=batch_dim)

    @mycel.jit
    def construct(self, x, lengths):
        return self.op(x, lengths)


@MODES
@pytest.mark.parametrize("seq_dim,batch_dim", [(0, 1), (1, 0), (2, 0)])
def test_reverse_sequence_in_jit(mode, seq_dim, batch_dim):
    mycel.set_context(mode=mode)
    x = np.arange(24).reshape(2, 3, 4).astype(np.float32) if seq_dim == 2 else \
        np.arange(12).reshape(3, 4).astype(np.float32)
    n = x.shape[batch_dim]
    lengths = np.arange(1, n + 1).astype(np.int32) % (x.shape[seq_dim] + 1)
    want = x.copy()
    for i in range(n):
        src = [slice(None)] * x.ndim
        src[batch_dim], src[seq_dim] = i, slice(0, lengths[i])
        want[tuple(src)] = np.flip(x[tuple(src)], axis=seq_dim - (batch_dim < seq_dim))
    out = ReverseSequenceNet(seq_dim, batch_dim)(Tensor(x), Tensor(lengths)).asnumpy()
    np.testing.assert_array_equal(out, want)


def test_gather_out_of_range_in_mindspores_words():
    x = Tensor(np.arange(7.0))
    with pytest.raises(IndexError, match=r"\[gather\] index 100 is out of range for axis 0 with size 7 "
                                         r"\(expected -7 <= index < 7\). For 'Gather', the 'input_indices' "
                                         r"should be in the range \[-7, 7\)"):
        ops.gather(x, Tensor(np.array([0, 100], np.int32)), 0)
