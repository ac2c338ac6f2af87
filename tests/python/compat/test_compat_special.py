"""MindSpore's special functions (ops/special.cc, ops/function_more/special.py) against
scipy.special, with gradients by central finite differences, in both modes."""
import math

import numpy as np
import pytest
import scipy.special as sp

import mycel as ms
from mycel import nn, ops
from mycel.ops import operations as P

RNG = np.random.default_rng(14)


def T(a):
    return ms.Tensor(np.asarray(a))


def close(got, want, tol=1e-6):
    got = got.asnumpy() if hasattr(got, "asnumpy") else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def both_modes(cell, *args):
    eager = cell(*args)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        graph = cell(*args)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return eager, graph


UNARY = [("bessel_i0", sp.i0), ("bessel_i0e", sp.i0e), ("bessel_i1", sp.i1), ("bessel_i1e", sp.i1e),
         ("bessel_j0", sp.j0), ("bessel_j1", sp.j1), ("bessel_y0", sp.y0), ("bessel_y1", sp.y1),
         ("bessel_k0", sp.k0), ("bessel_k0e", sp.k0e), ("bessel_k1", sp.k1), ("bessel_k1e", sp.k1e),
         ("i0", sp.i0), ("digamma", sp.digamma), ("lgamma", sp.gammaln)]


@pytest.mark.parametrize("name, ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary_matches_scipy_in_float32_and_float64(name, ref):
    x = np.concatenate([RNG.uniform(-6, 25, 40), [0.0, 1e-3, 300.0, -300.0, np.nan]])
    with np.errstate(all="ignore"):
        want = ref(x)
    got = getattr(ops, name)(T(x)).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13, equal_nan=True)
    got32 = getattr(ops, name)(T(x.astype(np.float32))).asnumpy()
    assert got32.dtype == np.float32
    with np.errstate(all="ignore"):
        want32 = ref(x.astype(np.float32).astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(got32, want32, rtol=2e-6, atol=1e-6, equal_nan=True)


# The limits at +-inf (scipy's cephes gives NaN for some of them, e.g. j0(inf), i0(inf)).
LIMITS = {"bessel_i0": (np.inf, np.inf), "bessel_i0e": (0, 0), "bessel_i1": (np.inf, -np.inf),
          "bessel_i1e": (0, 0), "bessel_j0": (0, 0), "bessel_j1": (0, 0), "bessel_y0": (0, np.nan),
          "bessel_y1": (0, np.nan), "bessel_k0": (0, np.nan), "bessel_k0e": (0, np.nan),
          "bessel_k1": (0, np.nan), "bessel_k1e": (0, np.nan), "digamma": (np.inf, np.nan)}


def test_limits_at_infinity():
    for name, want in LIMITS.items():
        got = getattr(ops, name)(T(np.array([np.inf, -np.inf]))).asnumpy()
        np.testing.assert_array_equal(got, np.array(want, np.float64), err_msg=name)


def test_polygamma_igamma_and_integer_helpers():
    x = RNG.uniform(-4.5, 12, (3, 8))
    for n in range(5):
        close(ops.polygamma(n, T(x)), sp.polygamma(n, x), 1e-9)
    close(ops.polygamma(T(np.array(2)), T(x)), sp.polygamma(2, x), 1e-9)
    a, y = RNG.uniform(0.05, 60, 200), RNG.uniform(0.0, 90, 200)
    close(ops.igamma(T(a), T(y)), sp.gammainc(a, y), 1e-12)
    close(ops.igammac(T(a), T(y)), sp.gammaincc(a, y), 1e-12)
    close(P.Igamma()(T(a), T(y)), sp.gammainc(a, y), 1e-12)
    edges = ops.igamma(T(np.array([0.0, 1.0, -1.0, 2.0])), T(np.array([1.0, 0.0, 1.0, np.inf]))).asnumpy()
    np.testing.assert_array_equal(edges, sp.gammainc([0.0, 1.0, -1.0, 2.0], [1.0, 0.0, 1.0, np.inf]))
    i, j = RNG.integers(-1000, 1000, 50), RNG.integers(-1000, 1000, 50)
    assert (ops.gcd(T(i), T(j)).asnumpy() == np.gcd(i, j)).all()
    assert (ops.lcm(T(i), T(j)).asnumpy() == np.lcm(i, j)).all()
    assert (T(i).gcd(T(j)).asnumpy() == np.gcd(i, j)).all() and (T(i).lcm(T(j)).asnumpy() == np.lcm(i, j)).all()
    f = np.float32([0, 1, -1, 3e38])
    assert (ops.nextafter(T(f), T(np.float32([1, 0, 0, np.inf]))).asnumpy()
            == np.nextafter(f, np.float32([1, 0, 0, np.inf]))).all()
    bits = np.array([0, 1, 255, -1, -32768, 12345], np.int16)
    counts = P.PopulationCount()(T(bits)).asnumpy()
    assert counts.dtype == np.uint8
    assert counts.tolist() == [bin(int(v) & 0xFFFF).count("1") for v in bits]


def test_mvlgamma_polar_rint_and_tensor_methods():
    x = RNG.uniform(2.0, 9.0, (2, 5))
    for p in (1, 2, 4):
        close(ops.mvlgamma(T(x), p), sp.multigammaln(x, p) if False else
              np.vectorize(lambda v: sp.multigammaln(v, p))(x), 1e-10)
    close(T(x).mvlgamma(3), np.vectorize(lambda v: sp.multigammaln(v, 3))(x), 1e-10)
    with pytest.raises(ValueError, match="mvlgamma"):
        ops.mvlgamma(T(np.array([0.2, 3.0])), 2)
    r, th = RNG.uniform(0, 3, 6), RNG.uniform(-3, 3, 6)
    close(ops.polar(T(r), T(th)), r * np.exp(1j * th), 1e-12)
    v = np.array([0.5, 1.5, 2.5, -0.5, -2.7, 3.2])
    close(P.Rint()(T(v)), np.rint(v))
    a, b = RNG.uniform(0.5, 5, 4), RNG.uniform(0.5, 5, 4)
    close(T(a).digamma(), sp.digamma(a), 1e-12)
    close(T(a).i0(), sp.i0(a), 1e-12)
    close(T(a).igamma(T(b)), sp.gammainc(a, b), 1e-12)
    close(T(a).igammac(T(b)), sp.gammaincc(a, b), 1e-12)
    close(T(a).nextafter(T(b)), np.nextafter(a, b), 0)
    close(P.BesselI0e()(T(a)), sp.i0e(a), 1e-12)
    close(P.BesselI1e()(T(a)), sp.i1e(a), 1e-12)


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (f(hi) - f(lo)) / (2 * eps)
    return g


class GradNet(nn.Cell):
    """The gradient of net's output in the inputs at `position`, in either mode."""

    def __init__(self, net, position):
        super().__init__()
        self.net, self.position = net, position

    def construct(self, *args):
        return ops.grad(self.net, self.position)(*args)


GRADS = [("bessel_i1e", lambda rng: rng.uniform(-5, 5, 5)), ("bessel_k1", lambda rng: rng.uniform(0.3, 4, 5)),
         ("digamma", lambda rng: rng.uniform(0.3, 6, 5)), ("lgamma", lambda rng: rng.uniform(-2.9, -2.1, 5))]


@pytest.mark.parametrize("name, gen", GRADS, ids=[g[0] for g in GRADS])
def test_gradients_against_finite_differences_in_both_modes(name, gen):
    x = gen(np.random.default_rng(1))
    ref = getattr(sp, {"bessel_i1e": "i1e", "bessel_k1": "k1", "lgamma": "gammaln"}.get(name, name))

    class Net(nn.Cell):
        def construct(self, v):
            return getattr(ops, name)(v).sum()

    want = _fd(lambda v: ref(v).sum(), x)
    eager, graph = both_modes(GradNet(Net(), 0), T(x))
    close(eager, want, 1e-6)
    close(graph, want, 1e-6)


def test_igamma_gradients_in_a_and_x_and_second_derivative():
    a, x = np.array([0.7, 2.5, 9.0]), np.array([1.3, 0.4, 11.0])

    class Net(nn.Cell):
        def construct(self, a, x):
            return (ops.igamma(a, x) * 2 + ops.igammac(a, x)).sum()

    f = lambda aa, xx: (2 * sp.gammainc(aa, xx) + sp.gammaincc(aa, xx)).sum()  # noqa: E731
    want_a, want_x = _fd(lambda v: f(v, x), a), _fd(lambda v: f(a, v), x)
    eager, graph = both_modes(GradNet(Net(), (0, 1)), T(a), T(x))
    for got in (eager, graph):
        close(got[0], want_a, 1e-6)
        close(got[1], want_x, 1e-6)
    # d2/dx2 of P(a, x): the density's derivative, differentiated through the bprop graph
    ta = T(a)
    d2 = ms.grad(ms.grad(lambda v: ops.igamma(ta, v).sum()))(T(x))
    density = np.exp((a - 1) * np.log(x) - x - sp.gammaln(a))
    close(d2, density * ((a - 1) / x - 1), 1e-9)


def test_graph_mode_forward_and_vmap():
    class Net(nn.Cell):
        def construct(self, x, n):
            return ops.bessel_j0(x) + ops.polygamma(n, x + 3) + ops.i0(x) * x.digamma()

    x = RNG.uniform(0.2, 4, (2, 3))
    want = sp.j0(x) + sp.polygamma(1, x + 3) + sp.i0(x) * sp.digamma(x)
    eager, graph = both_modes(Net(), T(x), T(np.array(1)))
    close(eager, want, 1e-10)
    close(graph, want, 1e-10)
    close(ops.vmap(lambda v: ops.bessel_k0e(v) * 2)(T(x + 1)), 2 * sp.k0e(x + 1), 1e-12)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(TypeError, match="bessel_i0"):
        ops.bessel_i0(T(np.array([1, 2], np.int32)))
    with pytest.raises(TypeError, match="gcd"):
        ops.gcd(T(np.array([1.5])), T(np.array([2.5])))
    with pytest.raises(ValueError, match="polygamma.*non-negative"):
        ops.polygamma(-1, T(np.array([1.0])))
    with pytest.raises(ValueError, match="polygamma.*whole"):
        ops.polygamma(T(np.array(1.5)), T(np.array([1.0])))
    with pytest.raises(TypeError, match="polygamma.*'n'"):
        ops.polygamma(T(np.array([True])), T(np.array([1.0])))
    with pytest.raises(ValueError, match="mvlgamma"):
        ops.mvlgamma(T(np.array([3.0])), 0)
