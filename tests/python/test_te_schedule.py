"""te schedules (split, reorder, tile, parallel, vectorize, unroll): scheduled kernels equal numpy
and the unscheduled build; bad schedules raise errors naming the loop."""

import numpy as np
import pytest

from mycel import te
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)


def matmul(n, m, p):
    a = te.placeholder((n, m), "float32", "a")
    b = te.placeholder((m, p), "float32", "b")
    k = te.reduce_axis((0, m), "k")
    c = te.compute((n, p), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), "c")
    return a, b, c


def test_tiled_matmul_equals_numpy_and_unscheduled():
    a, b, c = matmul(64, 52, 40)
    s = te.create_schedule(c)
    i, j = c.axis
    (k,) = c.reduce_axis
    io, ii = s[c].split(i, 16)
    jo, ji = s[c].split(j, 16)      # 40 = 2*16 + 8: the remainder is guarded
    ko, ki = s[c].split(k, nparts=4)
    s[c].reorder(io, jo, ko, ii, ki, ji)
    s[c].parallel(io)
    s[c].vectorize(ji)
    s[c].unroll(ki)
    assert [v.var.name for v in s[c].loops] == ["i.outer", "j.outer", "k.outer", "i.inner", "k.inner", "j.inner"]
    src = te.lower([a, b], [c], schedule=s)
    assert "#pragma omp parallel for" in src and "#pragma omp simd" in src and "#pragma GCC unroll 13" in src
    rng = np.random.default_rng(0)
    av = rng.standard_normal((64, 52)).astype(np.float32)
    bv = rng.standard_normal((52, 40)).astype(np.float32)
    got = te.build([a, b], [c], schedule=s)(av, bv).asnumpy()
    plain = te.build([a, b], [c])(av, bv).asnumpy()
    ref = av.astype(np.float64) @ bv.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-5)


def test_scheduled_elementwise_max_reduction_and_intermediate():
    # softmax-like: a scheduled row max (reduce axis split and moved outside the rows), and an
    # elementwise intermediate that the schedule keeps as its own tiled loop nest.
    x = te.placeholder((37, 29), "float64", "x")
    k = te.reduce_axis((0, 29), "k")
    mx = te.compute((37,), lambda i: te.max(x[i, k], axis=k), "mx")
    e = te.compute((37, 29), lambda i, j: te.exp(x[i, j] - mx[i]), "e")
    y = te.compute((37, 29), lambda i, j: e[i, j] * 2.0, "y")
    s = te.create_schedule(y)
    ko, ki = s[mx].split(mx.reduce_axis[0], 8)
    s[mx].reorder(ko, mx.axis[0], ki)
    xo, yo, xi, yi = s[e].tile(e.axis[0], e.axis[1], 8, 8)
    s[e].parallel(xo)
    s[e].vectorize(yi)
    s[y].unroll(y.axis[1])
    src = te.lower([x], [y], schedule=s)
    assert src.count("(scheduled)") == 3
    xv = np.random.default_rng(1).standard_normal((37, 29))
    got = te.build([x], [y], schedule=s)(xv).asnumpy()
    np.testing.assert_allclose(got, 2 * np.exp(xv - xv.max(1, keepdims=True)), rtol=1e-13)


def test_schedule_errors():
    a, b, c = matmul(8, 6, 4)
    s = te.create_schedule(c)
    i, j = c.axis
    (k,) = c.reduce_axis
    with pytest.raises(ValueError, match="factor must be >= 1, got 0"):
        s[c].split(i, 0)
    io, ii = s[c].split(i, 4)
    with pytest.raises(ValueError, match=r"split: 'i' is not a loop of 'c' \(its loops now: i.outer, i.inner, j, k\)"):
        s[c].split(i, 2)
    with pytest.raises(ValueError, match="parallel: 'k' is a reduce loop of 'c'"):
        s[c].parallel(k)
    with pytest.raises(ValueError, match="vectorize: 'k' is a reduce loop"):
        s[c].vectorize(k)
    with pytest.raises(ValueError, match="reorder: loop 'j' is listed twice"):
        s[c].reorder(j, io, j)
    with pytest.raises(ValueError, match="split takes exactly one of factor and nparts"):
        s[c].split(j)
    s[c].vectorize(ii)
    with pytest.raises(ValueError, match="vectorized loop 'i.inner' is not the innermost"):
        te.lower([a, b], [c], schedule=s)
    with pytest.raises(ValueError, match="'a' is a placeholder"):
        s[a]
    other = te.compute((8,), lambda q: a[q, 0] + 1.0, "other")
    s2 = te.create_schedule(c)
    s2[other].vectorize(other.axis[0])
    with pytest.raises(ValueError, match="stage for 'other', which the outputs do not use"):
        te.lower([a, b], [c], schedule=s2)
    with pytest.raises(TypeError, match="schedule must come from te.create_schedule"):
        te.lower([a, b], [c], schedule={})
