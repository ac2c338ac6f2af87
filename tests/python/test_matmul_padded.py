"""matmul and dense whose operand rows are a multiple of 2 KiB (kernels/cpu/dnnl_matmul.cc copies
such an operand into rows padded by 64 bytes before oneDNN reads it, where oneDNN runs its AVX2
sgemm): the results, the batched and broadcast forms and the gradients must equal float64 numpy,
in both modes and warm (a graph step run twice reuses its prepared launch and the thread's padding
buffers); the whole module again with the copy forced on and off (MYCEL_MATMUL_PAD), so both
paths run on every machine."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def close(got, ref):
    got = got.asnumpy() if isinstance(got, Tensor) else got
    assert got.shape == ref.shape
    scale = np.abs(ref).max() + 1e-6
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * scale)


# (m, k, n, transpose_a, transpose_b): the padded operand is b (n of 512 or 1024, not transposed)
# or a (m of 512, transposed), with odd other sizes; the last two are not padded (controls).
CASES = [(33, 17, 512, False, False), (128, 512, 512, False, False), (512, 19, 512, True, False),
         (512, 64, 37, True, True), (7, 40, 1024, False, False), (512, 48, 1024, True, False),
         (33, 512, 17, False, True), (9, 2048, 5, True, False)]


@pytest.mark.parametrize("m,k,n,ta,tb", CASES)
def test_matmul_equals_numpy(m, k, n, ta, tb):
    a = rand(k, m) if ta else rand(m, k)
    b = rand(n, k) if tb else rand(k, n)
    ref = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    close(ops.MatMul(transpose_a=ta, transpose_b=tb)(Tensor(a), Tensor(b)), ref)


def test_batched_and_broadcast():
    a, b = rand(3, 1, 20, 512), rand(1, 2, 512, 512)  # b broadcast over a's first dim, padded
    ref = a.astype(np.float64) @ b.astype(np.float64)
    close(ops.matmul(Tensor(a), Tensor(b)), ref)
    at = rand(2, 40, 512)  # transposed a of M=512, per batch
    bt = rand(2, 40, 24)
    ref = np.swapaxes(at, 1, 2).astype(np.float64) @ bt.astype(np.float64)
    close(ops.BatchMatMul(transpose_a=True)(Tensor(at), Tensor(bt)), ref)


class Mlp(nn.Cell):
    def __init__(self, w1, w2):
        super().__init__()
        self.w1 = mycel.Parameter(Tensor(w1), name="w1")
        self.w2 = mycel.Parameter(Tensor(w2), name="w2")

    def construct(self, x):
        h = ops.relu(ops.matmul(x, self.w1))  # w1 (k, 512): a padded b
        return ops.matmul(h, self.w2).sum()   # its gradients: padded a (h^T) and b


def test_gradients_graph_and_pynative():
    """d/dw of sum(relu(x w1) w2): dw2 = h^T 1, dh = 1 w2^T masked, dw1 = x^T dh, each against
    numpy; run twice in graph mode (the warm, prepared launch)."""
    x, w1, w2 = rand(64, 96), rand(96, 512) * 0.1, rand(512, 512) * 0.1
    h = np.maximum(x.astype(np.float64) @ w1, 0)
    g_out = np.ones((64, 512))
    dw2 = h.T @ g_out
    dh = (g_out @ w2.astype(np.float64).T) * (h > 0)
    dw1 = x.astype(np.float64).T @ dh
    for mode in (mycel.PYNATIVE_MODE, mycel.GRAPH_MODE):
        mycel.set_context(mode=mode)
        try:
            net = Mlp(w1, w2)
            grad = ops.GradOperation(get_by_list=True)(net, net.trainable_params())
            for _ in range(2):
                g1, g2 = grad(Tensor(x))
                close(g1, dw1)
                close(g2, dw2)
        finally:
            mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_bfloat16_padded_operand():
    a, b = rand(40, 64), rand(64, 1024)  # bf16 rows of 1024 elements: 2 KiB
    ta, tb = Tensor(a, dtype=mycel.bfloat16), Tensor(b, dtype=mycel.bfloat16)
    ref = ta.asnumpy().astype(np.float64) @ tb.asnumpy().astype(np.float64)
    got = ops.matmul(ta, tb).asnumpy().astype(np.float64)
    assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-2


@pytest.mark.parametrize("pad", ["1", "0"])
def test_forced_padding_both_ways(pad):
    """MYCEL_MATMUL_PAD is read once per process: the module's other tests in a fresh one."""
    env = dict(os.environ, MYCEL_MATMUL_PAD=pad)
    r = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider",
                        "-k", "not forced_padding"], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
