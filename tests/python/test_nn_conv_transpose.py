"""nn.Conv2dTranspose: output shapes per pad_mode, values against a direct scatter-add reference in
both modes, gradients (input, weight, bias) against central finite differences in float64."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.common import dtype as mstype

RNG = np.random.default_rng(3)


class Wrap(nn.Cell):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def construct(self, x):
        return self.inner(x)


def expected_size(size, k, s, d, pad_mode, p0, p1, op):
    """MindSpore's documented output size of one spatial dim."""
    if pad_mode == "same":
        return size * s
    if pad_mode == "valid":
        return size * s + max(d * (k - 1) - s + 1, 0)
    return (size - 1) * s - p0 - p1 + d * (k - 1) + op + 1


def ref_conv_transpose(layer, x):
    """Every input pixel scatters w[ci, :, ki, kj] * x into the output at i*s + ki*d - pad."""
    x = x.astype(np.float64)
    w = layer.weight.asnumpy().astype(np.float64)
    n, cin, h, wd = x.shape
    (kh, kw), (sh, sw), (dh, dw) = layer.kernel_size, layer.stride, layer.dilation
    pt, pb, pl, pr = layer.padding
    oph, opw = layer.output_padding
    oh = expected_size(h, kh, sh, dh, layer.pad_mode, pt, pb, oph)
    ow = expected_size(wd, kw, sw, dw, layer.pad_mode, pl, pr, opw)
    if layer.pad_mode == "same":  # the padding of the conv2d over (oh, ow) that this transposes
        pt = max(dh * (kh - 1) + 1 - sh, 0) // 2
        pl = max(dw * (kw - 1) + 1 - sw, 0) // 2
    elif layer.pad_mode == "valid":
        pt = pl = 0
    y = np.zeros((n, layer.out_channels, oh, ow))
    icg, ocg = cin // layer.group, layer.out_channels // layer.group
    for ci in range(cin):
        g = ci // icg
        for i in range(h):
            for j in range(wd):
                for ki in range(kh):
                    for kj in range(kw):
                        r, c = i * sh + ki * dh - pt, j * sw + kj * dw - pl
                        if 0 <= r < oh and 0 <= c < ow:
                            y[:, g * ocg:(g + 1) * ocg, r, c] += x[:, ci, i, j, None] * w[ci, :, ki, kj]
    if layer.has_bias:
        y += layer.bias.asnumpy().reshape(1, -1, 1, 1)
    return y


CASES = [
    dict(kernel_size=3),                                                     # same, stride 1
    dict(kernel_size=3, stride=2, has_bias=True),                            # same, stride 2
    dict(kernel_size=(2, 3), stride=(2, 1), pad_mode="same"),
    dict(kernel_size=3, stride=2, pad_mode="valid"),
    dict(kernel_size=1, stride=3, pad_mode="valid", has_bias=True),          # kernel < stride
    dict(kernel_size=3, stride=2, pad_mode="pad", padding=1, output_padding=1),
    dict(kernel_size=(3, 2), stride=(3, 2), pad_mode="pad", padding=(1, 0, 2, 1), output_padding=(2, 0)),
    dict(kernel_size=3, pad_mode="pad", padding=2, dilation=2, has_bias=True),
    dict(kernel_size=2, stride=2, pad_mode="valid", dilation=(1, 2), group=2, in_channels=4, out_channels=6),
]


def make(kw, dtype=mstype.float32):
    kw = dict(kw)
    cin, cout = kw.pop("in_channels", 2), kw.pop("out_channels", 3)
    if kw.get("has_bias"):
        kw["bias_init"] = Tensor(RNG.standard_normal(cout).astype(np.float64 if dtype == mstype.float64 else np.float32))
    return nn.Conv2dTranspose(cin, cout, dtype=dtype, **kw)


@pytest.mark.parametrize("kw", CASES)
def test_conv2d_transpose_matches_scatter_reference(kw):
    layer = make(kw)
    x = RNG.standard_normal((2, layer.in_channels, 4, 5)).astype(np.float32)
    ref = ref_conv_transpose(layer, x)
    net = Wrap(layer)
    for mode in (mycel.PYNATIVE_MODE, mycel.GRAPH_MODE):
        mycel.set_context(mode=mode)
        y = net(Tensor(x)).asnumpy()
        assert y.shape == ref.shape, (mode, y.shape, ref.shape)
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


def test_conv2d_transpose_output_sizes():
    x = Tensor(np.zeros((1, 2, 5, 7), np.float32))
    assert nn.Conv2dTranspose(2, 3, 3, stride=2)(x).shape == (1, 3, 10, 14)
    assert nn.Conv2dTranspose(2, 3, 3, stride=2, pad_mode="valid")(x).shape == (1, 3, 11, 15)
    assert nn.Conv2dTranspose(2, 3, 4, stride=2, pad_mode="pad", padding=1)(x).shape == (1, 3, 10, 14)
    assert nn.Conv2dTranspose(2, 3, 3, stride=2, pad_mode="pad", padding=1,
                              output_padding=1)(x).shape == (1, 3, 10, 14)
    assert nn.Conv2dTranspose(2, 4, 3, group=2).weight.shape == (2, 2, 3, 3)


def _numeric_grad(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        hi, lo = a.copy(), a.copy()
        hi[idx] += eps
        lo[idx] -= eps
        g[idx] = (f(hi) - f(lo)) / (2 * eps)
    return g


@pytest.mark.parametrize("kw", [CASES[1], CASES[6], CASES[8]])
@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE])
def test_conv2d_transpose_gradients_match_finite_differences(kw, mode):
    layer = make(kw, mstype.float64)
    x = RNG.standard_normal((1, layer.in_channels, 3, 4))
    dout = RNG.standard_normal(ref_conv_transpose(layer, x).shape)
    params = [layer.weight] + ([layer.bias] if layer.has_bias else [])
    mycel.set_context(mode=mode)
    (gx,), gp = ops.GradOperation(get_all=True, get_by_list=True, sens_param=True)(Wrap(layer), params)(
        Tensor(x), Tensor(dout))
    mycel.set_context(mode=mycel.PYNATIVE_MODE)

    def loss_of_x(xv):
        return float(np.sum(layer(Tensor(xv)).asnumpy() * dout))

    np.testing.assert_allclose(gx.asnumpy(), _numeric_grad(loss_of_x, x), rtol=1e-6, atol=1e-7)
    for p, g in zip(params, gp):
        base = p.asnumpy().copy()

        def loss_of_p(v, p=p):
            p.set_data(Tensor(v))
            return loss_of_x(x)

        num = _numeric_grad(loss_of_p, base)
        p.set_data(Tensor(base))
        np.testing.assert_allclose(g.asnumpy(), num, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kw, msg", [
    (dict(in_channels=3, out_channels=4, kernel_size=3, group=2), "must be divisible by group"),
    (dict(in_channels=2, out_channels=2, kernel_size=3, output_padding=1), "output_padding must be 0 unless"),
    (dict(in_channels=2, out_channels=2, kernel_size=3, stride=2, pad_mode="pad", output_padding=2),
     r"output_padding \(2, 2\) must be smaller than stride \(2, 2\)"),
    (dict(in_channels=2, out_channels=2, kernel_size=3, padding=1), "padding must be 0 unless pad_mode is 'pad'"),
    (dict(in_channels=2, out_channels=2, kernel_size=0), "'kernel_size' must be"),
])
def test_conv2d_transpose_argument_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        nn.Conv2dTranspose(**kw)


def test_conv2d_transpose_rejects_wrong_input():
    layer = nn.Conv2dTranspose(2, 3, 3)
    with pytest.raises(ValueError, match="Conv2dTranspose"):
        layer(Tensor(np.zeros((2, 5, 5), np.float32)))
    with pytest.raises(Exception, match="conv2d_backprop_input"):
        layer(Tensor(np.zeros((1, 4, 5, 5), np.float32)))  # 4 channels, the weight expects 2
