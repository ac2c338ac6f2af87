"""MindSpore's RandomCategorical(dtype)(logits, num_sample, seed): a nonzero seed draws MindSpore's
CPU samples (checked against a plain-Python reimplementation of that stream: Philox4x32-10 seed
mixing, minstd_rand0 and libstdc++'s uniform_real_distribution, and against the values MindSpore
publishes for seed 5), seed 0 draws from the global generator (frequencies follow softmax)."""
import math

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn
from mycel.ops import operations as P

MODES = pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
M32 = 0xFFFFFFFF


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def philox4x32_10(ctr, key):
    """Philox4x32-10 (Salmon et al., SC'11) in plain Python integers."""
    c, k = list(ctr), list(key)
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k[0]) & M32, p1 & M32, ((p0 >> 32) ^ c[3] ^ k[1]) & M32, p0 & M32]
        k = [(k[0] + 0x9E3779B9) & M32, (k[1] + 0xBB67AE85) & M32]
    return c


def ms_uniforms(seed, n):
    """MindSpore's CPU draws for op seed `seed`: minstd_rand0 (Park-Miller) seeded by Philox of
    (global seed 0, seed), then uniform_real_distribution<double>(0, 1) as libstdc++ computes it
    (generate_canonical with size_t arithmetic: two engine calls per double)."""
    r = philox4x32_10([0, 0, seed & M32, seed >> 32], [0x3EC8F720, 0x02461E29])
    m = 2**31 - 1
    x = ((r[1] << 32) | r[0]) % m or 1
    span = m - 1
    log2r = int(math.log2(span))
    calls = max(1, (53 + log2r - 1) // log2r)
    out = []
    for _ in range(n):
        s, f = 0, 1
        for _ in range(calls):
            x = x * 16807 % m
            s += (x - 1) * f
            f *= span
        out.append(min(s / f, np.nextafter(1.0, 0.0)))
    return np.array(out)


def ms_reference(logits, num_sample, seed):
    """One draw per sample column shared by all rows; CDF in the logits' dtype (exp in float32)."""
    dt = logits.dtype
    u = ms_uniforms(seed, num_sample).astype(np.float32).astype(dt)
    e = np.exp((logits - logits.max(1, keepdims=True)).astype(np.float32)).astype(dt)
    cdf = np.cumsum(e, axis=1, dtype=dt)
    return np.array([[int(np.argmax(cdf[r] >= (cdf[r, -1] * v).astype(dt))) for v in u]
                     for r in range(logits.shape[0])])


class RCNet(nn.Cell):
    def __init__(self, dtype):
        super().__init__()
        self.rc = P.RandomCategorical(dtype)

    def construct(self, logits, num_sample, seed):
        return self.rc(logits, num_sample, seed)


@MODES
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("seed", [5, 123, 2**40 + 7])
def test_seeded_draws_are_mindspores(mode, dtype, seed):
    mycel.set_context(mode=mode)
    logits = np.random.default_rng(seed % 97).standard_normal((3, 6)).astype(dtype)
    out = RCNet(mycel.int32)(Tensor(logits), 8, seed).asnumpy()
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, ms_reference(logits, 8, seed))


def test_published_value_for_seed_5():
    # MindSpore's CPU result for these logits, 10 samples, seed 5 (its RandomCategorical tests).
    logits = Tensor(np.array([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]], np.float16))
    out = P.RandomCategorical(mycel.int16)(logits, 10, 5).asnumpy()
    assert out.dtype == np.int16
    np.testing.assert_array_equal(out, [[4, 4, 2, 4, 4, 3, 4, 4, 4, 4]] * 2)


def test_unseeded_draws_follow_softmax_and_vary():
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4]]))
    prim = P.RandomCategorical()
    a = prim(Tensor(logits), 20000, 0).asnumpy()
    b = prim(Tensor(logits), 20000, 0).asnumpy()
    assert (a != b).any()
    freq = np.bincount(a.ravel(), minlength=4) / a.size
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4], atol=0.015)  # > 4 sigma for n = 20000


def test_bad_dtype_names_the_primitive():
    with pytest.raises(TypeError, match="RandomCategorical: 'dtype' must be int16, int32 or int64"):
        P.RandomCategorical(mycel.float32)
