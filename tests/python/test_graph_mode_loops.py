"""Graph mode loops over zip/enumerate of run-time tuples, and comprehensions unrolled at parse
time: each construct gives the same result eagerly and through mycel.jit."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, ops


def t(*shape, seed=0):
    return Tensor(np.abs(np.random.default_rng(seed).standard_normal(shape)).astype(np.float32) + 0.1)


def flat(out):
    if isinstance(out, (tuple, list)):
        return [y for x in out for y in flat(x)]
    return [out]


def same(fn, *args):
    eager = flat(fn(*args))
    graph = flat(mycel.jit(fn)(*args))
    assert len(eager) == len(graph)
    for e, g in zip(eager, graph):
        np.testing.assert_array_equal(np.asarray(g.asnumpy()), np.asarray(e.asnumpy()))


# ---- for over zip / enumerate of run-time sequences ----

def zip_literal_tensors(x, y):
    acc = x
    for a, b in zip((x, y), (y, x)):
        acc = acc + a * b
    return acc


def zip_params(x, xs, ys):
    acc = x
    for a, b in zip(xs, ys):
        acc = acc * a + b
    return acc


def zip_uneven(x, xs, ys):
    acc = x
    for a, b in zip(xs, ys):  # stops at the shorter one
        acc = acc + a - b
    return acc


def zip_three(x, y):
    acc = x
    for a, b, c in zip((x, y, x), (y, y, x), (1.0, 2.0, 3.0)):
        acc = acc + a * b * c
    return acc


def enumerate_param(x, xs):
    acc = x
    for i, a in enumerate(xs):
        acc = acc + a * (i + 1)
    return acc


def enumerate_start(x, xs):
    acc = x
    for i, a in enumerate(xs, 2):
        acc = acc + a * i
    return acc


def enumerate_zip(x, xs, ys):
    acc = x
    for i, (a, b) in enumerate(zip(xs, ys)):
        acc = acc + a * b * i
    return acc


def zip_enumerate_range(x, xs):
    acc = x
    for (i, a), k in zip(enumerate(xs), range(3, 6)):
        acc = acc + a * i - k
    return acc


def enumerate_zip_break_continue(x, xs, ys):
    acc = x
    for i, (a, b) in enumerate(zip(xs, ys)):
        if i == 0:
            continue
        if i == 2:
            break
        acc = acc + a - b
    return acc


# Tuple arguments are built inside the jitted caller: inside the helper they are parameters whose
# items are only known at run time.
def call_zip_params(x, y):
    return zip_params(x, (x, y), (y, x))


def call_zip_uneven(x, y):
    return zip_uneven(x, (x, y, x), (y, x))


def call_enumerate_param(x, y):
    return enumerate_param(x, (x, y, y))


def call_enumerate_start(x, y):
    return enumerate_start(x, (x, y))


def call_enumerate_zip(x, y):
    return enumerate_zip(x, (x, y, x), (y, x, y))


def call_zip_enumerate_range(x, y):
    return zip_enumerate_range(x, (x, y, x, y))


def call_enumerate_zip_break_continue(x, y):
    return enumerate_zip_break_continue(x, (x, y, x, y), (y, x, y, x))


@pytest.mark.parametrize("fn", [
    zip_literal_tensors, call_zip_params, call_zip_uneven, zip_three, call_enumerate_param,
    call_enumerate_start, call_enumerate_zip, call_zip_enumerate_range,
    call_enumerate_zip_break_continue,
])
def test_for_zip_enumerate(fn):
    same(fn, t(2, 3, seed=0), t(2, 3, seed=1))


# ---- comprehensions ----

def listcomp_range(x):
    return [x * i for i in range(4)]


def listcomp_range_filter(x):
    return [x + i for i in range(1, 7, 2) if i % 3 != 0]


def listcomp_tuple(x, y):
    return [ops.relu(v - 1.0) for v in (x, y, x)]


def tuplecomp_tuple(x, y):
    return tuple(v * w for v, w in zip((x, y), (y, x)))


def listcomp_enumerate_filter(x, y):
    return [v * i for i, v in enumerate((x, y, x, y)) if i != 2]


def listcomp_scope(x, y):
    v = y
    out = [v * 2.0 for v in (x, x)]
    return out[0] + out[1] + v  # v is y again after the comprehension


def comp_feeds_ops(x, y):
    parts = tuple(ops.exp(v) for v in (x, y))
    return ops.concat(parts, 0)


# Comprehensions whose length only analysis knows become loops (test_graph_mode_syntax4.py).

def comp_over_param_inner(x, xs):
    return [v + x for v in xs]


def comp_over_param(x, y):
    return comp_over_param_inner(x, (x, y))


def comp_dynamic_range(x):
    n = x.shape[0]
    return [x * i for i in range(n)]


def genexp_bare(x, y):
    return ops.concat([v for v in (x, y)] + [w for w in (x,) for w2 in (y,)], 0)


@pytest.mark.parametrize("fn,nargs", [
    (listcomp_range, 1), (listcomp_range_filter, 1), (listcomp_tuple, 2), (tuplecomp_tuple, 2),
    (listcomp_enumerate_filter, 2), (listcomp_scope, 2), (comp_feeds_ops, 2),
    (comp_over_param, 2), (comp_dynamic_range, 1), (genexp_bare, 2),
])
def test_comprehension(fn, nargs):
    same(fn, *[t(2, 3, seed=i) for i in range(nargs)])


# ---- still unsupported: a located error ----

def comp_runtime_filter(x, y):
    return [v for v in (x, y) if v.sum() > 0]


def test_comprehension_with_a_run_time_filter_is_located():
    # The list would grow in only one branch of a run-time `if` (the loop Python's desugaring has).
    with pytest.raises(TypeError) as info:
        mycel.jit(comp_runtime_filter)(t(2, 3), t(2, 3, seed=1))
    msg = str(info.value)
    assert "test_graph_mode_loops.py" in msg and "branches of this condition" in msg
    assert "return [v for v in (x, y) if v.sum() > 0]" in msg


class _OpsInLoop(mycel.nn.Cell):
    """Module functions and `self` attributes used inside a data-dependent loop must still
    resolve at parse time (an op call, a primitive), not through a loop phi."""

    def __init__(self):
        super().__init__()
        self.act = ops.ReLU()

    def construct(self, x):
        h = ops.zeros_like(x[0])
        out = ops.zeros_like(x)
        t = ops.zeros((), mycel.int32)
        while t < x.shape[0]:
            h = self.act(ops.tanh(h) * 0.5 + x[t])
            out = ops.tensor_scatter_add(out, ops.reshape(t, (1, 1)), ops.expand_dims(h, 0))
            t = t + 1
        return out


def test_ops_and_self_inside_while_loop():
    x = t(4, 3)
    h, ref = np.zeros(3, np.float32), []
    for row in x.asnumpy():
        h = np.maximum(np.tanh(h) * 0.5 + row, 0)
        ref.append(h)
    net = _OpsInLoop()
    np.testing.assert_allclose(net(x).asnumpy(), np.stack(ref), rtol=1e-6)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    np.testing.assert_allclose(net(x).asnumpy(), np.stack(ref), rtol=1e-6)
