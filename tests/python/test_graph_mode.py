"""Graph mode end to end: the same function or Cell in PYNATIVE and GRAPH mode gives the same
results (same kernels), for each supported construct."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.common.parameter import Parameter


def t(*shape, seed=0, dtype=np.float32):
    return Tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def same(fn, *args):
    """Runs fn eagerly and through @jit; asserts equal outputs and returns the jitted function."""
    eager = fn(*args)
    jitted = mycel.jit(fn)
    graph = jitted(*args)
    eager = eager if isinstance(eager, tuple) else (eager,)
    graph = graph if isinstance(graph, tuple) else (graph,)
    assert len(eager) == len(graph)
    for e, g in zip(eager, graph):
        np.testing.assert_array_equal(np.asarray(g.asnumpy()), np.asarray(e.asnumpy()))
    return jitted


def straight(x, y):
    z = x * y + 1.0
    return ops.relu(z) - ops.exp(y) / 2


def branch(x):
    if x.sum() > 0:
        y = x * 2
    elif x.sum() > -1:
        y = x - 1
    else:
        y = -x
    return y


def while_data_dependent(x):
    while x.sum() < 100.0:
        x = x * 2.0
    return x


def early_return_in_loop(x):
    for i in range(10):
        x = x + 1.0
        if x.sum() > 20.0:
            return x * 0.5
    return x


def closures(x):
    scale = x.sum()

    def inner(y):
        return y * scale

    f = lambda v: inner(v) + 1.0  # noqa: E731
    return f(x)


def countdown(n, x):
    if n > 0:
        return countdown(n - 1, x * 1.5)
    return x


def recursion(x):
    return countdown(4, x)


def tuples_and_unpacking(x, y):
    a, b = y, x
    pair = (a + b, a - b)
    s, d = pair
    s += d
    return s, pair[1]


def break_continue(x):
    total = x * 0.0
    for i in range(6):
        if i == 1:
            continue
        if i == 4:
            break
        total = total + x * i
    return total


def enumerate_and_zip(x, y):
    acc = x
    for i, a in enumerate((x, y)):
        acc = acc + a * (i + 1)
    for j, k in zip((1, 2), (3.0, 4.0)):
        acc = acc * k + j
    return acc


@pytest.mark.parametrize("fn,nargs", [
    (straight, 2), (branch, 1), (while_data_dependent, 1), (early_return_in_loop, 1),
    (closures, 1), (recursion, 1), (tuples_and_unpacking, 2), (break_continue, 1), (enumerate_and_zip, 2),
])
def test_mode_parity(fn, nargs):
    args = [Tensor(np.abs(np.random.default_rng(i).standard_normal((2, 3))).astype(np.float32) + 0.1)
            for i in range(nargs)]
    same(fn, *args)


def test_branch_takes_each_path():
    for v in (1.0, -0.1, -5.0):
        same(branch, Tensor(np.full((2, 2), v, np.float32)))


class MLP(nn.Cell):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(0)
        self.w1 = Parameter(Tensor(rng.standard_normal((16, 8)).astype(np.float32)), name="w1")
        self.b1 = Parameter(Tensor(np.zeros(16, np.float32)), name="b1")
        self.w2 = Parameter(Tensor(rng.standard_normal((4, 16)).astype(np.float32)), name="w2")

    def construct(self, x):
        h = ops.relu(ops.matmul(x, self.w1, transpose_b=True) + self.b1)
        return ops.softmax(ops.matmul(h, self.w2, transpose_b=True))


class Block(nn.Cell):
    def __init__(self, k):
        super().__init__()
        self.w = Parameter(Tensor(np.full((3, 3), 0.1 * k, np.float32)), name="w")

    def construct(self, x):
        return ops.tanh(ops.matmul(x, self.w))


class Stack(nn.Cell):
    def __init__(self):
        super().__init__()
        self.layers = nn.CellList([Block(1), Block(2), Block(3)])

    def construct(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


@pytest.mark.parametrize("cell_cls,shape", [(MLP, (5, 8)), (Stack, (4, 3))])
def test_cell_in_graph_mode_matches_pynative(cell_cls, shape):
    net = cell_cls()
    x = t(*shape)
    eager = net(x)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    graph = net(x)
    np.testing.assert_array_equal(graph.asnumpy(), eager.asnumpy())


def test_second_call_compiles_nothing_and_allocates_only_outputs():
    net = MLP()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    x = t(5, 8)
    net(x)
    compiled = net._compiled.graph
    assert compiled.num_programs == 1
    before = mycel._mycel.allocator_stats()["num_allocs"]
    net(x)
    after = mycel._mycel.allocator_stats()["num_allocs"]
    assert compiled.num_programs == 1
    assert after - before <= 2, f"a warm graph-mode step made {after - before} allocator calls"


def test_set_inputs_dynamic_batch_compiles_once():
    net = MLP()
    net.set_inputs(Tensor(shape=[None, 8], dtype=mycel.float32))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    for batch in (3, 7, 3):
        x = t(batch, 8, seed=batch)
        got = net(x)
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
        want = net(x)
        mycel.set_context(mode=mycel.GRAPH_MODE)
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    assert net._compiled.graph.num_programs == 1


def test_while_loop_stays_a_loop_in_ir():
    text = mycel._mycel.graph.compile(while_data_dependent).ir(t(2, 2))
    assert "while" in text and text.count("graph @") >= 2, text


def test_shape_error_points_at_user_line():
    def bad(x, y):
        return ops.matmul(x, y)
    with pytest.raises(ValueError, match=r"(?s)\[matmul\].*test_graph_mode.py:\d+: +return ops.matmul"):
        mycel.jit(bad)(t(2, 3), t(2, 3))


def test_unsupported_syntax_is_a_located_syntax_error():
    def bad(x):
        try:
            return x
        except Exception:
            return x
    with pytest.raises(SyntaxError) as info:
        mycel.jit(bad)(t(2))
    assert info.value.lineno is not None and "try" in str(info.value)


def _warm_allocs(f, *args):
    f(*args)
    f(*args)
    before = mycel._mycel.allocator_stats()["num_allocs"]
    f(*args)
    return mycel._mycel.allocator_stats()["num_allocs"] - before


def test_warm_conv_training_step_allocates_only_its_output():
    # Conv forward and backward, pooling gradients (their oneDNN reorders and workspaces use
    # reused per-thread buffers), the optimizer's writes: one allocation, the returned loss.
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 6, 5, pad_mode="valid")
            self.pool = nn.MaxPool2d(2, 2)
            self.flat = nn.Flatten()
            self.fc = nn.Dense(6 * 6 * 6, 10)

        def construct(self, x):
            return self.fc(self.flat(self.pool(ops.relu(self.conv(x)))))

    mycel.set_context(mode=mycel.GRAPH_MODE)
    net = Net()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")),
                               nn.Momentum(net.trainable_params(), 0.01, 0.9))
    x = t(4, 1, 16, 16)
    y = Tensor(np.array([1, 2, 3, 4], np.int32))
    assert _warm_allocs(step, x, y) <= 1


def test_warm_int_to_float_step_allocates_only_its_output():
    @mycel.jit
    def f(i):
        return ops.exp(ops.cast(i, mycel.float32)) + 1.0

    mycel.set_context(mode=mycel.GRAPH_MODE)
    assert _warm_allocs(f, Tensor(np.arange(6, dtype=np.int32))) <= 1
