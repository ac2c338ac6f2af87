"""Dynamic dims (Cell.set_inputs with None dims, dynamic rank) against static ones: analysis
lets a dynamic dim agree with any size (broadcasting, ops that compare sizes), and the run
checks the real sizes with the op's own error. Every result is checked against numpy, in graph
mode and against the same Cell run eagerly."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops

F32 = mycel.float32


pytestmark = pytest.mark.usefixtures("graph_mode")


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def both_modes(net, *args):
    """(graph result, eager result) as numpy arrays (tuples stay tuples)."""
    got = net(*args)
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    want = net(*args)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    to_np = lambda r: tuple(x.asnumpy() for x in r) if isinstance(r, tuple) else r.asnumpy()  # noqa: E731
    return to_np(got), to_np(want)


class Arith(nn.Cell):
    def construct(self, x, y):
        return ops.floor_div(x, y), x * y, x - y


def test_dynamic_dim_broadcasts_against_a_static_one():
    net = Arith()
    net.set_inputs(Tensor(shape=[None, 32], dtype=F32), Tensor(shape=[16, None], dtype=F32))
    y = np.abs(rand(16, 1, seed=1)) + 0.5
    for rows in (16, 1):  # x's dynamic dim is 16, then 1 (it broadcasts)
        x = rand(rows, 32)
        got, eager = both_modes(net, Tensor(x), Tensor(y))
        for g, e, ref in zip(got, eager, (np.floor_divide(x, y), x * y, x - y)):
            assert g.shape == (16, 32)
            np.testing.assert_allclose(g, ref, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)
    assert net._compiled is not None


def test_dynamic_against_one_stays_dynamic():
    class AddOne(nn.Cell):
        def construct(self, x, b):
            return x + b

    net = AddOne()
    net.set_inputs(Tensor(shape=[None, 4], dtype=F32), Tensor(shape=[1, 4], dtype=F32))
    b = rand(1, 4, seed=2)
    for rows in (3, 7):
        x = rand(rows, 4, seed=rows)
        np.testing.assert_allclose(net(Tensor(x), Tensor(b)).asnumpy(), x + b, rtol=1e-6)


def test_a_size_mismatch_is_found_when_the_program_runs():
    net = Arith()
    net.set_inputs(Tensor(shape=[None, 32], dtype=F32), Tensor(shape=[16, None], dtype=F32))
    with pytest.raises(ValueError, match=r"\[floor_div\] shapes \(3, 32\) and \(16, 1\) cannot be "
                                         r"broadcast together \(dimension 0: 3 vs 16\)"):
        net(Tensor(rand(3, 32)), Tensor(rand(16, 1)))


def test_a_static_mismatch_is_still_a_compile_error():
    net = Arith()
    net.set_inputs(Tensor(shape=[None, 32], dtype=F32), Tensor(shape=[None, 8], dtype=F32))
    with pytest.raises(ValueError, match=r"\[floor_div\] shapes \(\?, 32\) and \(\?, 8\) cannot be broadcast"):
        net(Tensor(rand(2, 32)), Tensor(rand(2, 8)))


class Double(nn.Cell):
    def construct(self, x):
        return x * 2.0


@pytest.mark.parametrize("spec", [dict(dtype=F32), dict(shape=[-2], dtype=F32)])
def test_dynamic_rank_takes_each_calls_rank(spec):
    net = Double()
    net.set_inputs(Tensor(**spec))
    for shape in ((2, 3), (5,), (1, 2, 3, 4), ()):
        x = rand(*shape) if shape else np.float32(1.5)
        np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x * 2, rtol=1e-6)


def test_minus_one_is_a_dynamic_dim():
    net = Double()
    net.set_inputs(Tensor(shape=[-1, 3], dtype=F32))
    for rows in (2, 6):
        x = rand(rows, 3)
        np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x * 2, rtol=1e-6)
    assert net._compiled.graph.num_programs == 1


def test_gather_elements_index_with_dynamic_dims():
    class G(nn.Cell):
        def construct(self, x, index):
            return ops.gather_elements(x, 2, index)

    net = G()
    net.set_inputs(Tensor(shape=[None, 5, 5], dtype=F32), Tensor(shape=[5, 5, None], dtype=mycel.int64))
    x = rand(5, 5, 5)
    index = np.random.default_rng(3).integers(0, 5, (5, 5, 2))
    got, eager = both_modes(net, Tensor(x), Tensor(index))
    np.testing.assert_array_equal(got, np.take_along_axis(x, index, axis=2))
    np.testing.assert_array_equal(got, eager)


def test_tensor_scatter_add_with_dynamic_updates_and_index_depth():
    class S(nn.Cell):
        def construct(self, x, indices, updates):
            return ops.tensor_scatter_add(x, indices, updates)

    x = rand(4, 4, 3)
    indices = np.array([[0, 1], [3, 2], [0, 1]], np.int64)
    updates = rand(3, 3, seed=4)
    want = x.copy()
    np.add.at(want, (indices[:, 0], indices[:, 1]), updates)
    for spec in ([None, 4, 3], [4, 4, 3]):
        net = S()
        net.set_inputs(Tensor(shape=spec, dtype=F32), Tensor(shape=[None, None], dtype=mycel.int64),
                       Tensor(shape=[None, 3], dtype=F32))
        got, eager = both_modes(net, Tensor(x), Tensor(indices), Tensor(updates))
        np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_allclose(eager, want, rtol=1e-6)


class DenseNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = ops.Dense()

    def construct(self, x, w, b):
        return self.dense(x, w, b)


@pytest.mark.parametrize("x_shape, w_shape, b_shape", [((2, 3), (4, 3), (4,)), ((1, 2, 3), (4, 3), (4,)),
                                                       ((3,), (3,), ()), ((2, 3), (3,), ())])
def test_dense_with_every_dim_dynamic_and_its_gradient(x_shape, w_shape, b_shape):
    x, w, b = rand(*x_shape, seed=5), rand(*w_shape, seed=6), rand(*b_shape, seed=7)
    ref = x @ w.T + b if len(w_shape) == 2 else x @ w + b
    dout = rand(*ref.shape, seed=8) if ref.shape else np.float32(0.7)
    net = DenseNet()
    net.set_inputs(Tensor(shape=[None] * len(x_shape), dtype=F32), Tensor(shape=[None] * len(w_shape), dtype=F32),
                   Tensor(b))
    np.testing.assert_allclose(net(Tensor(x), Tensor(w), Tensor(b)).asnumpy(), ref, rtol=1e-5, atol=1e-5)

    class Grad(nn.Cell):
        def __init__(self, network):
            super().__init__()
            self.network = network
            self.grad = ops.GradOperation(get_all=True, sens_param=True)

        def construct(self, *inputs):  # MindSpore's grad wrapper: *inputs with set_inputs
            return self.grad(self.network)(*inputs)

    grad = Grad(net)
    grad.set_inputs(Tensor(dtype=F32), Tensor(dtype=F32), Tensor(b), Tensor(dout))
    dx, dw, db = (g.asnumpy() for g in grad(Tensor(x), Tensor(w), Tensor(b), Tensor(dout)))
    if len(w_shape) == 2:
        want_dx, want_dw = dout @ w, np.asarray(dout).reshape(-1, w_shape[0]).T @ x.reshape(-1, w_shape[1])
        want_db = np.asarray(dout).reshape(-1, w_shape[0]).sum(0)
    else:
        want_dx = np.multiply.outer(dout, w)
        want_dw = (np.asarray(dout).reshape(-1, 1) * x.reshape(-1, w_shape[0])).sum(0)
        want_db = np.asarray(dout).sum()
    np.testing.assert_allclose(dx, want_dx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(db, want_db, rtol=1e-5, atol=1e-5)


class Zeros(nn.Cell):
    def construct(self, n, x):
        return ops.zeros((n, x.shape[1]), F32) + 2.0, ops.ones((x.shape[0] * 2, n), mycel.int32)


def test_zeros_and_ones_sized_by_values_known_at_run_time():
    net = Zeros()
    net.set_inputs(Tensor(3, mycel.int64), Tensor(shape=[None, None], dtype=F32))
    for n, shape in ((4, (2, 5)), (1, (3, 2)), (0, (1, 1))):
        a, b = net(Tensor(n, mycel.int64), Tensor(rand(*shape)))
        np.testing.assert_array_equal(a.asnumpy(), np.full((n, shape[1]), 2.0, np.float32))
        np.testing.assert_array_equal(b.asnumpy(), np.ones((shape[0] * 2, n), np.int32))
        assert b.dtype == mycel.int32


def test_a_negative_size_is_an_error_naming_it():
    net = Zeros()
    with pytest.raises(ValueError, match=r"negative dimension -2"):
        net(Tensor(-2, mycel.int64), Tensor(rand(2, 2)))


def test_a_size_must_be_an_integer_tensor():
    class Bad(nn.Cell):
        def construct(self, n):
            return ops.zeros((n, 2), F32)

    with pytest.raises(TypeError, match=r"compile-time constant"):
        Bad()(Tensor(2.0, F32))


class ReshapeBy(nn.Cell):
    def __init__(self):
        super().__init__()
        self.reshape = ops.Reshape()

    def construct(self, x, shape):
        return ops.reduce_mean(self.reshape(x, shape) * 3.0, 0, keep_dims=True)


@pytest.mark.parametrize("sizes", [[2, 2], [-1, 4], [4, 1]])
def test_reshape_by_a_shape_tensor_and_its_gradient(sizes):
    x = rand(4, seed=11)
    net = ReshapeBy()
    shape = Tensor(np.array(sizes, np.int64))
    want = (x.reshape(sizes) * 3.0).mean(0, keepdims=True)
    got, eager = both_modes(net, Tensor(x), shape)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(eager, want, rtol=1e-6)
    dx = ops.GradOperation()(net)(Tensor(x), shape).asnumpy()
    rows = x.reshape(sizes).shape[0]
    np.testing.assert_allclose(dx, np.full(4, 3.0 / rows, np.float32), rtol=1e-6)


def test_reshape_by_a_shape_tensor_checks_the_count_when_it_runs():
    net = ReshapeBy()
    with pytest.raises(ValueError, match=r"\[reshape_dynamic\] cannot reshape x of shape \(4,\) \(4 elements\) "
                                         r"into \(3, 2\)"):
        net(Tensor(rand(4)), Tensor(np.array([3, 2], np.int64)))


class SliceBy(nn.Cell):
    def __init__(self):
        super().__init__()
        self.slice = ops.Slice()

    def construct(self, x, begin, size):
        return self.slice(x, begin, size) * 2.0


def test_slice_by_begin_and_size_tensors_and_its_gradient():
    x = rand(3, 2, 3, seed=12)
    begin, size = np.array([0, 1, 0], np.int64), np.array([2, 1, -1], np.int64)
    want = x[0:2, 1:2, 0:] * 2.0
    got, eager = both_modes(SliceBy(), Tensor(x), Tensor(begin), Tensor(size))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(eager, want)
    dx = ops.GradOperation()(SliceBy())(Tensor(x), Tensor(begin), Tensor(size)).asnumpy()
    want_dx = np.zeros_like(x)
    want_dx[0:2, 1:2, 0:] = 2.0
    np.testing.assert_array_equal(dx, want_dx)


def test_slice_bounds_out_of_range_are_an_error_when_it_runs():
    with pytest.raises((ValueError, IndexError), match=r"slice"):
        SliceBy()(Tensor(rand(3, 2, 3)), Tensor(np.array([0, 1, 0], np.int64)), Tensor(np.array([4, 1, 1], np.int64)))
