"""A weight gradient's matmul A^T B with a long reduction (kernels/cpu/dnnl_matmul.cc) splits
along K among the threads; in bf16 every part writes a float32 partial and the partials' sum is
rounded once, in vector lanes (sum_round_partials). float32 and bf16 at 1, 2 and 3 threads (odd
blocks of the sum, sizes no 512-element block divides) against a float64 numpy product of the
same values; the vector sum's bits equal the one-loop form's (MYCEL_MATMUL_SPLIT_SUM=scalar, in a
fresh process); the module again with that switch, with padded operands (MYCEL_MATMUL_PAD=1) and
with oneDNN's primitives for the bf16 parts (MYCEL_MATMUL_BF16_ATB=0)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor, ops


def _bf16_round(a):
    """float32 -> the nearest-even bfloat16 value, as float32 (numpy, independent of Mycel)."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32)
    return (r << 16).view(np.float32)


# (m, k, n, transpose_b): the transformer's weight gradients (512x128, 128x512, 128x128 from
# 2048 rows), products no 512-element block or thread count divides, odd K (split at 3 threads
# only), 2 KiB float32 rows (padded copies with MYCEL_MATMUL_PAD=1), a short K (no split).
SHAPES = [(512, 2048, 128, False), (128, 2048, 512, False), (128, 2048, 128, True),
          (13, 1026, 7, False), (97, 1030, 33, True), (40, 1536, 25, False),
          (64, 1025, 40, False), (96, 1000, 96, False)]


def _operands(m, k, n, tb, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m)).astype(np.float32)  # stored transposed: dy of dy^T x
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    return a, b


def _bf16_product(m, k, n, tb, seed):
    a, b = _operands(m, k, n, tb, seed)
    a, b = _bf16_round(a), _bf16_round(b)  # exactly representable: the same values on both sides
    mm = ops.MatMul(transpose_a=True, transpose_b=tb)
    at, bt = Tensor(a).astype(mycel.bfloat16), Tensor(b).astype(mycel.bfloat16)
    return a, b, [mm(at, bt).astype(mycel.float32).asnumpy() for _ in range(2)]


@pytest.mark.parametrize("m,k,n,tb", SHAPES)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_float32_equals_numpy(m, k, n, tb, threads):
    mycel.set_context(num_threads=threads)
    a, b = _operands(m, k, n, tb, seed=m + n)
    mm = ops.MatMul(transpose_a=True, transpose_b=tb)
    got = [mm(Tensor(a), Tensor(b)).asnumpy() for _ in range(2)]  # the warm call too
    want = a.astype(np.float64).T @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_array_equal(got[1], got[0])
    np.testing.assert_allclose(got[0], want, rtol=2e-4, atol=2e-4 * np.sqrt(k))


@pytest.mark.parametrize("m,k,n,tb", SHAPES)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_bf16_within_rounding_of_numpy(m, k, n, tb, threads):
    mycel.set_context(num_threads=threads)
    a, b, got = _bf16_product(m, k, n, tb, seed=m * n)
    bm = b.T if tb else b
    ref = a.astype(np.float64).T @ bm.astype(np.float64)
    np.testing.assert_array_equal(got[1], got[0])  # the partial buffers hold nothing over
    # bf16's half ulp of the result plus float32 accumulation over k terms of scale |a||b|
    tol = np.abs(ref) * 2.0 ** -8 + k * 2.0 ** -22 * (np.abs(a).T @ np.abs(bm))
    err = np.abs(got[0] - ref)
    assert (err <= tol).all(), (err - tol).max()


def test_bf16_nan_and_inf_survive_the_sum():
    mycel.set_context(num_threads=2)
    a, b = _operands(64, 2048, 48, False, seed=7)
    a[5, 3] = np.nan   # row 3 of the product: NaN
    a[1500, 9] = np.inf  # row 9: +-inf, or NaN where b has a zero's sign mix
    b[:, 0] = 1.0
    at, bt = Tensor(a).astype(mycel.bfloat16), Tensor(b).astype(mycel.bfloat16)
    got = ops.MatMul(transpose_a=True)(at, bt).astype(mycel.float32).asnumpy()
    assert np.isnan(got[3]).all()
    assert got[9, 0] == np.inf
    assert np.isfinite(np.delete(got, [3, 9], axis=0)).all()


_DUMP = """
import sys, numpy as np, mycel
from mycel import Tensor, ops
mycel.set_context(num_threads=int(sys.argv[2]))
rng = np.random.default_rng(11)
out = []
for m, k, n in [(512, 2048, 128), (97, 1030, 33), (40, 1536, 25)]:
    a = Tensor(rng.standard_normal((k, m)).astype(np.float32)).astype(mycel.bfloat16)
    b = Tensor(rng.standard_normal((k, n)).astype(np.float32)).astype(mycel.bfloat16)
    out.append(ops.MatMul(transpose_a=True)(a, b).astype(mycel.float32).asnumpy())
np.savez(sys.argv[1], *out)
"""


@pytest.mark.parametrize("threads", [2, 3])
def test_vector_sum_bits_equal_the_scalar_loop(tmp_path, threads):
    files = {}
    for mode in ("vector", "scalar"):
        files[mode] = str(tmp_path / f"{mode}.npz")
        env = dict(os.environ, MYCEL_MATMUL_SPLIT_SUM=mode)
        subprocess.run([sys.executable, "-c", _DUMP, files[mode], str(threads)], env=env,
                       check=True, timeout=300)
    v, s = np.load(files["vector"]), np.load(files["scalar"])
    for key in v.files:
        np.testing.assert_array_equal(v[key], s[key])


@pytest.mark.parametrize("env", [{"MYCEL_MATMUL_SPLIT_SUM": "scalar"}, {"MYCEL_MATMUL_PAD": "1"},
                                 {"MYCEL_MATMUL_BF16_ATB": "0"}])
def test_module_again_with(env):
    """The module's other tests in a fresh process with each switch: the scalar sum, padded
    operands, and oneDNN's one-thread primitives for the bf16 parts in place of Mycel's own
    AVX512-BF16 kernel (kernels/cpu/matmul_bf16_atb.cc, taken by default where the CPU has it)."""
    r = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider",
                        "-k", "not module_again and not bits_equal"], env=dict(os.environ, **env),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
