"""MindSpore's slices with bounds given as Tensors (StridedSlice, Slice, ops.strided_slice): eagerly
the values are read, in graph mode the bounds may be known only at run time (the result's sizes
come from the values, as docs/dynamic_shape.md describes), gradients included; and
tensor_scatter_elements / gather_elements with indices smaller than the input off the axis
(torch.scatter's rule), forward and backward. All against numpy."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.ops import operations as P

MODES = pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


class StridedNet(nn.Cell):
    def __init__(self, prim=None):
        super().__init__()
        self.prim = prim or P.StridedSlice()

    def construct(self, x, begin, end, strides):
        return self.prim(x, begin, end, strides)


class SliceNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.prim = P.Slice()

    def construct(self, x, begin, size):
        return self.prim(x, begin, size)


class SquaredSum(nn.Cell):
    """sum(net(x, bounds)**2): a loss whose gradient is 2x where the slice read, else 0."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def construct(self, x, a, b, c):
        return (self.net(x, a, b, c) ** 2).sum()


class SquaredSum2(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def construct(self, x, a, b):
        return (self.net(x, a, b) ** 2).sum()


def _t(v, dtype=np.int64):
    return Tensor(np.array(v, dtype))


STRIDED = [((1, 0), (4, 6), (2, 1)), ((3, 5), (0, -7), (-1, -2)), ((0, 2), (2, 3), (1, 1))]


@MODES
@pytest.mark.parametrize("begin,end,strides", STRIDED)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_strided_slice_with_tensor_bounds(mode, begin, end, strides, index_dtype):
    mycel.set_context(mode=mode)
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    key = tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))
    bounds = [_t(v, index_dtype) for v in (begin, end, strides)]
    out = StridedNet()(Tensor(x), *bounds)
    np.testing.assert_array_equal(out.asnumpy(), x[key])
    np.testing.assert_array_equal(ops.strided_slice(Tensor(x), *bounds).asnumpy(), x[key])


@MODES
def test_graph_mode_reuses_one_compilation_for_new_bounds(mode):
    mycel.set_context(mode=mode)
    x = np.arange(24.0).reshape(4, 6)
    net = StridedNet(P.StridedSlice(begin_mask=0b10))
    for b, e in [((1, 0), (3, 6)), ((0, 3), (4, 5)), ((2, 1), (2, 6))]:
        out = net(Tensor(x), _t(b), _t(e), _t((1, 1)))
        np.testing.assert_array_equal(out.asnumpy(), x[b[0]:e[0], :e[1]])


@MODES
@pytest.mark.parametrize("begin,size", [((1, 2), (2, 3)), ((0, 1), (-1, 4)), ((3, 5), (1, 1))])
def test_slice_with_tensor_begin_and_size(mode, begin, size):
    mycel.set_context(mode=mode)
    x = np.random.default_rng(1).standard_normal((4, 6))
    key = tuple(slice(b, None if n == -1 else b + n) for b, n in zip(begin, size))
    out = SliceNet()(Tensor(x), _t(begin), _t(size))
    np.testing.assert_array_equal(out.asnumpy(), x[key])


@MODES
def test_gradients_with_tensor_bounds(mode):
    mycel.set_context(mode=mode)
    x = np.random.default_rng(2).standard_normal((4, 6))
    g = mycel.grad(SquaredSum(StridedNet()))(Tensor(x), _t((1, 5)), _t((4, 0)), _t((2, -2)))
    want = np.zeros_like(x)
    want[1:4:2, 5:0:-2] = 2 * x[1:4:2, 5:0:-2]
    np.testing.assert_allclose(g.asnumpy(), want)
    g = mycel.grad(SquaredSum2(SliceNet()))(Tensor(x), _t((2, 1)), _t((2, -1)))
    want = np.zeros_like(x)
    want[2:4, 1:] = 2 * x[2:4, 1:]
    np.testing.assert_allclose(g.asnumpy(), want)


@MODES
def test_bad_run_time_bounds_name_the_op(mode):
    mycel.set_context(mode=mode)
    x = Tensor(np.ones((4, 6), np.float32))
    with pytest.raises(ValueError, match=r"\[slice\] begin \(3, 0\) and size \(2, 1\) are out of range"):
        SliceNet()(x, _t((3, 0)), _t((2, 1))).asnumpy()
    with pytest.raises(ValueError, match=r"strides\[0\] must be non-zero"):
        StridedNet()(x, _t((0, 0)), _t((2, 2)), _t((0, 1))).asnumpy()


def np_scatter_elements(x, idx, upd, axis, reduction):
    """One update per index element, at its own position off the axis (an explicit loop)."""
    out = x.copy()
    for pos in np.ndindex(idx.shape):
        tgt = list(pos)
        tgt[axis] = idx[pos] % x.shape[axis]
        if reduction == "add":
            out[tuple(tgt)] += upd[pos]
        else:
            out[tuple(tgt)] = upd[pos]
    return out


class ScatterNet(nn.Cell):
    def __init__(self, axis, reduction):
        super().__init__()
        self.op = P.TensorScatterElements(axis, reduction)

    def construct(self, x, idx, upd):
        return self.op(x, idx, upd)


@MODES
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("reduction", ["none", "add"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_elements_with_smaller_indices(mode, axis, reduction, dtype):
    mycel.set_context(mode=mode)
    x = np.arange(20).reshape(4, 5).astype(dtype)
    idx = np.array([[-1, 0, 3], [0, 2, 1]])
    upd = np.array([[10, 20, 30], [40, 50, 60]]).astype(dtype)
    out = ScatterNet(axis, reduction)(Tensor(x), Tensor(idx), Tensor(upd)).asnumpy()
    np.testing.assert_array_equal(out, np_scatter_elements(x, idx, upd, axis % 2, reduction))


@MODES
@pytest.mark.parametrize("reduction", ["none", "add"])
def test_scatter_elements_gradient_with_smaller_indices(mode, reduction):
    mycel.set_context(mode=mode)
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    idx = np.array([[3, 0, 2], [1, 2, 0]])  # distinct targets per column
    upd = rng.standard_normal((2, 3))

    def loss(a, u):
        return (ops.tensor_scatter_elements(a, Tensor(idx), u, 0, reduction) * Tensor(w)).sum()

    gx, gu = mycel.grad(loss, grad_position=(0, 1))(Tensor(x), Tensor(upd))

    def num(fn, v):
        g = np.zeros_like(v)
        for i in np.ndindex(v.shape):
            e = np.zeros_like(v)
            e[i] = 1e-6
            g[i] = (fn(v + e) - fn(v - e)) / 2e-6
        return g

    f = lambda a, u: (np_scatter_elements(a, idx, u, 0, reduction) * w).sum()  # noqa: E731
    np.testing.assert_allclose(gx.asnumpy(), num(lambda a: f(a, upd), x), atol=1e-8)
    np.testing.assert_allclose(gu.asnumpy(), num(lambda u: f(x, u), upd), atol=1e-8)


def test_gather_elements_with_smaller_index_and_bad_shape():
    x = np.arange(24.0).reshape(4, 6)
    idx = np.array([[5, 0], [1, 3], [2, 2]])
    out = ops.gather_elements(Tensor(x), 1, Tensor(idx)).asnumpy()
    np.testing.assert_array_equal(out, np.take_along_axis(x[:3, :], idx, 1))
    with pytest.raises(ValueError, match=r"input 'indices' shape \(5, 3\) must have the rank of input "
                                         r"'input' shape \(4, 6\) and no larger sizes except at axis 1"):
        ops.tensor_scatter_elements(Tensor(x), Tensor(np.zeros((5, 3), np.int64)),
                                    Tensor(np.zeros((5, 3))), 1)


class StarredNet(nn.Cell):
    """self.prim(x, *bounds): a Primitive whose required attributes come with the call."""

    def __init__(self):
        super().__init__()
        self.prim = P.StridedSlice()

    def construct(self, x, *bounds):
        return self.prim(x, *bounds)


@MODES
def test_starred_bounds_complete_the_primitive(mode):
    mycel.set_context(mode=mode)
    x = np.arange(24.0).reshape(4, 6)
    out = StarredNet()(Tensor(x), _t((1, 0)), _t((3, 6)), _t((1, 2)))
    np.testing.assert_array_equal(out.asnumpy(), x[1:3, 0:6:2])


class ConstantBoundsNet(nn.Cell):
    """Bounds held by the Cell: constant Tensors in graph mode, folded into the attributes."""

    def __init__(self):
        super().__init__()
        self.begin, self.end = _t((2, 0, 0), np.int32), _t((3, 2, 3), np.int32)
        self.prim = P.StridedSlice()

    def construct(self, x):
        return self.prim(x, self.begin, self.end, (1, 1, 1))


@MODES
def test_constant_tensor_bounds(mode):
    mycel.set_context(mode=mode)
    x = np.arange(18.0).reshape(3, 2, 3)
    np.testing.assert_array_equal(ConstantBoundsNet()(Tensor(x)).asnumpy(), x[2:3, 0:2, 0:3])
