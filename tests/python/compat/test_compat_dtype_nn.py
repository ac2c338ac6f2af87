"""The ops issue 14 listed as missing MindSpore's newer dtypes: atan2 on uint16/32/64 (numpy's
float result), squared_difference on every numeric and extended type ((x - y)^2, integers
wrapping, complex squared unconjugated as MindSpore defines it), one_hot with indices of any
integer type (and complex or unsigned outputs), ReLU on the unsigned types (the identity); the
nn ops that MindSpore keeps to floats refuse complex with a TypeError naming op and dtype. Both
modes, against numpy; squared_difference's gradient against central differences."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops

from complex_grad_helpers import finite_differences

R = np.random.default_rng(12)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
UNSIGNED = ("uint16", "uint32", "uint64")
COMPLEX = ("complex64", "complex128")


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _arr(dt, shape=(3, 4)):
    if np.dtype(dt).kind == "c":
        return (R.normal(size=shape) + 1j * R.normal(size=shape)).astype(dt)
    if np.dtype(dt).kind == "f":
        return R.normal(size=shape).astype(dt)
    hi = min(np.iinfo(dt).max, 2 ** 40)
    return R.integers(0, hi, size=shape, dtype=np.int64).astype(dt)


def _run(fn, mode, *args):
    ms.set_context(mode=mode)
    f = ms.jit(fn) if mode == ms.GRAPH_MODE else fn
    return f(*[Tensor(a) for a in args])


def atan2(x, y):
    return ops.atan2(x, y)


def squared_difference(x, y):
    return ops.squared_difference(x, y)


def squared_difference_prim(x, y):
    return ops.SquaredDifference()(x, y)


@MODES
@pytest.mark.parametrize("dt", UNSIGNED)
def test_atan2_unsigned_gives_numpys_float(mode, dt):
    x, y = _arr(dt), _arr(dt)
    out = _run(atan2, mode, x, y)
    ref = np.arctan2(x, y)
    assert out.asnumpy().dtype == ref.dtype
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-6)


@MODES
@pytest.mark.parametrize("dt", ("int8", "uint8", "int32", "int64", "float16", "float32", "float64")
                         + UNSIGNED + COMPLEX)
@pytest.mark.parametrize("fn", [squared_difference, squared_difference_prim], ids=["func", "prim"])
def test_squared_difference_every_dtype(mode, dt, fn):
    x, y = _arr(dt), _arr(dt, (1, 4))  # broadcasting
    out = _run(fn, mode, x, y).asnumpy()
    with np.errstate(all="ignore"):
        d = np.subtract(x, y)
        ref = d * d  # numpy wraps integers as the kernel does; complex: no conjugate
    assert out.dtype == ref.dtype
    if np.dtype(dt).kind in "fc":
        np.testing.assert_allclose(out, ref, rtol=2e-3 if dt == "float16" else 1e-5)
    else:
        np.testing.assert_array_equal(out, ref)


def test_squared_difference_refuses_bool():
    with pytest.raises(TypeError, match="squared_difference"):
        ops.squared_difference(Tensor(np.array([True])), Tensor(np.array([False])))


@MODES
@pytest.mark.parametrize("dt", ("float64", "complex128"))
def test_squared_difference_gradient(mode, dt):
    x, y = _arr(dt, (2, 3)), _arr(dt, (3,))
    w = _arr(dt, (2, 3))
    wt = Tensor(w)

    def loss(a, b):
        return ops.sum(ops.real(ops.squared_difference(a, b) * ops.conj(wt)))

    ms.set_context(mode=mode)
    gx, gy = ms.grad(loss, grad_position=(0, 1))(Tensor(x), Tensor(y))
    ref = finite_differences(lambda a, b: np.sum(np.real((a - b) ** 2 * np.conj(w))), [x, y])
    np.testing.assert_allclose(gx.asnumpy(), ref[0], atol=1e-6)
    np.testing.assert_allclose(gy.asnumpy(), ref[1], atol=1e-6)


ON, OFF = Tensor(2.0, ms.float32), Tensor(0.5, ms.float32)  # constants to graph mode


def one_hot_fn(i):
    return ops.one_hot(i, 5, ON, OFF, -1)


@MODES
@pytest.mark.parametrize("dt", ("int8", "uint8", "int16", "int32", "int64") + UNSIGNED)
def test_one_hot_indices_of_any_int_dtype(mode, dt):
    i = R.integers(0, 7, size=(3, 4)).astype(dt)  # 5 and 6 are out of range: all off
    out = _run(one_hot_fn, mode, i).asnumpy()
    ref = np.where(i[..., None] == np.arange(5), 2.0, 0.5).astype(np.float32)
    np.testing.assert_array_equal(out, ref)


@MODES
@pytest.mark.parametrize("dt", UNSIGNED + COMPLEX)
def test_one_hot_extended_output_dtype(mode, dt):
    i = np.array([0, 3, 1], np.uint32)
    on, off = Tensor(np.array(3, dt)), Tensor(np.array(1, dt))

    def fn(x):
        return ops.OneHot(axis=0)(x, 4, on, off)

    out = _run(fn, mode, i).asnumpy()
    ref = np.where(np.arange(4)[:, None] == i[None, :], 3, 1).astype(dt)
    assert out.dtype == np.dtype(dt)
    np.testing.assert_array_equal(out, ref)


def test_one_hot_refuses_float_indices():
    with pytest.raises(TypeError, match="one_hot.*indices.*float32"):
        ops.one_hot(Tensor(np.array([1.0], np.float32)), 3, Tensor(1.0), Tensor(0.0))


def relu(x):
    return ops.relu(x)


RELU = nn.ReLU()


def relu_cell(x):
    return RELU(x)


@MODES
@pytest.mark.parametrize("dt", ("uint8",) + UNSIGNED)
@pytest.mark.parametrize("fn", [relu, relu_cell], ids=["ops", "nn"])
def test_relu_of_unsigned_is_identity(mode, dt, fn):
    x = _arr(dt)
    out = _run(fn, mode, x).asnumpy()
    assert out.dtype == np.dtype(dt)
    np.testing.assert_array_equal(out, np.maximum(x, 0))


@pytest.mark.parametrize("name,call", [
    ("relu", lambda x: ops.relu(x)),
    ("relu6", lambda x: ops.relu6(x)),
    ("leaky_relu", lambda x: ops.leaky_relu(x, 0.1)),
    ("elu", lambda x: ops.elu(x)),
    ("gelu", lambda x: ops.gelu(x)),
    ("softplus", lambda x: ops.softplus(x)),
    ("atan2", lambda x: ops.atan2(x, x)),
])
@pytest.mark.parametrize("dt", COMPLEX)
def test_float_only_nn_ops_refuse_complex(name, call, dt):
    x = Tensor(_arr(dt, (2,)))
    with pytest.raises(TypeError, match=rf"(?s){name}.*{dt}"):
        call(x)
