"""mycel.vjp / jvp / jacrev / jacfwd against closed forms and numpy central differences, in both
modes: J from finite differences, jvp == J @ v, vjp == v @ J, jacrev == jacfwd."""
import numpy as np
import pytest

import mycel
from mycel import nn, ops, Tensor


@pytest.fixture(params=[mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"], autouse=True)
def mode(request):
    mycel.set_context(mode=request.param)
    yield request.param
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3))
W = RNG.standard_normal((3, 2))


def tanh_matmul(x, w):
    return ops.tanh(ops.matmul(x, w))


def np_tanh_matmul(x, w):
    return np.tanh(x @ w)


def two_outputs(x, w):
    return ops.matmul(x, w), ops.sin(x) * 2.0


def np_two_outputs(x, w):
    return x @ w, np.sin(x) * 2.0


def numeric_jac(f, args, pos, out_index=None, eps=1e-6):
    """d out / d args[pos] by central differences, shape out.shape + in.shape (float64)."""
    args = [np.array(a, np.float64) for a in args]
    def out(a):
        r = f(*a)
        return np.asarray(r if out_index is None else r[out_index])
    base = out(args)
    jac = np.zeros(base.shape + args[pos].shape)
    for i in np.ndindex(*args[pos].shape):
        hi = [a.copy() for a in args]
        lo = [a.copy() for a in args]
        hi[pos][i] += eps
        lo[pos][i] -= eps
        jac[(...,) + i] = (out(hi) - out(lo)) / (2 * eps)
    return jac


def t(a):
    return Tensor(np.asarray(a, np.float64))


def test_jacrev_and_jacfwd_of_tanh_matmul_match_finite_differences():
    for pos in (0, 1):
        want = numeric_jac(np_tanh_matmul, (X, W), pos)
        rev = mycel.jacrev(tanh_matmul, grad_position=pos)(t(X), t(W)).asnumpy()
        fwd = mycel.jacfwd(tanh_matmul, grad_position=pos)(t(X), t(W)).asnumpy()
        assert rev.shape == (2, 2) + (X.shape if pos == 0 else W.shape)
        np.testing.assert_allclose(rev, want, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(fwd, want, rtol=1e-6, atol=1e-8)


def test_jacobian_of_matmul_is_closed_form():
    # d(x @ w)[i, j] / dw[k, l] = x[i, k] * delta(j, l)
    want = np.einsum("ik,jl->ijkl", X, np.eye(2))
    np.testing.assert_allclose(mycel.jacrev(ops.matmul, 1)(t(X), t(W)).asnumpy(), want, rtol=1e-12)
    np.testing.assert_allclose(mycel.jacfwd(ops.matmul, 1)(t(X), t(W)).asnumpy(), want, rtol=1e-12)


def test_two_outputs_and_tuple_positions():
    rev = mycel.jacrev(two_outputs, grad_position=(0, 1))(t(X), t(W))
    fwd = mycel.jacfwd(two_outputs, grad_position=(0, 1))(t(X), t(W))
    for k in range(2):
        for pos in range(2):
            want = numeric_jac(np_two_outputs, (X, W), pos, out_index=k)
            np.testing.assert_allclose(rev[k][pos].asnumpy(), want, rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(fwd[k][pos].asnumpy(), want, rtol=1e-6, atol=1e-8)
    # sin(x) * 2 does not depend on w: a zero block of the right shape
    assert rev[1][1].shape == (2, 3, 3, 2) and not rev[1][1].asnumpy().any()


def test_vjp_is_v_times_jacobian():
    v = RNG.standard_normal((2, 2))
    out, vjp_fn = mycel.vjp(tanh_matmul, t(X), t(W))
    np.testing.assert_allclose(out.asnumpy(), np_tanh_matmul(X, W), rtol=1e-12)
    gx, gw = vjp_fn(t(v))
    for pos, g in ((0, gx), (1, gw)):
        jac = numeric_jac(np_tanh_matmul, (X, W), pos)
        np.testing.assert_allclose(g.asnumpy(), np.tensordot(v, jac, axes=2), rtol=1e-6, atol=1e-8)
    # one input: the cotangent itself, not a tuple; closed form of sin: v * cos(x)
    _, vjp_sin = mycel.vjp(ops.sin, t(X))
    np.testing.assert_allclose(vjp_sin(t(X * 0 + 0.5)).asnumpy(), 0.5 * np.cos(X), rtol=1e-12)


def test_vjp_of_two_outputs_takes_a_tuple_cotangent():
    v0, v1 = RNG.standard_normal((2, 2)), RNG.standard_normal((2, 3))
    _, vjp_fn = mycel.vjp(two_outputs, t(X), t(W))
    gx, gw = vjp_fn((t(v0), t(v1)))
    want_x = np.tensordot(v0, numeric_jac(np_two_outputs, (X, W), 0, 0), axes=2) + \
        np.tensordot(v1, numeric_jac(np_two_outputs, (X, W), 0, 1), axes=2)
    np.testing.assert_allclose(gx.asnumpy(), want_x, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw.asnumpy(), X.T @ v0, rtol=1e-10)


def test_jvp_is_jacobian_times_v():
    vx, vw = RNG.standard_normal(X.shape), RNG.standard_normal(W.shape)
    out, jv = mycel.jvp(tanh_matmul, (t(X), t(W)), (t(vx), t(vw)))
    np.testing.assert_allclose(out.asnumpy(), np_tanh_matmul(X, W), rtol=1e-12)
    want = np.tensordot(numeric_jac(np_tanh_matmul, (X, W), 0), vx, axes=2) + \
        np.tensordot(numeric_jac(np_tanh_matmul, (X, W), 1), vw, axes=2)
    np.testing.assert_allclose(jv.asnumpy(), want, rtol=1e-6, atol=1e-8)
    # closed form for one input: d tanh(x) . v = (1 - tanh(x)^2) v
    _, jv1 = mycel.jvp(ops.tanh, t(X), t(vx))
    np.testing.assert_allclose(jv1.asnumpy(), (1 - np.tanh(X) ** 2) * vx, rtol=1e-12)


def test_has_aux():
    def f(x, w):
        y = ops.matmul(x, w)
        return ops.tanh(y), y * 3.0  # aux: not differentiated, returned as is
    v = RNG.standard_normal((2, 2))
    out, vjp_fn, aux = mycel.vjp(f, t(X), t(W), has_aux=True)
    np.testing.assert_allclose(aux.asnumpy(), 3 * X @ W, rtol=1e-12)
    gx, _ = vjp_fn(t(v))
    np.testing.assert_allclose(gx.asnumpy(), np.tensordot(v, numeric_jac(np_tanh_matmul, (X, W), 0), axes=2),
                               rtol=1e-6, atol=1e-8)
    vx = RNG.standard_normal(X.shape)
    wt = t(W)  # captured by the lambda: a constant of the compiled program
    out, jv, aux = mycel.jvp(lambda x: f(x, wt), t(X), t(vx), has_aux=True)
    np.testing.assert_allclose(jv.asnumpy(), np.tensordot(numeric_jac(np_tanh_matmul, (X, W), 0), vx, axes=2),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(aux.asnumpy(), 3 * X @ W, rtol=1e-12)
    want = numeric_jac(np_tanh_matmul, (X, W), 1)
    for jac in (mycel.jacrev, mycel.jacfwd):
        j, aux = jac(f, grad_position=1, has_aux=True)(t(X), t(W))
        np.testing.assert_allclose(j.asnumpy(), want, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(aux.asnumpy(), 3 * X @ W, rtol=1e-12)


def test_vjp_with_weights_of_a_cell():
    net = nn.Dense(3, 2)
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    v = RNG.standard_normal((4, 2)).astype(np.float32)
    out, vjp_fn = mycel.vjp(net, Tensor(x), weights=net.trainable_params())
    gx, (gw, gb) = vjp_fn(Tensor(v))
    w = net.weight.asnumpy()
    np.testing.assert_allclose(gx.asnumpy(), v @ w, rtol=1e-5)
    np.testing.assert_allclose(gw.asnumpy(), v.T @ x, rtol=1e-5)
    np.testing.assert_allclose(gb.asnumpy(), v.sum(0), rtol=1e-5)


def test_jacfwd_compiles_once_for_all_elements():
    jf = mycel.jacfwd(tanh_matmul)
    jf(t(X), t(W))
    jf(t(X + 1), t(W))
    (prog,) = jf.__closure__[[c.cell_contents.__class__ for c in jf.__closure__].index(dict)].cell_contents.values()
    assert prog._compiled.graph.num_programs == 1


def test_bad_input_errors():
    _, vjp_fn = mycel.vjp(tanh_matmul, t(X), t(W))
    with pytest.raises(ValueError, match="shape and dtype"):
        vjp_fn(t(np.ones((3, 3))))
    with pytest.raises(ValueError, match="one tangent per input"):
        mycel.jvp(tanh_matmul, (t(X), t(W)), t(X))
    with pytest.raises(ValueError, match="has_aux=True"):
        mycel.vjp(ops.sin, t(X), has_aux=True)
    with pytest.raises(ValueError, match="out of range"):
        mycel.jacrev(tanh_matmul, grad_position=2)(t(X), t(W))
    with pytest.raises(TypeError, match="must be a Tensor"):
        mycel.jvp(ops.sin, 1.0, 1.0)
