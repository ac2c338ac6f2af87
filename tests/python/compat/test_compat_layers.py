"""More nn layers (activation zoo, Conv1d, MaxPool1d, AvgPool1d) against numpy, in both modes;
float64 gradients of the activations against central finite differences."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn

R = np.random.default_rng(21)
X = R.normal(scale=2.0, size=(3, 4, 5))


def _softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


ACTS = [
    ("ELU", lambda: nn.ELU(0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    ("CELU", lambda: nn.CELU(1.5), lambda x: np.maximum(x, 0) + np.minimum(0, 1.5 * np.expm1(x / 1.5))),
    ("SeLU", lambda: nn.SeLU(), lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    ("Softplus", lambda: nn.Softplus(), _softplus),
    ("Softsign", lambda: nn.Softsign(), lambda x: x / (1 + np.abs(x))),
    ("Hardtanh", lambda: nn.Hardtanh(-0.5, 1.5), lambda x: np.clip(x, -0.5, 1.5)),
    ("HSigmoid", lambda: nn.HSigmoid(), lambda x: np.clip(x + 3, 0, 6) / 6),
    ("HSwish", lambda: nn.HSwish(), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("Mish", lambda: nn.Mish(), lambda x: x * np.tanh(_softplus(x))),
    ("LogSigmoid", lambda: nn.LogSigmoid(), lambda x: -_softplus(-x)),
    ("Tanhshrink", lambda: nn.Tanhshrink(), lambda x: x - np.tanh(x)),
    ("SoftShrink", lambda: nn.SoftShrink(0.3), lambda x: np.where(x > 0.3, x - 0.3, np.where(x < -0.3, x + 0.3, 0))),
    ("HShrink", lambda: nn.HShrink(0.3), lambda x: np.where(np.abs(x) > 0.3, x, 0)),
    ("PReLU", lambda: nn.PReLU(4, 0.1, dtype=mycel.float64), lambda x: np.where(x > 0, x, 0.1 * x)),
    ("RReLU", lambda: nn.RReLU(0.1, 0.3), lambda x: np.where(x >= 0, x, 0.2 * x)),  # inference: the mean slope
    ("Identity", lambda: nn.Identity(), lambda x: x),
]


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_rrelu_training_draws_slopes_in_range(mode):
    mycel.set_context(mode=mode)
    try:
        cell = nn.RReLU(0.1, 0.3)
        cell.set_train(True)
        x = np.where(X >= 0, X + 0.5, X - 0.5)  # no element near 0
        y = cell(Tensor(x)).asnumpy()
        np.testing.assert_array_equal(y[x >= 0], x[x >= 0])
        slopes = y[x < 0] / x[x < 0]
        assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.02  # drawn per element
        with pytest.raises(ValueError, match=r"RReLU: lower \(0.5\) must not exceed upper \(0.2\)"):
            nn.RReLU(0.5, 0.2)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
@pytest.mark.parametrize("name,make,ref", ACTS, ids=[a[0] for a in ACTS])
def test_activations_vs_numpy(mode, name, make, ref):
    mycel.set_context(mode=mode)
    try:
        np.testing.assert_allclose(make()(Tensor(X)).asnumpy(), ref(X), rtol=1e-12, atol=1e-12)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@pytest.mark.parametrize("name,make,ref", [a for a in ACTS if a[0] not in ("HShrink", "Identity")],
                         ids=[a[0] for a in ACTS if a[0] not in ("HShrink", "Identity")])
def test_activation_gradients_vs_finite_differences(name, make, ref):
    x = X[:, :, :2]  # away from kinks with probability 1
    cell = make()
    g = mycel.grad(lambda v: cell(v).sum())(Tensor(x)).asnumpy()
    fd = (ref(x + 1e-6) - ref(x - 1e-6)) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


def _conv1d_ref(x, w, b, stride, pad, dil):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    k = w.shape[2]
    out_len = (xp.shape[2] - dil * (k - 1) - 1) // stride + 1
    out = np.zeros((x.shape[0], w.shape[0], out_len))
    for t in range(out_len):
        patch = xp[:, :, t * stride: t * stride + dil * (k - 1) + 1: dil]
        out[:, :, t] = np.einsum("nck,ock->no", patch, w)
    return out + (b[None, :, None] if b is not None else 0)


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_conv1d_and_pool1d_vs_numpy(mode):
    mycel.set_context(mode=mode)
    try:
        x = R.normal(size=(2, 4, 11))
        conv = nn.Conv1d(4, 6, 3, stride=2, pad_mode="pad", padding=1, dilation=2, has_bias=True, dtype=mycel.float64)
        assert conv.weight.shape == (6, 4, 3) and conv.kernel_size == 3
        np.testing.assert_allclose(conv(Tensor(x)).asnumpy(),
                                   _conv1d_ref(x, conv.weight.asnumpy(), conv.bias.asnumpy(), 2, 1, 2), rtol=1e-10)
        mx = nn.MaxPool1d(3, 2)(Tensor(x)).asnumpy()
        av = nn.AvgPool1d(2, 2)(Tensor(x)).asnumpy()
        np.testing.assert_allclose(mx, np.stack([x[:, :, i:i + 3].max(-1) for i in range(0, 9, 2)], -1))
        np.testing.assert_allclose(av, np.stack([x[:, :, i:i + 2].mean(-1) for i in range(0, 10, 2)], -1))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def _group_norm_ref(x, groups, eps, gamma, beta):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y * gamma.reshape(shape) + beta.reshape(shape)


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_group_and_instance_norm_vs_numpy(mode):
    mycel.set_context(mode=mode)
    try:
        x = R.normal(size=(2, 6, 3, 4))
        gamma, beta = R.normal(size=6), R.normal(size=6)
        gn = nn.GroupNorm(3, 6, gamma_init=Tensor(gamma), beta_init=Tensor(beta), dtype=mycel.float64)
        np.testing.assert_allclose(gn(Tensor(x)).asnumpy(), _group_norm_ref(x, 3, 1e-5, gamma, beta), rtol=1e-10)
        inn = nn.InstanceNorm2d(6, gamma_init=Tensor(gamma), beta_init=Tensor(beta), dtype=mycel.float64)
        np.testing.assert_allclose(inn(Tensor(x)).asnumpy(), _group_norm_ref(x, 6, 1e-5, gamma, beta), rtol=1e-10)
        with pytest.raises(ValueError, match="must be divisible by num_groups"):
            nn.GroupNorm(4, 6)
        # 1-d and 3-d instance norms: each channel of each sample over its own spatial dims
        for layer, shape in ((nn.InstanceNorm1d, (2, 6, 5)), (nn.InstanceNorm3d, (2, 6, 2, 3, 2))):
            xs = R.normal(size=shape)
            inn = layer(6, gamma_init=Tensor(gamma), beta_init=Tensor(beta), dtype=mycel.float64)
            np.testing.assert_allclose(inn(Tensor(xs)).asnumpy(), _group_norm_ref(xs, 6, 1e-5, gamma, beta),
                                       rtol=1e-10)
        if mode == mycel.PYNATIVE_MODE:  # graph mode: the broadcasting error names the line
            with pytest.raises(ValueError, match="InstanceNorm3d: input 'x' must be 5-D, got 4-D"):
                nn.InstanceNorm3d(6)(Tensor(x))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_group_norm_gradient_vs_finite_differences():
    x = R.normal(size=(2, 4, 3))
    gn = nn.GroupNorm(2, 4, dtype=mycel.float64)
    w = R.normal(size=x.shape)
    g = mycel.grad(lambda v: (gn(v) * Tensor(w)).sum())(Tensor(x)).asnumpy()

    def f(v):
        return (_group_norm_ref(v, 2, 1e-5, np.ones(4), np.zeros(4)) * w).sum()
    fd = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        p, m = x.copy(), x.copy()
        p[idx] += 1e-6
        m[idx] -= 1e-6
        fd[idx] = (f(p) - f(m)) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)
