"""CeLU, SearchSorted, FillDiagonal, InplaceUpdateV2, nn.L1Regularizer, ops.expand, Tensor.lstsq
and the checks of ApproximateEqual, SquareSumAll and the unsorted segment reductions, against
numpy, in graph and PyNative mode."""
import numpy as np
import pytest

import mycel as ms
from mycel import context, nn, ops
from mycel.ops import operations as P

RNG = np.random.default_rng(11)


@pytest.fixture(params=[context.GRAPH_MODE, context.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    old = context.get_context("mode")
    context.set_context(mode=request.param)
    yield request.param
    context.set_context(mode=old)


class Call(nn.Cell):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, x):
        return self.op(x)


class Call2(Call):
    def construct(self, x, y):
        return self.op(x, y)


@pytest.mark.parametrize("alpha", [1.0, 0.5, 2.0])
def test_celu(mode, alpha):
    x = RNG.normal(size=(3, 5)).astype(np.float32) * 3
    want = np.maximum(x, 0) + np.minimum(0, alpha * (np.exp(x / alpha) - 1))
    np.testing.assert_allclose(Call(P.CeLU(alpha))(ms.Tensor(x)).asnumpy(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="'alpha' must not be 0"):
        P.CeLU(0.0)
    with pytest.raises(TypeError, match="'alpha' must be a float"):
        P.CeLU(1)


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("dtype", [ms.int32, ms.int64])
def test_search_sorted(mode, right, dtype):
    seq = np.sort(RNG.integers(0, 10, size=(3, 6)).astype(np.float32), axis=-1)
    values = RNG.integers(-1, 11, size=(3, 4)).astype(np.float32)
    out = Call2(P.SearchSorted(dtype=dtype, right=right))(ms.Tensor(seq), ms.Tensor(values))
    side = "right" if right else "left"
    want = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq, values)])
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.asnumpy(), want)
    method = ms.Tensor(seq).searchsorted(ms.Tensor(values), right=right)
    np.testing.assert_array_equal(method.asnumpy(), want)


@pytest.mark.parametrize("shape,wrap", [((7, 3), True), ((7, 3), False), ((3, 5), False), ((4, 4, 4), False)])
def test_fill_diagonal(mode, shape, wrap):
    x = RNG.normal(size=shape).astype(np.float32)
    want = x.copy()
    np.fill_diagonal(want, 5.0, wrap=wrap)
    np.testing.assert_array_equal(Call(P.FillDiagonal(5.0, wrap))(ms.Tensor(x)).asnumpy(), want)


def test_inplace_update_v2(mode):
    x = RNG.normal(size=(5, 3)).astype(np.float32)
    v = RNG.normal(size=(2, 3)).astype(np.float32)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.op = P.InplaceUpdateV2()

        def construct(self, x, indices, v):
            return self.op(x, indices, v)

    want = x.copy()
    want[[4, 1]] = v
    out = Net()(ms.Tensor(x), ms.Tensor(np.array([4, 1], np.int32)), ms.Tensor(v))
    np.testing.assert_array_equal(out.asnumpy(), want)
    np.testing.assert_array_equal(ms.Tensor(x).inplace_update(ms.Tensor(v), (4, 1)).asnumpy(), want)


def test_l1_regularizer(mode):
    w = RNG.normal(size=(4, 3)).astype(np.float32)
    out = nn.L1Regularizer(0.5)(ms.Tensor(w))
    assert out.shape == () and out.dtype == ms.float32
    np.testing.assert_allclose(out.asnumpy(), 0.5 * np.abs(w).sum(), rtol=1e-6)
    with pytest.raises(ValueError, match="'scale' must be greater than 0"):
        nn.L1Regularizer(0)
    with pytest.raises(TypeError, match="'scale' must be an int or a float"):
        nn.L1Regularizer("1")


def test_expand_with_a_size_tensor():
    x = RNG.normal(size=(3, 1)).astype(np.float32)
    size = ms.Tensor(np.array([2, 3, 4], np.int32))
    want = np.broadcast_to(x, (2, 3, 4))
    np.testing.assert_array_equal(ops.expand(ms.Tensor(x), size).asnumpy(), want)
    np.testing.assert_array_equal(ms.Tensor(x).expand(size).asnumpy(), want)
    np.testing.assert_array_equal(ms.Tensor(x).expand(3, -1).asnumpy(), np.broadcast_to(x, (3, 1)))


def test_tensor_lstsq():
    a = RNG.normal(size=(6, 3))
    b = RNG.normal(size=(6, 2))
    want = np.linalg.lstsq(a, b, rcond=None)[0]
    np.testing.assert_allclose(ms.Tensor(a).lstsq(ms.Tensor(b)).asnumpy(), want, rtol=1e-8, atol=1e-10)


def test_approximate_equal_checks(mode):
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    y = x + RNG.uniform(-0.2, 0.2, size=(2, 3)).astype(np.float32)
    out = Call2(P.ApproximateEqual(0.1))(ms.Tensor(x), ms.Tensor(y))
    np.testing.assert_array_equal(out.asnumpy(), np.abs(x - y) < 0.1)
    np.testing.assert_array_equal(ms.Tensor(x).approximate_equal(ms.Tensor(y), 0.1).asnumpy(), np.abs(x - y) < 0.1)
    with pytest.raises(ValueError, match="'x1' must have the same shape as 'x2'"):
        Call2(P.ApproximateEqual(0.1))(ms.Tensor(x), ms.Tensor(y[:1]))
    with pytest.raises(TypeError, match="the type of 'tolerance' should be 'float'"):
        P.ApproximateEqual("0.1")


def test_square_sum_all_checks(mode):
    x = RNG.normal(size=(4,)).astype(np.float32)
    y = RNG.normal(size=(4,)).astype(np.float32)
    a, b = Call2(P.SquareSumAll())(ms.Tensor(x), ms.Tensor(y))
    np.testing.assert_allclose([a.asnumpy(), b.asnumpy()], [(x * x).sum(), (y * y).sum()], rtol=1e-6)
    with pytest.raises(TypeError, match="must be float16 or float32"):
        Call2(P.SquareSumAll())(ms.Tensor(x.astype(np.float64)), ms.Tensor(y.astype(np.float64)))
    with pytest.raises(TypeError, match="the same dtype"):
        Call2(P.SquareSumAll())(ms.Tensor(x.astype(np.float16)), ms.Tensor(y))
    with pytest.raises(ValueError, match="the same shape"):
        Call2(P.SquareSumAll())(ms.Tensor(x), ms.Tensor(y[:3]))


class Segment(nn.Cell):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, x, ids):
        return self.op(x, ids, 3)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.float64])
@pytest.mark.parametrize("name", ["UnsortedSegmentMin", "UnsortedSegmentMax"])
def test_unsorted_segment_extremes(mode, dtype, name):
    """An empty segment holds the dtype's exact extreme (int64/uint64 ones are not floats)."""
    x = RNG.integers(0, 100, size=(4, 2)).astype(dtype)
    ids = np.array([0, 2, 0, 2], np.int32)
    out = Segment(getattr(P, name)())(ms.Tensor(x), ms.Tensor(ids)).asnumpy()
    info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else np.finfo(dtype)
    reduce, empty = (np.min, info.max) if name.endswith("Min") else (np.max, info.min)
    want = np.stack([reduce(x[ids == s], 0) if (ids == s).any() else np.full(2, empty, dtype) for s in range(3)])
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, want)


def test_unsorted_segment_id_out_of_range(mode):
    with pytest.raises(RuntimeError, match="segment_ids values must be in"):
        Segment(P.UnsortedSegmentMax())(ms.Tensor(np.ones((4,), np.float32)),
                                        ms.Tensor(np.array([0, 1, 3, 2], np.int32)))


def stft_ref(x, n_fft, hop, win, center, onesided, normalized):
    """Frame by frame with numpy's pad and fft."""
    if center:
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)], mode="reflect")
    w = np.zeros(n_fft, win.dtype)
    left = (n_fft - len(win)) // 2
    w[left:left + len(win)] = win
    n_frames = 1 + (x.shape[-1] - n_fft) // hop
    spec = np.stack([np.fft.fft(x[..., f * hop:f * hop + n_fft] * w) for f in range(n_frames)], -1)
    if onesided:
        spec = spec[..., :n_fft // 2 + 1, :]
    return spec / np.sqrt(n_fft) if normalized else spec


@pytest.mark.parametrize("center,onesided,normalized", [(True, True, False), (False, False, True)])
def test_stft(center, onesided, normalized):
    x = RNG.normal(size=(2, 37))
    win = np.hanning(12)
    out = ops.stft(ms.Tensor(x), 16, hop_length=5, win_length=12, window=ms.Tensor(win), center=center,
                   onesided=onesided, normalized=normalized, return_complex=True)
    np.testing.assert_allclose(out.asnumpy(), stft_ref(x, 16, 5, win, center, onesided, normalized),
                               rtol=1e-10, atol=1e-12)
    pairs = ops.stft(ms.Tensor(x.astype(np.float32)), 8)  # defaults: hop 2, ones window, real pairs
    want = stft_ref(x.astype(np.float32), 8, 2, np.ones(8, np.float32), True, True, False)
    np.testing.assert_allclose(pairs.asnumpy(), np.stack([want.real, want.imag], -1), rtol=1e-4, atol=1e-5)
    z = (x + 1j * RNG.normal(size=x.shape)).astype(np.complex128)
    np.testing.assert_allclose(ops.stft(ms.Tensor(z), 8, center=False).asnumpy(),
                               stft_ref(z, 8, 2, np.ones(8), False, False, False), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode_name,np_mode", [("constant", "constant"), ("reflect", "reflect"),
                                                ("edge", "edge"), ("circular", "wrap")])
def test_pad_v3(mode, mode_name, np_mode):
    """numpy's pad; negative amounts crop first and the rest pads what is left."""
    x = RNG.normal(size=(2, 4, 5)).astype(np.float32)
    op = P.PadV3(mode_name)
    paddings = (2, -1, -1, 2)  # last dim (2, -1), the one before (-1, 2)
    kwargs = {"constant_values": 1.5} if np_mode == "constant" else {}
    want = np.pad(x[:, 1:, :-1], [(0, 0), (0, 2), (2, 0)], mode=np_mode, **kwargs)
    if mode_name == "constant":
        out = op(ms.Tensor(x), paddings, ms.Tensor(np.float32(1.5)))
    else:
        out = op(ms.Tensor(x), ms.Tensor(np.array(paddings, np.int64)))
    np.testing.assert_array_equal(out.asnumpy(), want)
    split = P.PadV3(mode_name, paddings_contiguous=False)(ms.Tensor(x), (1, 0, 2, 1), *(
        [ms.Tensor(np.float32(1.5))] if mode_name == "constant" else []))  # (begins..., ends...)
    np.testing.assert_array_equal(split.asnumpy(), np.pad(x, [(0, 0), (0, 1), (1, 2)], mode=np_mode, **kwargs))


def test_pad_v3_in_a_cell(mode):
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.op = P.PadV3("constant")

        def construct(self, x, value):
            return self.op(x, (1, -2, 0, 1), value)

    x = RNG.normal(size=(3, 5)).astype(np.float32)
    want = np.pad(x[:, :-2], [(0, 1), (1, 0)], constant_values=-1.0)
    np.testing.assert_array_equal(Net()(ms.Tensor(x), ms.Tensor(np.float32(-1.0))).asnumpy(), want)
    if mode == context.GRAPH_MODE:
        class ByTensor(nn.Cell):
            def __init__(self):
                super().__init__()
                self.op = P.PadV3("edge")

            def construct(self, x, paddings):
                return self.op(x, paddings)

        with pytest.raises(TypeError, match="in graph mode 'paddings' must be a tuple"):
            ByTensor()(ms.Tensor(x), ms.Tensor(np.array([1, 1])))
