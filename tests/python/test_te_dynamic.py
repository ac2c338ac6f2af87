"""Symbolic sizes in TE (te.var): a kernel compiled once and called at many sizes, checked against
numpy; the compiler runs are counted (mycel._mycel.te.compile_count). Also the backend's fused
chains (MYCEL_TE_FUSION=1), which are compiled once for every length."""
import os
import warnings

import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops, te
from mycel._mycel import te as _te
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)

RNG = np.random.default_rng(0)


def sigmoid_chain(n_name):
    x = te.placeholder((te.var(n_name), 7), "float32", "x")
    b = te.placeholder((7,), "float32", "b")
    y = te.compute(x.shape, lambda i, j: te.sigmoid(x[i, j] * 2.0 + b[j]), "y")
    return x, b, y


def test_one_compile_for_every_batch_size():
    x, b, y = sigmoid_chain("n")
    assert x.shape == (te.var("n"), 7) and y.shape[0].name == "n"
    before = _te.compile_count()
    f = te.build([x, b], [y])
    assert _te.compile_count() - before == (0 if f.cached else 1)
    assert "n0" in f.source and "sz[0]" in f.source
    bv = RNG.standard_normal(7).astype(np.float32)
    after_build = _te.compile_count()
    for n in (1, 2, 5, 64, 1000):
        xv = RNG.standard_normal((n, 7)).astype(np.float32)
        out = f(xv, bv).asnumpy()
        assert out.shape == (n, 7)
        np.testing.assert_allclose(out, 1 / (1 + np.exp(-(2 * xv + bv))), rtol=1e-5, atol=1e-6)
    assert _te.compile_count() == after_build  # calls never compile
    # The same expression over another size variable's name is the same source: a cache hit.
    x2, b2, y2 = sigmoid_chain("batch")
    g = te.build([x2, b2], [y2])
    assert g.source == f.source and g.library == f.library
    assert _te.compile_count() == after_build


def test_symbolic_reduction_and_two_size_variables():
    n, m = te.var("rows"), te.var("cols")
    x = te.placeholder((n, m), "float32", "x")
    k = te.reduce_axis((0, m), "k")
    s = te.compute((n,), lambda i: te.sum(x[i, k] * x[i, k], axis=k), "sq")
    mx = te.reduce_max(x, 1)
    f = te.build([x], [s, mx])
    count = _te.compile_count()
    for shape in ((1, 1), (3, 5), (17, 64), (300, 33)):
        xv = RNG.standard_normal(shape).astype(np.float32)
        got_s, got_m = f(xv)
        np.testing.assert_allclose(got_s.asnumpy(), (xv * xv).sum(1), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(got_m.asnumpy(), xv.max(1))
    assert _te.compile_count() == count


def test_large_symbolic_size_runs_parallel_branch():
    # Above the thread grain the parallel loop's run-time condition holds; results equal numpy.
    x = te.placeholder((te.var("n"), 64), "float32", "x")
    y = te.compute(x.shape, lambda i, j: te.exp(x[i, j]) + 1.0, "y")
    f = te.build([x], [y])
    assert "parallel for if(" in f.source
    for n in (3, 4096):
        xv = RNG.standard_normal((n, 64)).astype(np.float32)
        np.testing.assert_allclose(f(xv).asnumpy(), np.exp(xv) + 1, rtol=1e-6)


def test_intermediate_buffer_sized_at_run_time():
    n = te.var("n")
    x = te.placeholder((n, 8), "float32", "x")
    k = te.reduce_axis((0, 8), "k")
    mean = te.compute((n,), lambda i: te.sum(x[i, k], axis=k) / 8.0, "mean")
    cen = te.compute((n, 8), lambda i, j: x[i, j] - mean[i], "cen")
    f = te.build([x], [cen])
    assert "_v(n0)" in f.source
    for rows in (1, 9, 130):
        xv = RNG.standard_normal((rows, 8)).astype(np.float32)
        np.testing.assert_allclose(f(xv).asnumpy(), xv - xv.mean(1, keepdims=True), atol=1e-6)


def test_shape_errors_name_the_size_variable():
    n = te.var("n")
    a = te.placeholder((n, 3), "float32", "a")
    b = te.placeholder((n,), "float32", "b")
    y = te.compute((n, 3), lambda i, j: a[i, j] * b[i], "y")
    f = te.build([a, b], [y])
    with pytest.raises(ValueError, match=r"'b'.*size variable 'n'.*earlier argument set to 4"):
        f(np.zeros((4, 3), np.float32), np.zeros(5, np.float32))
    with pytest.raises(ValueError, match=r"'a'\) must have shape \(n, 3\), got \(4, 2\)"):
        f(np.zeros((4, 2), np.float32), np.zeros(4, np.float32))
    out = te.compute((te.var("unbound"),), lambda i: a[0, 0], "o")
    with pytest.raises(ValueError, match="size variable 'unbound' is the dimension of no input"):
        te.build([a], [out])
    with pytest.raises(ValueError, match="differentiate needs static shapes"):
        te.differentiate(y, [a])
    s = te.create_schedule(y)
    with pytest.raises(ValueError, match="size variable .*schedules need static extents"):
        s[y].split(y.axis[0], 4)
    s[y].parallel(y.axis[0])
    with pytest.raises(ValueError, match="symbolic size .*schedules need static shapes"):
        te.build([a, b], [y], schedule=s)
    with pytest.raises(TypeError, match="ints or te.var"):
        te.placeholder((2.5, 3))
    with pytest.raises(IndexError, match=r"constant index -1 .*size n"):
        a[-1, 0]


def test_constant_index_into_symbolic_dim_is_allowed():
    n = te.var("n")
    a = te.placeholder((n, 4), "float32", "a")
    first = te.compute((n, 4), lambda i, j: a[i, j] - a[0, j], "first")
    f = te.build([a], [first])
    av = RNG.standard_normal((6, 4)).astype(np.float32)
    np.testing.assert_allclose(f(av).asnumpy(), av - av[0], atol=1e-6)


class Chain(nn.Cell):
    def construct(self, x, a):
        return ops.sigmoid(ops.relu(x * a + 1.0) * 2.0 - x) * ops.tanh(x)


class RowSum(nn.Cell):  # a chain into a sum over the last axis: one fused_reduce[te] kernel
    def construct(self, x):
        return (ops.exp(x * 0.5 - 1.0) * x).sum(1)


class ColSum(nn.Cell):  # a sum over the batch axis (a bias gradient's shape)
    def construct(self, x):
        return (ops.relu(x) * x).sum(0)


def test_graph_mode_fused_chain_compiles_once_for_all_batch_sizes():
    ms.set_context(mode=ms.GRAPH_MODE)
    os.environ["MYCEL_TE_FUSION"] = "1"
    try:
        net = Chain()
        counts = []
        for batch in (4, 9, 33):  # graph mode specializes per shape; the TE kernel is shared
            xv = RNG.standard_normal((batch, 16)).astype(np.float32)
            av = RNG.standard_normal((batch, 16)).astype(np.float32)
            out = net(ms.Tensor(xv), ms.Tensor(av)).asnumpy()
            y = np.maximum(xv * av + 1, 0)
            np.testing.assert_allclose(out, 1 / (1 + np.exp(-(2 * y - xv))) * np.tanh(xv),
                                       rtol=1e-5, atol=1e-6)
            counts.append(_te.compile_count())
        assert counts[1] == counts[0] and counts[2] == counts[0], counts
        rows, counts = RowSum(), []
        for batch in (3, 8, 40):  # the kept (batch) dim is a size variable of the kernel
            xv = RNG.standard_normal((batch, 12)).astype(np.float32)
            out = rows(ms.Tensor(xv)).asnumpy()
            np.testing.assert_allclose(out, (np.exp(xv * 0.5 - 1) * xv).sum(1), rtol=1e-5)
            counts.append(_te.compile_count())
        assert counts[1] == counts[0] and counts[2] == counts[0], counts
        from mycel._mycel import graph as G
        assert "fused_reduce[te]{" in G.compile(RowSum()).program_text(ms.Tensor(xv))
        cols, counts = ColSum(), []
        for batch in (5, 64, 7):  # the reduced (batch) dim is a size variable too
            xv = RNG.standard_normal((batch, 10)).astype(np.float32)
            out = cols(ms.Tensor(xv)).asnumpy()
            np.testing.assert_allclose(out, (np.maximum(xv, 0) * xv).sum(0), rtol=1e-5)
            counts.append(_te.compile_count())
        assert counts[1] == counts[0] and counts[2] == counts[0], counts
        assert "fused_reduce[te]{" in G.compile(ColSum()).program_text(ms.Tensor(xv))
    finally:
        os.environ.pop("MYCEL_TE_FUSION", None)
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_dynamic_batch_under_set_inputs_fuses_one_size_free_chain():
    """set_inputs(None, ...): the chain's shape is dynamic in the one compiled program; it fuses
    all the same (interpreter or TE), the TE kernel is compiled once for every batch, and a
    dynamic operand that broadcasts at run time (batch 1 against 5) gives numpy's result."""
    from mycel._mycel import graph as G
    spec = ms.Tensor(shape=[None, 16], dtype=ms.float32)

    def want(xv, av):
        y = np.maximum(xv * av + 1, 0)
        return 1 / (1 + np.exp(-(2 * y - xv))) * np.tanh(xv)

    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        for fusion, tag in (("0", "fused_elementwise{"), ("1", "fused_elementwise[te]{")):
            os.environ["MYCEL_TE_FUSION"] = fusion
            text = G.compile(Chain()).program_text(spec, spec)
            assert tag in text, text
            net = Chain()
            net.set_inputs(spec, spec)
            counts = []
            for xb, ab in ((4, 4), (9, 9), (1, 1), (33, 33), (5, 1), (0, 0)):
                xv = RNG.standard_normal((xb, 16)).astype(np.float32)
                av = RNG.standard_normal((ab, 16)).astype(np.float32)
                out = net(ms.Tensor(xv), ms.Tensor(av)).asnumpy()
                np.testing.assert_allclose(out, want(xv, av), rtol=1e-5, atol=1e-6)
                counts.append(_te.compile_count())
            assert len(set(counts)) == 1, counts  # no compile after the step's first
            assert net._compiled.graph.num_programs == 1
    finally:
        os.environ.pop("MYCEL_TE_FUSION", None)
        ms.set_context(mode=ms.PYNATIVE_MODE)


class Ragged(nn.Cell):  # a chain over a value sized by the data (masked_select)
    def construct(self, x):
        y = ops.masked_select(x, x > 0)
        return ops.tanh(y * 2.0 + 1.0) * y - y


@pytest.mark.parametrize("fusion", ["0", "1"])
def test_chain_over_a_ragged_value_fuses_and_takes_its_size_each_run(fusion):
    from mycel._mycel import graph as G
    os.environ["MYCEL_TE_FUSION"] = fusion
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = Ragged()
        for n in (10, 37, 5, 1):
            xv = RNG.standard_normal(n).astype(np.float32)
            y = xv[xv > 0]
            np.testing.assert_allclose(net(ms.Tensor(xv)).asnumpy(), np.tanh(y * 2 + 1) * y - y,
                                       rtol=1e-5, atol=1e-6)
        assert "fused_elementwise" in G.compile(Ragged()).program_text(ms.Tensor(xv))
    finally:
        os.environ.pop("MYCEL_TE_FUSION", None)
        ms.set_context(mode=ms.PYNATIVE_MODE)


class DynReduce(nn.Cell):
    """Chains into reductions over dynamic dims: a sum over the batch (a bias gradient's shape),
    a mean over the last axis, a max, and softmax's sum(e) whose e is also read (kept chain)."""

    def construct(self, x, a):
        d = x * a - 1.0
        e = ops.exp(x - 0.5)
        soft = e / e.sum(-1, keepdims=True)
        return (ops.relu(d) * x).sum(0), (d * d).mean(-1), ops.tanh(x * a).max(0), soft


def _dyn_reduce_ref(xv, av):
    d = xv * av - 1
    e = np.exp(xv - 0.5)
    return (np.maximum(d, 0) * xv).sum(0), (d * d).mean(-1), np.tanh(xv * av).max(0), \
        e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("fusion", ["0", "1", "async"])
def test_chain_into_reduction_over_a_dynamic_dim_fuses(fusion):
    """set_inputs(None, ...): under MYCEL_TE_FUSION=1 or async a chain feeding sum / mean / max
    over the dynamic batch dim or across it is one fused_reduce instruction whose dims are taken at
    run time, its kernel compiled once for every batch; a batch of 1 against 5 (two independent
    dynamic inputs) broadcasts as numpy; every setting gives numpy's results."""
    from mycel._mycel import graph as G
    spec = ms.Tensor(shape=[None, 12], dtype=ms.float32)
    ms.set_context(mode=ms.GRAPH_MODE)
    os.environ["MYCEL_TE_FUSION"] = fusion
    try:
        text = G.compile(DynReduce()).program_text(spec, spec)
        assert ("fused_reduce[te]{" in text) == (fusion == "1"), text
        assert ("fused_reduce{" in text) == (fusion == "async"), text  # named as the interpreter's
        if fusion == "1":
            assert text.count("fused_reduce[te]{") == 4, text
        net = DynReduce()
        net.set_inputs(spec, spec)
        counts = []
        for xb, ab in ((4, 4), (9, 9), (1, 1), (33, 33), (5, 1), (1, 6)):
            xv = RNG.standard_normal((xb, 12)).astype(np.float32)
            av = RNG.standard_normal((ab, 12)).astype(np.float32)
            got = [t.asnumpy() for t in net(ms.Tensor(xv), ms.Tensor(av))]
            for g, r in zip(got, _dyn_reduce_ref(xv, av)):
                assert g.shape == r.shape, (g.shape, r.shape)
                np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)
            counts.append(_te.compile_count())
            if fusion == "async":
                _te.wait_background_builds()  # later batches run the generated kernels
        if fusion == "1":
            assert len(set(counts)) == 1, counts  # no compile after the step's first
        assert net._compiled.graph.num_programs == 1
    finally:
        os.environ.pop("MYCEL_TE_FUSION", None)
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_fused_reduction_over_an_empty_dynamic_dim_is_the_reductions_own():
    """A batch of 0: the sum is zeros and the mean of no elements NaN, as the unfused ops."""
    spec = ms.Tensor(shape=[None, 7], dtype=ms.float32)

    class Empty(nn.Cell):
        def construct(self, x):
            return (ops.exp(x) * x).sum(0), (x * x + 1.0).mean(0)

    ms.set_context(mode=ms.GRAPH_MODE)
    os.environ["MYCEL_TE_FUSION"] = "1"
    try:
        net = Empty()
        net.set_inputs(spec)
        for b in (3, 0):
            xv = RNG.standard_normal((b, 7)).astype(np.float32)
            s, m = (t.asnumpy() for t in net(ms.Tensor(xv)))
            np.testing.assert_allclose(s, (np.exp(xv) * xv).sum(0), rtol=1e-5, atol=1e-6)
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # numpy: mean of empty slice
                want = (xv * xv + 1).mean(0)
            np.testing.assert_allclose(m, want, rtol=1e-5, atol=1e-6)
    finally:
        os.environ.pop("MYCEL_TE_FUSION", None)
        ms.set_context(mode=ms.PYNATIVE_MODE)
