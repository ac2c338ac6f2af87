"""nn.Conv3d, nn.Conv3dTranspose, nn.MaxPool3d and nn.AvgPool3d as MindSpore defines them
(NCDHW, pad_mode, 6-value padding, ceil_mode, count_include_pad, divisor_override), in both
modes, against numpy: a direct convolution, the adjoint identity for the transposed layer,
brute-force window loops for pooling, and finite differences for gradients."""
import itertools

import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops
from op_cases.nn3d import conv3d_ref

R = np.random.default_rng(13)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


@MODES
@pytest.mark.parametrize("kw", [dict(kernel_size=3), dict(kernel_size=(2, 3, 3), stride=2, pad_mode="valid"),
                                dict(kernel_size=3, pad_mode="pad", padding=(1, 0, 1, 1, 0, 2), dilation=(1, 2, 1)),
                                dict(kernel_size=2, group=2, has_bias=True, stride=(1, 2, 1))],
                         ids=["same", "valid_stride", "pad6_dilated", "group_bias"])
def test_conv3d_layer_vs_numpy(mode, kw):
    ms.set_context(mode=mode)
    layer = nn.Conv3d(4, 6, dtype=ms.float64, **kw)
    x = R.normal(size=(2, 4, 5, 6, 5))
    got = layer(Tensor(x)).asnumpy()
    pad = layer.padding if layer.pad_mode == "pad" else 0
    want = conv3d_ref(x, layer.weight.asnumpy(), layer.bias.asnumpy() if layer.has_bias else None, layer.stride,
                      layer.pad_mode, pad, layer.dilation, layer.group)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert layer.weight.shape == (6, 4 // layer.group) + layer.kernel_size


def test_conv3d_float32_matches_float64():
    layer = nn.Conv3d(3, 5, 3, pad_mode="pad", padding=1, has_bias=True)
    x = R.normal(size=(2, 3, 6, 7, 5)).astype(np.float32)
    want = conv3d_ref(x.astype(np.float64), layer.weight.asnumpy().astype(np.float64), layer.bias.asnumpy(), 1,
                      "pad", 1)
    np.testing.assert_allclose(layer(Tensor(x)).asnumpy(), want, rtol=1e-4, atol=1e-5)


@MODES
@pytest.mark.parametrize("kw,out_len", [(dict(kernel_size=3, stride=2), 8), (dict(kernel_size=3, stride=2, pad_mode="valid"), 9),
                                        (dict(kernel_size=4, stride=2, pad_mode="pad", padding=1), 8),
                                        (dict(kernel_size=3, stride=2, pad_mode="pad", padding=1, output_padding=1), 8)],
                         ids=["same", "valid", "pad", "output_padding"])
def test_conv3d_transpose_is_the_adjoint_of_conv3d(mode, kw, out_len):
    """<conv3d(u, w), v> == <u, conv3d_transpose(v)> for every u, v: the transposed layer's output
    is the input space of the conv3d whose weight it holds (MindSpore's definition)."""
    ms.set_context(mode=mode)
    stride = kw.get("stride", 1)
    layer = nn.Conv3dTranspose(4, 3, dtype=ms.float64, **kw)
    d = 4  # input depth/height/width
    v = R.normal(size=(2, 4, d, d, d))
    y = layer(Tensor(v)).asnumpy()
    assert y.shape == (2, 3, out_len, out_len, out_len)
    if layer.pad_mode == "same":
        assert out_len == d * stride
    u = R.normal(size=y.shape)
    pad = layer.padding if layer.pad_mode == "pad" else 0
    conv = conv3d_ref(u, layer.weight.asnumpy(), None, layer.stride, layer.pad_mode, pad, layer.dilation)
    assert conv.shape == v.shape
    np.testing.assert_allclose(np.sum(conv * v), np.sum(u * y), rtol=1e-10)


def test_conv3d_transpose_bias_and_group():
    layer = nn.Conv3dTranspose(4, 6, 2, stride=2, group=2, has_bias=True, dtype=ms.float64)
    v = R.normal(size=(1, 4, 3, 2, 3))
    y = layer(Tensor(v)).asnumpy()
    no_bias = y - layer.bias.asnumpy().reshape(1, -1, 1, 1, 1)
    u = R.normal(size=y.shape)
    conv = conv3d_ref(u, layer.weight.asnumpy(), None, 2, "same", 0, 1, 2)
    np.testing.assert_allclose(np.sum(conv * v), np.sum(u * no_bias), rtol=1e-10)


def _window_loop(x, k, s, pads, ceil_mode, reduce):
    """Brute force: every window position of the last three dims, reduce(values, window) where
    window is the list of index triples inside the (explicitly) padded input."""
    sizes = x.shape[-3:]
    outs = []
    for i in range(3):
        span = sizes[i] + pads[2 * i] + pads[2 * i + 1] - k[i]
        o = -(-span // s[i]) + 1 if ceil_mode else span // s[i] + 1
        if ceil_mode and (o - 1) * s[i] >= sizes[i] + pads[2 * i]:
            o -= 1
        outs.append(o)
    y = np.zeros(x.shape[:-3] + tuple(outs))
    for o in itertools.product(*[range(n) for n in outs]):
        starts = [o[i] * s[i] - pads[2 * i] for i in range(3)]
        inside, padded = [], []
        for off in itertools.product(*[range(n) for n in k]):
            p = tuple(starts[i] + off[i] for i in range(3))
            if all(0 <= p[i] < sizes[i] for i in range(3)):
                inside.append(p)
            elif all(-pads[2 * i] <= p[i] < sizes[i] + pads[2 * i + 1] for i in range(3)):
                padded.append(p)
        vals = np.stack([x[(Ellipsis,) + p] for p in inside], axis=-1)
        y[(Ellipsis,) + o] = reduce(vals, len(inside), len(padded))
    return y


@MODES
@pytest.mark.parametrize("kw", [dict(kernel_size=2, stride=2), dict(kernel_size=3, stride=2, pad_mode="pad", padding=1),
                                dict(kernel_size=(3, 2, 3), stride=2, ceil_mode=True),
                                dict(kernel_size=3, stride=2, pad_mode="pad", padding=(1, 0, 1), ceil_mode=True)],
                         ids=["plain", "pad", "ceil", "pad_ceil"])
def test_max_pool3d_layer_vs_loop(mode, kw):
    ms.set_context(mode=mode)
    layer = nn.MaxPool3d(**kw)
    x = R.normal(size=(2, 3, 6, 5, 7))
    want = _window_loop(x, layer._kernel, layer._stride, layer.padding, layer.ceil_mode,
                        lambda v, n, p: v.max(-1))
    np.testing.assert_array_equal(layer(Tensor(x)).asnumpy(), want)
    np.testing.assert_array_equal(layer(Tensor(x[0])).asnumpy(), want[0])  # (C, D, H, W)


@MODES
@pytest.mark.parametrize("kw", [dict(kernel_size=2, stride=2),
                                dict(kernel_size=3, stride=2, pad_mode="pad", padding=1),
                                dict(kernel_size=3, stride=2, pad_mode="pad", padding=1, count_include_pad=False),
                                dict(kernel_size=(3, 2, 3), stride=2, ceil_mode=True),
                                dict(kernel_size=3, stride=(2, 1, 2), pad_mode="pad", padding=(1, 1, 0), ceil_mode=True),
                                dict(kernel_size=2, stride=1, divisor_override=3)],
                         ids=["plain", "pad_include", "pad_exclude", "ceil", "pad_ceil", "divisor"])
def test_avg_pool3d_layer_vs_loop(mode, kw):
    ms.set_context(mode=mode)
    layer = nn.AvgPool3d(**kw)
    x = R.normal(size=(2, 3, 6, 5, 7))
    div = kw.get("divisor_override")
    include = layer.count_include_pad

    def mean(v, n, p):
        return v.sum(-1) / (div if div else n + p if include else n)

    want = _window_loop(x, layer._kernel, layer._stride, layer.padding, layer.ceil_mode, mean)
    np.testing.assert_allclose(layer(Tensor(x)).asnumpy(), want, rtol=1e-6, atol=1e-7)


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        g[idx] = (f(hi) - f(lo)) / (2 * eps)
    return g


class _Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 3, 2, pad_mode="pad", padding=1, has_bias=True, dtype=ms.float64)
        self.pool = nn.MaxPool3d(2, 2)
        self.avg = nn.AvgPool3d(2, 1, pad_mode="same")
        self.up = nn.Conv3dTranspose(3, 2, 2, stride=2, dtype=ms.float64)

    def construct(self, x):
        return ops.sum(self.up(self.avg(self.pool(ops.tanh(self.conv(x))))) ** 2)


@MODES
def test_gradient_through_conv3d_pool3d_transpose(mode):
    ms.set_context(mode=mode)
    net = _Net()
    x = R.normal(size=(1, 2, 4, 3, 4))
    grads = ms.grad(net, grad_position=0, weights=net.trainable_params())(Tensor(x))
    np.testing.assert_allclose(grads[0].asnumpy(), _fd(lambda v: net(Tensor(v)).asnumpy(), x), rtol=1e-5, atol=1e-7)
    w = net.conv.weight
    w0 = w.asnumpy().copy()

    def loss_w(v):
        w.set_data(Tensor(v))
        out = net(Tensor(x)).asnumpy()
        w.set_data(Tensor(w0))
        return out
    np.testing.assert_allclose(grads[1][0].asnumpy(), _fd(loss_w, w0), rtol=1e-5, atol=1e-7)


def test_ops_and_primitives():
    x = R.normal(size=(1, 2, 4, 4, 4))
    w = R.normal(size=(3, 2, 2, 2, 2))
    np.testing.assert_allclose(ops.conv3d(Tensor(x), Tensor(w), pad_mode="pad", padding=1).asnumpy(),
                               conv3d_ref(x, w, None, 1, "pad", 1), rtol=1e-10)
    prim = ops.Conv3D(stride=2)
    np.testing.assert_allclose(prim(Tensor(x), Tensor(w)).asnumpy(), conv3d_ref(x, w, None, 2), rtol=1e-10)
    y = ops.MaxPool3D(kernel_size=2, strides=2)(Tensor(x)).asnumpy()
    np.testing.assert_array_equal(y, x.reshape(1, 2, 2, 2, 2, 2, 2, 2).max(axis=(3, 5, 7)))
    a = ops.avg_pool3d(Tensor(x), kernel_size=2, strides=2).asnumpy()
    np.testing.assert_allclose(a, x.reshape(1, 2, 2, 2, 2, 2, 2, 2).mean(axis=(3, 5, 7)), rtol=1e-12)


def test_bad_input_names_the_op():
    with pytest.raises(ValueError, match="Conv3d"):
        nn.Conv3d(2, 3, 3, padding=1)  # padding without pad_mode 'pad'
    with pytest.raises(ValueError, match="kernel_size"):
        nn.Conv3d(2, 3, (3, 3))
    with pytest.raises(ValueError, match="Conv3d"):
        nn.Conv3d(2, 3, 3)(Tensor(np.zeros((1, 2, 4, 4), np.float32)))
    with pytest.raises(ValueError, match=r"conv3d.*depth"):
        ops.conv3d(Tensor(np.zeros((1, 2, 2, 5, 5), np.float32)), Tensor(np.zeros((3, 2, 3, 3, 3), np.float32)))
    with pytest.raises(ValueError, match=r"conv3d.*channels"):
        ops.conv3d(Tensor(np.zeros((1, 4, 5, 5, 5), np.float32)), Tensor(np.zeros((3, 2, 3, 3, 3), np.float32)))
    with pytest.raises(ValueError, match="max_pool3d.*pad"):
        ops.max_pool3d(Tensor(np.zeros((1, 1, 4, 4, 4), np.float32)), kernel_size=2, pad=3, pad_mode="pad")
    with pytest.raises(ValueError, match="AvgPool3d"):
        nn.AvgPool3d(2, divisor_override=0)
