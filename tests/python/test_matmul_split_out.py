"""A weight gradient's matmul A^T B with a long reduction (kernels/cpu/dnnl_matmul.cc,
build_split) shares the product among threads: a block of rows each (M divides among the threads
in blocks of at least 32), else a block of columns, else a split along K summed after. Each path,
float32 and bf16, at 1, 2 and 3 threads, against a float64 numpy product of the same values; the
module again with MYCEL_MATMUL_SPLIT=k (the old split along K, for A/B) and with padded operands
(MYCEL_MATMUL_PAD=1: the blocks read a copy with longer rows)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor, ops


@pytest.fixture(autouse=True)
def _restore():
    threads = mycel.get_context("num_threads")
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE, num_threads=threads)


def _bf16_round(a):
    """float32 -> the nearest-even bfloat16 value, as float32 (numpy, independent of Mycel)."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32)
    return (r << 16).view(np.float32)


# (m, k, n, transpose_b): rows split at 2 and 3 threads (96, 192, 512 rows), columns only (m
# too small, n divides), along K (neither divides in blocks of 32), odd K, 2 KiB float32 rows (m
# = 512: padded copies with MYCEL_MATMUL_PAD=1), and a short K that must not split.
SHAPES = [(96, 2048, 40, False), (192, 1030, 24, True), (512, 2048, 128, False),
          (128, 2048, 512, False), (20, 1024, 192, False), (20, 1024, 192, True),
          (40, 1026, 50, False), (64, 1025, 33, True), (96, 1000, 96, False)]


def _operands(m, k, n, tb, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m)).astype(np.float32)  # stored transposed: x of x^T dy
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    return a, b


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
    a, b = _operands(m, k, n, tb, seed=m * n)
    a, b = _bf16_round(a), _bf16_round(b)  # exactly representable: the same values on both sides
    bm = b.T if tb else b
    ref = a.astype(np.float64).T @ bm.astype(np.float64)
    mm = ops.MatMul(transpose_a=True, transpose_b=tb)
    at, bt = Tensor(a).astype(mycel.bfloat16), Tensor(b).astype(mycel.bfloat16)
    got = [mm(at, bt).astype(mycel.float32).asnumpy() for _ in range(2)]
    np.testing.assert_array_equal(got[1], got[0])
    # bf16's half ulp of the result plus float32 accumulation over k terms of scale |a||b|
    tol = np.abs(ref) * 2.0 ** -8 + k * 2.0 ** -22 * (np.abs(a).T @ np.abs(bm))
    err = np.abs(got[0] - ref)
    assert (err <= tol).all(), (err - tol).max()


@pytest.mark.parametrize("env", [{"MYCEL_MATMUL_SPLIT": "k"}, {"MYCEL_MATMUL_PAD": "1"}])
def test_module_again_with(env):
    """Both switches are read once per process: the module's other tests in a fresh one."""
    r = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider",
                        "-k", "not module_again"], env=dict(os.environ, **env),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
