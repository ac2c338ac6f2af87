"""Dimensions written as expressions of size variables (te.placeholder((2 * n, m)),
te.compute((n + 1, m), ...)): one size-free kernel for every size, checked against numpy, and the
errors for a size the inputs' shapes cannot give."""
import numpy as np
import pytest

from mycel import te
from mycel._mycel import te as _te
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)

RNG = np.random.default_rng(4)


def test_pairs_of_rows_from_a_placeholder_of_twice_n_rows():
    n, m = te.var("n"), te.var("m")
    x = te.placeholder((2 * n, m), "float32", "x")
    y = te.compute((n, m), lambda i, j: x[2 * i, j] + x[2 * i + 1, j], "pairs")
    f = te.build([x], [y])
    runs = _te.compile_count()
    for rows, cols in ((2, 3), (10, 7), (64, 33), (0, 5)):
        xv = RNG.standard_normal((rows, cols)).astype(np.float32)
        got = f(xv).asnumpy()
        assert got.shape == (rows // 2, cols)
        np.testing.assert_array_equal(got, xv[0::2] + xv[1::2])
    assert _te.compile_count() == runs  # one kernel for every size
    assert repr(x.shape[0]) == "(2 * n)" and x.shape[1] == m


def test_compute_of_n_plus_one_rows_pads_and_concatenates():
    n, k, m = te.var("n"), te.var("k"), te.var("m")
    a = te.placeholder((n, m), "float32", "a")
    b = te.placeholder((k, m), "float32", "b")
    padded = te.compute((n + 1, m), lambda i, j: te.if_then_else(i < n, a[i, j], -1.0), "padded")
    cat = te.compute((n + k, m),
                     lambda i, j: te.if_then_else(i < n, a[i, j], b[i - n, j]), "cat")
    f = te.build([a, b], [padded, cat])
    runs = _te.compile_count()
    for rn, rk, cols in ((3, 2, 4), (1, 9, 17), (20, 1, 1)):
        av = RNG.standard_normal((rn, cols)).astype(np.float32)
        bv = RNG.standard_normal((rk, cols)).astype(np.float32)
        p, c = (t.asnumpy() for t in f(av, bv))
        np.testing.assert_array_equal(p, np.concatenate([av, -np.ones((1, cols), np.float32)]))
        np.testing.assert_array_equal(c, np.concatenate([av, bv]))
    assert _te.compile_count() == runs


def test_sizes_solved_through_an_affine_dimension_and_a_reduction_over_one():
    # n only in 3 * n + 1 (solved from it), a reduction over 2 * n + 1 elements of it.
    n = te.var("n")
    x = te.placeholder((3 * n + 1,), "float32", "x")
    r = te.reduce_axis((0, 2 * n + 1), "r")
    s = te.compute((1,), lambda i: te.sum(x[r + n // 2], axis=r), "s")
    f = te.build([x], [s])
    for nv in (0, 1, 4, 11):
        xv = RNG.standard_normal(3 * nv + 1).astype(np.float32)
        np.testing.assert_allclose(f(xv).asnumpy(), [xv[nv // 2: nv // 2 + 2 * nv + 1].sum()],
                                   rtol=1e-5, atol=1e-6)


def test_equal_expressions_are_one_size_and_constants_fold():
    n = te.var("n")
    assert te.placeholder((n * 2,), "float32").shape[0] == te.placeholder((n * 2,), "float32").shape[0]
    assert te.placeholder((n * 0 + 3,), "float32").shape == (3,)
    assert te.placeholder((te.var("n") + 0,), "float32").shape == (n,)


def test_a_size_the_shapes_cannot_give_is_a_clear_error():
    n, m = te.var("n"), te.var("m")
    x = te.placeholder((2 * n,), "float32", "x")
    y = te.compute((n,), lambda i: x[2 * i], "evens")
    f = te.build([x], [y])
    with pytest.raises(ValueError, match=r"argument 0 \('x'\) has 5 for dimension 0, 2 \* n, which no size n >= 0 gives"):
        f(np.zeros(5, np.float32))
    # two unknowns in one dimension: n * m is not solvable
    z = te.placeholder((n * m,), "float32", "z")
    g = te.build([z], [te.compute((n * m,), lambda i: z[i] * 2.0, "double")])
    with pytest.raises(ValueError, match=r"size variable '(n|m)' cannot be solved from the inputs' shapes"):
        g(np.zeros(6, np.float32))
    # not affine: n // 2 does not give n
    h = te.placeholder((n // 2,), "float32", "h")
    hf = te.build([h], [te.compute((n // 2,), lambda i: h[i] + 1.0, "inc")])
    with pytest.raises(ValueError, match=r"size variable 'n' cannot be solved"):
        hf(np.zeros(3, np.float32))
    # solvable, but another input disagrees
    a = te.placeholder((n,), "float32", "a")
    b = te.placeholder((n + 1,), "float32", "b")
    ab = te.build([a, b], [te.compute((n,), lambda i: a[i] + b[i + 1], "ab")])
    np.testing.assert_array_equal(ab(np.ones(3, np.float32), np.arange(4, dtype=np.float32)).asnumpy(),
                                  [2, 3, 4])
    with pytest.raises(ValueError, match=r"argument 1 \('b'\) has 5 for dimension 0, n \+ 1, which the other sizes make 4"):
        ab(np.ones(3, np.float32), np.ones(5, np.float32))


def test_what_a_dimension_expression_may_hold():
    n = te.var("n")
    i = te.reduce_axis((0, 4), "i")
    with pytest.raises(ValueError, match="a dimension may be a number, a te.var or an expression"):
        te.placeholder((n + i,), "float32")
    with pytest.raises(ValueError, match="must be > 0"):
        te.placeholder((te.var("n") * 0 + 0 * n,), "float32")
    with pytest.raises(TypeError, match=r"dimensions are ints or te.var \(or expressions of te.var"):
        te.placeholder((2.5,), "float32")
