"""MindSpore's older primitive names and small composite primitives, against numpy in both
modes, and the MindSpore 1.x dataset transform module paths."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn
from mycel.ops import operations as P

R = np.random.default_rng(31)


class _Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.bias_add = P.BiasAdd()
        self.arg_max = P.ArgMaxWithValue(axis=1)
        self.arg_min = P.ArgMinWithValue(axis=0, keep_dims=True)
        self.add_n = P.AddN()
        self.l2 = P.L2Normalize(axis=1)
        self.sce = P.SigmoidCrossEntropyWithLogits()
        self.hswish = P.HSwish()
        self.fast_gelu = P.FastGelu()

    def construct(self, x, b, y):
        return (self.bias_add(x, b), self.arg_max(x[:, :, 0, 0]), self.arg_min(x[:, :, 0, 0]),
                self.add_n((x, x, x)), self.l2(x), self.sce(x, y), self.hswish(x), self.fast_gelu(x),
                P.TensorAdd()(x, x), P.RealDiv()(x, x + 10.0), P.Pack(axis=1)((b, b)))


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_composite_primitives_vs_numpy(mode):
    mycel.set_context(mode=mode)
    try:
        x = R.normal(size=(2, 3, 4, 5))
        b = R.normal(size=(3,))
        y = (R.random(size=x.shape) < 0.5).astype(np.float64)
        out = _Net()(Tensor(x), Tensor(b), Tensor(y))
        np.testing.assert_allclose(out[0].asnumpy(), x + b[None, :, None, None])
        x2 = x[:, :, 0, 0]
        np.testing.assert_array_equal(out[1][0].asnumpy(), x2.argmax(1))
        np.testing.assert_allclose(out[1][1].asnumpy(), x2.max(1))
        np.testing.assert_array_equal(out[2][0].asnumpy(), x2.argmin(0)[None])
        np.testing.assert_allclose(out[3].asnumpy(), 3 * x)
        np.testing.assert_allclose(out[4].asnumpy(), x / np.sqrt(np.maximum((x * x).sum(1, keepdims=True), 1e-4)))
        p = 1 / (1 + np.exp(-x))
        np.testing.assert_allclose(out[5].asnumpy(), -(y * np.log(p) + (1 - y) * np.log(1 - p)), rtol=1e-10)
        np.testing.assert_allclose(out[6].asnumpy(), x * np.clip(x + 3, 0, 6) / 6)
        a = np.abs(x)
        np.testing.assert_allclose(out[7].asnumpy(), x / (1 + np.exp(-1.702 * a)) * np.exp(0.851 * (x - a)), rtol=1e-12)
        np.testing.assert_allclose(out[8].asnumpy(), 2 * x)
        np.testing.assert_allclose(out[9].asnumpy(), x / (x + 10.0))
        np.testing.assert_allclose(out[10].asnumpy(), np.stack((b, b), 1))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_aliases_and_1x_module_paths():
    assert P.TensorAdd is P.Add and P.GatherV2 is P.Gather and P.BatchMatMul is P.MatMul and P.Gelu is P.GeLU
    import mycel.dataset.transforms.c_transforms as C
    import mycel.dataset.vision.c_transforms as CV
    import mycel.dataset.vision.py_transforms as PV
    assert CV.Resize is mycel.dataset.vision.Resize and PV.HWC2CHW is mycel.dataset.vision.HWC2CHW
    assert C.TypeCast is mycel.dataset.transforms.TypeCast
    with pytest.raises(ValueError, match="data_format must be"):
        P.BiasAdd("NWC")


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_primitive_called_with_star_inputs(mode):
    # MindSpore's op tests wrap a primitive as `construct(self, *inputs): return self.op(*inputs)`;
    # in graph mode the tuple is known only at run time, so the Primitive object is called as its
    # registry op with the attributes it was made with.
    class Wrapper(nn.Cell):
        def __init__(self, op):
            super().__init__()
            self.op = op

        def construct(self, *inputs):
            return self.op(*inputs)

    a = np.array([[1, 6, 3], [4, 5, 2]], np.int32)
    b = np.array([[3, 3, 3], [0, 7, 1]], np.int32)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    mycel.set_context(mode=mode)
    try:
        xor = Wrapper(P.BitwiseXor())(Tensor(a), Tensor(b)).asnumpy()
        mm = Wrapper(P.MatMul(transpose_b=True))(Tensor(x), Tensor(x)).asnumpy()
        add = Wrapper(P.Add())(Tensor(x), Tensor(x)).asnumpy()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    np.testing.assert_array_equal(xor, a ^ b)
    np.testing.assert_allclose(mm, x @ x.T, rtol=1e-6)
    np.testing.assert_array_equal(add, 2 * x)


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_layer_norm_primitive_returns_mindspores_variance(mode):
    # MindSpore's P.LayerNorm: defaults begin_norm_axis=1, begin_params_axis=1; outputs
    # (y, mean, variance), the variance differentiable.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 5)).astype(np.float64)
    gamma, beta = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    mean = x.mean(axis=(1, 2), keepdims=True)
    var = x.var(axis=(1, 2), keepdims=True)
    want_y = (x - mean) / np.sqrt(var + 1e-7) * gamma + beta

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.norm = P.LayerNorm()

        def construct(self, a, g, b):
            return self.norm(a, g, b)

    mycel.set_context(mode=mode)
    try:
        net, g, b = Net(), Tensor(gamma), Tensor(beta)
        y, m, v = net(Tensor(x), g, b)
        grad = mycel.grad(lambda a: net(a, g, b)[2].sum())(Tensor(x)).asnumpy()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    np.testing.assert_allclose(y.asnumpy(), want_y, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(m.asnumpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(v.asnumpy(), var, rtol=1e-9)
    n = 20  # d sum(var) / dx = 2 (x - mean) / n per row
    np.testing.assert_allclose(grad, 2 * (x - mean) / n, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_masked_fill_primitive_in_both_modes(mode):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    mask = np.array([[True, False, True], [False, False, True]])

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fill = P.MaskedFill()

        def construct(self, a, m, v):
            return self.fill(a, m, v)

    mycel.set_context(mode=mode)
    try:
        got = Net()(Tensor(x), Tensor(mask), Tensor(np.array(7.9, np.float32))).asnumpy()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.where(mask, 7, x))  # the value cast to the input's dtype
