"""Causes of MindSpore's own CPU op tests failing with the import renamed (issue 14), fixed where
they live; each checked here in MindSpore's style, in both modes, against numpy: Neg/Invert on
the unsigned types, Inv on integers, Unique's first-appearance order and a reshape of its
dynamic-length result into a static shape, an exception's f-string naming a dynamic dim,
P.Pad's (before, after) pairs, P.Meshgrid compiled, a Parameter owning its storage, index errors
that are also RuntimeErrors, SeLU on integers, inplace_add with an int index, P.RandomShuffle
and P.ScatterAdd on a Parameter."""
import numpy as np
import pytest

import mycel as ms
from mycel import Parameter, Tensor, nn, ops
from mycel.ops import functional as F
from mycel.ops import operations as P

R = np.random.default_rng(18)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
UNSIGNED = [np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


class _Net(nn.Cell):
    """construct(*xs) = fn(*xs), so that GRAPH_MODE compiles it."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, *xs):
        return self.fn(*xs)


def _run(mode, fn, *xs):
    ms.set_context(mode=mode)
    return _Net(fn)(*xs)


def _unique_first(x):
    """Distinct values in order of first appearance and each element's index into them."""
    flat = x.ravel()
    _, first, inv = np.unique(flat, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return flat[np.sort(first)], rank[inv.ravel()].reshape(x.shape)


@MODES
@pytest.mark.parametrize("dtype", UNSIGNED)
def test_neg_and_invert_wrap_unsigned(mode, dtype):
    x = R.integers(0, np.iinfo(dtype).max, size=(3, 5), dtype=dtype)
    neg = _run(mode, P.Neg(), Tensor(x))
    np.testing.assert_array_equal(neg.asnumpy(), np.negative(x))
    inv = _run(mode, P.Invert(), Tensor(x))
    np.testing.assert_array_equal(inv.asnumpy(), np.invert(x))
    assert neg.dtype == inv.dtype == Tensor(x).dtype


@MODES
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32])
def test_inv_of_integers_truncates_in_their_dtype(mode, dtype):
    lo = -100 if np.issubdtype(dtype, np.signedinteger) else 1
    x = R.integers(lo, 100, size=(4, 6)).astype(dtype)
    x[x == 0] = 1
    x.flat[:2] = (1, -1) if lo < 0 else (1, 2)
    out = _run(mode, P.Inv(), Tensor(x))
    np.testing.assert_array_equal(out.asnumpy(), np.reciprocal(x))  # integer 1 // x, as numpy
    assert out.dtype == Tensor(x).dtype


@MODES
def test_unique_keeps_first_appearance_order(mode):
    x = np.array([[8, -3, 0, 0], [10, 1, 21, -3], [11, 4, -2, 10]], np.int32)
    values, idx = _run(mode, P.Unique(), Tensor(x))
    want_v, want_i = _unique_first(x)
    np.testing.assert_array_equal(values.asnumpy(), want_v)
    np.testing.assert_array_equal(idx.asnumpy(), want_i)
    assert idx.dtype == ms.int32


class _UniqueReshape(nn.Cell):
    """Unique's length is known only at run time; reshaped into a static (3, 3)."""

    def __init__(self):
        super().__init__()
        self.unique = P.Unique()
        self.reshape = P.Reshape()

    def construct(self, x):
        u, _ = self.unique(x)
        return F.softsign(self.reshape(u, (3, 3)))


@MODES
def test_reshape_of_a_dynamic_length_into_a_static_shape(mode):
    x = np.array([8., -3., 0., 0., 10., 1., 21., -3., 11., 4., 2., 10., 8.], np.float32)
    ms.set_context(mode=mode)
    out = _UniqueReshape()(Tensor(x))
    u = _unique_first(x)[0].reshape(3, 3)
    np.testing.assert_allclose(out.asnumpy(), u / (1 + np.abs(u)), rtol=1e-6)
    with pytest.raises((ValueError, RuntimeError), match="reshape"):  # 8 values: checked when run
        _UniqueReshape()(Tensor(np.arange(8, dtype=np.float32)))


class _DepthCheck(nn.Cell):
    def construct(self, x):
        n, c, h, w = x.shape
        if c % 4:
            raise ValueError(f"channels must be a multiple of 4, got {c} for {x.shape!r:>8}")
        return x * 2.0


def test_exception_fstring_with_a_dynamic_dim_compiles():
    net = _DepthCheck()
    net.set_inputs(Tensor(shape=[None, None, None, None], dtype=ms.float32))
    ms.set_context(mode=ms.GRAPH_MODE)
    x = R.normal(size=(2, 8, 1, 1)).astype(np.float32)
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x * 2)
    with pytest.raises(ValueError, match=r"multiple of 4, got <int> for"):
        net(Tensor(R.normal(size=(2, 6, 1, 1)).astype(np.float32)))


@MODES
def test_pad_takes_before_after_pairs(mode):
    x = R.normal(size=(2, 3)).astype(np.float32)
    out = _run(mode, P.Pad(((1, 0), (2, 1))), Tensor(x))
    np.testing.assert_array_equal(out.asnumpy(), np.pad(x, ((1, 0), (2, 1))))
    with pytest.raises(ValueError, match="pair"):
        P.Pad(((1, 0, 2),))


@MODES
@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid_primitive_compiles(mode, indexing):
    a, b, c = (np.arange(n, dtype=np.int32) for n in (3, 4, 2))
    outs = _run(mode, P.Meshgrid(indexing), (Tensor(a), Tensor(b), Tensor(c)))
    for got, want in zip(outs, np.meshgrid(a, b, c, indexing=indexing)):
        np.testing.assert_array_equal(got.asnumpy(), want)


class _ScatterNdAddNet(nn.Cell):
    def __init__(self, x):
        super().__init__()
        self.x = Parameter(x, name="x")
        self.scatter = P.ScatterNdAdd()

    def construct(self, indices, updates):
        self.scatter(self.x, indices, updates)
        return self.x


@MODES
def test_parameter_owns_its_storage(mode):
    # MindSpore copies a tensor referenced elsewhere into the Parameter: in-place updates of two
    # Parameters made from one tensor leave it, and each other, alone.
    x = Tensor(np.zeros((2, 3), np.float32))
    idx = Tensor(np.array([[0, 1], [1, 2]], np.int32))
    upd = Tensor(np.array([1.0, 2.0], np.float32))
    want = np.zeros((2, 3), np.float32)
    want[0, 1], want[1, 2] = 1.0, 2.0
    ms.set_context(mode=mode)
    for _ in range(2):
        np.testing.assert_array_equal(_ScatterNdAddNet(x)(idx, upd).asnumpy(), want)
    np.testing.assert_array_equal(x.asnumpy(), np.zeros((2, 3)))


@MODES
def test_index_out_of_range_is_also_a_runtime_error(mode):
    net = _ScatterNdAddNet(Tensor(np.ones((4, 4), np.float32)))
    ms.set_context(mode=mode)
    for kind in (IndexError, RuntimeError):
        with pytest.raises(kind, match="out of range"):
            net(Tensor(np.array([[0], [4]], np.int32)), Tensor(np.ones((2, 4), np.float32)))


@MODES
@pytest.mark.parametrize("dtype", [np.int8, np.int32])
def test_selu_of_integers_truncates(mode, dtype):
    x = R.integers(-5, 6, size=(3, 4)).astype(dtype)
    out = _run(mode, P.SeLU(), Tensor(x))
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    xf = x.astype(np.float64)
    want = np.where(xf > 0, scale * xf, scale * alpha * np.expm1(xf))
    np.testing.assert_array_equal(out.asnumpy(), np.trunc(want).astype(dtype))


@MODES
def test_inplace_add_with_an_int_index(mode):
    x = R.normal(size=(5, 2, 3)).astype(np.float32)
    v = R.normal(size=(1, 2, 3)).astype(np.float32)
    out = _run(mode, P.InplaceAdd(3), Tensor(x), Tensor(v))
    want = x.copy()
    want[3] += v[0]
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)


@MODES
def test_random_shuffle_permutes_the_first_dim(mode):
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    out = _run(mode, P.RandomShuffle(seed=3, seed2=1), Tensor(x)).asnumpy()
    assert sorted(out[:, 0].tolist()) == x[:, 0].tolist()  # a permutation of the rows,
    np.testing.assert_array_equal(out, x[(out[:, 0] // 4).astype(int)])  # whole rows moved
    scalar = Tensor(np.array(2.5, np.float32))
    assert float(_run(mode, P.RandomShuffle(), scalar).asnumpy()) == 2.5
    with pytest.raises(TypeError):
        ops.shuffle(Tensor(x), seed=1.5)
    with pytest.raises(ValueError):
        ops.shuffle(Tensor(x), seed=-3)


class _ScatterAddNet(nn.Cell):
    def __init__(self, x):
        super().__init__()
        self.x = Parameter(x, name="x")
        self.scatter = P.ScatterAdd(use_locking=True)

    def construct(self, indices, updates):
        self.scatter(self.x, indices, updates)
        return self.x


@MODES
def test_scatter_add_updates_the_parameter_rows(mode):
    x = R.normal(size=(4, 3)).astype(np.float32)
    idx = np.array([[0, 2], [2, 3]], np.int32)
    upd = R.normal(size=(2, 2, 3)).astype(np.float32)
    ms.set_context(mode=mode)
    out = _ScatterAddNet(Tensor(x))(Tensor(idx), Tensor(upd))
    want = x.copy()
    np.add.at(want, idx.ravel(), upd.reshape(-1, 3))
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)


class _StarCall(nn.Cell):
    """MindSpore's `self.op(*inputs)` with inputs = (x, axis): the axis reaches the primitive's
    call positionally through a tuple."""

    def __init__(self, prim, axis):
        super().__init__()
        self.prim = prim
        self.axis = axis

    def construct(self, x):
        inputs = (x, self.axis)
        return self.prim(*inputs)


@MODES
@pytest.mark.parametrize("name, ref", [("ReduceMean", np.mean), ("ReduceProd", np.prod), ("ReduceMax", np.max),
                                       ("ReduceAll", np.all)])
def test_reductions_take_keep_dims_positionally(mode, name, ref):
    x = R.integers(1, 4, size=(2, 3, 4)).astype(np.float32)
    if name == "ReduceAll":
        x = x > 1
    for keep in (False, True):
        ms.set_context(mode=mode)
        out = _StarCall(getattr(P, name)(keep), 1)(Tensor(x))
        np.testing.assert_allclose(out.asnumpy(), ref(x, axis=1, keepdims=keep), rtol=1e-6)
    with pytest.raises(TypeError, match="keep_dims"):
        getattr(P, name)((0, 1))


def _reduce_by(fn, x):
    return fn(x, (1,))  # an op passed as a value, its axis given and keep_dims left out


@MODES
def test_unsorted_segment_reductions_and_an_op_value_with_positional_axis(mode):
    x = R.normal(size=(6, 3)).astype(np.float32)
    ids = np.array([0, 2, 0, 1, 2, 0], np.int32)
    ms.set_context(mode=mode)
    got = _Net(lambda a, b: ops.unsorted_segment_max(a, b, 4))(Tensor(x), Tensor(ids)).asnumpy()
    for s in range(3):
        np.testing.assert_allclose(got[s], x[ids == s].max(0), rtol=1e-6)
    assert (got[3] == np.finfo(np.float32).min).all()  # an empty segment: the lowest value
    got = _Net(lambda a, b: ops.unsorted_segment_sum(a, b, 4))(Tensor(x), Tensor(ids)).asnumpy()
    np.testing.assert_allclose(got[:3], [x[ids == s].sum(0) for s in range(3)], rtol=1e-5)
    out = _run(mode, lambda a: _reduce_by(ops.min, a), Tensor(x))
    np.testing.assert_allclose(out.asnumpy(), x.min(1), rtol=1e-6)


class _Dropout2D(nn.Cell):
    def __init__(self):
        super().__init__()
        self.drop = P.Dropout2D(keep_prob=0.6)

    def construct(self, x):
        return self.drop(x)


def test_dropout2d_with_dims_known_only_at_run_time():
    x = R.normal(size=(8, 50, 2, 3)).astype(np.float32)
    net = _Dropout2D()
    net.set_inputs(Tensor(shape=[None, None, None, None], dtype=ms.float32))
    ms.set_context(mode=ms.GRAPH_MODE)
    y, mask = net(Tensor(x))
    m = mask.asnumpy()
    assert m.shape == x.shape and m.dtype == np.bool_
    assert (m == m[:, :, :1, :1]).all()  # whole channels kept or dropped
    np.testing.assert_allclose(y.asnumpy(), x * m / 0.6, rtol=1e-6)
    assert 0.45 < m.mean() < 0.75  # 400 channels, keep 0.6: 6 sigma is 0.15
