"""A weight gradient's matmul fused with its optimizer's update (src/mycel/backend/
fuse_matmul_update.cc, kernels/cpu/matmul_chain.cc): each thread computes a row tile of dW and
updates that tile of the momentum state and the weight at once. Weights after several steps
equal the unfused program's (MYCEL_FUSE_MATMUL_UPDATE=0, and MYCEL_FUSE=0) and a float64 numpy
MLP with momentum SGD; shapes the tiles do not fit take the unfused path inside the launch."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.common.parameter import Parameter

LR, MOMENTUM = 0.01, 0.9


def rand(shape, seed, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


class MLP(nn.Cell):
    def __init__(self, sizes):
        super().__init__()
        layers = []
        for k in range(len(sizes) - 1):
            layers.append(nn.Dense(sizes[k], sizes[k + 1]))
            if k + 2 < len(sizes):
                layers.append(nn.ReLU())
        self.body = nn.SequentialCell(*layers)

    def construct(self, x):
        return self.body(x)


def shared_weights(sizes):
    ws = []
    for k in range(len(sizes) - 1):
        ws.append(rand((sizes[k + 1], sizes[k]), 100 + k, 1.0 / np.sqrt(sizes[k])))
        ws.append(rand((sizes[k + 1],), 200 + k, 0.1))
    return ws


def train(sizes, x, y, steps, env):
    for k, v in env.items():
        os.environ[k] = v
    mycel.set_context(mode=mycel.GRAPH_MODE)
    net = MLP(sizes)
    for p, a in zip(net.trainable_params(), shared_weights(sizes)):
        p.set_data(Tensor(a))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=LR, momentum=MOMENTUM)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    step.set_train(True)
    xt, yt = Tensor(x), Tensor(y)
    losses = [float(step(xt, yt).asnumpy()) for _ in range(steps)]
    for k in env:
        os.environ.pop(k)
    return [p.asnumpy() for p in net.trainable_params()], losses


def numpy_train(sizes, x, y, steps):
    """float64 forward, backward and momentum SGD (v = m v + g; w -= lr v)."""
    ws = [a.astype(np.float64) for a in shared_weights(sizes)]
    vs = [np.zeros_like(w) for w in ws]
    x = x.astype(np.float64)
    n = x.shape[0]
    losses = []
    for _ in range(steps):
        hs = [x]
        for k in range(len(sizes) - 1):
            z = hs[-1] @ ws[2 * k].T + ws[2 * k + 1]
            hs.append(np.maximum(z, 0) if k + 2 < len(sizes) else z)
        z = hs[-1]
        e = np.exp(z - z.max(axis=1, keepdims=True))
        prob = e / e.sum(axis=1, keepdims=True)
        losses.append(-np.mean(np.log(prob[np.arange(n), y])))
        dz = prob
        dz[np.arange(n), y] -= 1
        dz /= n
        grads = [None] * len(ws)
        for k in reversed(range(len(sizes) - 1)):
            grads[2 * k] = dz.T @ hs[k]
            grads[2 * k + 1] = dz.sum(axis=0)
            if k > 0:
                dz = (dz @ ws[2 * k]) * (hs[k] > 0)
        for k in range(len(ws)):
            vs[k] = MOMENTUM * vs[k] + grads[k]
            ws[k] = ws[k] - LR * vs[k]
    return ws, losses


# The harness's MLP (784-512-512-10, batch 128: dW2's rows of 512 floats take the padded copy where
# oneDNN runs its AVX2 sgemm, test_padded_operands_forced);
# hidden sizes whose weight gradients tile unevenly (97 rows: no tile count divides them, the
# unfused path inside the launch; 200 rows: two tiles of 100).
@pytest.mark.parametrize("sizes,batch", [((784, 512, 512, 10), 128), ((130, 97, 200, 10), 64)])
def test_weights_equal_unfused_and_numpy(sizes, batch):
    x = rand((batch, sizes[0]), 1)
    y = np.random.default_rng(2).integers(0, sizes[-1], batch).astype(np.int32)
    steps = 4
    fused, lf = train(sizes, x, y, steps, {})
    apart, la = train(sizes, x, y, steps, {"MYCEL_FUSE_MATMUL_UPDATE": "0"})
    plain, lp = train(sizes, x, y, steps, {"MYCEL_FUSE": "0"})
    ref, lr = numpy_train(sizes, x, y, steps)
    for a, b, c, r in zip(fused, apart, plain, ref):
        # the tiles sum each dW element over the batch as the whole matmul does
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(lf, lr, rtol=1e-5)
    np.testing.assert_allclose(la, lr, rtol=1e-5)


def program_text(sizes, batch):
    from mycel._mycel import graph as G
    mycel.set_context(mode=mycel.GRAPH_MODE)
    net = MLP(sizes)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=LR, momentum=MOMENTUM)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    x = Tensor(rand((batch, sizes[0]), 1))
    y = Tensor(np.zeros(batch, np.int32))
    return G.compile(step).program_text(x, y)


def fused_lines(text):
    return [line for line in text.splitlines() if "matmul+fused_elementwise" in line]


def test_large_weight_gradients_fuse_small_ones_do_not():
    text = program_text((784, 512, 512, 10), 128)
    # W1 and W2 (512 x 784, 512 x 512); W3's 10 x 512 stays on matmul_skinny's loops
    assert len(fused_lines(text)) == 2, text
    os.environ["MYCEL_FUSE_MATMUL_UPDATE"] = "0"
    assert fused_lines(program_text((784, 512, 512, 10), 128)) == []


class MatmulMomentum(nn.Cell):
    """g = op(a) @ op(b) feeding momentum's update written out (the pass's pattern)."""

    def __init__(self, shape, ta, tb):
        super().__init__()
        self.mm = ops.MatMul(transpose_a=ta, transpose_b=tb)
        self.v = Parameter(Tensor(rand(shape, 1)), name="v", requires_grad=False)
        self.w = Parameter(Tensor(rand(shape, 2)), name="w", requires_grad=False)

    def construct(self, a, b):
        g = self.mm(a, b)
        v_new = self.v * 0.9 + g
        ops.assign(self.v, v_new)
        return ops.depend(ops.relu(a), ops.assign(self.w, self.w - 0.1 * v_new))


@pytest.mark.parametrize("ta,tb", [(True, False), (False, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,k,n", [(256, 64, 320), (96, 33, 512), (131, 16, 70)])
def test_matmul_then_momentum_equals_numpy(m, k, n, ta, tb):
    a = rand((k, m) if ta else (m, k), 5)
    b = rand((n, k) if tb else (k, n), 6)
    results = {}
    for fuse in ("1", "0"):
        os.environ["MYCEL_FUSE_MATMUL_UPDATE"] = fuse
        mycel.set_context(mode=mycel.GRAPH_MODE)
        net = MatmulMomentum((m, n), ta, tb)
        step = mycel.jit(net)
        v, w = net.v.asnumpy().astype(np.float64), net.w.asnumpy().astype(np.float64)
        g = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
        for _ in range(3):
            step(Tensor(a), Tensor(b))
            v = 0.9 * v + g
            w = w - 0.1 * v
            np.testing.assert_allclose(net.v.asnumpy(), v, rtol=1e-5, atol=1e-4)
            np.testing.assert_allclose(net.w.asnumpy(), w, rtol=1e-5, atol=1e-4)
        results[fuse] = (net.v.asnumpy(), net.w.asnumpy())
        from mycel._mycel import graph as G
        text = G.compile(MatmulMomentum((m, n), ta, tb)).program_text(Tensor(a), Tensor(b))
        assert len(fused_lines(text)) == (1 if fuse == "1" else 0), text
    for x, y in zip(results["1"], results["0"]):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("threads", [1, 3])
def test_other_thread_counts_equal_unfused(threads):
    """One thread runs both tiles of dW1 and dW2; with three threads no multiple of three
    divides 512, so the tile count rounds up to the next divisor (4 tiles of 128 rows)."""
    before = mycel.get_context("num_threads")
    sizes, batch = (784, 512, 512, 10), 128
    x = rand((batch, 784), 1)
    y = np.random.default_rng(2).integers(0, 10, batch).astype(np.int32)
    try:
        mycel.set_context(num_threads=threads)
        fused, _ = train(sizes, x, y, 3, {})
        apart, _ = train(sizes, x, y, 3, {"MYCEL_FUSE_MATMUL_UPDATE": "0"})
    finally:
        mycel.set_context(num_threads=before)
    ref, _ = numpy_train(sizes, x, y, 3)
    for a, b, r in zip(fused, apart, ref):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-5)


def test_padded_operands_forced():
    """Where oneDNN runs its AVX2 sgemm, dW2's operands (rows of 2 KiB) take the padded copy
    (dnnl_ops.h pad_power_of_two_rows); MYCEL_MATMUL_PAD=1 forces it here: the MLP tests in a
    fresh process (the setting is read once)."""
    env = dict(os.environ, MYCEL_MATMUL_PAD="1")
    r = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider",
                        "-k", "weights_equal or other_thread_counts"], env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]


_LANES_SCRIPT = r"""
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import mycel
import test_fuse_matmul_update as T
mycel.set_context(num_threads=int(sys.argv[2]))
sizes = tuple(int(s) for s in sys.argv[3].split(","))
batch = int(sys.argv[4])
x = T.rand((batch, sizes[0]), 1)
y = np.random.default_rng(2).integers(0, sizes[-1], batch).astype(np.int32)
ws, losses = T.train(sizes, x, y, 5, {})
np.savez(sys.argv[5], *ws, losses=np.array(losses))
"""


# The harness's MLP, and hidden sizes whose tiles end in a partial vector (80 rows of 77: tiles of
# 40 x 77 = 3080 elements, 20 x 77 with three threads).
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("sizes,batch", [((784, 512, 512, 10), 128), ((77, 80, 96, 10), 50)])
def test_momentum_lanes_equal_interpreter(tmp_path, threads, sizes, batch):
    """The tiles' momentum update as one register loop (kernels/cpu/momentum_lanes.h) against the
    chain interpreter (MYCEL_MOMENTUM_LANES=0, read once: fresh processes): equal bit for bit
    after five steps, and within float32 tolerance of the float64 numpy MLP."""
    runs = {}
    for lanes in ("1", "0"):
        out = tmp_path / f"w{lanes}.npz"
        env = dict(os.environ, MYCEL_MOMENTUM_LANES=lanes)
        r = subprocess.run([sys.executable, "-c", _LANES_SCRIPT, os.path.dirname(__file__),
                            str(threads), ",".join(map(str, sizes)), str(batch), str(out)],
                           env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        runs[lanes] = np.load(out)
    x = rand((batch, sizes[0]), 1)
    y = np.random.default_rng(2).integers(0, sizes[-1], batch).astype(np.int32)
    ref, ref_losses = numpy_train(sizes, x, y, 5)
    on, off = runs["1"], runs["0"]
    for k, r in enumerate(ref):
        a, b = on[f"arr_{k}"], off[f"arr_{k}"]
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(on["losses"], ref_losses, rtol=1e-5)
