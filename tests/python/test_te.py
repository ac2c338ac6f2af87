"""mycel.te: the DSL, the generated C++ kernels and operator-level autodiff (issue 18).

References: numpy forward results, closed-form derivatives and central finite differences.
"""
import os

import numpy as np
import pytest

import mycel as ms
from mycel import te
from mycel.te import vmuls, vadds, vexp, vrec, vmul, vsub, vadd, vdiv, vmax, vmin, vabs, vrelu
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)


def np_of(t):
    return t.asnumpy()


def sigmoid(x):
    return vrec(vadds(vexp(vmuls(x, -1.0)), 1.0))


def test_sigmoid_as_printed_forward_and_gradients():
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((4, 33)).astype(np.float32)
    dv = rng.standard_normal((4, 33)).astype(np.float32)
    s = 1.0 / (1.0 + np.exp(-xv))

    x = te.placeholder((4, 33), "float32", "x")
    dout = te.placeholder((4, 33), "float32", "dout")
    out = sigmoid(x)
    np.testing.assert_allclose(np_of(te.build([x], [out])(xv)), s, rtol=1e-6, atol=1e-6)

    [dx] = te.differentiate(out, [x], dout)
    got = np_of(te.build([x, dout], [dx])(xv, dv))
    np.testing.assert_allclose(got, dv * s * (1 - s), rtol=1e-5, atol=1e-6)

    # MindSpore's override: the derivative of out given as out * (1 - out). With head None
    # (ones) that is the gradient itself.
    def custom_sigmoid_fdiff(out, inputs, grad):
        return [out * (1.0 - out)]
    [dx1] = te.differentiate(out, [x], override={out: ([x], custom_sigmoid_fdiff)})
    np.testing.assert_allclose(np_of(te.build([x], [dx1])(xv)), s * (1 - s), rtol=1e-6, atol=1e-7)

    # With a head, fn receives it and returns head times the Jacobian (TVM's fdiff contract).
    def fdiff_with_head(out, inputs, grad):
        return [vmul(grad, out * (1.0 - out))]
    [dx2] = te.differentiate(out, [x], dout, override={out: ([x], fdiff_with_head)})
    got = np_of(te.build([x, dout], [dx2])(xv, dv))
    np.testing.assert_allclose(got, dv * s * (1 - s), rtol=1e-5, atol=1e-6)


def test_build_accepts_tensors_and_checks_arguments():
    x = te.placeholder((3,), "float32", "x")
    f = te.build([x], [vmuls(x, 2.0)])
    out = f(ms.Tensor(np.arange(3, dtype=np.float32)))
    assert isinstance(out, ms.Tensor)
    np.testing.assert_array_equal(out.asnumpy(), [0, 2, 4])
    with pytest.raises(ValueError, match=r"must have shape \(3\), got \(4\)"):
        f(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="must be float32, got float64"):
        f(np.zeros(3, np.float64))
    with pytest.raises(TypeError, match="expects 1 arguments, got 2"):
        f(np.zeros(3, np.float32), np.zeros(3, np.float32))


def test_vector_helpers_match_numpy():
    rng = np.random.default_rng(1)
    av = rng.standard_normal((5, 7)).astype(np.float32)
    bv = rng.standard_normal((5, 7)).astype(np.float32) + 3.0
    a = te.placeholder((5, 7), "float32", "a")
    b = te.placeholder((5, 7), "float32", "b")
    outs = [vadd(a, b), vsub(a, b), vmul(a, b), vdiv(a, b), vmax(a, b), vmin(a, b), vabs(a),
            vrelu(a), te.reduce_sum(a, 1), te.reduce_max(a, 0), te.sum(a, axis=(0, 1)),
            te.reduce_min(a, -1, keepdims=True), te.vlog(b), te.vsqrt(b)]
    got = te.build([a, b], outs)(av, bv)
    want = [av + bv, av - bv, av * bv, av / bv, np.maximum(av, bv), np.minimum(av, bv),
            np.abs(av), np.maximum(av, 0), av.sum(1), av.max(0), av.sum(), av.min(-1, keepdims=True),
            np.log(bv), np.sqrt(bv)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-5, atol=1e-5)


def test_compute_reduce_if_then_else_cast():
    rng = np.random.default_rng(2)
    xv = rng.standard_normal((6, 8)).astype(np.float32)
    x = te.placeholder((6, 8), "float32", "x")
    k = te.reduce_axis((0, 8), "k")
    rowmax = te.compute((6,), lambda i: te.max(x[i, k], axis=k), "rowmax")
    # A shifted copy padded with zeros: loads guarded by if_then_else stay in bounds.
    shifted = te.compute((6, 10), lambda i, j: te.if_then_else(
        te.all_of(j >= 1, j < 9), x[i, j - 1], 0.0), "pad")
    as_int = te.compute((6, 8), lambda i, j: te.cast(x[i, j] * 10.0, "int32"), "to_int")
    idx = te.compute((6, 8), lambda i, j: te.cast(i * 8 + j, "float32"), "iota")
    f = te.build([x], [rowmax, shifted, as_int, idx])
    m, p, q, r = f(xv)
    np.testing.assert_allclose(m.asnumpy(), xv.max(1))
    np.testing.assert_allclose(p.asnumpy(), np.pad(xv, ((0, 0), (1, 1))))
    np.testing.assert_array_equal(q.asnumpy(), (xv * 10.0).astype(np.int32))
    np.testing.assert_array_equal(r.asnumpy(), np.arange(48, dtype=np.float32).reshape(6, 8))


def numeric_grad(f, xs, k, head, eps=1e-6):
    """Central differences of sum(head * f(xs)) with respect to xs[k] (float64)."""
    g = np.zeros_like(xs[k])
    it = np.nditer(xs[k], flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        xp = [x.copy() for x in xs]
        xm = [x.copy() for x in xs]
        xp[k][i] += eps
        xm[k][i] -= eps
        g[i] = ((head * f(*xp)).sum() - (head * f(*xm)).sum()) / (2 * eps)
    return g


def test_matmul_gradient_equals_finite_differences_and_closed_form():
    rng = np.random.default_rng(3)
    av, bv = rng.standard_normal((4, 5)), rng.standard_normal((5, 3))
    hv = rng.standard_normal((4, 3))
    a = te.placeholder((4, 5), "float64", "a")
    b = te.placeholder((5, 3), "float64", "b")
    h = te.placeholder((4, 3), "float64", "h")
    k = te.reduce_axis((0, 5), "k")
    c = te.compute((4, 3), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), "c")
    da, db = te.differentiate(c, [a, b], h)
    cv, dav, dbv = te.build([a, b, h], [c, da, db])(av, bv, hv)
    np.testing.assert_allclose(cv.asnumpy(), av @ bv, rtol=1e-12)
    np.testing.assert_allclose(dav.asnumpy(), hv @ bv.T, rtol=1e-12)
    np.testing.assert_allclose(dbv.asnumpy(), av.T @ hv, rtol=1e-12)
    mm = lambda p, q: p @ q  # noqa: E731
    np.testing.assert_allclose(dav.asnumpy(), numeric_grad(mm, [av, bv], 0, hv), rtol=1e-6)
    np.testing.assert_allclose(dbv.asnumpy(), numeric_grad(mm, [av, bv], 1, hv), rtol=1e-6)
    # No Jacobian: the adjoint of a is one reduction over j, not a (4*5) x (4*3) matrix.
    assert "for (int64_t" in te.lower([a, b, h], [da])


def softmax_te(x, n, m):
    k = te.reduce_axis((0, m), "k")
    mx = te.compute((n,), lambda i: te.max(x[i, k], axis=k), "mx")
    e = te.compute((n, m), lambda i, j: te.exp(x[i, j] - mx[i]), "e")
    k2 = te.reduce_axis((0, m), "k2")
    s = te.compute((n,), lambda i: te.sum(e[i, k2], axis=k2), "s")
    return te.compute((n, m), lambda i, j: e[i, j] / s[i], "softmax")


def np_softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_softmax_gradient_equals_finite_differences():
    rng = np.random.default_rng(4)
    xv, hv = rng.standard_normal((3, 6)), rng.standard_normal((3, 6))
    x = te.placeholder((3, 6), "float64", "x")
    h = te.placeholder((3, 6), "float64", "h")
    y = softmax_te(x, 3, 6)
    [dx] = te.differentiate(y, [x], h)
    yv, dxv = te.build([x, h], [y, dx])(xv, hv)
    np.testing.assert_allclose(yv.asnumpy(), np_softmax(xv), rtol=1e-12)
    np.testing.assert_allclose(dxv.asnumpy(), numeric_grad(np_softmax, [xv], 0, hv), rtol=1e-6,
                               atol=1e-9)


def test_conv2d_with_padding_and_stride_gradient():
    rng = np.random.default_rng(5)
    N, C, H, W, O, K, S, P = 1, 2, 5, 5, 3, 3, 2, 1
    OH = (H + 2 * P - K) // S + 1
    xv, wv = rng.standard_normal((N, C, H, W)), rng.standard_normal((O, C, K, K))
    hv = rng.standard_normal((N, O, OH, OH))
    x = te.placeholder((N, C, H, W), "float64", "x")
    w = te.placeholder((O, C, K, K), "float64", "w")
    h = te.placeholder((N, O, OH, OH), "float64", "h")
    xp = te.compute((N, C, H + 2 * P, W + 2 * P), lambda n, c, i, j: te.if_then_else(
        te.all_of(i >= P, i < H + P, j >= P, j < W + P), x[n, c, i - P, j - P], 0.0), "xpad")
    rc, ri, rj = te.reduce_axis((0, C), "rc"), te.reduce_axis((0, K), "ri"), te.reduce_axis((0, K), "rj")
    y = te.compute((N, O, OH, OH), lambda n, o, i, j: te.sum(
        xp[n, rc, i * S + ri, j * S + rj] * w[o, rc, ri, rj], axis=[rc, ri, rj]), "conv")
    dx, dw = te.differentiate(y, [x, w], h)

    def conv(xa, wa):
        xa = np.pad(xa, ((0, 0), (0, 0), (P, P), (P, P)))
        out = np.zeros((N, O, OH, OH))
        for i in range(OH):
            for j in range(OH):
                patch = xa[:, :, i * S:i * S + K, j * S:j * S + K]
                out[:, :, i, j] = np.einsum("nckl,ockl->no", patch, wa)
        return out
    yv, dxv, dwv = te.build([x, w, h], [y, dx, dw])(xv, wv, hv)
    np.testing.assert_allclose(yv.asnumpy(), conv(xv, wv), rtol=1e-10)
    np.testing.assert_allclose(dxv.asnumpy(), numeric_grad(conv, [xv, wv], 0, hv), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(dwv.asnumpy(), numeric_grad(conv, [xv, wv], 1, hv), rtol=1e-6, atol=1e-9)


def test_elementwise_chain_gradient_with_shared_subexpressions():
    rng = np.random.default_rng(6)
    xv = rng.uniform(0.5, 2.0, (10,))
    x = te.placeholder((10,), "float64", "x")
    y = te.compute((10,), lambda i: te.tanh(x[i]) * x[i] * x[i] + te.log(x[i]) / te.sqrt(x[i]), "y")
    z = te.compute((10,), lambda i: y[i] * y[i] + te.sigmoid(y[i]), "z")
    [dx] = te.differentiate(z, [x])
    f = lambda v: (lambda yy: yy * yy + 1 / (1 + np.exp(-yy)))(np.tanh(v) * v * v + np.log(v) / np.sqrt(v))  # noqa
    got = te.build([x], [dx])(xv).asnumpy()
    np.testing.assert_allclose(got, numeric_grad(f, [xv], 0, np.ones(10)), rtol=1e-6)


def test_static_checks_have_clear_errors():
    x = te.placeholder((3, 4), "float32", "x")
    with pytest.raises(ValueError, match=r"tensor 'x' of shape \(3, 4\) has rank 2 but was indexed with 1"):
        te.compute((3,), lambda i: x[i], "bad")
    with pytest.raises(IndexError, match=r"constant index 4 is out of range for dimension 1 \(size 4\)"):
        te.compute((3,), lambda i: x[i, 4], "bad")
    k = te.reduce_axis((0, 4), "k")
    with pytest.raises(ValueError, match="reduce axis 'k' is listed twice"):
        te.compute((3,), lambda i: te.sum(x[i, k], axis=[k, k]), "bad")
    with pytest.raises(ValueError, match="uses reduce axis 'k' outside"):
        te.compute((3,), lambda i: x[i, k], "bad")
    d = te.placeholder((3, 4), "float64", "d")
    with pytest.raises(TypeError, match="add of float32 and float64"):
        te.compute((3, 4), lambda i, j: x[i, j] + d[i, j], "bad")
    with pytest.raises(ValueError, match="takes 1 indices but the shape"):
        te.compute((3, 4), lambda i: x[i, 0], "bad")
    with pytest.raises(ValueError, match="placeholder 'x' is used by the outputs but missing"):
        te.build([], [vmuls(x, 2.0)])
    with pytest.raises(ValueError, match=r"shapes must be equal, got \(3, 4\) and \(4,\)"):
        vadd(x, te.placeholder((4,), "float32", "y"))


def test_kernel_cache_and_compile_errors(monkeypatch):
    def make():
        x = te.placeholder((7,), "float32", "x")
        return x, vexp(vmuls(x, 3.0))
    x, y = make()
    f1 = te.build([x], [y])
    x2, y2 = make()  # an equal expression built again: same source, served by the cache
    f2 = te.build([x2], [y2])
    assert f1.source == f2.source and f1.library == f2.library
    assert os.path.dirname(f1.library) == os.environ["MYCEL_TE_CACHE"]
    np.testing.assert_allclose(f2(np.ones(7, np.float32)).asnumpy(), np.exp(3.0) * np.ones(7), rtol=1e-6)
    monkeypatch.setenv("MYCEL_TE_CXX", "g++ -include /nonexistent/mycel_missing.h")
    z = te.placeholder((5,), "float32", "z")
    with pytest.raises(RuntimeError, match=r"(?s)the C\+\+ compiler .* failed .*mycel_missing.h: No such file"):
        te.build([z], [vmuls(z, 5.0)])


def test_kernel_cache_is_private_and_checks_its_source(tmp_path, monkeypatch):
    """The cache holds libraries that get loaded: a folder others may write is refused, and a hit
    needs the kept source to equal the new one (a hash collision must not run another kernel)."""
    def build():
        x = te.placeholder((6,), "float32", "x")
        return te.build([x], [vmuls(vexp(x), 2.0)])
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("MYCEL_TE_CACHE", str(shared))
    with pytest.raises(RuntimeError, match="writable by nobody else"):
        build()
    os.symlink(shared, tmp_path / "link")
    monkeypatch.setenv("MYCEL_TE_CACHE", str(tmp_path / "link"))
    with pytest.raises(RuntimeError, match="not a directory"):
        build()
    monkeypatch.setenv("MYCEL_TE_CACHE", str(tmp_path / "mine"))
    f = build()
    assert not f.cached and os.stat(tmp_path / "mine").st_mode & 0o077 == 0
    assert build().library == f.library
    with open(f.library[:-3] + ".cc", "w") as fh:  # another kernel's source under this hash
        fh.write("// a different kernel\n")
    g = build()  # takes the next slot of the hash
    assert not g.cached and g.library == f.library[:-3] + "_1.so"
    assert open(g.library[:-3] + ".cc").read() == g.source
    np.testing.assert_allclose(g(np.ones(6, np.float32)).asnumpy(), 2 * np.exp(np.ones(6)), rtol=1e-6)


def test_large_rank1_and_rank0_outputs():
    # A rank-1 tensor big enough for the parallel loop, and a full reduction to a 0-d tensor.
    n = 50000
    xv = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    x = te.placeholder((n,), "float32", "x")
    k = te.reduce_axis((0, n), "k")
    total = te.compute((), lambda: te.sum(x[k], axis=k), "total")
    y, s = te.build([x], [vrelu(x), total])(xv)
    np.testing.assert_array_equal(y.asnumpy(), np.maximum(xv, 0))
    np.testing.assert_allclose(s.asnumpy(), xv.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)


def test_layer_norm_gradient_equals_finite_differences():
    rng = np.random.default_rng(8)
    n, d, eps = 3, 5, 1e-5
    xv, gv, hv = rng.standard_normal((n, d)), rng.standard_normal(d), rng.standard_normal((n, d))
    x = te.placeholder((n, d), "float64", "x")
    g = te.placeholder((d,), "float64", "g")
    h = te.placeholder((n, d), "float64", "h")
    k = te.reduce_axis((0, d), "k")
    # Each reduction is the top of its compute (differentiate's requirement): 1/d goes inside.
    mean = te.compute((n,), lambda i: te.sum(x[i, k] / float(d), axis=k), "mean")
    k2 = te.reduce_axis((0, d), "k2")
    var = te.compute((n,), lambda i: te.sum((x[i, k2] - mean[i]) * (x[i, k2] - mean[i]) / float(d),
                                            axis=k2), "var")
    y = te.compute((n, d), lambda i, j: (x[i, j] - mean[i]) * te.rsqrt(var[i] + eps) * g[j], "ln")
    dx, dg = te.differentiate(y, [x, g], h)

    def ln(xa, ga):
        mu = xa.mean(1, keepdims=True)
        return (xa - mu) / np.sqrt(xa.var(1, keepdims=True) + eps) * ga
    yv, dxv, dgv = te.build([x, g, h], [y, dx, dg])(xv, gv, hv)
    np.testing.assert_allclose(yv.asnumpy(), ln(xv, gv), rtol=1e-10)
    np.testing.assert_allclose(dxv.asnumpy(), numeric_grad(ln, [xv, gv], 0, hv), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(dgv.asnumpy(), numeric_grad(ln, [xv, gv], 1, hv), rtol=1e-5, atol=1e-8)


def test_nested_reduction_is_lifted_for_differentiation():
    # sum(...) inside a larger expression: differentiate lifts it into a compute of its own.
    rng = np.random.default_rng(9)
    xv = rng.standard_normal((3, 4))
    x = te.placeholder((3, 4), "float64", "x")
    k = te.reduce_axis((0, 4), "k")
    y = te.compute((3,), lambda i: te.exp(te.sum(x[i, k] * x[i, k], axis=k) / 4.0) + x[i, 0], "y")
    [dx] = te.differentiate(y, [x])
    f = lambda a: np.exp((a * a).sum(1) / 4.0) + a[:, 0]  # noqa: E731
    yv, dxv = te.build([x], [y, dx])(xv)
    np.testing.assert_allclose(yv.asnumpy(), f(xv), rtol=1e-12)
    np.testing.assert_allclose(dxv.asnumpy(), numeric_grad(f, [xv], 0, np.ones(3)), rtol=1e-6)


def test_reduction_inside_reduction_is_differentiated():
    # y[i] = max_j tanh(sum_k x[i, k] * w[k, j]) + sum_{j in [1, 5)} exp(sum_{k in [1, 4)} x[i, k] * w[k, j]):
    # the inner sums depend on the outer reduce axis j; differentiate lifts them into computes over
    # (i, j) (the second one with ranges that do not start at 0) and the adjoints match finite
    # differences.
    rng = np.random.default_rng(10)
    xv, wv, hv = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)) * 0.5, rng.standard_normal(3)
    x = te.placeholder((3, 4), "float64", "x")
    w = te.placeholder((4, 5), "float64", "w")
    h = te.placeholder((3,), "float64", "h")
    j, k = te.reduce_axis((0, 5), "j"), te.reduce_axis((0, 4), "k")
    j2, k2 = te.reduce_axis((1, 5), "j2"), te.reduce_axis((1, 4), "k2")
    m = te.compute((3,), lambda i: te.max(te.tanh(te.sum(x[i, k] * w[k, j], axis=k)), axis=j), "m")
    y = te.compute((3,), lambda i: m[i] + te.sum(te.exp(te.sum(x[i, k2] * w[k2, j2], axis=k2)), axis=j2), "y")
    dx, dw = te.differentiate(y, [x, w], h)

    def f(a, b):
        return np.tanh(a @ b).max(1) + np.exp(a[:, 1:] @ b[1:, 1:]).sum(1)
    yv, dxv, dwv = te.build([x, w, h], [y, dx, dw])(xv, wv, hv)
    np.testing.assert_allclose(yv.asnumpy(), f(xv, wv), rtol=1e-12)
    np.testing.assert_allclose(dxv.asnumpy(), numeric_grad(f, [xv, wv], 0, hv), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(dwv.asnumpy(), numeric_grad(f, [xv, wv], 1, hv), rtol=1e-6, atol=1e-9)
