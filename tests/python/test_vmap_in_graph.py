"""vmap and grad made or called inside compiled code: ops.vmap in a Cell's construct and in a jit
function, vmap of grad and grad of vmap inside one graph, nested vmap, grad(f) created in parsed
code, vjp / jvp inside jit, second derivatives in PyNative, get_grad with return_ids. References:
numpy closed forms, per-item loops and finite differences."""
import numpy as np
import pytest

import mycel
from mycel import Parameter, Tensor, context, jit, nn, ops


@pytest.fixture(params=[context.GRAPH_MODE, context.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    old = context.get_context("mode")
    context.set_context(mode=request.param)
    yield request.param
    context.set_context(mode=old)


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _cube_sum(x):
    return (x * x * x).sum()


def test_vmap_called_in_jit(mode):
    @jit
    def step(x, w):
        return ops.vmap(lambda_free_matvec, in_axes=(0, None))(x, w) + 1.0
    x, w = rnd(4, 3), rnd(3, 2, seed=1)
    np.testing.assert_allclose(step(Tensor(x), Tensor(w)).asnumpy(), np.tanh(x @ w) + 1, rtol=1e-5, atol=1e-6)


def lambda_free_matvec(a, w):
    return ops.tanh(ops.matmul(ops.expand_dims(a, 0), w))[0]


class PerSampleNorms(nn.Cell):
    """A Cell whose construct maps grad over the batch: per-sample gradient norms of a linear
    model's squared error, the building block of DP-SGD clipping, in one graph."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(rnd(3, 1, seed=2)), name="w")

    def loss(self, x, y):
        d = ops.matmul(ops.expand_dims(x, 0), self.w)[0] - y
        return (d * d).sum()

    def construct(self, x, y):
        g = ops.vmap(ops.grad(self.loss, grad_position=None, weights=self.w), in_axes=(0, 0))(x, y)[0]
        return ops.sqrt((g * g).sum(axis=(1, 2)))


def test_vmap_of_grad_inside_a_cell(mode):
    net = PerSampleNorms()
    x, y = rnd(5, 3), rnd(5, 1, seed=3)
    got = net(Tensor(x), Tensor(y)).asnumpy()
    w = net.w.asnumpy()
    per = [2 * np.outer(x[i], x[i] @ w - y[i]) for i in range(5)]  # d/dw of |x w - y|^2
    np.testing.assert_allclose(got, [np.linalg.norm(p) for p in per], rtol=1e-4, atol=1e-6)


def test_grad_of_vmap_inside_jit(mode):
    @jit
    def g(x):
        return ops.grad(ops.vmap(_cube_sum, in_axes=1))(x)
    x = rnd(3, 4)
    np.testing.assert_allclose(g(Tensor(x)).asnumpy(), 3 * x * x, rtol=1e-5)


def test_nested_vmap_inside_jit(mode):
    @jit
    def outer(x, y):
        return ops.vmap(ops.vmap(ops.mul, in_axes=(None, 0)), in_axes=(0, None))(x, y)
    x, y = rnd(3), rnd(4, seed=1)
    np.testing.assert_allclose(outer(Tensor(x), Tensor(y)).asnumpy(), np.outer(x, y), rtol=1e-6)


def test_grad_created_in_compiled_code_second_derivative(mode):
    def first(x):
        return ops.grad(_cube_sum)(x).sum()  # d/dx sum(3 x^2) = 6 x
    x = rnd(4)
    np.testing.assert_allclose(ops.grad(first)(Tensor(x)).asnumpy(), 6 * x, rtol=1e-5)


def test_grad_created_in_jit_with_options(mode):
    @jit
    def g(x, y):
        return ops.value_and_grad(_prod_sum, grad_position=(0, 1))(x, y)
    x, y = rnd(3), rnd(3, seed=1)
    value, (gx, gy) = g(Tensor(x), Tensor(y))
    np.testing.assert_allclose(value.asnumpy(), (x * y).sum(), rtol=1e-5)
    np.testing.assert_allclose(gx.asnumpy(), y, rtol=1e-6)
    np.testing.assert_allclose(gy.asnumpy(), x, rtol=1e-6)


def _prod_sum(x, y):
    return (x * y).sum()


def test_jvp_inside_jit(mode):
    @jit
    def j(x, t):
        return ops.jvp(_cube_sum, x, t)
    x, t = rnd(4), rnd(4, seed=1)
    out, jt = j(Tensor(x), Tensor(t))
    np.testing.assert_allclose(out.asnumpy(), (x ** 3).sum(), rtol=1e-5)
    np.testing.assert_allclose(jt.asnumpy(), (3 * x * x * t).sum(), rtol=1e-5)


def test_vjp_inside_jit(mode):
    @jit
    def v(x, s):
        out, fn = ops.vjp(_cube_sum, x)
        return out, fn(s)

    @jit
    def v2(x, y, s):
        out, fn = ops.vjp(_prod_sum, x, y)
        return fn(s)
    x, y = rnd(4), rnd(4, seed=1)
    out, ct = v(Tensor(x), Tensor(np.float32(2.0)))
    np.testing.assert_allclose(out.asnumpy(), (x ** 3).sum(), rtol=1e-5)
    np.testing.assert_allclose(ct.asnumpy(), 2 * 3 * x * x, rtol=1e-5)
    gx, gy = v2(Tensor(x), Tensor(y), Tensor(np.float32(3.0)))
    np.testing.assert_allclose(gx.asnumpy(), 3 * y, rtol=1e-6)
    np.testing.assert_allclose(gy.asnumpy(), 3 * x, rtol=1e-6)


def test_get_grad_with_return_ids(mode):
    net = nn.Dense(3, 2)
    x = Tensor(rnd(4, 3))

    def loss(x):
        return net(x).sum()
    grads = ops.grad(loss, grad_position=0, weights=net.trainable_params(), return_ids=True)(x)
    gx = ops.get_grad(grads, 0)
    gw = ops.get_grad(grads, net.weight)
    gb = ops.get_grad(grads, net.bias.name)
    w = net.weight.asnumpy()
    np.testing.assert_allclose(gx.asnumpy(), np.tile(w.sum(0), (4, 1)), rtol=1e-5)
    np.testing.assert_allclose(gw.asnumpy(), np.tile(rnd(4, 3).sum(0), (2, 1)), rtol=1e-5)
    np.testing.assert_allclose(gb.asnumpy(), [4.0, 4.0], rtol=1e-6)
    with pytest.raises(ValueError, match="get_grad: no gradient for 2"):
        ops.get_grad(grads, 2)
    with pytest.raises(TypeError, match="identifier must be an input position"):
        ops.get_grad(grads, 1.5)


def test_bad_in_axes_inside_jit_names_the_line(mode):
    @jit
    def f(x):
        return ops.vmap(_cube_sum, in_axes=3)(x)
    with pytest.raises(ValueError, match=r"in_axes axis 3 for argument 0 is out of range for its shape \(2, 3\)"):
        f(Tensor(rnd(2, 3)))


def _cube_and_double(x):
    return (x * x * x).sum(), x * 2.0


def test_grad_has_aux_in_jit_and_under_vmap(mode):
    x = rnd(2, 3)

    @jit
    def g(t):
        return ops.grad(_cube_and_double, 0, None, True)(t)
    gx, (aux,) = g(Tensor(x[0]))
    np.testing.assert_allclose(gx.asnumpy(), 3 * x[0] ** 2, rtol=1e-5)
    np.testing.assert_allclose(aux.asnumpy(), 2 * x[0], rtol=1e-6)
    gx, (aux,) = ops.vmap(ops.grad(_cube_and_double, has_aux=True))(Tensor(x))
    np.testing.assert_allclose(gx.asnumpy(), 3 * x ** 2, rtol=1e-5)
    np.testing.assert_allclose(aux.asnumpy(), 2 * x, rtol=1e-6)


def test_vmap_of_ops_and_primitives_inside_jit(mode):
    reduce_sum = ops.ReduceSum(keep_dims=True)

    @jit
    def f(x, y):
        return ops.vmap(ops.mul, in_axes=(0, None))(x, y), ops.vmap(reduce_sum, in_axes=1)(x)
    x, y = rnd(3, 4), rnd(4, seed=1)
    prod, sums = f(Tensor(x), Tensor(y))
    np.testing.assert_allclose(prod.asnumpy(), x * y, rtol=1e-6)
    np.testing.assert_allclose(sums.asnumpy(), x.sum(axis=0, keepdims=True).T, rtol=1e-5)
