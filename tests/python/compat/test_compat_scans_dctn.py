"""MindSpore's cumsum/cumprod dtype argument, unique_consecutive along an axis and the n-d
real-to-real transforms dctn/idctn/dstn/idstn, in both modes, against numpy, a brute force and
scipy.fft."""
import numpy as np
import pytest
from scipy import fft

import mycel as ms
from mycel import Tensor, nn, ops

R = np.random.default_rng(8)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _run(mode, fn, *args):
    ms.set_context(mode=mode)

    class Net(nn.Cell):
        def construct(self, *xs):
            return fn(*xs)
    return Net()(*args)


# ---- cumsum / cumprod dtype -------------------------------------------------------------------

@MODES
def test_cumsum_cumprod_dtype(mode):
    x = R.integers(-3, 4, size=(3, 5)).astype(np.int32)
    s, p, s0, p0 = _run(mode, lambda t: (ops.cumsum(t, 1, ms.float32), ops.cumprod(t, 0, dtype=ms.float64),
                                         ops.cumsum(t, 0), ops.cumprod(t, dim=1)), Tensor(x))
    assert s.dtype == ms.float32 and p.dtype == ms.float64
    np.testing.assert_array_equal(s.asnumpy(), np.cumsum(x, 1, dtype=np.float32))
    np.testing.assert_array_equal(p.asnumpy(), np.cumprod(x, 0, dtype=np.float64))
    assert s0.dtype == ms.int64  # without dtype: numpy's rule for integers
    np.testing.assert_array_equal(s0.asnumpy(), np.cumsum(x, 0))
    np.testing.assert_array_equal(p0.asnumpy(), np.cumprod(x, 1))


def test_cumsum_dtype_narrows_floats_and_tensor_methods():
    x = np.array([0.1, 0.2, 0.3, 1e-9], np.float64)
    np.testing.assert_allclose(ops.cumsum(Tensor(x), 0, ms.float16).asnumpy(),
                               np.cumsum(x.astype(np.float16), dtype=np.float16), rtol=1e-3)
    m = R.normal(size=(2, 3)).astype(np.float32)
    np.testing.assert_allclose(Tensor(m).cumsum().asnumpy(), np.cumsum(m), rtol=1e-6)  # flattened
    np.testing.assert_allclose(Tensor(m).cumsum(1, ms.float64).asnumpy(), np.cumsum(m, 1, dtype=np.float64))
    np.testing.assert_allclose(Tensor(m).cumprod(0).asnumpy(), np.cumprod(m, 0), rtol=1e-6)
    # the registry's keywords still pass through
    np.testing.assert_array_equal(ops.cumsum(Tensor(np.array([1, 2, 3])), 0, exclusive=True).asnumpy(), [0, 1, 3])
    with pytest.raises(TypeError, match="dim"):
        ops.cumprod(Tensor(m))


# ---- unique_consecutive along an axis ---------------------------------------------------------

def _runs_ref(x, axis):
    """Brute force: walk the slices along axis, starting a run wherever one differs."""
    moved = np.moveaxis(x, axis, 0)
    values, inverse, counts = [], [], []
    for i, s in enumerate(moved):
        if i == 0 or not np.array_equal(s, moved[i - 1]):
            values.append(s)
            counts.append(0)
        counts[-1] += 1
        inverse.append(len(values) - 1)
    return np.moveaxis(np.stack(values), 0, axis), np.array(inverse), np.array(counts)


@MODES
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unique_consecutive_axis(mode, axis):
    base = R.integers(0, 2, size=(3, 4, 2)).astype(np.float32)
    x = np.repeat(base, [2, 1, 3][:base.shape[0]], axis=0)  # runs along axis 0
    x = np.repeat(x, [1, 2, 1, 1], axis=1)                   # and along axis 1
    v, i, c = _run(mode, lambda t: ops.unique_consecutive(t, True, True, axis), Tensor(x))
    rv, ri, rc = _runs_ref(x, axis)
    np.testing.assert_array_equal(v.asnumpy(), rv)
    np.testing.assert_array_equal(i.asnumpy(), ri)
    np.testing.assert_array_equal(c.asnumpy(), rc)
    assert i.dtype == ms.int64 and c.dtype == ms.int64


def test_unique_consecutive_axis_forms_and_errors():
    x = Tensor(np.array([[1, 1, 2, 2, 1], [3, 3, 4, 5, 3]], np.int32))
    v = ops.unique_consecutive(x, axis=1)
    np.testing.assert_array_equal(v.asnumpy(), [[1, 2, 2, 1], [3, 4, 5, 3]])
    v, c = ops.unique_consecutive(x, return_counts=True, axis=1)
    np.testing.assert_array_equal(c.asnumpy(), [2, 1, 1, 1])
    v, i = ops.unique_consecutive(x, return_idx=True, axis=0)
    np.testing.assert_array_equal(i.asnumpy(), [0, 1])
    with pytest.raises(ValueError, match="axis"):
        ops.unique_consecutive(x, axis=2)
    with pytest.raises(ValueError, match="axis"):
        ops.unique_consecutive(Tensor(np.array(3.0)), axis=0)


# ---- dctn / idctn / dstn / idstn -------------------------------------------------------------

@MODES
@pytest.mark.parametrize("name", ["dctn", "idctn", "dstn", "idstn"])
@pytest.mark.parametrize("type_", [1, 2, 3, 4])
def test_nd_transforms_match_scipy(mode, name, type_):
    x = R.normal(size=(3, 4, 5))
    for norm in (None, "ortho", "forward"):
        got = _run(mode, lambda t: getattr(ops, name)(t, type_, None, None, norm), Tensor(x))
        np.testing.assert_allclose(got.asnumpy(), getattr(fft, name)(x, type=type_, norm=norm),
                                   rtol=1e-9, atol=1e-10)


def test_nd_transforms_s_axes_round_trip_and_errors():
    x = R.normal(size=(4, 3, 6)).astype(np.float32)
    got = ops.dctn(Tensor(x), s=(5, 4), axes=(0, 2)).asnumpy()
    np.testing.assert_allclose(got, fft.dctn(x, s=(5, 4), axes=(0, 2)), rtol=1e-4, atol=1e-4)
    got = ops.dstn(Tensor(x), type=3, s=(2,)).asnumpy()  # s alone: the last len(s) axes
    np.testing.assert_allclose(got, fft.dstn(x, type=3, s=(2,)), rtol=1e-4, atol=1e-4)
    back = ops.idctn(ops.dctn(Tensor(x), norm="ortho", axes=(1, 2)), norm="ortho", axes=(1, 2)).asnumpy()
    np.testing.assert_allclose(back, x, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="same length"):
        ops.dctn(Tensor(x), s=(3, 3), axes=(0,))
    with pytest.raises(ValueError, match="distinct"):
        ops.dctn(Tensor(x), axes=(0, -3))
    with pytest.raises(ValueError, match="out of range"):
        ops.idstn(Tensor(x), axes=(3,))
    with pytest.raises(TypeError):
        ops.dctn(x)


def test_dctn_gradient_is_the_adjoint():
    """dctn is linear: grad of <dctn(x), w> is the transposed transform of w (finite-free check
    against scipy: for orthonormal type 2, the adjoint is idctn)."""
    x = Tensor(R.normal(size=(3, 4)))
    w = R.normal(size=(3, 4))
    g = ms.grad(lambda t: (ops.dctn(t, norm="ortho") * Tensor(w)).sum())(x)
    np.testing.assert_allclose(g.asnumpy(), fft.idctn(w, norm="ortho"), rtol=1e-9, atol=1e-12)
