"""Every indexing form x both modes x forward and gradient, against numpy.

Each case is a function with a literal key (graph mode parses its source). The forward reference
is the same function applied to a numpy array; the gradient reference is central differences of
sum(f(x) * W) computed with numpy alone (exact here: indexing is linear). Item assignment is
checked the same way: gradients reach both the tensor (not where it was overwritten) and the
value (summed over where it was broadcast, the last write winning)."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn

SHAPE = (4, 5, 6)
MASK0 = np.array([True, False, True, True])
MASK01 = np.random.default_rng(3).random((4, 5)) > 0.5
IDX = np.array([2, 0, 2, -1])
IDX_T = Tensor(np.array([3, 1, 3], np.int64))
MASK_T = Tensor(MASK0)


def k_int(x): return x[1]
def k_neg_int(x): return x[-1]
def k_int_int(x): return x[2, -3]
def k_slice(x): return x[1:3]
def k_slice_neg(x): return x[-3:-1]
def k_step(x): return x[::2]
def k_neg_step(x): return x[::-1]
def k_axis1_int(x): return x[:, 2]
def k_axis2_step(x): return x[:, :, 1:5:2]
def k_axis2_neg_step(x): return x[:, :, ::-3]
def k_none(x): return x[None]
def k_none_mid(x): return x[1, None, :, 2]
def k_ellipsis(x): return x[..., 0]
def k_ellipsis_mid(x): return x[0, ..., 1:3]
def k_index_array(x): return x[IDX]
def k_index_tensor_axis1(x): return x[:, IDX_T]
def k_index_list(x): return x[[0, 2, 2]]
def k_two_arrays(x): return x[IDX, [1, 0, 4, 2]]
def k_arrays_apart(x): return x[IDX, :, IDX]
def k_bool_mask(x): return x[MASK0]
def k_bool_mask_2d(x): return x[MASK01]
def k_bool_mask_tensor(x): return x[MASK_T]
def k_mask_then_slice(x): return x[MASK0, 1:4]
def k_slice_then_mask(x): return x[1:3][:, [True, False, True, False, True]]
def k_combo(x): return x[1:, None, IDX_T, ::-2]
def k_int_and_array(x): return x[1, :, IDX]


GETITEM = [v for k, v in sorted(globals().items()) if k.startswith("k_")]


class Loss(nn.Cell):
    def __init__(self, f, weight):
        super().__init__()
        self.f = f
        self.weight = Tensor(weight)

    def construct(self, x):
        return (self.f(x) * self.weight).sum()


class Apply(nn.Cell):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def construct(self, x):
        return self.f(x)


def numeric_grad(f, x, eps=1e-3):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (f(hi) - f(lo)) / (2 * eps)
    return g


@pytest.fixture(params=[mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def mode(request):
    mycel.set_context(mode=request.param)
    yield request.param
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


@pytest.mark.parametrize("f", GETITEM, ids=lambda f: f.__name__[2:])
def test_getitem_forward_and_gradient(f, mode):
    x = np.random.default_rng(0).standard_normal(SHAPE)
    expected = f(x)
    out = Apply(f)(Tensor(x)).asnumpy()
    assert out.shape == expected.shape and out.dtype == np.float64
    np.testing.assert_array_equal(out, expected)
    w = np.random.default_rng(1).standard_normal(expected.shape)
    grad = mycel.grad(Loss(f, w))(Tensor(x)).asnumpy()
    np.testing.assert_allclose(grad, numeric_grad(lambda a: float((f(a) * w).sum()), x), rtol=1e-7, atol=1e-9)


def test_graph_mode_runtime_bool_mask_selects_like_numpy():
    """A mask known only at run time selects in graph mode too (docs/dynamic_shape.md)."""
    class Net(nn.Cell):
        def construct(self, x):
            return x[x > 0]

    x = np.array([[1.0, -2.0, 3.0], [-1.0, 0.5, 0.0]], np.float32)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        np.testing.assert_array_equal(Net()(Tensor(x)).asnumpy(), x[x > 0])
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def s_int(x, v): x[1] = v
def s_slice(x, v): x[1:3, :, ::2] = v
def s_array(x, v): x[IDX] = v
def s_mask(x, v): x[MASK0] = v
def s_two_arrays(x, v): x[IDX, 1] = v
def s_ellipsis(x, v): x[..., 2] = v


SETITEM = [(s_int, (5, 6)), (s_slice, (3,)), (s_array, (5, 6)), (s_mask, (3, 5, 6)),
           (s_two_arrays, (4, 6)), (s_ellipsis, (4, 5))]


@pytest.mark.parametrize("f,vshape", SETITEM, ids=lambda c: getattr(c, "__name__", "")[2:])
def test_setitem_gradients_in_pynative(f, vshape):
    x = np.random.default_rng(0).standard_normal(SHAPE)
    v = np.random.default_rng(2).standard_normal(vshape)
    w = np.random.default_rng(1).standard_normal(SHAPE)

    def ref(a, b):
        a = a.copy()
        f(a, b)
        return float((a * w).sum())

    def loss(a, b):
        y = a * 1.0
        f(y, b)
        return (y * Tensor(w)).sum()

    ga, gv = mycel.grad(loss, grad_position=(0, 1))(Tensor(x), Tensor(v))
    np.testing.assert_allclose(ga.asnumpy(), numeric_grad(lambda a: ref(a, v), x), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(gv.asnumpy(), numeric_grad(lambda b: ref(x, b), v), rtol=1e-7, atol=1e-9)
    y = Tensor(x.copy())
    f(y, Tensor(v))
    a = x.copy()
    f(a, v)
    np.testing.assert_array_equal(y.asnumpy(), a)
