"""Vectorized float32 exp / log / tanh / sigmoid / erf in generated TE code (kernels/cpu/vmath.h): the
maximum ulp error over a dense sweep of each function's range against numpy float64, the special
inputs (NaN, infinities, zeros, subnormals, the overflow thresholds), bit equality with the op
kernels and the fused-elementwise interpreter, and that the generated loops vectorize."""
import math
import os
import shutil
import subprocess

import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops, te
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)

# The bounds vmath.h states (measured there over every 16th float32).
FUNCS = {
    "exp": (te.exp, np.exp, 1.02),
    "log": (te.log, np.log, 0.83),
    "tanh": (te.tanh, np.tanh, 4.8),
    "sigmoid": (te.sigmoid, lambda v: 1 / (1 + np.exp(-v)), 2.4),
    "erf": (te.erf, lambda v: np.frompyfunc(math.erf, 1, 1)(v).astype(np.float64), 1.01),
}


def sweep(lo, hi, n):
    """About n float32 values evenly spaced in bit pattern over [lo, hi] (so every binade gets its
    share, subnormals included), both ends kept."""
    def bits_between(a, b):  # a, b >= 0
        ia, ib = np.array([a, b], np.float32).view(np.int32)
        return np.unique(np.linspace(ia, ib, n // 2).astype(np.int64)).astype(np.int32)
    parts = []
    if hi > 0:
        parts.append(bits_between(max(lo, 0.0), hi).view(np.float32))
    if lo < 0:
        parts.append(-bits_between(max(-hi, 0.0), -lo).view(np.float32))
    return np.concatenate(parts)


_built = {}


def kernel(name, n):
    """The generated kernel of one function over n float32 elements (built once per module)."""
    if (name, n) not in _built:
        x = te.placeholder((n,), "float32", "x")
        y = te.compute((n,), lambda i: FUNCS[name][0](x[i]), name)
        _built[name, n] = te.build([x], [y])
    return _built[name, n]


def run(name, xv):
    return kernel(name, xv.size)(xv).asnumpy()


def ulp_error(got, ref64):
    """|got - ref| in units of the float32 spacing at the correctly rounded result."""
    r32 = ref64.astype(np.float32)
    spacing = np.spacing(np.abs(r32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref64) / spacing


@pytest.mark.parametrize("name,lo,hi", [("exp", -103.9, 88.72), ("log", 1e-45, 3.4e38),
                                        ("tanh", -9.0, 9.0), ("sigmoid", -103.0, 30.0),
                                        ("erf", -4.5, 4.5)])
def test_max_ulp_over_dense_sweep(name, lo, hi):
    xv = sweep(lo, hi, 1 << 21)
    xv = np.resize(xv, 1 << 21)  # one kernel size for every function
    got = run(name, xv)
    ref = FUNCS[name][1](xv.astype(np.float64))
    err = ulp_error(got, ref)
    worst = int(np.argmax(err))
    assert err[worst] <= FUNCS[name][2], (name, xv[worst], got[worst], ref[worst], err[worst])
    # The bound is close to tight: the sweep finds errors near it (else the bound is stale).
    assert err[worst] > FUNCS[name][2] / 4, (name, err[worst])


def test_special_inputs():
    f32 = np.float32
    tiny, big = np.finfo(f32).tiny, np.finfo(f32).max
    xv = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, tiny / 3, tiny,
                   big, -big, 88.72, 88.73, 89.5, -87.3, -103.97, -104.5, 7.9, -7.95, 3e-4, -3e-4,
                   1.0, -1.0], f32)
    xv = np.resize(xv, 1 << 21)[: 1 << 21]
    with np.errstate(all="ignore"):
        x64 = xv.astype(np.float64)
        for name in FUNCS:
            got = run(name, xv)[:24]
            ref = FUNCS[name][1](x64)[:24].astype(np.float32)  # float32 rounding of the true value
            np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=name)
            finite = np.isfinite(ref) & np.isfinite(got)
            np.testing.assert_array_equal(got[~finite & ~np.isnan(ref)],
                                          ref[~finite & ~np.isnan(ref)], err_msg=name)
            err = ulp_error(got[finite], FUNCS[name][1](x64)[:24][finite])
            assert err.max() <= FUNCS[name][2], (name, xv[:24][finite][np.argmax(err)], err.max())
    # Named cases the table above relies on.
    e = run("exp", xv)[:24]
    assert e[2] == np.inf and e[3] == 0 and e[4] == 1 and e[13] == np.inf and e[17] == 0
    lg = run("log", xv)[:24]
    assert lg[4] == -np.inf and lg[5] == -np.inf and np.isnan(lg[7]) and lg[2] == np.inf
    assert np.isnan(lg[3])
    th = run("tanh", xv)[:24]
    assert th[2] == 1 and th[3] == -1 and th[6] == xv[6] and np.signbit(th[5])
    sg = run("sigmoid", xv)[:24]
    assert sg[2] == 1 and sg[3] == 0 and sg[15] > 0  # e**-87.3 is a subnormal, not flushed
    er = run("erf", xv)[:24]
    assert er[2] == 1 and er[3] == -1 and er[4] == 0 and np.signbit(er[5]) and er[10] == 1
    assert er[6] > 0 and er[7] < 0  # erf(+-1e-45) = +-2/sqrt(pi) * 1e-45, a subnormal


def test_equals_op_kernels_bit_for_bit():
    # ops.exp / ops.tanh / ops.sigmoid on float32 run the same functions: equal bits.
    xv = np.random.default_rng(0).uniform(-40, 40, 1 << 21).astype(np.float32)
    for name, op in [("exp", ops.exp), ("tanh", ops.tanh), ("sigmoid", ops.sigmoid),
                     ("erf", ops.erf)]:
        np.testing.assert_array_equal(run(name, xv), op(ms.Tensor(xv)).asnumpy(), err_msg=name)


class Chain(nn.Cell):
    def construct(self, x, a, b):
        y = ops.relu(x * a + b)
        return ops.sigmoid(y * 2.0 - x) * ops.tanh(x) + ops.exp(-(x * x)) * a + b


def test_fused_chain_equals_interpreter_bit_for_bit():
    # Generated chains round every step as the interpreter does (no a * b + c contracted into an
    # fma), and call the same exp / tanh / sigmoid: forward and backward give the same bits.
    rng = np.random.default_rng(1)
    xv, av, bv = (rng.standard_normal((64, 129)).astype(np.float32) * 3 for _ in range(3))
    args = [ms.Tensor(v) for v in (xv, av, bv)]
    results = {}
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        for mode in ("0", "1"):
            os.environ["MYCEL_TE_FUSION"] = mode
            net = Chain()
            out = net(*args).asnumpy()
            grads = [g.asnumpy() for g in ms.grad(net, grad_position=(0, 1, 2))(*args)]
            results[mode] = [out] + grads
    finally:
        os.environ.pop("MYCEL_TE_FUSION", None)
        ms.set_context(mode=ms.PYNATIVE_MODE)
    for interp, gen in zip(results["0"], results["1"]):
        np.testing.assert_array_equal(gen, interp)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_generated_loop_vectorizes(tmp_path):
    n = 4096
    x = te.placeholder((n,), "float32", "x")
    y = te.compute((n,), lambda i: te.tanh(te.log(te.exp(x[i]) + 1.0)) * te.sigmoid(x[i]), "y")
    src = tmp_path / "k.cc"
    src.write_text(te.lower([x], [y]))
    out = subprocess.run(["g++", "-O3", "-march=x86-64-v3", "-fopenmp", "-fno-math-errno",
                          "-std=c++17", "-fopt-info-vec-optimized", "-c", str(src), "-o",
                          str(tmp_path / "k.o")], capture_output=True, text=True, check=True)
    assert "loop vectorized using 32 byte vectors" in out.stderr, out.stderr


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_mask_multiply_vectorizes(tmp_path):
    # A relu gradient, dout * (x > 0 ? 1 : 0): written as a ?: GCC turned it into a load under a
    # branch and the loop ran scalar, 20x slower than the interpreter; the generated pick between
    # two loads-free values is a bit blend now.
    n = 4096
    x = te.placeholder((n,), "float32", "x")
    d = te.placeholder((n,), "float32", "d")
    y = te.compute((n,), lambda i: d[i] * te.if_then_else(x[i] > 0.0, 1.0, 0.0), "y")
    src = tmp_path / "k.cc"
    src.write_text(te.lower([x, d], [y]))
    out = subprocess.run(["g++", "-O3", "-march=x86-64-v3", "-fopenmp", "-fno-math-errno",
                          "-std=c++17", "-fopt-info-vec-optimized", "-c", str(src), "-o",
                          str(tmp_path / "k.o")], capture_output=True, text=True, check=True)
    assert "loop vectorized using 32 byte vectors" in out.stderr, out.stderr
    xv = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    dv = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    np.testing.assert_array_equal(te.build([x, d], [y])(xv, dv).asnumpy(),
                                  dv * (xv > 0).astype(np.float32))


def test_guarded_load_keeps_its_branch():
    # An if_then_else that guards an out-of-range read (a padded shift) must not read it.
    n = 1 << 16
    x = te.placeholder((n,), "float32", "x")
    y = te.compute((n,), lambda i: te.if_then_else(i > 0, x[i - 1], 0.0), "y")
    xv = np.arange(n, dtype=np.float32)
    np.testing.assert_array_equal(te.build([x], [y])(xv).asnumpy(),
                                  np.concatenate([[0], xv[:-1]]).astype(np.float32))


def test_erf_gradient_and_gelu_erf_form():
    # te.differentiate of erf is 2 / sqrt(pi) e**(-x**2); ops.gelu's erf form (vm_erf inside)
    # against float64 math.erf.
    n = 4096
    xv = np.linspace(-5, 5, n).astype(np.float32)
    x = te.placeholder((n,), "float32", "x")
    y = te.compute((n,), lambda i: te.erf(x[i]), "y")
    (dx,) = te.differentiate(y, [x])
    got = te.build([x], [dx])(xv).asnumpy()
    ref = 2 / np.sqrt(np.pi) * np.exp(-xv.astype(np.float64) ** 2)
    np.testing.assert_allclose(got, ref, rtol=2e-6, atol=1e-30)
    x64 = xv.astype(np.float64)
    gelu64 = 0.5 * x64 * (1 + np.frompyfunc(math.erf, 1, 1)(x64 / math.sqrt(2)).astype(np.float64))
    g = ops.gelu(ms.Tensor(xv), approximate="none").asnumpy()
    np.testing.assert_allclose(g, gelu64, rtol=3e-7, atol=2e-7)
