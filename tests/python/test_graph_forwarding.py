"""Graph mode: functions and Cells that forward their *args and **kwargs (`return
self.fn(*args, **kwargs)`), parsed once per call shape (frontend/forwarding.cc); and calls that
only analysis can bind (a Cell from a CellList loop or a SequentialCell) to a construct with
*inputs, bound as Python binds them (Engine::bind_positional). Each result is checked against
numpy and against the same code run eagerly."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops

X = np.arange(6, dtype=np.float32).reshape(2, 3)


@pytest.fixture
def graph_mode():
    before = mycel.get_context("mode")
    mycel.set_context(mode=mycel.GRAPH_MODE)
    yield
    mycel.set_context(mode=before)


def run_with_cell(fn):
    """MindSpore's test helper: the function runs as the construct of a wrapper Cell."""
    def wrapper(*args, **kwargs):
        class CellWrapper(nn.Cell):
            def __init__(self):
                super().__init__()
                self.fn = fn

            def construct(self, *args, **kwargs):
                return self.fn(*args, **kwargs)
        return CellWrapper()(*args, **kwargs)
    return wrapper


def affine(x, y=None, scale=1.0, *, shift=0.0):
    return (x if y is None else x + y) * scale + shift


@pytest.mark.parametrize("call,want", [
    (lambda f, x: f(x), lambda x: x),
    (lambda f, x: f(x, scale=3.0), lambda x: 3 * x),
    (lambda f, x: f(x, x, 2.0), lambda x: 4 * x),
    (lambda f, x: f(x, y=x, shift=1.0), lambda x: 2 * x + 1),
    (lambda f, x: f(x, shift=-1.0, scale=0.5), lambda x: 0.5 * x - 1),
])
def test_a_wrapper_cell_forwards_args_and_kwargs(graph_mode, call, want):
    got = call(run_with_cell(affine), Tensor(X)).asnumpy()
    np.testing.assert_allclose(got, want(X), rtol=1e-6)
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    np.testing.assert_allclose(call(run_with_cell(affine), Tensor(X)).asnumpy(), got, rtol=1e-6)


class Inner(nn.Cell):
    def construct(self, x, y=None, scale=1.0):
        return affine(x, y, scale)


class Forward(nn.Cell):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def construct(self, *args, **kwargs):
        return self.inner(*args, **kwargs)


def test_one_cell_called_with_several_shapes(graph_mode):
    """One Cell object, called with different numbers of arguments and keywords: each shape has
    its own parse, and each gives the right value."""
    net, x = Forward(), Tensor(X)
    np.testing.assert_allclose(net(x).asnumpy(), X)
    np.testing.assert_allclose(net(x, scale=2.0).asnumpy(), 2 * X)
    np.testing.assert_allclose(net(x, x).asnumpy(), 2 * X)
    np.testing.assert_allclose(net(x, x, scale=3.0).asnumpy(), 6 * X)
    np.testing.assert_allclose(net(x).asnumpy(), X)


def reduce_sum(x, **kwargs):
    return ops.sum(x, **kwargs)


def middle(x, *rest, **kw):
    return affine(x, *rest, **kw)


def test_forwarding_inside_a_jit_function(graph_mode):
    """**kwargs forwarded to a registry op's keywords, and through two forwarding levels."""
    @mycel.jit
    def f(x):
        return reduce_sum(x, dim=0, keepdim=True) + reduce_sum(x, dim=1, keepdim=True)

    @mycel.jit
    def g(x):
        return middle(x, x, scale=2.0) + middle(x, shift=1.0)

    x = Tensor(X)
    np.testing.assert_allclose(f(x).asnumpy(),
                               X.sum(0, keepdims=True) + X.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(g(x).asnumpy(), 4 * X + X + 1, rtol=1e-6)


class Twice(nn.Cell):
    def construct(self, *inputs):
        return inputs[0] * 2


class Scaled(nn.Cell):
    def construct(self, x, scale=3.0, *, shift=1.0):
        return x * scale + shift


class Loop(nn.Cell):
    def __init__(self, cells):
        super().__init__()
        self.blocks = nn.CellList(cells)

    def construct(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def test_cells_with_star_inputs_in_a_cell_list_and_a_sequential_cell(graph_mode):
    """A Cell reached in a CellList loop or inside SequentialCell is called with arguments
    analysis binds: *inputs takes them as a tuple (before, it took x itself, and inputs[0] was
    x's first row), and defaults, keyword-only ones included, fill the rest."""
    x = Tensor(X)
    np.testing.assert_allclose(Loop([Twice(), Twice()])(x).asnumpy(), 4 * X)
    np.testing.assert_allclose(nn.SequentialCell([Twice(), Twice()])(x).asnumpy(), 4 * X)
    np.testing.assert_allclose(Loop([Twice(), Scaled()])(x).asnumpy(), 6 * X + 1)


def star_sum(*a):
    return (a[0] * a[0]).sum()


def test_grad_of_a_function_with_star_args_is_refused(graph_mode):
    """The gradient transform matches arguments to parameters one to one; a *args function
    would silently take its first argument as the tuple, so it is refused with a way out."""
    @mycel.jit
    def f(x):
        return ops.grad(star_sum)(x)

    with pytest.raises(Exception, match=r"\[grad\] cannot differentiate @star_sum.*\*args"):
        f(Tensor(X))

    @mycel.jit
    def ok(x):
        return ops.grad(lambda t: star_sum(t))(x)

    np.testing.assert_allclose(ok(Tensor(X)).asnumpy(), 2 * X, rtol=1e-6)


def forwards(*args, **kwargs):
    return affine(*args, **kwargs)


def test_a_forwarding_function_used_as_a_value_says_so(graph_mode):
    @mycel.jit
    def f(x):
        g = (forwards, forwards)[0]
        return ops.grad(g)(x)

    with pytest.raises(Exception, match=r"forwards|\*args"):
        f(Tensor(X))
