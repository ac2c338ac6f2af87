"""Gradients in PYNATIVE_MODE by recording eager ops into IR (python/mycel/common/pynative_grad.py):
the same results as GRAPH_MODE where graph mode can parse the function, central finite
differences in float64 as the independent reference, Python control flow and numpy inside the
function, @jit calls as one node, and the structural compile cache."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.common.parameter import Parameter

# The mode-independent tests of test_autodiff.py, collected here again so they run in PYNATIVE_MODE
# (this module's autouse fixture); the ones it keeps for itself inspect graph-mode IR and caches.
from test_autodiff import (  # noqa: F401
    T, numeric_grad, test_straight_line_two_inputs, test_if_on_a_tensor_condition, test_recursion,
    test_closure_capturing_a_tensor_gradient_wrt_free_variable,
    test_loop_gradient_wrt_loop_invariant_free_variable, test_value_and_grad_and_has_aux,
    test_stop_gradient, test_grad_operation_variants_on_a_cell, test_grad_with_weights_and_positions,
    test_weight_not_used_gets_zero_gradient, test_errors_name_the_problem)


@pytest.fixture(autouse=True)
def pynative_mode():
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def in_mode(mode, fn):
    mycel.set_context(mode=mode)
    try:
        return fn()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def assert_same_tree(a, b, rtol=1e-10, atol=1e-12):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            assert_same_tree(x, y, rtol, atol)
    elif a is None:
        assert b is None
    else:
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=rtol, atol=atol)


def both_modes(make, *args):
    """The same grad call in GRAPH_MODE and PYNATIVE_MODE; asserts equal, returns PyNative's."""
    graph = in_mode(mycel.GRAPH_MODE, lambda: make()(*args))
    native = in_mode(mycel.PYNATIVE_MODE, lambda: make()(*args))
    assert_same_tree(graph, native)
    return native


def recorded(grad_fn):
    """The RecordedGrad behind a grad function (after a call in PYNATIVE_MODE)."""
    (r,) = grad_fn._recorded.values()
    return r


# ---- an MLP with Parameters --------------------------------------------------------------------

class MLP(nn.Cell):
    def __init__(self, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w1 = Parameter(T(rng.normal(size=(3, 4))), name="w1")
        self.b1 = Parameter(T(rng.normal(size=(4,))), name="b1")
        self.w2 = Parameter(T(rng.normal(size=(4, 2))), name="w2")

    def construct(self, x):
        h = ops.tanh(ops.matmul(x, self.w1) + self.b1)
        return ops.sum(ops.matmul(h, self.w2) ** 2)


def mlp_numpy(x, w1, b1, w2):
    return np.sum((np.tanh(x @ w1 + b1) @ w2) ** 2)


def test_mlp_weights_get_by_list_match_graph_mode_and_finite_differences():
    net = MLP()
    x = T(np.random.default_rng(1).normal(size=(5, 3)))
    weights = net.trainable_params()
    grads = both_modes(lambda: ops.GradOperation(get_by_list=True)(net, weights), x)
    ws = [w.asnumpy().copy() for w in weights]
    for i, g in enumerate(grads):
        num = numeric_grad(lambda *a: mlp_numpy(x.asnumpy(), *a), ws, i)
        np.testing.assert_allclose(g.asnumpy(), num, rtol=1e-6, atol=1e-8)


def test_get_all_and_sens_param_match_graph_mode():
    def f(x, y):
        return ops.sin(x) * y + x / (y * y + 1.0)
    rng = np.random.default_rng(2)
    x, y, s = (T(rng.normal(size=(2, 3))) for _ in range(3))
    gx, gy = both_modes(lambda: ops.GradOperation(get_all=True)(f), x, y)
    fx = lambda a, b: np.sin(a) * b + a / (b * b + 1.0)  # noqa: E731
    np.testing.assert_allclose(gx.asnumpy(), numeric_grad(fx, [x.asnumpy(), y.asnumpy()], 0), rtol=1e-6)
    np.testing.assert_allclose(gy.asnumpy(), numeric_grad(fx, [x.asnumpy(), y.asnumpy()], 1), rtol=1e-6)
    sx, sy = both_modes(lambda: ops.GradOperation(get_all=True, sens_param=True)(f), x, y, s)
    fs = lambda a, b: fx(a, b) * s.asnumpy()  # noqa: E731
    np.testing.assert_allclose(sx.asnumpy(), numeric_grad(fs, [x.asnumpy(), y.asnumpy()], 0), rtol=1e-6)
    np.testing.assert_allclose(sy.asnumpy(), numeric_grad(fs, [x.asnumpy(), y.asnumpy()], 1), rtol=1e-6)


def test_value_and_grad_with_aux_and_weights_match_graph_mode():
    net = MLP(seed=3)
    x = T(np.random.default_rng(4).normal(size=(2, 3)))

    def loss(x):
        out = net(x)
        return out, x * 2.0
    (value, aux), (gx, gws) = both_modes(lambda: mycel.value_and_grad(loss, 0, net.trainable_params(),
                                                                      has_aux=True), x)
    np.testing.assert_allclose(value.asnumpy(), mlp_numpy(x.asnumpy(), *[w.asnumpy() for w in net.trainable_params()]))
    np.testing.assert_allclose(aux.asnumpy(), 2 * x.asnumpy())
    ws = [w.asnumpy() for w in net.trainable_params()]
    np.testing.assert_allclose(gx.asnumpy(), numeric_grad(mlp_numpy, [x.asnumpy()] + ws, 0), rtol=1e-6)
    assert len(gws) == 3


def test_stop_gradient_matches_graph_mode():
    def f(x, y):
        z = ops.stop_gradient(x * y)
        return ops.sum(z * x + y * y)
    x, y = T([1., 2.]), T([3., -4.])
    gx, gy = both_modes(lambda: mycel.grad(f, (0, 1)), x, y)
    np.testing.assert_allclose(gx.asnumpy(), x.asnumpy() * y.asnumpy())   # z held constant
    np.testing.assert_allclose(gy.asnumpy(), 2 * y.asnumpy())


# ---- what only recording can do ----------------------------------------------------------------

def test_python_control_flow_on_tensor_values_follows_the_path_taken():
    def f(x):
        if float(x.sum()) > 0:          # graph mode cannot parse a tensor read into Python
            return ops.sum(ops.exp(x) * x)
        return ops.sum(ops.cos(x) * 3.0)
    g = mycel.grad(f)
    xp, xn = np.array([0.5, 1.0, -0.2]), np.array([-0.5, -1.0, 0.2])
    np.testing.assert_allclose(g(T(xp)).asnumpy(), numeric_grad(lambda a: np.exp(a) * a, [xp], 0), rtol=1e-6)
    np.testing.assert_allclose(g(T(xn)).asnumpy(), numeric_grad(lambda a: 3 * np.cos(a), [xn], 0), rtol=1e-6)
    assert recorded(g).compiles == 2   # one program per path
    g(T(xp * 2))
    assert recorded(g).compiles == 2


def test_python_loop_with_data_dependent_trip_count():
    def f(x):
        n = 0
        while float(ops.sum(x * x).asnumpy()) < 50.0:
            x = x * 1.5
            n += 1
        print("iterations:", n)         # any Python runs during the recording
        return ops.sum(x)
    x0 = np.array([1.0, 2.0])
    got = mycel.grad(f)(T(x0)).asnumpy()
    k, v = 0, x0.copy()
    while (v * v).sum() < 50.0:
        v, k = v * 1.5, k + 1
    np.testing.assert_allclose(got, np.full(2, 1.5 ** k))


class NumpyScaled(nn.Cell):
    """construct computes a constant with numpy on every call (graph mode would fold it)."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(T([[0.5, -1.0], [2.0, 0.25]]), name="w")

    def construct(self, x):
        scale = Tensor(np.sqrt(np.arange(1, 3, dtype=np.float64)))
        return ops.sum(ops.matmul(x, self.w) * scale)


def test_cell_using_numpy_on_constants():
    net = NumpyScaled()
    x = np.array([[1.0, 2.0], [3.0, -1.0]])
    gx, (gw,) = mycel.grad(net, 0, [net.w])(T(x))
    scale = np.sqrt([1.0, 2.0])
    f = lambda a, w: np.sum((a @ w) * scale)  # noqa: E731
    np.testing.assert_allclose(gx.asnumpy(), numeric_grad(f, [x, net.w.asnumpy()], 0), rtol=1e-6)
    np.testing.assert_allclose(gw.asnumpy(), numeric_grad(f, [x, net.w.asnumpy()], 1), rtol=1e-6)


@mycel.jit
def jit_poly(x, y):
    return x * x * y + ops.sin(y)


def test_jit_function_is_one_call_node_and_differentiated_through():
    def f(x, y):
        z = jit_poly(x * 2.0, y)
        return ops.sum(z * x)
    x, y = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.7, -1.1])
    g = mycel.grad(f, (0, 1))
    gx, gy = g(T(x), T(y))
    ref = lambda a, b: ((2 * a) ** 2 * b + np.sin(b)) * a  # noqa: E731
    np.testing.assert_allclose(gx.asnumpy(), numeric_grad(ref, [x, y], 0), rtol=1e-6)
    np.testing.assert_allclose(gy.asnumpy(), numeric_grad(ref, [x, y], 1), rtol=1e-6)
    r = recorded(g)
    assert r.last_calls() == ["jit_poly"]
    assert "sin" not in r.last_ir().split("graph @jit_poly")[0]   # its body is not re-recorded
    # Graph mode does not call @jit objects from parsed code: compare with the undecorated function.
    plain = jit_poly.__wrapped__

    def f_graph(x, y):
        z = plain(x * 2.0, y)
        return ops.sum(z * x)
    graph = in_mode(mycel.GRAPH_MODE, lambda: mycel.grad(f_graph, (0, 1))(T(x), T(y)))
    assert_same_tree((gx, gy), graph)


def test_closure_batch_changes_without_recompiling():
    w = T([1.0, -1.0])
    batch = {"x": T([[1.0, 2.0]])}

    def loss(w):
        return ops.sum(ops.matmul(batch["x"], w) ** 2)
    g = mycel.grad(loss)
    for seed in range(3):
        xb = np.random.default_rng(seed).normal(size=(1, 2))
        batch["x"] = T(xb)                 # a new tensor each step: a run-time input, not a constant
        got = g(w).asnumpy()
        np.testing.assert_allclose(got, numeric_grad(lambda v: np.sum((xb @ v) ** 2), [w.asnumpy()], 0), rtol=1e-6)
    assert recorded(g).compiles == 1


def test_twenty_calls_compile_once_and_a_new_shape_compiles_again():
    net = MLP(seed=5)
    g = mycel.value_and_grad(net, None, net.trainable_params())
    rng = np.random.default_rng(6)
    for _ in range(20):
        xb = rng.normal(size=(4, 3))
        value, grads = g(T(xb))
        np.testing.assert_allclose(value.asnumpy(), mlp_numpy(xb, *[w.asnumpy() for w in net.trainable_params()]))
    r = recorded(g)
    assert (r.compiles, r.cache_hits) == (1, 19)
    g(T(rng.normal(size=(7, 3))))
    assert r.compiles == 2


def test_batch_norm_moving_statistics_update_once_per_step():
    def run(grad):
        net = nn.BatchNorm1d(2, momentum=0.5, dtype=mycel.float64)
        net.set_train(True)
        x = T([[1.0, 2.0], [3.0, 6.0]])
        if grad:
            mycel.grad(lambda x: ops.sum(net(x) * x))(x)
        else:
            net(x)
        return net.moving_mean.asnumpy().copy()
    np.testing.assert_allclose(run(grad=True), run(grad=False))
    np.testing.assert_allclose(run(grad=False), 0.5 * np.array([2.0, 4.0]))


def test_nested_grad_is_a_second_derivative():
    def inner(x):
        return ops.sum(x * x)

    def outer(x):
        return ops.sum(mycel.grad(inner)(x) * x)  # sum(2 x * x): d/dx = 4 x
    np.testing.assert_allclose(mycel.grad(outer)(T([1.0, 2.0])).asnumpy(), [4.0, 8.0])
    np.testing.assert_allclose(mycel.grad(outer)(T([3.0, -1.0])).asnumpy(), [12.0, -4.0])  # again, cached
    # The recorder was left cleanly: the next grad works.
    np.testing.assert_allclose(mycel.grad(inner)(T([3.0])).asnumpy(), [6.0])


def test_bad_output_names_the_problem():
    with pytest.raises(TypeError, match="float tensor"):
        mycel.grad(lambda x: ops.argmax(x))(T([1., 2.]))
    with pytest.raises(TypeError, match="outputs"):
        mycel.grad(lambda x: {"a": x})(T([1., 2.]))


def test_astype_and_clone_are_recorded_as_casts():
    def f(x):
        y = x.astype(mycel.float32).astype(mycel.float64)
        return ops.sum(y.clone() * x)
    x = np.array([1.5, -2.0])
    np.testing.assert_allclose(mycel.grad(f)(T(x)).asnumpy(), 2 * x, rtol=1e-6)


def test_same_tensor_at_two_positions_matches_graph_mode():
    def f(x, y):
        return ops.sum(x * y - y * y)
    x = T([1.0, 2.0])
    gx, gy = both_modes(lambda: mycel.grad(f, (0, 1)), x, x)
    np.testing.assert_allclose(gx.asnumpy(), x.asnumpy())
    np.testing.assert_allclose(gy.asnumpy(), -x.asnumpy())
