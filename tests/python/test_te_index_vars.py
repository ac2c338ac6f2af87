"""Size variables in index arithmetic (te.var as a value: x[i + n], x[n - 1 - i], flat[i * m + j]):
one compile serves every size, results equal numpy's, and a call whose sizes would take a read
outside its tensor is refused before the kernel runs."""
import numpy as np
import pytest

from mycel import te
from mycel._mycel import te as _te
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)

RNG = np.random.default_rng(18)


def _runs_once(f, cases):
    """Calls f on each (args, expected) and checks that no call compiled anything."""
    before = _te.compile_count()
    for args, want in cases:
        np.testing.assert_allclose(f(*args).asnumpy(), want, rtol=1e-6, atol=1e-6)
    assert _te.compile_count() == before


def test_reversal_n_minus_1_minus_i():
    n = te.var("n")
    x = te.placeholder((n,), "float32", "x")
    y = te.compute((n,), lambda i: x[n - 1 - i] * 2.0, "rev")
    f = te.build([x], [y])
    assert "b0[(((n0 - (int64_t)1LL) - v0))]" in te.lower([x], [y])  # n's value at run time
    xs = [RNG.standard_normal(s).astype(np.float32) for s in (1, 5, 64, 1000)]
    _runs_once(f, [((v,), v[::-1] * 2) for v in xs])


def test_offset_read_x_i_plus_n_and_the_bounds_check():
    n, m = te.var("n"), te.var("m")
    x = te.placeholder((m,), "float32", "x")
    y = te.compute((n,), lambda i: x[i + n] - x[i], "diff")
    h = te.placeholder((n,), "float32", "h")  # binds n
    z = te.compute((n,), lambda i: y[i] + h[i] * 0.0, "z")
    f = te.build([x, h], [z])
    cases = []
    for nn, mm in ((3, 6), (5, 11), (17, 40)):
        xv = RNG.standard_normal(mm).astype(np.float32)
        cases.append(((xv, np.zeros(nn, np.float32)), xv[nn:2 * nn] - xv[:nn]))
    _runs_once(f, cases)
    # x too short for this n: x[i + n] would reach index 2n - 1 = 7 of an 6-element x
    with pytest.raises(IndexError, match=r"'diff' reads 'x' at index .* reaches \[4, 7\] for "
                                         r".*n = 4.*outside its size 6"):
        f(np.zeros(6, np.float32), np.zeros(4, np.float32))


def test_strides_flat_i_times_m_plus_j():
    n, m, k = te.var("n"), te.var("m"), te.var("k")
    flat = te.placeholder((k,), "float32", "flat")
    like = te.placeholder((n, m), "float32", "like")  # binds n and m
    y = te.compute((n, m), lambda i, j: flat[i * m + j] + like[i, j], "unflat")
    # a strided read: every s-th element of a row (s, a size, is the stride)
    s = te.var("s")
    row = te.placeholder((k,), "float32", "row")
    step = te.placeholder((s,), "float32", "step")  # binds s
    every = te.compute((n,), lambda i: row[i * s] + 0.0 * step[0], "every")
    g = te.build([row, step, like], [every])
    f = te.build([flat, like], [y])
    cases, strided = [], []
    for nn, mm in ((2, 3), (4, 7), (9, 16)):
        fv = RNG.standard_normal(nn * mm).astype(np.float32)
        lv = RNG.standard_normal((nn, mm)).astype(np.float32)
        cases.append(((fv, lv), fv.reshape(nn, mm) + lv))
        strided.append(((fv, np.zeros(mm, np.float32), lv), fv[::mm][:nn]))
    _runs_once(f, cases)
    _runs_once(g, strided)
    with pytest.raises(IndexError, match="'unflat' reads 'flat'"):
        f(np.zeros(11, np.float32), np.zeros((3, 4), np.float32))  # needs 12 elements


def test_size_value_in_float_math_and_reductions():
    n, m = te.var("n"), te.var("m")
    x = te.placeholder((n, m), "float32", "x")
    r = te.reduce_axis((0, m), "r")
    # row sums read back to front, divided by the row length: the mean of the reversed row
    mean = te.compute((n,), lambda i: te.sum(x[i, m - 1 - r], axis=r) / te.cast(m, "float32"),
                      "mean")
    # a mirror image of the columns blended with the original, weighted by the column index
    w = te.compute((n, m), lambda i, j: x[i, (m - 1) - j] * te.cast(j, "float32") /
                   te.cast(m, "float32") + x[i, j], "blend")
    f = te.build([x], [mean, w])
    before = _te.compile_count()
    for shape in ((1, 1), (3, 5), (8, 33)):
        xv = RNG.standard_normal(shape).astype(np.float32)
        got_mean, got_w = f(xv)
        np.testing.assert_allclose(got_mean.asnumpy(), xv.mean(1), rtol=1e-5, atol=1e-6)
        j = np.arange(shape[1], dtype=np.float32)
        np.testing.assert_allclose(got_w.asnumpy(), xv[:, ::-1] * j / shape[1] + xv, rtol=1e-5,
                                   atol=1e-6)
    assert _te.compile_count() == before


def test_modular_wraparound_and_guarded_reads():
    n = te.var("n")
    x = te.placeholder((n,), "float32", "x")
    # a cyclic shift by 3 (the modulo keeps every read inside x) and a shift guarded by the
    # condition (the arm's read is not checked: the guard keeps it inside)
    roll = te.compute((n,), lambda i: x[(i + 3) % n], "roll")
    shift = te.compute((n,), lambda i: te.if_then_else(i + 2 < n, x[i + 2], 0.0), "shift")
    f = te.build([x], [roll, shift])
    before = _te.compile_count()
    for size in (1, 2, 7, 50):
        xv = RNG.standard_normal(size).astype(np.float32)
        got_roll, got_shift = f(xv)
        np.testing.assert_array_equal(got_roll.asnumpy(), np.roll(xv, -3))
        want = np.concatenate([xv[2:], np.zeros(min(2, size), np.float32)])
        np.testing.assert_array_equal(got_shift.asnumpy(), want)
    assert _te.compile_count() == before


def test_size_values_are_refused_where_shapes_must_be_static():
    n = te.var("n")
    x = te.placeholder((8,), "float32", "x")
    h = te.placeholder((n,), "float32", "h")
    y = te.compute((4,), lambda i: x[i + n] + h[0], "y")
    with pytest.raises(ValueError, match="differentiate needs static shapes"):
        te.differentiate(y, [x])
    lonely = te.compute((4,), lambda i: x[i + te.var("q")], "lonely")
    with pytest.raises(ValueError, match="size variable 'q' is the dimension of no input"):
        te.build([x], [lonely])
    assert "x[add(i, n)]" in repr(y)  # the size prints by name
