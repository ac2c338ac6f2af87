"""ops.interpolate / nn.Upsample modes linear, bicubic, trilinear and area (PyTorch's sampling
rules, which MindSpore's interpolate follows), in both modes, against numpy formulas evaluated
point by point, and their gradients against finite differences."""
import itertools
import math

import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops

R = np.random.default_rng(17)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _src(j, n, m, ac, clamp=True):
    if ac:
        return j * (n - 1) / (m - 1) if m > 1 else 0.0
    s = (j + 0.5) * n / m - 0.5
    return max(s, 0.0) if clamp else s


def _lin_taps(j, n, m, ac):
    s = _src(j, n, m, ac)
    i0 = min(math.floor(s), n - 1)
    return [(i0, 1 - (s - i0)), (min(i0 + 1, n - 1), s - i0)]


def _cubic_taps(j, n, m, ac):
    """Keys' cubic convolution kernel, a = -0.75, at the 4 neighbours (edges clamped)."""
    s = _src(j, n, m, ac, clamp=False)
    i = math.floor(s)

    def kern(d):
        d, a = abs(d), -0.75
        if d <= 1:
            return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1
        if d < 2:
            return a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a
        return 0.0
    return [(min(max(i + k, 0), n - 1), kern(s - (i + k))) for k in (-1, 0, 1, 2)]


def _area_taps(j, n, m, ac):
    a, b = math.floor(j * n / m), math.ceil((j + 1) * n / m)
    return [(i, 1.0 / (b - a)) for i in range(a, b)]


def _point_ref(x, out, taps, ac):
    """Every output point as the weighted sum over the product of its per-dim taps."""
    spatial = x.shape[2:]
    y = np.zeros(x.shape[:2] + tuple(out))
    for o in itertools.product(*[range(m) for m in out]):
        per_dim = [taps(o[d], spatial[d], out[d], ac) for d in range(len(out))]
        for combo in itertools.product(*per_dim):
            idx = tuple(i for i, _ in combo)
            y[(Ellipsis,) + o] += np.prod([w for _, w in combo]) * x[(Ellipsis,) + idx]
    return y


CASES = [("linear", (2, 3, 7), dict(size=11)), ("linear", (1, 2, 9), dict(scale_factor=0.5)),
         ("bicubic", (1, 2, 5, 6), dict(size=(8, 4))), ("bicubic", (2, 1, 4, 4), dict(scale_factor=2)),
         ("trilinear", (1, 2, 3, 4, 5), dict(size=(5, 3, 7))), ("trilinear", (1, 1, 2, 3, 2), dict(scale_factor=2)),
         ("area", (1, 2, 7, 9), dict(size=(3, 4))), ("area", (2, 2, 10), dict(size=4)),
         ("area", (1, 1, 4, 6, 5), dict(size=(2, 3, 5)))]


@MODES
@pytest.mark.parametrize("interp,shape,kw", CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)])
@pytest.mark.parametrize("ac", [False, True], ids=["half_pixel", "align_corners"])
def test_interpolate_vs_pointwise_formula(mode, interp, shape, kw, ac):
    if interp == "area" and ac:
        pytest.skip("align_corners does not apply to area")
    ms.set_context(mode=mode)
    x = R.normal(size=shape)
    got = nn.Upsample(mode=interp, align_corners=ac, **kw)(Tensor(x)).asnumpy()
    k = len(shape) - 2
    if "size" in kw:
        out = (kw["size"],) * k if isinstance(kw["size"], int) else kw["size"]
    else:
        out = tuple(int(n * kw["scale_factor"]) for n in shape[2:])
    taps = {"linear": _lin_taps, "trilinear": _lin_taps, "bicubic": _cubic_taps, "area": _area_taps}[interp]
    np.testing.assert_allclose(got, _point_ref(x, out, taps, ac), rtol=1e-10, atol=1e-12)
    got32 = ops.interpolate(Tensor(x.astype(np.float32)), mode=interp, align_corners=ac, **kw)
    assert got32.dtype == ms.float32
    np.testing.assert_allclose(got32.asnumpy(), got, rtol=1e-5, atol=1e-5)


class _Net(nn.Cell):
    def __init__(self, interp, size):
        super().__init__()
        self.interp, self.size = interp, size

    def construct(self, x):
        return ops.sum(ops.sin(ops.interpolate(x, size=self.size, mode=self.interp)) * 1.7)


@MODES
@pytest.mark.parametrize("interp,shape,size", [("linear", (1, 2, 5), 8), ("bicubic", (1, 1, 4, 3), (5, 6)),
                                               ("trilinear", (1, 1, 3, 2, 3), (4, 3, 5)), ("area", (1, 2, 6, 5), (4, 2))])
def test_gradient_matches_finite_differences(mode, interp, shape, size):
    ms.set_context(mode=mode)
    net = _Net(interp, size)
    x = R.normal(size=shape)
    g = ms.grad(net)(Tensor(x)).asnumpy()
    num = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += 1e-6
        lo[idx] -= 1e-6
        num[idx] = (net(Tensor(hi)).asnumpy() - net(Tensor(lo)).asnumpy()) / 2e-6
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-8)


def test_errors_name_the_mode_and_shape():
    with pytest.raises(ValueError, match=r"mode 'trilinear' needs an \(N, C, D, H, W\) input"):
        ops.interpolate(Tensor(np.ones((1, 1, 4, 4), np.float32)), size=2, mode="trilinear")
    with pytest.raises(ValueError, match="align_corners .* not 'area'"):
        ops.interpolate(Tensor(np.ones((1, 1, 4), np.float32)), size=2, mode="area", align_corners=True)
    with pytest.raises(ValueError, match="output size must be 1 ints"):
        ops.interpolate(Tensor(np.ones((1, 1, 4), np.float32)), size=(2, 3), mode="linear")
