"""random_ops.Uniform, image_ops.RGBToHSV, ConjugateTranspose and mint.nn.GLU, in both modes,
against numpy and colorsys."""
import colorsys

import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, mint, nn
from mycel.ops import GradOperation
from mycel.ops.operations.image_ops import RGBToHSV
from mycel.ops.operations.random_ops import Uniform
import mycel.ops.operations as P

R = np.random.default_rng(11)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _back_to_pynative():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


class Apply(nn.Cell):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, *args):
        return self.op(*args)


@MODES
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_takes_shape_and_dtype_from_x(mode, dtype):
    ms.set_context(mode=mode)
    x = Tensor(np.zeros((300, 40), dtype))
    y = Apply(Uniform(minval=1.0, maxval=3.0, seed=5))(x).asnumpy()
    assert y.shape == (300, 40) and y.dtype == dtype
    assert y.min() >= 1.0 and y.max() < 3.0
    assert abs(y.mean() - 2.0) < 0.02 and abs(y.var() - 4.0 / 12) < 0.01  # U(1, 3): mean 2, var 1/3
    again = Apply(Uniform(minval=1.0, maxval=3.0, seed=5))(x).asnumpy()
    np.testing.assert_array_equal(y, again)  # a fixed seed repeats


def test_uniform_checks_its_arguments():
    with pytest.raises(ValueError, match="'minval' .* must be <= 'maxval'"):
        Uniform(minval=2.0, maxval=1.0)
    with pytest.raises(ValueError, match="'maxval' must be a non-negative float"):
        Uniform(minval=0.0, maxval=-1.0)
    with pytest.raises(TypeError, match="input 'x' must be float16, float32 or float64, got int32"):
        Uniform()(Tensor(np.zeros(3, np.int32)))


@MODES
def test_rgb_to_hsv_matches_colorsys(mode):
    ms.set_context(mode=mode)
    img = R.random((2, 5, 4, 3)).astype(np.float32)
    img[0, 0, 0] = (0.3, 0.3, 0.3)  # grey: hue 0, saturation 0
    img[0, 0, 1] = (0.0, 0.0, 0.0)  # black: value 0, saturation 0
    img[0, 0, 2] = (0.9, 0.2, 0.9)  # two channels share the maximum
    got = Apply(RGBToHSV())(Tensor(img)).asnumpy()
    want = np.array([colorsys.rgb_to_hsv(*p) for p in img.reshape(-1, 3).astype(np.float64)]).reshape(img.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_rgb_to_hsv_wants_three_channels():
    with pytest.raises(ValueError, match="last dim of 3, got shape \\(2, 4\\)"):
        RGBToHSV()(Tensor(np.zeros((2, 4), np.float32)))


@MODES
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_conjugate_transpose(mode, dtype):
    ms.set_context(mode=mode)
    x = R.standard_normal((2, 3, 4)).astype(dtype)
    if dtype == np.complex64:
        x = x + 1j * R.standard_normal((2, 3, 4)).astype(np.float32)
    got = Apply(P.ConjugateTranspose())(Tensor(x), (2, 0, 1)).asnumpy()
    np.testing.assert_array_equal(got, np.conj(np.transpose(x, (2, 0, 1))))


@MODES
def test_mint_glu_and_its_gradient(mode):
    ms.set_context(mode=mode)
    x = R.standard_normal((3, 6)).astype(np.float32)
    a, b = x[:, :3], x[:, 3:]
    sig = 1 / (1 + np.exp(-b))
    np.testing.assert_allclose(mint.nn.GLU(-1)(Tensor(x)).asnumpy(), a * sig, rtol=1e-5)
    dx = GradOperation()(mint.nn.GLU(1))(Tensor(x)).asnumpy()
    np.testing.assert_allclose(dx, np.concatenate([sig, a * sig * (1 - sig)], 1), rtol=1e-5, atol=1e-6)
