"""Gradients taken inside compiled code (GradOperation in a construct, mycel.grad objects called from
@jit functions, grad of grad) and graph-mode ops.assign, against closed forms and eager runs."""
import numpy as np
import pytest

import mycel
from mycel import nn, ops, Tensor, Parameter, ParameterTuple
from mycel.ops import operations as P


@pytest.fixture(autouse=True)
def graph_mode():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


X = np.array([0.1, 0.5, 1.0, -2.0], np.float32)


def test_grad_called_inside_jit_matches_closed_form():
    g = mycel.grad(lambda x: ops.sin(x).sum())

    @mycel.jit
    def h(x):
        return g(x) * 2.0

    np.testing.assert_allclose(h(Tensor(X)).asnumpy(), 2 * np.cos(X), rtol=1e-6)


def test_grad_of_grad_of_sin_is_minus_sin():
    gg = mycel.grad(mycel.grad(lambda x: ops.sin(x)))
    np.testing.assert_allclose(gg(Tensor(X)).asnumpy(), -np.sin(X), rtol=1e-5, atol=1e-6)


def test_third_derivative_of_sin_is_minus_cos():
    ggg = mycel.grad(mycel.grad(mycel.grad(lambda x: ops.sin(x))))
    np.testing.assert_allclose(ggg(Tensor(X)).asnumpy(), -np.cos(X), rtol=1e-5, atol=1e-6)


def test_hessian_vector_product_matches_closed_form():
    # f(x) = sum(x^3) + (a.x)^2: H = diag(6x) + 2 a a^T, so Hv = 6 x v + 2 a (a.v).
    a = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    v = np.array([0.3, 0.1, -1.0, 2.0], np.float32)
    at = Tensor(a)

    def f(x):
        return (x * x * x).sum() + (x * at).sum() ** 2

    df = mycel.grad(f)

    def gv(x, v):
        return (df(x) * v).sum()

    hvp = mycel.grad(gv)
    want = 6 * X * v + 2 * a * (a @ v)
    np.testing.assert_allclose(hvp(Tensor(X), Tensor(v)).asnumpy(), want, rtol=1e-4)


class _Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([[1.0, -1.0], [0.5, 2.0]], np.float32)), name="w")

    def construct(self, x):
        return ops.tanh(ops.matmul(x, self.w)).sum()


class _GradNet(nn.Cell):
    """GradOperation(get_all, get_by_list) inside construct, the MindSpore 1.x pattern."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.weights = ParameterTuple(net.trainable_params())
        self.grad = ops.GradOperation(get_all=True, get_by_list=True)

    def construct(self, x):
        return self.grad(self.net, self.weights)(x)


def test_grad_operation_in_construct_matches_finite_differences():
    net = _Net()
    x = np.array([[0.3, -0.7], [1.2, 0.4]], np.float32)
    (gx,), (gw,) = _GradNet(net)(Tensor(x))
    w = net.w.asnumpy().astype(np.float64)

    def f(xv, wv):
        return np.tanh(xv @ wv).sum()

    eps = 1e-4
    num_w = np.zeros_like(w)
    for i in np.ndindex(*w.shape):
        d = np.zeros_like(w)
        d[i] = eps
        num_w[i] = (f(x, w + d) - f(x, w - d)) / (2 * eps)
    num_x = np.zeros_like(x, dtype=np.float64)
    for i in np.ndindex(*x.shape):
        d = np.zeros_like(x, dtype=np.float64)
        d[i] = eps
        num_x[i] = (f(x + d, w) - f(x - d, w)) / (2 * eps)
    np.testing.assert_allclose(gw.asnumpy(), num_w, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(gx.asnumpy(), num_x, rtol=1e-3, atol=1e-4)


class _SGD(nn.Cell):
    def __init__(self, params, lr):
        super().__init__()
        self.parameters = ParameterTuple(params)
        self.moments = self.parameters.clone("m")
        self.lr = lr

    def construct(self, grads):
        for p, g, m in zip(self.parameters, grads, self.moments):
            ops.assign(m, m * 0.9 + g)
            ops.assign(p, p - self.lr * m)  # reads the moment just written, as eager does
        return True


def test_train_one_step_cell_is_one_graph_and_matches_eager():
    x = Tensor(np.array([[0.3, -0.7], [1.2, 0.4]], np.float32))
    results = {}
    for mode in (mycel.PYNATIVE_MODE, mycel.GRAPH_MODE):
        mycel.set_context(mode=mode)
        net = _Net()
        step = nn.TrainOneStepCell(net, _SGD(net.trainable_params(), 0.1))
        losses = [float(step(x).asnumpy()) for _ in range(3)]
        results[mode] = (losses, net.w.asnumpy().copy())
    np.testing.assert_allclose(results[mycel.GRAPH_MODE][0], results[mycel.PYNATIVE_MODE][0], rtol=1e-5)
    np.testing.assert_allclose(results[mycel.GRAPH_MODE][1], results[mycel.PYNATIVE_MODE][1], rtol=1e-5)
    # The compiled step is one flat graph: forward, backward and both writes, no calls left.
    ir = step._compiled.graph.ir(x)
    assert ir.count("graph @") == 1, ir
    assert ir.count("assign(") == 2 and "tanh" in ir


def test_assign_writes_after_reads_and_returned_weight_is_the_old_value():
    class C(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(Tensor(np.array([1.0, 2.0], np.float32)), name="w")

        def construct(self, x):
            y = self.w * x
            old = self.w + 0.0  # a copy: the value before the write
            ops.assign(self.w, self.w + x)
            return y, old

    c = C()
    y, w_before = c(Tensor(np.array([10.0, 10.0], np.float32)))
    np.testing.assert_array_equal(y.asnumpy(), [10.0, 20.0])
    np.testing.assert_array_equal(w_before.asnumpy(), [1.0, 2.0])
    np.testing.assert_array_equal(c.w.asnumpy(), [11.0, 12.0])


def test_reading_a_parameter_after_assigning_it():
    # Straight after ops.assign the read sees the assigned value (MindSpore's semantics); after a
    # branch that may have assigned, the read is an error naming the line.
    class C(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(Tensor(np.ones(2, np.float32)), name="w")

        def construct(self, x):
            ops.assign(self.w, x)
            return self.w * 2.0

    c = C()
    out = c(Tensor(np.array([3.0, 4.0], np.float32)))
    np.testing.assert_array_equal(out.asnumpy(), [6.0, 8.0])
    np.testing.assert_array_equal(c.w.asnumpy(), [3.0, 4.0])

    class D(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(Tensor(np.ones(2, np.float32)), name="w")

        def construct(self, x):
            if x.sum() > 0:
                ops.assign(self.w, x)
            return self.w * 2.0

    with pytest.raises(ValueError, match="read after ops.assign"):
        D()(Tensor(np.ones(2, np.float32)))


@pytest.mark.parametrize("op, sign", [(P.AssignAdd(), 1.0), (P.AssignSub(), -1.0), (ops.assign_add, 1.0),
                                      (ops.assign_sub, -1.0)],
                         ids=["AssignAdd", "AssignSub", "assign_add", "assign_sub"])
def test_reading_a_parameter_after_assign_add_or_sub(op, sign):
    # The assign happens inside a called function (assign_add's ops.assign of its argument): the
    # caller's later read sees the new value as after a direct ops.assign (MindSpore's AssignAdd
    # tests return self.var after it; this was the old value, silently).
    class C(nn.Cell):
        def __init__(self):
            super().__init__()
            self.var = Parameter(Tensor(np.arange(4, dtype=np.float32)), name="var")
            self.op = op

        def construct(self, y):
            self.op(self.var, y)
            return self.var, self.var * 2.0

    y = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    want = np.arange(4, dtype=np.float32) + sign * y
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        c = C()
        out, twice = c(Tensor(y))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    np.testing.assert_array_equal(out.asnumpy(), want)
    np.testing.assert_array_equal(twice.asnumpy(), 2 * want)
    np.testing.assert_array_equal(c.var.asnumpy(), want)
    eager = C()
    np.testing.assert_array_equal(eager(Tensor(y))[0].asnumpy(), want)


def test_assign_checks_shape_and_target():
    class Bad(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(Tensor(np.ones(2, np.float32)), name="w")

        def construct(self, x):
            ops.assign(self.w, x)
            return x

    with pytest.raises(TypeError, match=r"\[assign\] argument 'value' must match Parameter 'w'"):
        Bad()(Tensor(np.ones(3, np.float32)))

    class Computed(nn.Cell):
        def construct(self, x):
            ops.assign(x * 2.0, x)
            return x

    with pytest.raises(TypeError, match=r"\[assign\] argument 'variable' must be a Parameter"):
        Computed()(Tensor(np.ones(2, np.float32)))


def test_loop_over_many_parameters_unrolls():
    ps = [Parameter(Tensor(np.full((2,), float(i), np.float32)), name=f"p{i}") for i in range(40)]
    opt = _SGD(ps, 0.5)
    grads = tuple(Tensor(np.ones(2, np.float32)) for _ in range(40))
    opt(grads)
    np.testing.assert_allclose([p.asnumpy()[0] for p in ps], np.arange(40) - 0.5)


def _apply_n(f, x, n):
    i = 0
    while i < n:
        x = f(x)
        i = i + 1
    return x


def test_gradient_through_a_function_passed_as_an_argument():
    # A lambda and a registry op passed into a loop that calls them a run-time number of times.
    x = np.array([0.3, 0.7, -1.1], np.float32)
    g1 = mycel.grad(lambda v: _apply_n(lambda u: ops.sin(u) * 2.0, v, 3).sum())(Tensor(x))
    a = x.astype(np.float64)
    b = 2 * np.sin(a)
    c = 2 * np.sin(b)
    want1 = 2 * np.cos(c) * 2 * np.cos(b) * 2 * np.cos(a)
    np.testing.assert_allclose(g1.asnumpy(), want1, rtol=1e-4)
    n = Tensor(np.array(3, np.int32))
    g2 = mycel.grad(lambda v, k: _apply_n(ops.sin, v, k).sum())(Tensor(x), n)
    want2 = np.cos(np.sin(np.sin(a))) * np.cos(np.sin(a)) * np.cos(a)
    np.testing.assert_allclose(g2.asnumpy(), want2, rtol=1e-4)


def test_batch_norm_statistics_update_once_per_compiled_training_step():
    # The gradient recomputes the forward; that recomputation must not update BatchNorm's moving
    # statistics a second time. Reference: one eager forward of the same network.
    def make():
        mycel.set_seed(0)
        net = nn.SequentialCell([nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Dense(4 * 8 * 8, 2)])
        net.set_train(True)
        return net

    x = Tensor(np.random.default_rng(1).random((2, 3, 8, 8)).astype(np.float32))
    y = Tensor(np.array([0, 1], np.int32))
    ref = make()
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    ref(x)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    net = make()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.Momentum(net.trainable_params(), 0.01, 0.9))
    step(x, y)
    for name in ("moving_mean", "moving_variance"):
        np.testing.assert_allclose(getattr(net[1], name).asnumpy(), getattr(ref[1], name).asnumpy(),
                                   rtol=1e-5, atol=1e-7, err_msg=name)


def test_training_step_with_batch_norm_runs_the_forward_once():
    # The vjp recomputes the forward; CSE merges that recomputation into the primal forward, even
    # through batch_norm (its recomputed twin has momentum 0), so each conv and BN runs once.
    mycel.set_seed(0)
    net = nn.SequentialCell([nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(),
                             nn.Conv2d(4, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Dense(4 * 8 * 8, 2)])
    net.set_train(True)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")),
                               nn.Momentum(net.trainable_params(), 0.01, 0.9))
    x = Tensor(np.random.default_rng(2).random((2, 3, 8, 8)).astype(np.float32))
    y = Tensor(np.array([0, 1], np.int32))
    step(x, y)
    ir = step._compiled.graph.ir(x, y)
    assert ir.count("= conv2d[") + ir.count("= conv2d(") == 2, ir
    assert ir.count("= batch_norm[") + ir.count("= batch_norm(") == 2, ir
