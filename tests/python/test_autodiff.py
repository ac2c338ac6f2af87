"""Autodiff through the vjp transform: control flow, closures, recursion, the MindSpore API
(grad, value_and_grad, GradOperation), stop_gradient, Cells with weights. References are closed
forms and central finite differences in float64."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.common.parameter import Parameter


@pytest.fixture(autouse=True)
def graph_mode():
    """These tests check the parsed-graph path; PyNative recording reruns them in
    test_pynative_grad.py / test_grad_table_pynative.py."""
    mycel.set_context(mode=mycel.GRAPH_MODE)
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def T(a):
    return Tensor(np.asarray(a, dtype=np.float64))


def numeric_grad(f, xs, i, eps=1e-6):
    """d sum(f(xs)) / d xs[i] by central differences (f takes and returns numpy arrays)."""
    x = np.array(xs[i], dtype=np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        for sgn in (1, -1):
            y = x.copy()
            y[idx] += sgn * eps
            args = list(xs)
            args[i] = y
            g[idx] += sgn * np.sum(f(*args)) / (2 * eps)
    return g


def test_straight_line_two_inputs():
    def f(x, y):
        return x * y * x + y
    x, y = np.array([1., 2., 3.]), np.array([4., 5., 6.])
    gx, gy = mycel.grad(f, (0, 1))(T(x), T(y))
    np.testing.assert_allclose(gx.asnumpy(), 2 * x * y)
    np.testing.assert_allclose(gy.asnumpy(), x * x + 1)


def test_straight_line_gradient_is_flat_without_closures():
    def f(x, y):
        return x * y - y
    g = mycel.grad(f, (0, 1))
    x = T([1., 2.])
    g(x, x)
    ir = next(iter(g._compiled.values())).ir(x, x)
    assert ir.count("graph @") == 1, ir           # one graph: everything inlined
    assert "switch" not in ir and "partial" not in ir


@pytest.mark.parametrize("x0", [[1., 0.5, 3.], [9., 2., 3.]])
def test_if_on_a_tensor_condition(x0):
    def f(x, y):
        if x[0] > y[1]:
            z = x * y
        else:
            z = x + y
        return z * x
    x, y = np.array(x0), np.array([4., 5., 6.])
    gx, gy = mycel.grad(f, (0, 1))(T(x), T(y))
    if x[0] > y[1]:
        np.testing.assert_allclose(gx.asnumpy(), 2 * x * y)
        np.testing.assert_allclose(gy.asnumpy(), x * x)
    else:
        np.testing.assert_allclose(gx.asnumpy(), 2 * x + y)
        np.testing.assert_allclose(gy.asnumpy(), x)


def test_while_with_data_dependent_trip_count_keeps_a_loop():
    def f(x):
        while ops.sum(x * x) < 100.0:
            x = x * x
        return x
    x = np.array([1.1, 1.2, 1.3])
    g = mycel.grad(f)
    got = g(T(x)).asnumpy()
    v, k = x.copy(), 1
    while (v * v).sum() < 100:
        v, k = v * v, k * 2
    np.testing.assert_allclose(got, k * x ** (k - 1), rtol=1e-12)
    ir = next(iter(g._compiled.values())).ir(T(x))
    vjp_graphs = [line.split("(")[0].split()[-1] for line in ir.splitlines()
                  if line.startswith("graph @") and "_vjp" in line]
    assert any(ir.count(name + "(") >= 2 for name in vjp_graphs), ir  # a vjp graph calls itself
    # A different trip count reuses the same Program (no unrolling, no recompilation).
    x2 = np.array([2.0, 2.5, 1.0])
    got2 = g(T(x2)).asnumpy()
    v, k = x2.copy(), 1
    while (v * v).sum() < 100:
        v, k = v * v, k * 2
    np.testing.assert_allclose(got2, k * x2 ** (k - 1), rtol=1e-12)


def test_recursion():
    def power(x, n):
        if n > 0:
            return power(x, n - 1) * x
        return x
    def f(x):
        return power(x, 3)
    x = np.array([0.5, 1.5])
    got = mycel.grad(f)(T(x)).asnumpy()
    np.testing.assert_allclose(got, 4 * x ** 3)


def test_closure_capturing_a_tensor_gradient_wrt_free_variable():
    def f(x, y):
        def g(z):
            return z * y * y
        return g(x) + g(y)
    x, y = np.array([1., 2.]), np.array([3., -1.])
    gx, gy = mycel.grad(f, (0, 1))(T(x), T(y))
    np.testing.assert_allclose(gx.asnumpy(), y * y)
    np.testing.assert_allclose(gy.asnumpy(), 2 * x * y + 3 * y * y)


def test_loop_gradient_wrt_loop_invariant_free_variable():
    def f(x, w):
        i = 0
        while i < 3:
            x = x * w
            i = i + 1
        return x
    x, w = np.array([1., 2.]), np.array([0.5, 3.])
    gx, gw = mycel.grad(f, (0, 1))(T(x), T(w))
    np.testing.assert_allclose(gx.asnumpy(), w ** 3)
    np.testing.assert_allclose(gw.asnumpy(), 3 * x * w ** 2)


def test_value_and_grad_and_has_aux():
    def f(x):
        return x * x * x, x + 1
    x = np.array([1., 2.])
    (out, aux), g = mycel.value_and_grad(f, has_aux=True)(T(x))
    np.testing.assert_allclose(out.asnumpy(), x ** 3)
    np.testing.assert_allclose(aux.asnumpy(), x + 1)
    np.testing.assert_allclose(g.asnumpy(), 3 * x ** 2)
    g2, aux2 = mycel.grad(f, has_aux=True)(T(x))
    np.testing.assert_allclose(g2.asnumpy(), 3 * x ** 2)
    np.testing.assert_allclose(aux2[0].asnumpy(), x + 1)


def test_stop_gradient():
    def f(x, y):
        return x * ops.stop_gradient(y) * y
    x, y = np.array([1., 2.]), np.array([3., 4.])
    gx, gy = mycel.grad(f, (0, 1))(T(x), T(y))
    np.testing.assert_allclose(gx.asnumpy(), y * y)
    np.testing.assert_allclose(gy.asnumpy(), x * y)


class Affine(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(T([[1., 2.], [3., 4.]]), name="w")
        self.b = Parameter(T([0.5, -0.5]), name="b")

    def construct(self, x):
        return x * self.w + self.b


def test_grad_operation_variants_on_a_cell():
    net = Affine()
    x = T([[1., 1.], [2., 3.]])
    xn = x.asnumpy()
    g = ops.GradOperation()(net)(x)
    np.testing.assert_allclose(g.asnumpy(), net.w.asnumpy())
    (gx,), (gb,) = ops.GradOperation(get_all=True, get_by_list=True)(net, [net.b])(x)
    np.testing.assert_allclose(gx.asnumpy(), net.w.asnumpy())
    np.testing.assert_allclose(gb.asnumpy(), [2., 2.])
    gw, gb = ops.GradOperation(get_by_list=True)(net, [net.w, net.b])(x)
    np.testing.assert_allclose(gw.asnumpy(), xn)
    sens = np.array([[2., -1.], [0.5, 3.]])
    gs = ops.GradOperation(sens_param=True)(net)(x, T(sens))
    np.testing.assert_allclose(gs.asnumpy(), sens * net.w.asnumpy())


def test_grad_with_weights_and_positions():
    net = Affine()
    x = T([[1., 1.], [2., 3.]])
    (gx, (gw, gb)) = mycel.grad(net, 0, [net.w, net.b])(x)
    np.testing.assert_allclose(gx.asnumpy(), net.w.asnumpy())
    np.testing.assert_allclose(gw.asnumpy(), x.asnumpy())
    np.testing.assert_allclose(gb.asnumpy(), [2., 2.])


def test_weight_not_used_gets_zero_gradient():
    net = Affine()
    other = Parameter(T([1., 2., 3.]), name="other")
    gw, go = mycel.grad(net, None, [net.w, other])(T([[1., 1.], [2., 3.]]))
    np.testing.assert_allclose(go.asnumpy(), np.zeros(3))


def test_second_call_with_same_signature_compiles_nothing():
    def f(x):
        return x * x
    g = mycel.grad(f)
    g(T([1., 2.]))
    compiled = next(iter(g._compiled.values()))
    n = compiled.num_programs
    g(T([3., 4.]))
    assert compiled.num_programs == n


def test_errors_name_the_problem():
    def f(x):
        return x * x
    with pytest.raises(ValueError, match="grad_position 3"):
        mycel.grad(f, 3)(T([1.]))
    def k(x):
        return ops.argmax(x)
    with pytest.raises(TypeError, match="float tensor"):
        mycel.grad(k)(T([1., 2.]))
