"""Records in graph mode: CSRTensor / COOTensor / RowTensor built inside compiled code from
run-time tensors, and @jit_class objects (fields, methods, properties, operators), passed to and
returned from compiled functions and through if/while joins. Each program runs in GRAPH mode
against the same program in PYNATIVE mode and a numpy reference; gradients through the records'
fields against central finite differences in float64."""
import numpy as np
import pytest

import mycel
from mycel import COOTensor, CSRTensor, RowTensor, Tensor, nn, ops

R = np.random.default_rng(140)


def _csr_arrays(d):
    rows, cols = np.nonzero(d)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=d.shape[0]))])
    return indptr.astype(np.int32), cols.astype(np.int32), d[rows, cols]


def _sparse(m, n, dtype=np.float64):
    d = (R.random((m, n)) < 0.5) * R.standard_normal((m, n))
    d[0, :] = 0
    return d.astype(dtype)


def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def _both(fn, *args):
    """fn(*args) in PYNATIVE mode (plain Python) and compiled with jit in GRAPH mode."""
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    eager = fn(*args)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        graph = mycel.jit(fn)(*args)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    return eager, graph


def _np(x):
    return x.asnumpy() if isinstance(x, Tensor) else np.asarray(x)


@pytest.fixture()
def csr():
    d = _sparse(4, 5)
    ptr, ind, val = _csr_arrays(d)
    return d, Tensor(ptr), Tensor(ind), Tensor(val)


def test_csr_built_in_graph_mv_mm_to_dense_sum(csr):
    d, ptr, ind, val = csr
    v = R.standard_normal((5, 1))
    m = R.standard_normal((5, 3))

    def f(indptr, indices, values, vec, mat):
        x = CSRTensor(indptr, indices, values, (4, 5))
        return x.mv(vec), x.mm(mat), x.to_dense(), x.sum(1), x.sum(0), x.values * 2

    eager, graph = _both(f, ptr, ind, val, Tensor(v), Tensor(m))
    want = (d @ v, d @ m, d, d.sum(1, keepdims=True), d.sum(0, keepdims=True), _csr_arrays(d)[2] * 2)
    for e, g, w in zip(eager, graph, want):
        np.testing.assert_allclose(_np(g), w, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(_np(e), w, rtol=1e-12, atol=1e-12)


def test_csr_properties_astype_arithmetic(csr):
    d, ptr, ind, val = csr
    dense = R.standard_normal((4, 5))

    def f(indptr, indices, values, other):
        x = CSRTensor(indptr, indices, values, (4, 5))
        y = x.astype(mycel.float32)
        z = (x * other).to_dense()
        w = (x / (other + 10.0)).to_dense()
        n = (-x).to_dense() + x.abs().to_dense()
        return y.values, z, w, n, x + other, x.size, x.ndim, x.shape

    eager, graph = _both(f, ptr, ind, val, Tensor(dense))
    nz = d != 0
    want = (_csr_arrays(d)[2].astype(np.float32), d * dense * nz, d / (dense + 10.0) * nz,
            -d + np.abs(d), d + dense, int(nz.sum()), 2, (4, 5))
    for e, g, w in zip(eager, graph, want):
        np.testing.assert_allclose(_np(g), w, rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(_np(e), w, rtol=1e-6, atol=1e-12)
    assert graph[0].dtype == mycel.float32


def test_csr_as_graph_input_and_output(csr):
    d, ptr, ind, val = csr
    x = CSRTensor(ptr, ind, val, (4, 5))
    v = Tensor(R.standard_normal((5, 1)))

    def f(s, vec):
        return s.mv(vec), s * 3.0, s.shape, ops.csr_mv(s, vec), ops.csr_mm(s, vec, trans_a=False)

    eager, graph = _both(f, x, v)
    assert isinstance(graph[1], CSRTensor) and graph[1].shape == (4, 5)
    np.testing.assert_allclose(graph[0].asnumpy(), d @ v.asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(graph[1].to_dense().asnumpy(), 3 * d, rtol=1e-12)
    np.testing.assert_array_equal(graph[1].indptr.asnumpy(), ptr.asnumpy())
    np.testing.assert_allclose(eager[1].to_dense().asnumpy(), 3 * d, rtol=1e-12)
    assert graph[2] == (4, 5)
    np.testing.assert_allclose(graph[3].asnumpy(), d @ v.asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(graph[4].asnumpy(), d @ v.asnumpy(), rtol=1e-12)


def test_coo_and_row_tensor_in_graph():
    d = _sparse(3, 4)
    idx = np.stack(np.nonzero(d), 1).astype(np.int64)
    vals = d[np.nonzero(d)]
    rows = np.array([2, 0, 2], np.int32)
    rvals = R.standard_normal((3, 4))
    other = R.standard_normal((3, 4))

    def f(indices, values, r_idx, r_vals, dense):
        c = COOTensor(indices, values, (3, 4))
        r = RowTensor(r_idx, r_vals, (4, 4))
        return c.to_dense(), (c * dense).to_dense(), c.abs().to_dense(), r.to_dense(), (r * 2.0).to_dense(), c.size

    eager, graph = _both(f, Tensor(idx), Tensor(vals), Tensor(rows), Tensor(rvals), Tensor(other))
    row_dense = np.zeros((4, 4))
    np.add.at(row_dense, rows, rvals)
    want = (d, d * other, np.abs(d), row_dense, 2 * row_dense, len(vals))
    for e, g, w in zip(eager, graph, want):
        np.testing.assert_allclose(_np(g), w, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(_np(e), w, rtol=1e-12, atol=1e-12)


def test_records_through_if_and_while(csr):
    d, ptr, ind, val = csr
    v = R.standard_normal((5, 1))

    def f(indptr, indices, values, vec, flag, n):
        x = CSRTensor(indptr, indices, values, (4, 5))
        if flag > 0:  # a run-time condition: one class, one layout on both branches
            x = x * 2.0
        else:
            x = CSRTensor(indptr, indices, values + 1.0, (4, 5))
        i = 0
        while i < n:  # a loop-carried record
            x = x * 0.5
            i += 1
        a, b, c, shape = x.to_tuple()
        return x.mv(vec), c, shape

    for flag, n in ((1.0, 3), (-1.0, 2)):
        eager, graph = _both(f, ptr, ind, val, Tensor(v), Tensor(np.float64(flag)), Tensor(np.int32(n)))
        vals = (_csr_arrays(d)[2] * 2 if flag > 0 else _csr_arrays(d)[2] + 1) * 0.5 ** n
        dd = np.zeros_like(d)
        dd[np.nonzero(d)] = vals
        np.testing.assert_allclose(graph[0].asnumpy(), dd @ v, rtol=1e-12)
        np.testing.assert_allclose(graph[1].asnumpy(), vals, rtol=1e-12)
        np.testing.assert_allclose(eager[0].asnumpy(), dd @ v, rtol=1e-12)
        assert graph[2] == (4, 5)


def test_gradients_to_values_and_dense_operand(csr):
    d, ptr, ind, val = csr
    m = R.standard_normal((5, 3))

    def loss(values, mat):
        x = CSRTensor(ptr, ind, values, (4, 5))
        y = x.mm(mat) + (x * 2.0).to_dense().sum()
        return (y * y).sum()

    def ref(values, mat):
        dd = np.zeros((4, 5))
        dd[np.nonzero(d)] = values
        y = dd @ mat + 2 * values.sum()
        return (y * y).sum()

    gv = _numeric_grad(lambda v_: ref(v_, m), val.asnumpy())
    gm = _numeric_grad(lambda m_: ref(val.asnumpy(), m_), m)
    for mode in (mycel.PYNATIVE_MODE, mycel.GRAPH_MODE):
        mycel.set_context(mode=mode)
        try:
            a, b = mycel.grad(loss, grad_position=(0, 1))(val, Tensor(m))  # GRAPH_MODE compiles
        finally:
            mycel.set_context(mode=mycel.PYNATIVE_MODE)
        np.testing.assert_allclose(a.asnumpy(), gv, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(b.asnumpy(), gm, rtol=1e-6, atol=1e-6)


def test_gradient_for_a_sparse_argument_is_a_sparse_tensor(csr):
    # MindSpore: grad with respect to a CSRTensor / COOTensor argument is a tensor of that class,
    # same indices, the values' gradients; in both modes (PyNative takes graph mode's transform).
    d, ptr, ind, val = csr
    m = R.standard_normal((5, 3))

    def loss(x, mat):
        y = x.mm(mat)
        return (y * y).sum()

    def ref(values, mat):
        dd = np.zeros((4, 5))
        dd[np.nonzero(d)] = values
        return ((dd @ mat) ** 2).sum()

    gv = _numeric_grad(lambda v_: ref(v_, m), val.asnumpy())
    gm = _numeric_grad(lambda m_: ref(val.asnumpy(), m_), m)
    rows, cols = np.nonzero(d)
    coo_idx = Tensor(np.stack([rows, cols], 1).astype(np.int32))
    for mode in (mycel.PYNATIVE_MODE, mycel.GRAPH_MODE):
        mycel.set_context(mode=mode)
        try:
            x = CSRTensor(ptr, ind, val, (4, 5))
            g, gmat = mycel.grad(loss, grad_position=(0, 1))(x, Tensor(m))
            value, g_only = mycel.value_and_grad(loss)(x, Tensor(m))
            coo = COOTensor(coo_idx, val, (4, 5))
            g_coo = mycel.grad(lambda c, mat: ((c.to_dense() @ mat) ** 2).sum())(coo, Tensor(m))
        finally:
            mycel.set_context(mode=mycel.PYNATIVE_MODE)
        assert type(g) is CSRTensor and g.shape == (4, 5)
        np.testing.assert_array_equal(g.indptr.asnumpy(), ptr.asnumpy())
        np.testing.assert_array_equal(g.indices.asnumpy(), ind.asnumpy())
        np.testing.assert_allclose(g.values.asnumpy(), gv, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(gmat.asnumpy(), gm, rtol=1e-6, atol=1e-6)
        assert type(g_only) is CSRTensor and value.asnumpy() == pytest.approx(ref(val.asnumpy(), m))
        np.testing.assert_allclose(g_only.values.asnumpy(), gv, rtol=1e-6, atol=1e-6)
        assert type(g_coo) is COOTensor
        np.testing.assert_array_equal(g_coo.indices.asnumpy(), coo_idx.asnumpy())
        np.testing.assert_allclose(g_coo.values.asnumpy(), gv, rtol=1e-6, atol=1e-6)


def test_csr_in_cell_construct_and_bad_shapes(csr):
    d, ptr, ind, val = csr

    class Net(nn.Cell):
        def construct(self, indptr, indices, values, x):
            return CSRTensor(indptr, indices, values, (4, 5)).mm(x)

    x = Tensor(R.standard_normal((5, 2)))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        np.testing.assert_allclose(Net()(ptr, ind, val, x).asnumpy(), d @ x.asnumpy(), rtol=1e-12)
        with pytest.raises(ValueError, match="indptr must have length rows"):
            Net()(Tensor(np.zeros(3, np.int32)), ind, val, x)
        with pytest.raises(TypeError, match="indices must be int16, int32 or int64"):
            Net()(ptr, Tensor(ind.asnumpy().astype(np.float32)), val, x)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@mycel.jit_class
class Affine:
    """A jit_class with tensor and int fields, a property, methods and an operator."""

    def __init__(self, w, b, scale=2):
        self.w = w
        self.b = b
        if scale > 1:
            self.scale = scale
        else:
            self.scale = 1

    @property
    def out_dim(self):
        return self.w.shape[1]

    def apply(self, x):
        return ops.matmul(x, self.w) * self.scale + self.b

    def shifted(self, delta):
        return Affine(self.w, self.b + delta, self.scale)

    def __add__(self, other):
        return Affine(self.w + other.w, self.b + other.b, self.scale)


def test_jit_class_inside_graph():
    w = R.standard_normal((3, 2))
    b = R.standard_normal((2,))
    x = R.standard_normal((4, 3))

    def f(w_, b_, x_):
        a = Affine(w_, b_, scale=3)
        c = a.shifted(1.0) + a
        return a.apply(x_), c.apply(x_), a.out_dim, a.scale, c.b

    eager, graph = _both(f, Tensor(w), Tensor(b), Tensor(x))
    want = (x @ w * 3 + b, x @ (2 * w) * 3 + 2 * b + 1, 2, 3, 2 * b + 1)
    for e, g, wv in zip(eager, graph, want):
        np.testing.assert_allclose(_np(g), wv, rtol=1e-12)
        np.testing.assert_allclose(_np(e), wv, rtol=1e-12)


def test_jit_class_input_output_attribute_and_gradient():
    w = R.standard_normal((3, 2))
    b = R.standard_normal((2,))
    x = R.standard_normal((4, 3))
    a = Affine(Tensor(w), Tensor(b))

    def f(obj, x_):
        return obj.shifted(0.5), obj.apply(x_)

    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        r, y = mycel.jit(f)(a, Tensor(x))

        class Net(nn.Cell):
            def __init__(self):
                super().__init__()
                self.aff = a  # made outside: a compile-time object, as before

            def construct(self, x_):
                return self.aff.apply(x_) + self.aff.b

        z = Net()(Tensor(x))

        def loss(w_, x_):
            return Affine(w_, Tensor(b)).apply(x_).sum() ** 2

        gw = mycel.grad(loss)(Tensor(w), Tensor(x))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    assert isinstance(r, Affine) and r.scale == 2
    np.testing.assert_allclose(r.b.asnumpy(), b + 0.5, rtol=1e-12)
    np.testing.assert_allclose(y.asnumpy(), x @ w * 2 + b, rtol=1e-12)
    np.testing.assert_allclose(z.asnumpy(), x @ w * 2 + 2 * b, rtol=1e-12)
    ref = _numeric_grad(lambda w_: ((x @ w_ * 2 + b).sum()) ** 2, w)
    np.testing.assert_allclose(gw.asnumpy(), ref, rtol=1e-6, atol=1e-6)


class Plain:
    def __init__(self, w):
        self.w = w


@mycel.jit_class
class Frozen:
    def __init__(self, w):
        self.w = w

    def set_w(self, v):
        self.w = v
        return v


def test_jit_class_errors():
    t = Tensor(np.ones((2,)))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        with pytest.raises(NotImplementedError, match="class .*Plain.*jit_class"):
            mycel.jit(lambda x: Plain(x).w)(t)
        with pytest.raises(AttributeError, match="'Frozen' object has no field, method or property 'v'"):
            mycel.jit(lambda x: Frozen(x).v)(t)
        with pytest.raises(SyntaxError, match="only in its __init__") as e:
            mycel.jit(lambda x: Frozen(x).set_w(x))(t)
        assert any("Frozen.set_w" in n for n in getattr(e.value, "__notes__", []))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    with pytest.raises(TypeError, match="jit_class: expects a class"):
        mycel.jit_class(3)


def test_keywords_int16_copy_form_and_run_time_index_check(csr):
    d, ptr, ind, val = csr
    v = R.standard_normal((5, 1))

    def f(indptr, indices, values, vec):
        x = CSRTensor(indptr, indices, values, (4, 5))
        y = CSRTensor(csr_tensor=x)
        return y.sum(axis=1), x.indptr, y.mv(dense_vector=vec)

    p16, i16 = Tensor(ptr.asnumpy().astype(np.int16)), Tensor(ind.asnumpy().astype(np.int16))
    eager, graph = _both(f, p16, i16, val, Tensor(v))
    for e, g, w in zip(eager, graph, (d.sum(1, keepdims=True), ptr.asnumpy(), d @ v)):
        np.testing.assert_allclose(_np(g), w, rtol=1e-12)
        np.testing.assert_allclose(_np(e), w, rtol=1e-12)
    assert graph[1].dtype == mycel.int32  # int16 indices widen as eagerly
    # index values are checked at run time, by the registry op that reads them
    bad = ind.asnumpy().copy()
    bad[-1] = 9
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        with pytest.raises(ValueError, match=r"column index 9 .* out of range for 5 columns"):
            mycel.jit(lambda a, b, c: CSRTensor(a, b, c, (4, 5)).to_dense())(ptr, Tensor(bad), val)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_tensor_attributes_unchanged_and_record_into_cell(csr):
    d, ptr, ind, val = csr
    x = Tensor(R.standard_normal((2, 3)))

    class Net(nn.Cell):
        def construct(self, s, t):
            return s.to_dense() * 2, t.size, t.sum(), t.abs().astype(mycel.float32)

    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        out = Net()(CSRTensor(ptr, ind, val, (4, 5)), x)
        with pytest.raises(AttributeError, match="attribute 'foo' of f64"):
            mycel.jit(lambda t: t.foo)(x)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    np.testing.assert_allclose(out[0].asnumpy(), 2 * d, rtol=1e-12)
    assert int(_np(out[1])) == 6
    np.testing.assert_allclose(out[2].asnumpy(), x.asnumpy().sum(), rtol=1e-12)
    assert out[3].dtype == mycel.float32


@mycel.jit_class
class Counter:
    def __init__(self, v, n):
        self.v = v
        self.n = n


def test_compile_time_field_in_loops():
    def unrolled(v):
        c = Counter(v, 0)
        for _ in range(3):  # a compile-time trip count: the int field may change
            c = Counter(c.v * 2, c.n + 1)
        return c.v * c.n

    eager, graph = _both(unrolled, Tensor(np.ones(2)))
    np.testing.assert_allclose(graph.asnumpy(), [24.0, 24.0])
    np.testing.assert_allclose(eager.asnumpy(), [24.0, 24.0])

    def stays_a_loop(v, m):
        c = Counter(v, 0)
        i = 0
        while i < m:
            c = Counter(c.v * 2, c.n + 1)
            i += 1
        return c.v

    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        with pytest.raises(NotImplementedError, match=r"field 'n' of Counter 'c' is known at compile time and changes \(0 -> 1\)"):
            mycel.jit(stays_a_loop)(Tensor(np.ones(2)), Tensor(np.int32(3)))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@mycel.jit_class
class Holder:
    """A jit_class with a Cell field (its method calls the Cell: weights of the compiled Cell)."""

    def __init__(self, net, k):
        self.net = net
        self.k = k

    def run(self, x):
        return self.net(x) * self.k


def test_jit_class_holding_a_cell():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.d = nn.Dense(3, 2)

        def construct(self, x):
            h = Holder(self.d, 2.0)
            return h.run(x), h.net(x)

    x = Tensor(R.standard_normal((2, 3)).astype(np.float32))
    net = Net()
    w, b = net.d.weight.asnumpy(), net.d.bias.asnumpy()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        a, c = net(x)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    ref = x.asnumpy() @ w.T + b
    np.testing.assert_allclose(a.asnumpy(), 2 * ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.asnumpy(), ref, rtol=1e-5, atol=1e-6)
