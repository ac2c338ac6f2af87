"""Values known only at run time where MindSpore's tests pass them (issue 14): matrix_band_part's
bounds, isinstance / type / tuple() on run-time values in graph mode, and the primitives whose
MindSpore calling convention differs from the registry's (TopK(sorted), Conv2D/Conv3D's
(out_channel, kernel_size, mode, ...), Dense's 1-d weight), div's rounding_mode, cross_entropy
with mixed float types and TimeDistributed. Each against numpy, in both modes."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.ops import operations as P

MODES = [mycel.GRAPH_MODE, mycel.PYNATIVE_MODE]


@pytest.fixture(params=MODES, ids=["graph", "pynative"])
def mode(request):
    mycel.set_context(mode=request.param)
    yield request.param
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def band_ref(x, lower, upper):
    out = x
    if lower >= 0:
        out = np.triu(out, -lower)
    if upper >= 0:
        out = np.tril(out, upper)
    return out


class Band(nn.Cell):
    def construct(self, x, lower, upper):
        return ops.matrix_band_part(x, lower, upper)


@pytest.mark.parametrize("lower, upper", [(-1, -1), (0, 0), (1, 2), (2, -1), (-1, 1)])
def test_matrix_band_part_bounds_as_tensors_and_ints(mode, lower, upper):
    x = rand(2, 4, 5)
    want = band_ref(x, lower, upper)
    net = Band()
    np.testing.assert_array_equal(net(Tensor(x), Tensor(lower, mycel.int64), Tensor(upper, mycel.int32)).asnumpy(),
                                  want)
    np.testing.assert_array_equal(net(Tensor(x), lower, upper).asnumpy(), want)


class Checks(nn.Cell):
    def construct(self, xs):
        ok = isinstance(xs, (tuple, list)) and type(xs[0]).__name__ == "Tensor"
        shape = list(xs[1].shape)  # a run-time int (the dynamic dim) among constants
        return ops.stack(xs), tuple(shape), ok


def test_isinstance_type_and_tuple_of_run_time_values_in_graph_mode(mode):
    net = Checks()
    if mode == mycel.GRAPH_MODE:
        net.set_inputs((Tensor(shape=[None, 2], dtype=mycel.float32), Tensor(shape=[None, 2], dtype=mycel.float32)))
    a, b = rand(3, 2), rand(3, 2, seed=1)
    stacked, shape, ok = net((Tensor(a), Tensor(b)))
    np.testing.assert_array_equal(stacked.asnumpy(), np.stack([a, b]))
    assert tuple(int(s) for s in shape) == (3, 2) and bool(ok)


class TupleOfList(nn.Cell):
    def construct(self, x):
        size = [1, 2]
        size.append(x.shape[0])
        return ops.zeros(tuple(size), mycel.float32) + x.sum()


def test_tuple_of_a_list_holding_a_run_time_int(mode):
    net = TupleOfList()
    if mode == mycel.GRAPH_MODE:
        net.set_inputs(Tensor(shape=[None], dtype=mycel.float32))
    for n in (3, 5):
        x = rand(n)
        np.testing.assert_allclose(net(Tensor(x)).asnumpy(), np.full((1, 2, n), x.sum(), np.float32), rtol=1e-5)


@pytest.mark.parametrize("sorted_", [True, False])
@pytest.mark.parametrize("k", [4, 2])
def test_topk_sorted_positionally(mode, sorted_, k):
    x = rand(3, 4, seed=2)
    values, indices = P.TopK(sorted_)(Tensor(x), k)
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    if not sorted_:  # the k largest in their order in x (x itself when k is the whole axis)
        order = np.sort(order, axis=-1)
    np.testing.assert_array_equal(indices.asnumpy(), order)
    np.testing.assert_array_equal(values.asnumpy(), np.take_along_axis(x, order, -1))
    assert P.TopK().sorted is True
    with pytest.raises(TypeError, match="TopK: sorted must be a bool, got 4"):
        P.TopK(4)


def conv_ref(x, w, stride=1, pad=0):
    """Cross-correlation of NC(D)HW x with w, numpy loops over the window."""
    nd = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(pad, pad)] * nd)
    ks = w.shape[2:]
    out_sp = [(x.shape[2 + i] - ks[i]) // stride + 1 for i in range(nd)]
    out = np.zeros((x.shape[0], w.shape[0], *out_sp), np.float64)
    for idx in np.ndindex(*out_sp):
        sl = tuple(slice(i * stride, i * stride + k) for i, k in zip(idx, ks))
        patch = x[(slice(None), slice(None)) + sl]
        out[(slice(None), slice(None)) + idx] = np.tensordot(patch, w, axes=(list(range(1, nd + 2)),
                                                                            list(range(1, nd + 2))))
    return out.astype(np.float32)


def test_conv2d_and_conv3d_in_mindsporess_argument_order(mode):
    x2, w2 = rand(1, 3, 5, 5), rand(2, 3, 3, 3, seed=1)
    conv2 = P.Conv2D(2, 3, mode=1, pad_mode="pad", pad=1, stride=2, dilation=1, group=1)
    np.testing.assert_allclose(conv2(Tensor(x2), Tensor(w2)).asnumpy(), conv_ref(x2, w2, 2, 1), rtol=1e-4, atol=1e-4)
    assert (conv2.out_channel, conv2.kernel_size) == (2, 3)
    x3, w3 = rand(1, 2, 4, 4, 4, seed=2), rand(3, 2, 2, 2, 2, seed=3)
    conv3 = P.Conv3D(3, 2, mode=1, pad_mode="valid", pad=0, stride=1, dilation=1, group=1)
    np.testing.assert_allclose(conv3(Tensor(x3), Tensor(w3)).asnumpy(), conv_ref(x3, w3), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="Conv2D: mode must be 1"):
        P.Conv2D(2, 3, mode=2)
    # the registry's keywords still configure it
    np.testing.assert_allclose(P.Conv2D(pad_mode="valid")(Tensor(x2), Tensor(w2)).asnumpy(), conv_ref(x2, w2),
                               rtol=1e-4, atol=1e-4)


def test_dense_primitive_with_a_1d_weight(mode):
    x, w, b = rand(2, 3), rand(3, seed=1), np.float32(0.5)
    np.testing.assert_allclose(P.Dense()(Tensor(x), Tensor(w), Tensor(b)).asnumpy(), x @ w + b, rtol=1e-5)
    w2, b2 = rand(4, 3, seed=2), rand(4, seed=3)
    np.testing.assert_allclose(P.Dense()(Tensor(x), Tensor(w2), Tensor(b2)).asnumpy(), x @ w2.T + b2, rtol=1e-5)


class Divs(nn.Cell):
    def construct(self, x, y):
        return x.div(y), x.div(y, rounding_mode="floor"), ops.div(x, y, rounding_mode="trunc"), ops.div(x, y)


def test_div_rounding_modes(mode):
    x, y = rand(4, 4) * 3, rand(4, seed=1)
    got = [r.asnumpy() for r in Divs()(Tensor(x), Tensor(y))]
    q = x / y
    for g, want in zip(got, (q, np.floor(q), np.trunc(q), q)):
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="rounding_mode must be None, 'floor' or 'trunc', got 'round'"):
        ops.div(Tensor(x), Tensor(y), rounding_mode="round")


@pytest.mark.parametrize("logits_t, weight_t", [(np.float64, np.float32), (np.float32, np.float64)])
def test_cross_entropy_with_logits_and_weight_of_different_float_types(logits_t, weight_t):
    logits, target, weight = rand(3, 5).astype(logits_t), np.array([1, 0, 4], np.int32), np.abs(rand(5, seed=1))
    weight = weight.astype(weight_t)
    loss = ops.cross_entropy(Tensor(logits), Tensor(target), Tensor(weight))
    assert loss.dtype == mycel.float64  # the wider one, as MindSpore's product gives
    lp = logits.astype(np.float64) - np.log(np.exp(logits.astype(np.float64)).sum(1, keepdims=True))
    w = weight.astype(np.float64)[target]
    want = -(lp[np.arange(3), target] * w).sum() / w.sum()
    np.testing.assert_allclose(loss.asnumpy(), want, rtol=1e-6)


class Flat(nn.Cell):
    def construct(self, x):
        return x.reshape((x.shape[0], -1)) * 2.0


@pytest.mark.parametrize("time_axis, reshape_with_axis", [(1, 0), (0, 1), (1, None), (2, 0), (-1, 1)])
def test_time_distributed_matches_a_loop_over_steps(mode, time_axis, reshape_with_axis):
    x = rand(3, 4, 5, seed=4)
    layer = nn.Dense(5, 6) if time_axis in (1, 0) else Flat()
    td = nn.TimeDistributed(layer, time_axis, reshape_with_axis)
    got = td(Tensor(x)).asnumpy()
    t = time_axis % 3
    steps = [layer(Tensor(np.take(x, i, axis=t))).asnumpy() for i in range(x.shape[t])]
    want = np.stack(steps, axis=t if reshape_with_axis is None else _time_out_axis(t, reshape_with_axis % 3))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _time_out_axis(t, r):
    """Where the time axis lands with reshape_with_axis: next to r (after it unless t < r)."""
    return r + 1 if t > r else r - 1


def test_time_distributed_takes_a_primitive_and_refuses_a_lost_axis():
    x = rand(3, 2, 4, seed=5)
    got = nn.TimeDistributed(P.Argmax(axis=1, output_type=mycel.int32), 1, 0)(Tensor(x)).asnumpy()
    np.testing.assert_array_equal(got, np.argmax(x, axis=2).astype(np.int32))
    with pytest.raises(ValueError, match="lost the merged axis"):
        nn.TimeDistributed(P.ReduceSum(), 1, 0)(Tensor(x))
    with pytest.raises(ValueError, match=r"reshape_with_axis \(1\) must differ from time_axis \(1\)"):
        nn.TimeDistributed(Flat(), 1, 1)(Tensor(x))


class Inplace(nn.Cell):
    def __init__(self):
        super().__init__()
        self.update = P.InplaceUpdate((0, 2))

    def construct(self, x, v):
        return self.update(x, v), ops.tensor_scatter_update(x, Tensor(np.array([[1]], np.int64)), v[:1])


def test_inplace_and_scatter_update_with_a_dynamic_first_dim(mode):
    net = Inplace()
    if mode == mycel.GRAPH_MODE:
        net.set_inputs(Tensor(shape=[None, 4, 3], dtype=mycel.float32), Tensor(shape=[2, 4, 3], dtype=mycel.float32))
    for rows in (3, 5):
        x, v = rand(rows, 4, 3, seed=rows), rand(2, 4, 3, seed=9)
        want = x.copy()
        want[[0, 2]] = v
        want2 = x.copy()
        want2[1] = v[0]
        got, got2 = net(Tensor(x), Tensor(v))
        np.testing.assert_array_equal(got.asnumpy(), want)
        np.testing.assert_array_equal(got2.asnumpy(), want2)


def test_conv3d_transpose_with_a_dynamic_batch(mode):
    conv = P.Conv3DTranspose(2, 2, 2, pad_mode="pad", pad=1)
    x, w = rand(2, 2, 3, 3, 3), rand(2, 2, 2, 2, 2, seed=1)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = conv

        def construct(self, x, w):
            return self.conv(x, w)

    net = Net()
    if mode == mycel.GRAPH_MODE:
        net.set_inputs(Tensor(shape=[None, 2, 3, 3, 3], dtype=mycel.float32),
                       Tensor(shape=[None, 2, 2, 2, 2], dtype=mycel.float32))
    got = net(Tensor(x), Tensor(w)).asnumpy()
    # the transposed convolution is the adjoint of conv3d: <conv(y), x> == <y, conv_t(x)>
    y = rand(2, 2, 2, 2, 2, seed=2)
    conv_y = conv_ref(np.pad(y, [(0, 0)] * 2 + [(1, 1)] * 3), w)  # pad=1 each side
    np.testing.assert_allclose((conv_y * x).sum(), (y * got).sum(), rtol=1e-4)
    assert got.shape == (2, 2, 2, 2, 2)


class Offsets(nn.Cell):
    def __init__(self):
        super().__init__()
        from mycel.ops.operations import _grad_ops as G
        self.offsets = G.ConcatOffset(3, 0)

    def construct(self, x, y, z):
        x, y = ops.unique(x)[0], ops.unique(y)[0]  # lengths known only when they run
        return self.offsets((x.reshape((-1, 1, 2)), y.reshape((-1, 1, 2)), z))


def test_concat_offset_of_sizes_known_only_at_run_time(mode):
    x = np.array([1, 2, 3, 4, 5, 6], np.float32)
    y = np.array([1, 2, 3, 4], np.float32)
    z = rand(5, 1, 2)
    got = Offsets()(Tensor(x), Tensor(y), Tensor(z)).asnumpy()
    np.testing.assert_array_equal(got, np.array([[0, 0, 0], [3, 0, 0], [5, 0, 0]], np.int64))
    assert got.dtype == np.int64
