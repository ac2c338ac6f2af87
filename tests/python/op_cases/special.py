"""Table rows for the special functions (ops/special.cc) against scipy.special in float64."""
import numpy as np
import scipy.special as sp

from op_cases import OpCase

F = ("float32", "float64")
INT = ("int8", "uint8", "int16", "int32", "int64")


def f64(fn):
    """scipy in float64, rounded to the inputs' dtype."""
    def ref(*xs, **kw):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*[x.astype(np.float64) for x in xs], **kw)).astype(xs[-1].dtype)
    return ref


def spread(lo, hi, n=41):
    """Points over [lo, hi] (with the edges and zero when inside) and one large-argument row."""
    def gen(rng, dt):
        return [np.concatenate([np.linspace(lo, hi, n), rng.uniform(lo, hi, 20)]).astype(dt)]
    return gen


# (name, scipy function, argument range): the scaled forms reach far past the unscaled overflow.
_BESSEL = [
    ("bessel_i0", sp.i0, (-20, 20)), ("bessel_i0e", sp.i0e, (-800, 800)),
    ("bessel_i1", sp.i1, (-20, 20)), ("bessel_i1e", sp.i1e, (-800, 800)),
    ("bessel_j0", sp.j0, (-30, 30)), ("bessel_j1", sp.j1, (-30, 30)),
    ("bessel_y0", sp.y0, (-2, 30)), ("bessel_y1", sp.y1, (-2, 30)),
    ("bessel_k0", sp.k0, (-1, 40)), ("bessel_k0e", sp.k0e, (-1, 900)),
    ("bessel_k1", sp.k1, (-1, 40)), ("bessel_k1e", sp.k1e, (-1, 900)),
]

CASES = [OpCase(n, f64(f), spread(*r), dtypes=F, rtol=1e-5, atol=1e-6, id="range")
         for n, f, r in _BESSEL]
CASES += [OpCase(n, f64(f), [(3, 4)], dtypes=F, atol=1e-6) for n, f, _ in _BESSEL]
CASES += [
    OpCase("lgamma", f64(sp.gammaln), spread(-7.3, 30), dtypes=F, rtol=1e-5, atol=1e-5),
    OpCase("digamma", f64(sp.digamma), spread(-7.3, 30), dtypes=F, rtol=1e-5, atol=1e-5),
    OpCase("digamma", f64(sp.digamma), [(2, 3)], dtypes=F, domain="positive", id="small"),
    OpCase("polygamma", lambda n, x: f64(sp.polygamma)(n, x),
           lambda rng, dt: [np.array([[0], [1], [2], [3]], np.int64), rng.uniform(-3.3, 9, (1, 7)).astype(dt)],
           dtypes=F, rtol=1e-5, atol=1e-6),
    OpCase("igamma", f64(sp.gammainc),
           lambda rng, dt: [rng.uniform(0.05, 30, (40,)).astype(dt), rng.uniform(0.01, 40, (40,)).astype(dt)],
           dtypes=F, rtol=1e-5, atol=1e-6),
    OpCase("igammac", f64(sp.gammaincc),
           lambda rng, dt: [rng.uniform(0.05, 30, (4, 1)).astype(dt), rng.uniform(0.01, 40, (5,)).astype(dt)],
           dtypes=F, rtol=1e-5, atol=1e-6),
    OpCase("igamma_grad_a",
           lambda a, x: ((sp.gammainc(a.astype(np.float64) + 1e-6, x.astype(np.float64))
                          - sp.gammainc(a.astype(np.float64) - 1e-6, x.astype(np.float64))) / 2e-6).astype(a.dtype),
           lambda rng, dt: [rng.uniform(0.5, 8, (30,)).astype(dt), rng.uniform(0.2, 10, (30,)).astype(dt)],
           dtypes=F, rtol=1e-4, atol=1e-6),
    OpCase("gcd", np.gcd, lambda rng, dt: [rng.integers(-40 if dt != "uint8" else 0, 100, (3, 5)).astype(dt),
                                           rng.integers(0, 60, (5,)).astype(dt)], dtypes=INT),
    OpCase("lcm", np.lcm, lambda rng, dt: [rng.integers(-9 if dt != "uint8" else 0, 10, (3, 5)).astype(dt),
                                           rng.integers(0, 12, (5,)).astype(dt)], dtypes=INT),
    OpCase("nextafter", np.nextafter, [(2, 3), (3,)], dtypes=F),
    OpCase("nextafter", np.nextafter,
           lambda rng, dt: [np.array([0, 1, -1, 1e30, np.inf, 2, -0.0, np.nan], dt),
                            np.array([1, 2, -2, 0, 0, 2, 1, 0], dt)], dtypes=F, id="edges"),
    OpCase("lgamma", f64(sp.gammaln), [(2, 3)], dtypes=F, domain="positive", id="small"),
    OpCase("igamma", f64(sp.gammainc), [(2, 3), (3,)], dtypes=F, domain="positive", id="small"),
    OpCase("igamma_grad_a",
           lambda a, x: ((sp.gammainc(a.astype(np.float64) + 1e-6, x.astype(np.float64))
                          - sp.gammainc(a.astype(np.float64) - 1e-6, x.astype(np.float64))) / 2e-6).astype(a.dtype),
           [(2, 3), (3,)], dtypes=F, domain="positive", rtol=1e-4, atol=1e-6, id="small"),
    OpCase("population_count", lambda x: np.vectorize(lambda v: bin(int(v) & ((1 << (8 * x.itemsize)) - 1)).count("1"),
                                                       otypes=[np.uint8])(x) if x.size else np.zeros(x.shape, np.uint8),
           lambda rng, dt: [np.array([0, 1, 7, -1, np.iinfo(dt).min, np.iinfo(dt).max], dtype=np.int64).astype(dt)],
           dtypes=INT),
]
