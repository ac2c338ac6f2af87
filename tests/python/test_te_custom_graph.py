"""ops.Custom in graph mode (GRAPH_MODE Cells and @jit), user bprops in both modes, pyfunc and
aot operators. References: the built-in ops, numpy, finite differences."""

import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops, te
from mycel._mycel import graph as G
from train_helpers import LeNet5, WithLoss
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)


def te_relu(x):
    return te.vrelu(x)


def te_dense(x, w):  # x @ w.T, as nn.Dense stores its weight
    k = te.reduce_axis((0, x.shape[1]), "k")
    return te.compute((x.shape[0], w.shape[0]), lambda i, j: te.sum(x[i, k] * w[j, k], axis=k), "dense")


class ActLeNet(LeNet5):
    """LeNet5 whose two hidden dense layers use `act` (a Custom op) instead of nn.ReLU."""

    def __init__(self, act):
        super().__init__()
        self.act = act

    def construct(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.act(self.fc1(x))
        x = self.act(self.fc2(x))
        return self.fc3(x)


def train_losses(net, x, y, steps=4):
    step = nn.TrainOneStepCell(WithLoss(net), nn.SGD(net.trainable_params(), learning_rate=0.05))
    return [float(step(x, y).asnumpy()) for _ in range(steps)]


def test_lenet5_with_te_activation_trains_like_builtin_in_graph_mode():
    rng = np.random.default_rng(0)
    x = ms.Tensor(rng.standard_normal((8, 1, 32, 32)).astype(np.float32))
    y = ms.Tensor(rng.integers(0, 10, 8).astype(np.int32))
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(3)
    ref = train_losses(LeNet5(), x, y)
    ms.set_seed(3)
    act = ops.Custom(te_relu, lambda s: s, lambda d: d, func_type="te")
    net = ActLeNet(act)
    got = train_losses(net, x, y)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
    assert got[-1] < got[0]
    # The op is a te_call node of the compiled step, one TE function per input shape (8x120, 8x84).
    assert "te_call" in G.compile(net).program_text(x)
    assert sorted(k[0][0] for k in act._cache) == [(8, 84), (8, 120)]


def test_custom_te_in_jit_forward_and_grad():
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((5, 6)).astype(np.float32)
    wv = rng.standard_normal((3, 6)).astype(np.float32)
    dense = ops.Custom(te_dense, lambda sx, sw: (sx[0], sw[0]), lambda dx, dw: dx)

    @ms.jit
    def f(x, w):
        return ops.tanh(dense(x, w)).sum()

    @ms.jit
    def ref(x, w):
        return ops.tanh(ops.matmul(x, w, transpose_b=True)).sum()
    x, w = ms.Tensor(xv), ms.Tensor(wv)
    np.testing.assert_allclose(f(x, w).asnumpy(), ref(x, w).asnumpy(), rtol=1e-5)
    gx, gw = ms.grad(f, grad_position=(0, 1))(x, w)
    rx, rw = ms.grad(ref, grad_position=(0, 1))(x, w)
    np.testing.assert_allclose(gx.asnumpy(), rx.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gw.asnumpy(), rw.asnumpy(), rtol=1e-5, atol=1e-6)


def finite_difference(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def cube_bprop(x, out, dout):
    return (3.0 * x * x * dout,)


def wrong_cube_bprop(x, out, dout):
    return (6.0 * x * x * dout,)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_user_bprop_is_used_by_grad_in_both_modes(mode):
    # The te func computes x**3; the user's bprop is the true derivative 3x^2, while a wrong bprop
    # (the default te gradient times 2) shows that grad takes the user's rule and not te's.
    ms.set_context(mode=mode)
    cube = ops.Custom(lambda x: te.vmul(te.vmul(x, x), x), lambda s: s, lambda d: d, bprop=cube_bprop)
    doubled = ops.Custom(lambda x: te.vmul(te.vmul(x, x), x), lambda s: s, lambda d: d, bprop=wrong_cube_bprop)

    class Net(nn.Cell):
        def __init__(self, op):
            super().__init__()
            self.op = op

        def construct(self, x):
            return ops.sin(self.op(x)).sum()
    xv = np.linspace(-1.2, 1.1, 6)
    x = ms.Tensor(xv)
    g = ms.grad(Net(cube))(x).asnumpy()
    fd = finite_difference(lambda a: np.sin(a ** 3).sum(), xv)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ms.grad(Net(doubled))(x).asnumpy(), 2 * fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(Net(cube)(x).asnumpy(), np.sin(xv ** 3).sum(), rtol=1e-12)
    # Without a bprop the te gradient stays the default, and agrees with finite differences.
    plain = ops.Custom(lambda x: te.vmul(te.vmul(x, x), x), lambda s: s, lambda d: d)
    np.testing.assert_allclose(ms.grad(Net(plain))(x).asnumpy(), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_pyfunc_forward_and_bprop_in_both_modes(mode):
    ms.set_context(mode=mode)
    calls = []

    def np_softplus(x):
        calls.append(x.shape)
        return np.log1p(np.exp(x))

    def np_sigmoid(x):
        return 1.0 / (1.0 + np.exp(-x))
    sigmoid = ops.Custom(np_sigmoid, lambda s: s, lambda d: d, func_type="pyfunc")

    def softplus_bprop(x, out, dout):
        return (sigmoid(x) * dout,)
    softplus = ops.Custom(np_softplus, lambda s: s, lambda d: d, func_type="pyfunc", bprop=softplus_bprop)

    class Net(nn.Cell):
        def construct(self, x):
            return (softplus(x) * x).sum()
    xv = np.linspace(-2, 2, 7)
    x = ms.Tensor(xv)
    np.testing.assert_allclose(Net()(x).asnumpy(), (np.log1p(np.exp(xv)) * xv).sum(), rtol=1e-12)
    g = ms.grad(Net())(x).asnumpy()
    fd = finite_difference(lambda a: (np.log1p(np.exp(a)) * a).sum(), xv)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    assert calls and all(s == (7,) for s in calls)


def test_pyfunc_errors():
    bad_shape = ops.Custom(lambda x: np.zeros(3, np.float32), (2,), ms.float32, func_type="pyfunc")
    with pytest.raises(ValueError, match=r"func returned shape \(3,\), but out_shape says \(2,\)"):
        bad_shape(np.zeros(2, np.float32))
    bad_dtype = ops.Custom(lambda x: x.astype(np.float64), (2,), ms.float32, func_type="pyfunc")
    with pytest.raises(TypeError, match="func returned dtype float64, but out_dtype says float32"):
        bad_dtype(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="'pyfunc' needs out_shape and out_dtype"):
        ops.Custom(lambda x: x, func_type="pyfunc")
    no_grad = ops.Custom(lambda x: x, (2,), ms.float32, func_type="pyfunc")
    with pytest.raises(Exception, match="custom_call"):
        ms.grad(lambda x: no_grad(x).sum())(ms.Tensor(np.zeros(2, np.float32)))


AOT_SOURCE = r"""
#include <cstdint>
#include <cstring>
// out = a * b + 1 elementwise (float32), MindSpore's aot signature.
extern "C" int mul_add_one(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                           void* stream, void* extra) {
  if (nparam != 3 || std::strcmp(dtypes[0], "float32") != 0) return 1;
  int64_t n = 1;
  for (int d = 0; d < ndims[0]; ++d) n *= shapes[0][d];
  const float* a = static_cast<const float*>(params[0]);
  const float* b = static_cast<const float*>(params[1]);
  float* out = static_cast<float*>(params[2]);
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i] + 1.0f;
  return 0;
}
"""


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_aot_from_source_compiled_once_with_bprop(tmp_path_factory, mode):
    src = tmp_path_factory.getbasetemp() / "aot_mul_add_one.cc"
    if not src.exists():
        src.write_text(AOT_SOURCE)
    ms.set_context(mode=mode)

    def mul_bprop(a, b, out, dout):
        return b * dout, a * dout
    op = ops.Custom(f"{src}:mul_add_one", lambda sa, sb: sa, lambda da, db: da, func_type="aot", bprop=mul_bprop)
    again = ops.Custom(f"{src}:mul_add_one", lambda sa, sb: sa, lambda da, db: da, func_type="aot")
    assert again.cached and again.library == op.library  # the same source is not compiled twice
    rng = np.random.default_rng(4)
    av = rng.standard_normal((3, 4)).astype(np.float32)
    bv = rng.standard_normal((3, 4)).astype(np.float32)

    class Net(nn.Cell):
        def construct(self, a, b):
            return (op(a, b) ** 2).sum()
    a, b = ms.Tensor(av), ms.Tensor(bv)
    np.testing.assert_allclose(again(a, b).asnumpy(), av * bv + 1, rtol=1e-6)
    np.testing.assert_allclose(Net()(a, b).asnumpy(), ((av * bv + 1) ** 2).sum(), rtol=1e-5)
    ga, gb = ms.grad(Net(), grad_position=(0, 1))(a, b)
    np.testing.assert_allclose(ga.asnumpy(), 2 * (av * bv + 1) * bv, rtol=1e-5)
    np.testing.assert_allclose(gb.asnumpy(), 2 * (av * bv + 1) * av, rtol=1e-5)


def test_aot_errors(tmp_path):
    with pytest.raises(ValueError, match="'path/to/lib.so:func_name'"):
        ops.Custom("no_colon", (1,), ms.float32, func_type="aot")
    with pytest.raises(ValueError, match="no file"):
        ops.Custom(str(tmp_path / "missing.cc") + ":f", (1,), ms.float32, func_type="aot")
    src = tmp_path / "bad.cc"
    src.write_text("extern \"C\" int f(int n, void** p, int* d, long** s, const char** t, void* a, void* b) "
                   "{ return 7; }\n")
    with pytest.raises(ValueError, match="has no function 'g'"):
        ops.Custom(f"{src}:g", (1,), ms.float32, func_type="aot")
    op = ops.Custom(f"{src}:f", (2,), ms.float32, func_type="aot")
    with pytest.raises(RuntimeError, match="returned 7"):
        op(np.zeros(2, np.float32))
    broken = tmp_path / "broken.cc"
    broken.write_text("this is not C++\n")
    with pytest.raises(RuntimeError, match="compiler"):
        ops.Custom(f"{broken}:f", (1,), ms.float32, func_type="aot")


def test_te_custom_in_graph_mode_needs_static_shapes():
    relu = ops.Custom(te_relu, lambda s: s, lambda d: d)

    class Net(nn.Cell):
        def construct(self, x):
            return relu(x) * 2
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Net()
    net.set_inputs(ms.Tensor(shape=[None, 3], dtype=ms.float32))
    with pytest.raises(NotImplementedError, match="_te_kernel_for_static_shapes.*only known at run time"):
        net(ms.Tensor(np.ones((2, 3), np.float32)))
