"""Graph-mode bugs found by compiling the optimizers, each reproduced by a small Cell or function and
compared with the same code run eagerly (or with numpy)."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, _mycel, nn, ops
from mycel.common import dtype as mstype
from mycel.common.parameter import Parameter


@pytest.fixture(autouse=True)
def _pynative():
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def _x():
    return Tensor(np.array([0.5, -1.5, 2.0], np.float32))


class _Counter(nn.Cell):
    """Reads a copy of its counter, then advances it: the copy must keep the old value."""

    def __init__(self):
        super().__init__()
        self.counter = Parameter(Tensor(np.zeros([1], np.int32)), name="counter", requires_grad=False)

    def _next(self):
        step = self.counter + 0
        return ops.depend(step, ops.assign(self.counter, step + 1))

    def construct(self, x):
        step = self._next()
        return x * (ops.cast(step, mstype.float32) + 1.0)


def test_copy_of_assigned_parameter_keeps_the_value_before_the_assign():
    # simplify_algebra turned `counter + 0` into `counter`, which the step then read after its
    # assign: the compiled step saw the new value (Lamb's bias correction used step + 1).
    eager, graph = _Counter(), _Counter()
    step = mycel.jit(graph)
    x = _x()
    for k in range(3):
        want = eager(x).asnumpy()
        np.testing.assert_allclose(want, x.asnumpy() * (k + 1))
        np.testing.assert_allclose(step(x).asnumpy(), want)
    assert graph.counter.asnumpy().tolist() == eager.counter.asnumpy().tolist() == [3]


class _Scale(nn.Cell):
    def __init__(self, value):
        super().__init__()
        self.value = Parameter(Tensor(np.float32(value)), name="value", requires_grad=False)

    def construct(self, x):
        return x * self.value


class _SharedThroughHelper(nn.Cell):
    """One sub-Cell in a tuple twice (an optimizer's lr Cell per parameter), each entry called
    through the same helper method."""

    def __init__(self):
        super().__init__()
        self.scale = _Scale(3.0)
        self.per_input = (self.scale, self.scale)

    def _apply(self, cell, x):
        return cell(x) + 1.0

    def construct(self, a, b):
        return self._apply(self.per_input[0], a), self._apply(self.per_input[1], b)


def test_shared_cell_called_through_one_helper_from_two_sites():
    # The helper's specialization was memoized on the first call; the second site's constant of
    # the shared Cell kept the unspecialized graph ("node without an abstract value").
    a = _x()
    b = Tensor(np.array([1.0, 2.0, 4.0], np.float32))
    got = mycel.jit(_SharedThroughHelper())(a, b)
    want = _SharedThroughHelper()(a, b)
    for g, w, x in zip(got, want, (a, b)):
        np.testing.assert_allclose(w.asnumpy(), x.asnumpy() * 3.0 + 1.0)
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy())


def decay_each(x):
    # `w > 0.0` on floats from a tuple is analysed as a tensor op on constants.
    for w in (0.0, 0.5):
        if w > 0.0:
            x = x + w * x
        else:
            x = x - 1.0
    return x


FLAG = Tensor(np.array(False))


def flagged(x):
    if FLAG:
        return x * 2.0
    return x + 2.0


@pytest.mark.parametrize("fn, ref", [(decay_each, lambda x: (x - 1.0) * 1.5), (flagged, lambda x: x + 2.0)])
def test_constant_tensor_condition_picks_its_branch_at_analysis(fn, ref):
    x = _x()
    want = fn(x).asnumpy()
    np.testing.assert_allclose(want, ref(x.asnumpy()), rtol=1e-6)
    np.testing.assert_allclose(mycel.jit(fn)(x).asnumpy(), want, rtol=1e-6)
    text = _mycel.graph.specialize(_mycel.frontend.parse(fn), x)
    assert "switch(" not in text and text.count("graph @") == 1, text


def test_tensor_condition_known_only_at_run_time_stays_a_switch():
    def positive(x):
        if x.sum() > 0.0:
            return x * 2.0
        return x + 2.0
    x = _x()
    text = _mycel.graph.specialize(_mycel.frontend.parse(positive), x)
    assert "switch(" in text
    for v in (x, Tensor(-x.asnumpy())):
        np.testing.assert_allclose(mycel.jit(positive)(v).asnumpy(), positive(v).asnumpy())


class _Scaled(nn.Cell):
    """A Cell whose construct has default arguments, like TransformerEncoderLayer's masks."""

    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def construct(self, x, shift=None, scale=1.0):
        if shift is None:
            return x * self.factor * scale
        return x * self.factor * scale + shift


def test_cell_with_default_arguments_called_from_a_sequential_loop():
    # The callee of `cell(x)` in SequentialCell's loop is known only after analysis, so the
    # parsed defaults must complete the call there ("@_Scaled takes 3 arguments, got 1").
    x = _x()
    seq = nn.SequentialCell([_Scaled(2.0), _Scaled(-3.0)])
    mycel.set_context(mode=mycel.GRAPH_MODE)
    out = seq(x).asnumpy()
    np.testing.assert_allclose(out, x.asnumpy() * -6.0, rtol=1e-6)


def test_cell_list_loop_passes_some_arguments_and_defaults_the_rest():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.blocks = nn.CellList([_Scaled(2.0), _Scaled(0.5)])

        def construct(self, x):
            for c in self.blocks:
                x = c(x, x)
            return x

    x = _x()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    out = Net()(x).asnumpy()
    ref = x.asnumpy() * 3.0  # 2x + x
    np.testing.assert_allclose(out, ref * 0.5 + ref, rtol=1e-6)


def test_operator_on_items_of_a_tuple_attribute_is_python_arithmetic():
    # `h * self.stride[0]`: the parser cannot tell the item from a tensor; analysis computes it
    # as Python ints, so it can be used in a shape (it was a run-time int64 tensor).
    class C(nn.Cell):
        def __init__(self):
            super().__init__()
            self.stride = (2, 3)

        def construct(self, x):
            h = x.shape[1]
            return ops.reshape(x, (h * self.stride[0] // 2, self.stride[1] - 2 + 0 * h))

    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        got = C()(Tensor(x)).asnumpy()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    np.testing.assert_array_equal(got, C()(Tensor(x)).asnumpy())
    assert got.shape == (4, 1)


def _four(x):
    return (x, x * 2.0, x * 3.0, x * 4.0)


def _tuple_subscripts(x):
    t = _four(x)
    return t[1:3], t[::-1][0], t[-1], t + (x,)


def test_subscripts_and_concatenation_of_a_tuple_returned_by_a_call():
    x = Tensor(np.array([1.0, -2.0], np.float32))
    eager = _tuple_subscripts(x)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        graph = mycel.jit(_tuple_subscripts)(x)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    flat = lambda t: [a for i in t for a in (flat(i) if isinstance(i, tuple) else [i])]  # noqa: E731
    assert len(flat(graph)) == len(flat(eager)) == 9  # 2 + 1 + 1 + 5
    for g, e in zip(flat(graph), flat(eager)):
        np.testing.assert_array_equal(g.asnumpy(), e.asnumpy())
