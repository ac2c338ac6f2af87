"""bfloat16 softmax and softmax_grad on the last axis (kernels/cpu/softmax_bf16.cc, amp O2's
attention weights): forward and gradient against float64 numpy on the same bf16-valued data
(one rounding of the exact result), against the float32 kernel rounded once, rows whose length
leaves a tail past the vector lanes, masked (-inf) and NaN rows, 1/2/3 threads, and the O2
transformer step against its float32 twin."""
import os
import sys

import numpy as np
import pytest

import mycel
from mycel import amp, nn, ops, Tensor

from test_norm_fast import Weighted

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from models import TransformerClassifier  # noqa: E402

RNG = np.random.default_rng(25)
BF16_EPS = 2.0 ** -8  # bfloat16's unit roundoff: 8 significant bits
# Rows held in registers (16, 128, 256), with a partial vector (37, 130, 255, 257), past the
# register rows (300, 1000), one element.
SHAPES = [(64, 128, 128), (3, 5, 37), (2, 7), (4, 1), (5, 130), (2, 3, 16), (3, 255), (4, 256),
          (2, 257), (3, 300), (2, 1000)]


def bf16(a):
    return Tensor(np.asarray(a, np.float32), dtype=mycel.bfloat16)


def values(t):
    return t.astype(mycel.float32).asnumpy().astype(np.float64)


class Softmax(nn.Cell):
    def construct(self, x):
        return ops.softmax(x, axis=-1)


def softmax64(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_one_rounding_of_exact(shape, threads):
    mycel.set_context(num_threads=threads)
    x = bf16(RNG.standard_normal(shape) * 4)
    y = ops.softmax(x, axis=-1)
    assert y.dtype == mycel.bfloat16
    ref = softmax64(values(x))
    got = values(y)
    # One rounding of the float result (float exp: a few float ulps) to bf16: within 2^-8.
    np.testing.assert_array_less(np.abs(got - ref), BF16_EPS * ref + 1e-30)
    # The float32 kernel rounded once gives the same bits but for rare float-level ties.
    y32 = ops.softmax(x.astype(mycel.float32), axis=-1).astype(mycel.bfloat16)
    same = values(y32) == got
    assert same.mean() > 0.99
    np.testing.assert_allclose(got, values(y32), rtol=2 * BF16_EPS, atol=0)


def bits(t):
    """bf16 values' bit patterns (int)."""
    return (t.astype(mycel.float32).asnumpy().view(np.uint32) >> 16).astype(np.int64)


@pytest.mark.parametrize("scale", [1.0, 4.0, 30.0])
def test_forward_within_one_ulp_of_the_exact_rounding(scale):
    """The short exp (exp512_bf16.h, 6.5e-6 relative) changes a weight's rounding only where the
    exact weight lies that close to a rounding boundary: at most 1 bf16 ulp from the float64
    softmax rounded once, and rarely (measured: 0.03% of the weights)."""
    mycel.set_context(num_threads=2)
    x = bf16(RNG.standard_normal((64, 128, 128)) * scale)
    y = ops.softmax(x, axis=-1)
    ref = softmax64(values(x))
    got, exact = bits(y), bits(bf16(ref))
    # Weights below float's normal range (2^-126): the AVX2 exp flushes them to 0.
    normal = ref >= 2.0 ** -126
    assert np.all(np.abs(values(y) - ref)[~normal] < 2.0 ** -126)
    diff = np.abs(got - exact)[normal]
    assert diff.max() <= 1
    print(f"scale {scale}: {diff.mean():.5f} of the weights 1 ulp off the exact rounding")
    assert diff.mean() < 0.005


@pytest.mark.parametrize("length", [128, 37, 300])
def test_forward_masked_rows_in_every_path(length):
    """-inf keys, an all -inf row, a NaN and an infinite row in the register path (128), the
    partial-vector path (37) and the buffered one (300): as the float32 kernel gives them (a NaN
    or an infinite score: the row NaN, as the reference row and numpy give it)."""
    x = RNG.standard_normal((6, length)).astype(np.float32) * 3
    x[0, ::3] = -np.inf
    x[1] = -np.inf
    x[2, length // 2] = np.nan
    x[3, 1] = np.inf
    x[4, :length - 1] = -np.inf  # one key left: weight 1
    got = values(ops.softmax(bf16(x), axis=-1))
    want = values(ops.softmax(Tensor(values(bf16(x)).astype(np.float32)), axis=-1)
                  .astype(mycel.bfloat16))
    rows = [0, 1, 4, 5]  # a NaN: oneDNN's float32 softmax leaves the other keys finite
    np.testing.assert_array_equal(np.isnan(got[rows]), np.isnan(want[rows]))
    np.testing.assert_allclose(np.nan_to_num(got[rows]), np.nan_to_num(want[rows]),
                               rtol=2 * BF16_EPS, atol=0)
    assert np.all(got[0, ::3] == 0) and np.all(np.isnan(got[1])) and np.all(np.isnan(got[2]))
    assert np.all(np.isnan(got[3]))  # exp(inf - inf): the reference row's NaN
    assert got[4, -1] == 1 and np.all(got[4, :-1] == 0)
    e = np.exp(values(bf16(x[5])) - values(bf16(x[5])).max())
    np.testing.assert_allclose(got[5], e / e.sum(), rtol=BF16_EPS)


def test_forward_masked_and_nan_rows():
    x = np.array([[1.0, -np.inf, 2.0, 0.5] * 5,
                  [-np.inf] * 20,
                  [0.0, np.nan] + [1.0] * 18,
                  [3.0] * 20], np.float32)
    got = values(ops.softmax(bf16(x), axis=-1))
    e = np.exp(x[0] - 2.0)
    np.testing.assert_allclose(got[0], e / e.sum(), rtol=BF16_EPS)
    assert np.all(got[0][1::4] == 0)  # a masked key gets no weight
    assert np.all(np.isnan(got[1]))   # all keys masked: NaN, as the float32 kernel gives
    assert np.all(np.isnan(got[2]))
    np.testing.assert_array_equal(got[3], values(bf16(np.full(20, 0.05))))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_gradient_against_closed_form(shape, threads, mode):
    mycel.set_context(num_threads=threads,
                      mode=mycel.GRAPH_MODE if mode == "graph" else mycel.PYNATIVE_MODE)
    x = bf16(RNG.standard_normal(shape) * 3)
    w = values(bf16(RNG.standard_normal(shape)))  # dy: bf16 values
    net = Weighted(Softmax(), w)
    net.w = bf16(w)
    grad = ops.GradOperation()(net)
    for _ in range(2 if mode == "graph" else 1):  # the second graph run: the warm launch
        dx = grad(x)
        assert dx.dtype == mycel.bfloat16
    y = values(ops.softmax(x, axis=-1))  # the bf16 forward the backward reads
    ref = y * (w - (y * w).sum(-1, keepdims=True))
    # One rounding of the float result; the row's sum in float lanes adds a few float ulps of the
    # row's scale (y * |w|).
    scale = (y * np.abs(w)).sum(-1, keepdims=True) * y
    np.testing.assert_array_less(np.abs(values(dx) - ref), BF16_EPS * np.abs(ref) + 1e-5 * scale + 1e-30)


def test_gradient_matches_finite_differences():
    """The float64 closed form above is the softmax's derivative: checked on float64 data."""
    x = RNG.standard_normal((3, 9))
    w = RNG.standard_normal((3, 9))
    y = softmax64(x)
    ref = y * (w - (y * w).sum(-1, keepdims=True))
    h = 1e-6
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = h
        fd[i] = ((softmax64(x + d) * w).sum() - (softmax64(x - d) * w).sum()) / (2 * h)
    np.testing.assert_allclose(ref, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("threads", [1, 2])
def test_o2_transformer_step_tracks_float32(threads):
    """Two O2 steps of a small transformer (bf16 softmax forward and backward inside) against the
    float32 steps: losses within bf16 tolerance."""
    mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=threads)
    rng = np.random.default_rng(7)
    x = Tensor(rng.standard_normal((4, 16, 32)).astype(np.float32))
    y = Tensor(rng.integers(0, 10, 4).astype(np.int32))
    losses = {}
    for level in ("O0", "O2"):
        mycel.set_seed(5)
        net = TransformerClassifier(d_model=32, nhead=2, dim_feedforward=64, num_layers=1)
        opt = nn.Momentum(net.trainable_params(), 0.02, 0.9)
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        step = amp.build_train_network(net, opt, loss, level=level)
        step.set_train(True)
        losses[level] = [float(step(x, y).asnumpy()) for _ in range(3)]
    np.testing.assert_allclose(losses["O2"], losses["O0"], rtol=2e-2)
    assert losses["O2"][2] < losses["O2"][0]


def test_avx2_lanes_in_a_subprocess():
    """The AVX2 form (what a CPU without AVX-512 runs; MYCEL_MAX_CPU_ISA=avx2 forces it here): the
    forward and gradient tests above in a fresh process."""
    import subprocess
    env = dict(os.environ, MYCEL_MAX_CPU_ISA="avx2")
    r = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider",
                        "-k", "forward or gradient_against"], env=env, capture_output=True, text=True,
                       cwd=os.path.dirname(__file__), timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout


_CVT_SCRIPT = """
import sys, numpy as np, mycel
from mycel import ops, Tensor
rng = np.random.default_rng(11)
x = Tensor((rng.standard_normal((512, 128)) * 6).astype(np.float32), dtype=mycel.bfloat16)
dy = rng.standard_normal((512, 128)).astype(np.float32)
dy[3, 5], dy[7, :] = np.nan, np.inf
y = ops.softmax(x, axis=-1)
w = Tensor(dy, dtype=mycel.bfloat16)
from mycel import nn
class S(nn.Cell):
    def construct(self, x):
        return (ops.softmax(x, axis=-1) * w).sum()
dx = ops.GradOperation()(S())(x)
bits = lambda t: t.astype(mycel.float32).asnumpy().view(np.uint32) >> 16
np.save(sys.argv[1], np.stack([bits(y), bits(dx)]))
"""


def test_bf16_conversion_rounding_equals_the_integer_rounding(tmp_path):
    """Where the CPU has AVX512-BF16, rows of 32k elements round by VCVTNE2PS2BF16
    (MYCEL_SOFTMAX_BF16_CVT=0: the integer rounding): the same forward bits but for weights below
    2^-126 (0 instead of a bf16 denormal); the gradient's row sum is taken in another lane order,
    so its dx is within 1 ulp but where dy - sum cancels; a NaN or inf dy: the same NaN bits."""
    import subprocess
    out = {}
    for v in ("0", "1"):
        env = dict(os.environ, MYCEL_SOFTMAX_BF16_CVT=v)
        path = str(tmp_path / f"cvt{v}.npy")
        subprocess.run([sys.executable, "-c", _CVT_SCRIPT, path], env=env, check=True, timeout=300)
        out[v] = np.load(path).astype(np.int64)
    (y0, dx0), (y1, dx1) = out["0"], out["1"]
    tiny = (y0 & 0x7F80) == 0  # a bf16 denormal (or 0) from the integer rounding
    np.testing.assert_array_equal(y1[~tiny], y0[~tiny])
    assert np.all(y1[tiny] == 0)
    nan0, nan1 = (dx0 & 0x7FFF) > 0x7F80, (dx1 & 0x7FFF) > 0x7F80
    np.testing.assert_array_equal(nan0, nan1)
    np.testing.assert_array_equal(dx0[nan0], dx1[nan1])
    # Elsewhere: one bf16 rounding apart, plus the sum's float error where dy - sum cancels.
    val = lambda b: (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)  # noqa: E731
    rows = ~np.any(nan0, axis=1)
    v0, v1, y = val(dx0[rows]), val(dx1[rows]), val(y0[rows])
    # 1 ulp is up to 2^-7 relative; the sum (|y . dy| <= 5 here) differs by float roundings,
    # which dx = y * (dy - sum) carries as y times a few 1e-7.
    assert np.all(np.abs(v0 - v1) <= 2.0 ** -7 * np.abs(v0) + 1e-5 * y)
    assert (dx0[rows] == dx1[rows]).mean() > 0.95
