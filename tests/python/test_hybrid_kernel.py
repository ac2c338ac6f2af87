"""ops.kernel (MindSpore's Hybrid DSL) and ops.Custom(func_type="hybrid"): the function run as
numpy, the translated C++ eagerly and in graph mode, against numpy references."""
import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops
from mycel.ops import kernel
from mycel.ops.hybrid import HybridError


@kernel
def outer_product(a, b):
    d = allocate(a.shape, a.dtype)  # noqa: F821 (the DSL's names)
    c = output_tensor(a.shape, a.dtype)  # noqa: F821
    for i0 in range(a.shape[0]):
        for i1 in range(b.shape[1]):
            c[i0, i1] = 0.0
            for i2 in range(a.shape[1]):
                d[i0, i2] = 2 * a[i0, i2]
                c[i0, i1] = c[i0, i1] + sin(d[i0, i2] * b[i2, i1])  # noqa: F821
    return c


@kernel
def row_stats(x):
    """Per row: the max, the mean of the positive entries, and an int64 count of them."""
    n = x.shape[1]
    top = output_tensor((x.shape[0],), x.dtype)  # noqa: F821
    pos_mean = output_tensor((x.shape[0],), "float64")  # noqa: F821
    count = output_tensor((x.shape[0],), "int64")  # noqa: F821
    for i in parallel(x.shape[0]):  # noqa: F821
        m = x[i, 0]
        s = 0.0
        k = 0
        for j in reduce(n):  # noqa: F821
            m = max(m, x[i, j])
            if x[i, j] > 0:
                s += float64(x[i, j])  # noqa: F821
                k += 1
        top[i] = m
        pos_mean[i] = s / k if k > 0 else 0.0
        count[i] = k
    return top, pos_mean, count


@kernel
def int_arith(a):
    out = output_tensor((a.shape[0], 4), "int32")  # noqa: F821
    for idx in grid((a.shape[0], 1)):  # noqa: F821
        v = a[idx]
        out[idx[0], 0] = v // 3
        out[idx[0], 1] = v % 3
        out[idx[0], 2] = abs(v) + sign(v)  # noqa: F821
        out[idx[0], 3] = int32(sqrt(float32(v * v)))  # noqa: F821
    return out


@kernel
def shifted(a, k):
    out = output_tensor(a.shape, a.dtype)  # noqa: F821
    for i in range(a.shape[0]):
        out[i] = a[i + k]
    return out


class _TwoInputs(nn.Cell):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, a, b):
        return self.op(a, b) * 2


def _run_graph(op, x, y):
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        return _TwoInputs(op)(ms.Tensor(x), ms.Tensor(y))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_published_outer_product_numpy_eager_and_graph():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, (4, 4)).astype(np.float32)
    y = rng.normal(0, 1, (4, 4)).astype(np.float32)
    ref = np.sin(2 * x[:, :, None].astype(np.float64) * y[None]).sum(1)
    assert np.allclose(outer_product(x, y), ref, atol=1e-5)
    op = ops.Custom(outer_product)
    assert op.func_type == "hybrid"
    assert np.allclose(op(ms.Tensor(x), ms.Tensor(y)).asnumpy(), ref, atol=1e-5)
    assert np.allclose(_run_graph(op, x, y).asnumpy(), 2 * ref, atol=1e-5)
    assert len(op._cache) == 1  # one signature, translated and compiled once


def test_scalars_branches_reductions_and_several_outputs():
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, (37, 11)).astype(np.float32)
    x[3] = -1.0  # a row without positive entries
    want_top = x.max(1)
    pos = np.where(x > 0, x.astype(np.float64), 0)
    cnt = (x > 0).sum(1)
    want_mean = np.divide(pos.sum(1), cnt, out=np.zeros(37), where=cnt > 0)
    for got in (row_stats(x), ops.Custom(row_stats)(ms.Tensor(x))):
        top, mean, count = [np.asarray(g.asnumpy() if hasattr(g, "asnumpy") else g) for g in got]
        assert top.dtype == np.float32 and mean.dtype == np.float64 and count.dtype == np.int64
        assert np.array_equal(top, want_top) and np.array_equal(count, cnt)
        assert np.allclose(mean, want_mean, rtol=1e-12)


def test_integer_semantics_follow_python():
    a = np.array([[-7], [-6], [-1], [0], [5], [8]], np.int32)
    v = a[:, 0].astype(np.int64)
    want = np.stack([v // 3, v % 3, np.abs(v) + np.sign(v), np.abs(v)], 1).astype(np.int32)
    assert np.array_equal(int_arith(a), want)
    assert np.array_equal(ops.Custom(int_arith)(ms.Tensor(a)).asnumpy(), want)


def test_index_out_of_range_is_an_error_not_a_crash():
    a = np.arange(5, dtype=np.float32)
    with pytest.raises(IndexError):
        shifted(a, 1)  # numpy mode
    op = ops.Custom(shifted)
    with pytest.raises(IndexError, match=r"hybrid kernel 'shifted': an index out of range at line \d+"):
        op(ms.Tensor(a), ms.Tensor(np.array(1, np.int64)))


def test_translation_errors_name_the_kernel_and_line():
    @kernel
    def uses_while(a):
        c = output_tensor(a.shape, a.dtype)  # noqa: F821
        while True:
            pass
        return c

    @kernel
    def scalar_out_of_scope(a):
        c = output_tensor(a.shape, a.dtype)  # noqa: F821
        for i in range(a.shape[0]):
            t = a[i]
        c[0] = t
        return c

    @kernel
    def returns_input(a):
        return a

    x = ms.Tensor(np.ones(3, np.float32))
    with pytest.raises(HybridError, match=r"hybrid kernel 'uses_while' \(.*line \d+\): 'While' statements"):
        ops.Custom(uses_while)(x)
    with pytest.raises(NameError, match="name 't' is not defined here"):
        ops.Custom(scalar_out_of_scope)(x)
    with pytest.raises(HybridError, match="returns tensors declared with output_tensor"):
        ops.Custom(returns_input)(x)
    with pytest.raises(TypeError, match="a hybrid func must be decorated with ops.kernel"):
        ops.Custom(lambda a: a, func_type="hybrid")
    with pytest.raises(ValueError, match="out_shape says"):
        ops.Custom(outer_product, out_shape=(3, 3), out_dtype=ms.float32)(
            ms.Tensor(np.ones((4, 4), np.float32)), ms.Tensor(np.ones((4, 4), np.float32)))


def test_hybrid_with_bprop_trains_through_grad():
    @kernel
    def cube(x):
        y = output_tensor(x.shape, x.dtype)  # noqa: F821
        for i in range(x.shape[0]):
            y[i] = x[i] * x[i] * x[i]
        return y

    op = ops.Custom(cube, bprop=lambda x, out, dout: (3.0 * x * x * dout,))
    x = ms.Tensor(np.array([0.5, -1.0, 2.0], np.float32))
    g = ms.grad(lambda v: op(v).sum())(x)
    assert np.allclose(g.asnumpy(), 3 * x.asnumpy() ** 2)
