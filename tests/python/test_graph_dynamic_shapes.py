"""Programs compiled once for a dynamic dim (set_inputs with None) whose code creates tensors
sized by that dim: zeros/ones/fill((n, x.shape[k], ...)) become dynamic_fill, so an LSTM's
initial state and output buffer follow the batch and the sequence length. Each compared with
eager mode on several sizes, with one Program for all of them."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops


def t(*shape, seed=0):
    return Tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def run_both(net, spec, xs):
    eager = [net(x).asnumpy() for x in xs]
    net.set_inputs(spec)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    got = [net(x).asnumpy() for x in xs]
    assert net._compiled.graph.num_programs == 1
    return eager, got


class Padded(nn.Cell):
    """Appends columns of zeros, ones and 0.5 sized by the dynamic batch."""

    def construct(self, x):
        n = x.shape[0]
        return ops.concat((x, ops.zeros((n, 2), mycel.float32), ops.ones((n, 1), mycel.float32),
                           ops.fill(mycel.float32, (n, 1), 0.5)), axis=1)


def test_created_tensors_follow_a_dynamic_batch():
    xs = [t(n, 3, seed=n) for n in (2, 5, 1, 0)]
    eager, got = run_both(Padded(), Tensor(shape=[None, 3], dtype=mycel.float32), xs)
    for e, g, x in zip(eager, got, xs):
        np.testing.assert_array_equal(g, e)
        assert g.shape == (x.shape[0], 7)
    np.testing.assert_array_equal(got[1][:, 3:], np.tile([0, 0, 1, 0.5], (5, 1)))


class Rnn(nn.Cell):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 8, num_layers=2, batch_first=True, bidirectional=True)

    def construct(self, x):
        out, (h, c) = self.lstm(x)
        return ops.concat((out.sum(axis=1), h.sum(axis=0), c.mean(axis=0)), axis=1)


@pytest.mark.parametrize("spec,shapes", [
    ([None, 5, 4], [(2, 5, 4), (3, 5, 4), (1, 5, 4)]),   # dynamic batch
    ([2, None, 4], [(2, 7, 4), (2, 1, 4), (2, 3, 4)]),   # dynamic sequence length
])
def test_lstm_compiles_once_for_a_dynamic_batch_or_sequence_length(spec, shapes):
    mycel.set_seed(3)
    xs = [t(*s, seed=i) for i, s in enumerate(shapes)]
    eager, got = run_both(Rnn(), Tensor(shape=spec, dtype=mycel.float32), xs)
    for e, g in zip(eager, got):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_a_size_computed_from_a_dynamic_dim_sizes_zeros_at_run_time():
    class Doubled(nn.Cell):
        def construct(self, x):
            return ops.zeros((x.shape[0] * 2, 3), mycel.float32) + 1.0

    net = Doubled()
    net.set_inputs(Tensor(shape=[None, 3], dtype=mycel.float32))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    for n in (2, 5):  # one program, the size read from the value each run
        np.testing.assert_array_equal(net(t(n, 3)).asnumpy(), np.ones((2 * n, 3), np.float32))


def test_a_size_that_is_not_an_integer_is_a_located_error():
    class Halved(nn.Cell):
        def construct(self, x):
            return ops.zeros((x.shape[0] / 2, 3), mycel.float32)

    net = Halved()
    net.set_inputs(Tensor(shape=[None, 3], dtype=mycel.float32))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    with pytest.raises(TypeError, match=r"compile-time constant(.|\n)*test_graph_dynamic_shapes.py"):
        net(t(2, 3))


class RowLoop(nn.Cell):
    """A loop over the rows of a dynamic first dim that reads and writes x[i]."""

    def construct(self, x):
        for i in range(x.shape[0]):
            x[i] = x[i] * (i + 1)
        return x


def test_loop_over_a_dynamic_dim_indexes_and_assigns_rows():
    arrays = [np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32) for n in (4, 1, 6)]
    net = RowLoop()
    eager = [net(Tensor(a.copy())).asnumpy() for a in arrays]  # eager writes x in place
    for a, e in zip(arrays, eager):
        np.testing.assert_array_equal(e, a * np.arange(1, len(a) + 1, dtype=np.float32)[:, None])
    net.set_inputs(Tensor(shape=[None, 3], dtype=mycel.float32))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    for a, e in zip(arrays, eager):
        np.testing.assert_array_equal(net(Tensor(a.copy())).asnumpy(), e)
    assert net._compiled.graph.num_programs == 1


def filled(x):
    """MindSpore's fill(type, shape, value), full and full_like, constant and dynamic shapes."""
    a = ops.fill(mycel.float32, (2, 3), 1.5)
    b = ops.full((2, 3), 7)  # int64, as numpy.full
    c = ops.full(3, True)
    d = ops.full_like(x, -1.0)
    e = ops.full((x.shape[0], 2), 0.25, dtype=mycel.float64)
    return a, b, c, d, e


def test_fill_full_and_full_like_match_numpy_in_both_modes():
    x = t(4, 3, seed=9)
    want = (np.full((2, 3), 1.5, np.float32), np.full((2, 3), 7), np.full(3, True),
            np.full((4, 3), -1.0, np.float32), np.full((4, 2), 0.25))
    eager = [v.asnumpy() for v in filled(x)]
    for e, w in zip(eager, want):
        np.testing.assert_array_equal(e, w)
        assert e.dtype == w.dtype
    jitted = mycel.jit(filled)
    for e, g in zip(eager, jitted(x)):
        np.testing.assert_array_equal(g.asnumpy(), e)
        assert g.asnumpy().dtype == e.dtype


class CausalScores(nn.Cell):
    """Attention scores with a causal mask built for the run's sequence length."""

    def construct(self, q):
        n = q.shape[1]
        scores = ops.matmul(q, q.transpose(0, 2, 1))
        mask = ops.ones((n, n), mycel.float32).tril()
        return ops.softmax(scores * mask + (mask - 1.0) * 1e9, axis=-1)


def test_causal_mask_for_a_dynamic_sequence_length():
    xs = [t(2, s, 4, seed=s) for s in (3, 6, 1)]
    eager, got = run_both(CausalScores(), Tensor(shape=[2, None, 4], dtype=mycel.float32), xs)
    for e, g in zip(eager, got):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(np.triu(g[0], 1), 0)  # nothing attends to the future


def test_loop_carried_tensor_changing_rank_is_a_located_error_not_a_crash():
    @mycel.jit
    def grow(y, n):
        i = ops.zeros((), mycel.int32)
        while i < n:  # a run-time trip count: the loop stays a loop, so y needs one type
            y = ops.expand_dims(y, 0)
            i = i + 1
        return y

    with pytest.raises(NotImplementedError, match=r"tensor 'y' changes from f32\[2\] to f32\[1, 2\](.|\n)*while i < n"):
        grow(Tensor(np.ones(2, np.float32)), Tensor(np.array(2, np.int32)))

    @mycel.jit
    def unrolled(y):
        for _ in range(3):  # a compile-time trip count unrolls: each iteration its own type
            y = ops.expand_dims(y, 0)
        return y

    assert unrolled(Tensor(np.ones(2, np.float32))).shape == (1, 1, 1, 2)


def _deepen(x, n):
    if n == 0:
        return x
    return _deepen(ops.expand_dims(x, 0), n - 1)


def test_recursion_whose_types_never_repeat_stops_with_an_error():
    with pytest.raises(NotImplementedError, match="changes from"):
        mycel.jit(lambda x: _deepen(x, 3000))(Tensor(np.ones(2, np.float32)))


class ManyDims(nn.Cell):
    """Elementwise, reductions, a transpose and a batched matmul over dynamic dims only."""

    def construct(self, x):
        y = ops.relu(x) * 2 + x.sum()
        return y.sum(axis=(0, 1)), ops.matmul(y, y.swapaxes(-1, -2))


@pytest.mark.parametrize("rank", [5, 7])
def test_five_and_more_dynamic_dims_compile_once(rank):
    # Analysis infers each op on placeholder sizes; with many dynamic dims the placeholders must
    # shrink to keep the element count inside the registry's limit (7!**5 is past 2**56).
    shapes = [tuple(range(2, 2 + rank)), (1, 3) + (2,) * (rank - 2), (3,) * rank]
    xs = [t(*s, seed=i) for i, s in enumerate(shapes)]
    net = ManyDims()
    eager = [[o.asnumpy() for o in net(x)] for x in xs]
    net.set_inputs(Tensor(shape=(None,) * rank, dtype=mycel.float32))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    for x, want in zip(xs, eager):
        got = net(x)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-5, atol=1e-5)
    assert net._compiled.graph.num_programs == 1
